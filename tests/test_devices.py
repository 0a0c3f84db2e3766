"""Devices: naming, parsing, discovery, errors, and the CPU core split."""

from __future__ import annotations

import pickle

import pytest
import torch

import autopar as ap
from autopar import devices


def test_names_and_equality() -> None:
    assert str(ap.cpu()) == "cpu:0" and repr([ap.cpu(0)]) == "[cpu:0]"
    assert ap.Device("cpu") == ap.cpu(0) == ap.Device(torch.device("cpu")) == ap.Device("CPU:0")
    assert callable(ap.cuda) and ap.cuda.device_count() == ap.num_gpus() == (1 if ap.cuda.is_available() else 0) * ap.num_gpus()
    assert hash(ap.Device("cpu:0")) == hash(ap.cpu())
    assert pickle.loads(pickle.dumps(ap.cpu())) == ap.cpu()
    with pytest.raises(AttributeError):
        ap.cpu().index = 3  # type: ignore[misc]


def test_parse_errors_say_what_is_accepted() -> None:
    with pytest.raises(ap.DeviceError, match="expected 'cpu', 'cpu:<i>', 'gpu:<i>' or 'cuda:<i>'"):
        ap.Device("tpu:0")
    with pytest.raises(ap.DeviceError, match="cannot make a device from 3"):
        ap.Device(3)


def test_missing_devices_say_what_exists_and_how_to_get_more() -> None:
    with pytest.raises(ap.DeviceError, match=r"cpu:3 does not exist: there is 1 CPU device \(cpu:0\); call autopar.set_cpu_devices\(4\)"):
        ap.cpu(3)
    if ap.num_gpus() == 0:
        with pytest.raises(ap.DeviceError, match="cuda:0 does not exist: no CUDA GPU is usable here.*try_gpu"):
            ap.gpu(0)
        with pytest.raises(ap.DeviceError):
            ap.Device("gpu:1")


def test_try_gpu_falls_back_to_the_cpu() -> None:
    n = ap.num_gpus()
    assert ap.try_gpu(n) == ap.cpu()
    assert ap.try_all_gpus() == ([ap.gpu(i) for i in range(n)] if n else [ap.cpu()])


@pytest.mark.skipif(ap.num_gpus() > 0, reason="with GPUs, try_gpu names them")
def test_try_gpu_names_the_cpu_devices_when_the_cores_are_split() -> None:
    """The book's ``[try_gpu(i) for i in range(2)]`` and ``try_all_gpus()`` run on two devices, not cpu:0 twice."""
    ap.set_cpu_devices(2)
    try:
        assert [ap.try_gpu(i) for i in range(2)] == [ap.cpu(0), ap.cpu(1)]
        assert ap.try_all_gpus() == [ap.cpu(0), ap.cpu(1)]
        assert ap.try_gpu(2) == ap.cpu(0)  # more than there are: the CPU, as before
    finally:
        ap.set_cpu_devices(1)
    assert ap.try_gpu(1) == ap.cpu(0) and ap.try_all_gpus() == [ap.cpu(0)]


def test_cpu_split_shares_the_cores() -> None:
    cores = devices._device._machine_cores()
    ap.set_cpu_devices(2)
    try:
        assert ap.cpu(1) == ap.Device("cpu:1")
        shares = [devices.cpu_threads(0), devices.cpu_threads(1)]
        assert sum(shares) == max(cores, 2) and min(shares) >= 1
        specs = devices.lane_specs(ap.cpu(1))
        assert list(specs) == ["compute", "copy"] and specs["copy"].threads == 1
    finally:
        ap.set_cpu_devices(1)
    assert devices.cpu_threads(0) == cores
    with pytest.raises(ValueError, match="whole number >= 1"):
        ap.set_cpu_devices(0)


def test_cpu_devices_from_the_environment(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", "import autopar; print(autopar.cpu(2))"],
        capture_output=True, text=True, env={**__import__("os").environ, "AUTOPAR_CPU_DEVICES": "3"},
    )
    assert out.stdout.strip() == "cpu:2", out.stderr
    bad = subprocess.run(
        [sys.executable, "-c", "import autopar; autopar.ones(2)"],  # the first op reads it (naming cpu:0 does not)
        capture_output=True, text=True, env={**__import__("os").environ, "AUTOPAR_CPU_DEVICES": "zero"},
    )
    assert "AUTOPAR_CPU_DEVICES='zero': expected a whole number >= 1" in bad.stderr


def test_simulated_devices_have_gpu_lanes() -> None:
    devices.set_sim_devices(1)
    specs = devices.lane_specs(ap.Device("sim:0"))
    assert list(specs) == ["compute", "copy_h2d", "copy_d2h"] and all(s.is_stream_lane for s in specs.values())
    with pytest.raises(ap.DeviceError, match="set_sim_devices\\(3\\)"):
        ap.Device("sim:2")
    with pytest.raises(ap.DeviceError, match="simulated devices run engine ops only"):
        ap.zeros(2, device="sim:0")
