"""The public namespace: exactly the contract.s names, each importable (Trio's test_exports)."""

from __future__ import annotations

import autopar

SPEC_NAMES = {
    # §1 devices
    "cpu", "gpu", "cuda", "Device", "num_gpus", "try_gpu", "try_all_gpus", "set_cpu_devices", "DeviceError",
    # §2 arrays
    "NDArray", "array", "asarray", "zeros", "ones", "full", "arange", "random", "rand", "randn",
    "dot", "mm", "matmul", "sum", "mean", "max", "min", "exp", "log", "tanh", "maximum", "reshape", "transpose",
    "call", "from_torch",
    # §3 waiting and timing
    "waitall", "synchronize", "Benchmark",
    # §5, §6
    "engine", "profile",
    # §9
    "NodeLostError",
}


def test_every_spec_name_is_exported_and_resolves() -> None:
    missing = SPEC_NAMES - set(autopar.__all__)
    assert not missing, missing
    for name in autopar.__all__:
        assert getattr(autopar, name) is not None or name == "newaxis", name


def test_engine_names() -> None:
    for name in ("Var", "push", "wait_for_var", "waitall", "set_engine", "set_max_pending"):
        assert callable(getattr(autopar.engine, name))


def test_unknown_names_raise_attribute_error() -> None:
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        autopar.nope  # noqa: B018


def test_benchmark_prints_the_books_format(capsys) -> None:  # type: ignore[no-untyped-def]
    with autopar.Benchmark("GPU1 time") as b:
        pass
    out = capsys.readouterr().out
    assert out.startswith("GPU1 time: ") and out.endswith(" sec\n") and f"{b.seconds:.4f}" in out
    with autopar.Benchmark():
        pass
    assert capsys.readouterr().out.startswith("Done: ")


def test_lazy_array_names_match_the_array_layer() -> None:
    """autopar lists the array names itself (to stay torch-free at import); they must agree."""
    from autopar import arrays
    from autopar.arrays import _namespace

    assert autopar._ARRAY_NAMES == set(arrays.__all__)
    missing = [name for name in arrays.__all__ if not hasattr(_namespace, name)]
    assert missing == []


def test_cluster_names() -> None:
    """the contract on many machines: autopar.cluster.connect/devices/disconnect; NodeLostError is one class everywhere."""
    import autopar.cluster

    for name in ("connect", "devices", "disconnect"):
        assert callable(getattr(autopar.cluster, name))
    assert autopar.cluster.NodeLostError is autopar.NodeLostError
    assert issubclass(autopar.NodeLostError, autopar.AutoparError)
    assert set(autopar.cluster.__all__) == {n for n in dir(autopar.cluster) if not n.startswith("_")} - {
        "annotations"
    }
