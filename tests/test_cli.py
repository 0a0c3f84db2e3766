"""The command line, run for real in subprocesses with small sizes."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys

import pytest


def autopar(*args: str, timeout: int = 240, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autopar", *args], capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "AUTOPAR_CPU_DEVICES": "1", **env},
    )


@pytest.mark.parametrize("command", [[], ["devices"], ["demo"], ["bench"], ["train"]])
def test_help(command: list[str]) -> None:
    proc = autopar(*command, "--help")
    assert proc.returncode == 0
    assert "usage: autopar" in proc.stdout


def test_no_command_prints_help_and_fails() -> None:
    proc = autopar()
    assert proc.returncode == 2 and "COMMAND" in proc.stdout


def test_devices_lists_lanes_and_threads() -> None:
    proc = autopar("devices", "--cpu-devices", "2")
    assert proc.returncode == 0, proc.stderr
    assert "split into 2 CPU device(s)" in proc.stdout
    assert re.search(r"cpu:1 +\d+ intra-op thread\(s\); lanes: compute \(\d+ threads?\), copy \(1 thread\)", proc.stdout)


def test_bad_arguments_give_one_clear_line() -> None:
    proc = autopar("devices", "--cpu-devices", "0")
    assert proc.returncode == 1
    assert proc.stderr.strip() == "autopar devices: error: set_cpu_devices: n=0; expected a whole number >= 1"
    proc = autopar("demo", "--repeat", "0")
    assert proc.returncode == 1 and proc.stderr.strip().endswith("must be whole numbers >= 1")


def test_demo_prints_the_chapters_table_and_writes_trace_and_plot(tmp_path) -> None:  # type: ignore[no-untyped-def]
    trace, plot = tmp_path / "demo.json", tmp_path / "demo.png"
    proc = autopar("demo", "--size", "128", "--repeat", "8", "--trials", "1", "--trace", str(trace), "--plot", str(plot))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("devices: ")
    for label in ["cpu:0 time", "cpu:1 time", "cpu:0 & cpu:1", "Run on cpu:0", "Copy to cpu:1",
                  "Run on cpu:0 and copy to cpu:1"]:
        assert re.search(rf"^{re.escape(label)}: \d+\.\d{{4}} sec$", out, re.M), label
    assert re.search(r"^both / max\(T1, T2\) += \d+\.\d\d", out, re.M)
    assert re.search(r"^run\+copy / max\(run, copy\) += \d+\.\d\d", out, re.M)
    assert re.search(r"^load average \d+\.\d\d on \d+ cores? before the run", out, re.M)  # the verdict's context
    assert "..." in proc.stderr  # progress
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e["ph"] == "X" and e["name"] == "dot" for e in events)
    data = plot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", data[16:24])[0] >= 600


def test_bench_quick_writes_json(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "bench.json"
    proc = autopar("bench", "--quick", "--json", str(out), timeout=400)
    assert proc.returncode == 0, proc.stderr
    for label in ["engine threaded, independent", "ThreadPoolExecutor.submit", "torch eager, tiny add",
                  "autopar threaded, tiny add", "profiler off again", "both / max(T1, T2)", "run+copy / max(run, copy)",
                  "autopar 2 devices / 1 device", "autopar step / step without sums", "CPU per sample, 2 devices / 1 device"]:
        assert label in proc.stdout, label
    data = json.loads(out.read_text())
    assert data["machine"]["cores"] >= 1 and data["machine"]["quick"] is True
    figures = {f["name"]: f for s in data["sections"] for f in s["figures"]}
    assert figures["engine threaded, independent"]["value"] > 0
    cpu = next(f for name, f in figures.items() if "CPU per sample, 2 devices / 1 device" in name)
    assert 0 < cpu["value"] < 10 and len(cpu["runs"]) == 1, cpu  # one round with --quick
    assert data["chapter"]["both_ratio"] > 0


def test_train_quick_prints_epochs_both_runs_and_writes_trace_and_plots(tmp_path) -> None:  # type: ignore[no-untyped-def]
    trace, plot = tmp_path / "train.json", tmp_path / "train.png"
    proc = autopar("train", "--quick", "--steps", "6", "--test-samples", "200", "--quiet", "--trace", str(trace),
                   "--plot", str(plot))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "synthetic, NOT the real Fashion-MNIST (pass --data PATH for it)" in out
    assert re.search(r"^1 device \(cpu:0\), global batch 128$", out, re.M)
    assert re.search(r"^2 devices \(cpu:0, cpu:1\), global batch 256$", out, re.M)
    epochs = re.findall(r"^  epoch 1: loss \d+\.\d{3}, train acc \d\.\d{3}, test acc \d\.\d{3}, \d+\.\d sec, [\d,]+ samples/s$",
                        out, re.M)  # fmt: skip
    assert len(epochs) == 2, out
    assert re.search(r"^2 devices / 1 device: \d+\.\d\dx samples/s", out, re.M)
    assert re.search(r"; target >= 1\.7x: (met|NOT met) in this run\)$", out, re.M)
    assert "python bench/training.py --model lenet (or autopar bench, LeNet)" in out
    assert re.search(r"traffic between devices over 3 profiled steps \(batch copies, gradient sums\): \d+\.\d ms, "
                     r"\d+% of it while", out)  # fmt: skip
    names = {e["name"] for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"}
    # (two CPU devices of one process: a bucket's sum and both devices' update are one op)
    assert {"allreduce sum and update", "backward conv2d", "conv2d"} <= names
    for png in (plot, tmp_path / "train-curves.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_train_with_missing_data_folder_fails_with_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    proc = autopar("train", "--quick", "--data", str(tmp_path / "nowhere"))
    assert proc.returncode == 1
    assert proc.stderr.startswith("autopar train: error: ") and len(proc.stderr.strip().splitlines()) == 1


# -- a newcomer's first hour: problems said at the start, in one line ---------------------------------

@pytest.mark.parametrize("env, message", [
    ({"AUTOPAR_ENGINE": "foo"}, "AUTOPAR_ENGINE='foo': expected one of threaded, naive"),
    ({"AUTOPAR_CPU_DEVICES": "abc"}, "AUTOPAR_CPU_DEVICES='abc': expected a whole number >= 1"),
    ({"AUTOPAR_DEFAULT_DTYPE": "half"}, "AUTOPAR_DEFAULT_DTYPE='half': expected float32 (deep learning's default) "
                                        "or float64 (NumPy's)"),
])
def test_bad_settings_are_one_line_at_the_start(env: dict[str, str], message: str) -> None:
    proc = autopar("demo", **env)
    assert proc.returncode == 2 and proc.stdout == ""  # nothing ran
    assert proc.stderr.strip() == f"autopar demo: error: {message}; unset it for the default 1" or \
        proc.stderr.strip() == f"autopar demo: error: {message}"


def test_unknown_option_shows_the_commands_usage() -> None:
    proc = autopar("demo", "--foo")
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: autopar demo ") and "autopar demo: error: unrecognized arguments: --foo" in proc.stderr


def test_bad_output_paths_fail_before_the_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    missing = tmp_path / "nowhere" / "run.png"
    for command in (["demo", "--plot", str(missing)], ["train", "--trace", str(missing)], ["bench", "--json", str(missing)]):
        proc = autopar(*command)
        assert proc.returncode == 2 and proc.stdout == "", proc.stdout
        assert proc.stderr.strip() == (f"autopar {command[0]}: error: {command[1]} {missing}: the folder "
                                       f"{missing.parent} does not exist; create it first")  # fmt: skip


def test_more_cpu_devices_than_cores_warns(capsys) -> None:  # type: ignore[no-untyped-def]
    import autopar as ap
    from autopar.cli import main

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        assert main(["devices", "--cpu-devices", str(cores + 1)]) == 0  # in this process: no interpreter to start
    finally:
        ap.set_cpu_devices(1)
    proc = capsys.readouterr()
    assert f"warning: {cores + 1} CPU devices on {cores} core" in proc.err and "takes turns" in proc.err
    try:
        assert main(["devices", "--cpu-devices", str(cores)]) == 0  # one device per core: nothing to warn of
    finally:
        ap.set_cpu_devices(1)
    assert "warning" not in capsys.readouterr().err


def test_demo_gives_no_verdict_on_a_busy_machine() -> None:
    from autopar.cli.demo import too_busy

    assert too_busy(1.6, 2) and not too_busy(1.4, 2) and not too_busy(None, 2)  # 0.75 per core
    assert too_busy(3.1, 4) and not too_busy(2.9, 4)


def test_bench_says_whether_each_target_was_met() -> None:
    from autopar.benchmarks import Figure
    from autopar.cli.bench import verdict

    assert verdict(Figure("x", 2.0, unit="us/op", note="1.23x torch eager (target <= 2.5x)")) == "met"
    assert verdict(Figure("x", 9.0, unit="us/op", note="0.50x ThreadPoolExecutor (target <= 10 us)")) == "met"
    assert verdict(Figure("x", 11.0, unit="us/op", note="0.50x ThreadPoolExecutor (target <= 10 us)")) == "NOT met"
    assert verdict(Figure("x", 1.3, unit="ratio", note="target >= 1.7")) == "NOT met"
    assert verdict(Figure("x", 0.9, unit="ms", note="2.74x plain (target <= 2)")) == "NOT met"
    assert verdict(Figure("x", 0.9, unit="ratio", note="no target")) == ""


def test_train_names_the_data_and_checks_its_image_size(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from autopar.cli import main

    rng = np.random.default_rng(0)
    np.savez(tmp_path / "mnist.npz", x_train=rng.integers(0, 256, (8, 14, 14), dtype=np.uint8),
             y_train=rng.integers(0, 10, 8), x_test=rng.integers(0, 256, (4, 14, 14), dtype=np.uint8),
             y_test=rng.integers(0, 10, 4))  # fmt: skip
    assert main(["train", "--quick", "--data", str(tmp_path / "mnist.npz")]) == 1  # in this process, as above
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("autopar train: error: MNIST from")
    assert "images must be 28x28 with 1 channel (LeNet's input); these are 1 x 14 x 14" in err
