"""autopar: write array code step by step; it runs in parallel automatically.

Every operation returns at once; a dependency engine tracks what each one reads
and writes and runs whatever is independent at the same time, on several
devices, with copies overlapped with computation. See SPEC.md for the contract.

``import autopar`` is cheap: torch is imported when the first array or CUDA
device is made.
"""

from __future__ import annotations

from typing import Any

from autopar import engine
from autopar._timing import Benchmark
from autopar.devices import Device, cpu, cuda, gpu, num_gpus, try_all_gpus, try_gpu
from autopar.engine import set_cpu_devices, synchronize, waitall
from autopar.errors import AutoparError, BlockingCallError, DeviceError, NodeLostError

__version__ = "0.1.0"

# Names served by the array layer, imported (with torch) on first use.
_ARRAY_NAMES = frozenset(
    {
        "NDArray",
        "arange",
        "array",
        "asarray",
        "call",
        "dot",
        "exp",
        "from_torch",
        "full",
        "log",
        "matmul",
        "max",
        "maximum",
        "mean",
        "min",
        "minimum",
        "mm",
        "ones",
        "rand",
        "randn",
        "random",
        "reshape",
        "sqrt",
        "sum",
        "tanh",
        "transpose",
        "zeros",
        "zeros_like",
        "ones_like",
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "int32",
        "int64",
        "bool_",
    }
)

__all__ = sorted(
    {
        "AutoparError",
        "Benchmark",
        "BlockingCallError",
        "Device",
        "DeviceError",
        "NodeLostError",
        "cpu",
        "cuda",
        "engine",
        "gpu",
        "num_gpus",
        "profile",
        "set_cpu_devices",
        "synchronize",
        "try_all_gpus",
        "try_gpu",
        "waitall",
    }
    | _ARRAY_NAMES
)


def __getattr__(name: str) -> Any:
    if name in _ARRAY_NAMES:
        from autopar import ndarray

        value = getattr(ndarray, name)
        globals()[name] = value
        return value
    if name == "profile":
        from autopar.profiler import profile

        globals()["profile"] = profile
        return profile
    raise AttributeError(f"module 'autopar' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
