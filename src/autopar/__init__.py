"""autopar: write array code step by step; it runs in parallel automatically.

Every operation returns at once; a dependency engine tracks what each one reads
and writes and runs whatever is independent at the same time, on several
devices, with copies overlapped with computation. docs/contract.md is the contract.

``import autopar`` is cheap: torch is imported when the first array or CUDA
device is made.
"""

from __future__ import annotations

from typing import Any

from autopar import engine
from autopar._timing import Benchmark
from autopar.devices import Device, cpu, gpu, num_gpus, try_all_gpus, try_gpu
from autopar.devices import cuda as _cuda_device
from autopar.engine import set_cpu_devices, synchronize, waitall
from autopar.arrays import __all__ as _array_names
from autopar.errors import AutoparError, BlockingCallError, CaptureError, DeviceError, NodeLostError

__version__ = "0.1.0"

# Names served by the array layer (autopar/arrays), imported (with torch) on first use.
_ARRAY_NAMES = frozenset(_array_names)
# Subpackages imported on first use: ``autopar.datasets`` works after ``import autopar``.
_SUBPACKAGES = ("d2l", "datasets", "gluon", "init", "nn", "optim", "parallel")



class _Cuda:
    """``autopar.cuda(i)`` is ``gpu(i)``; the PyTorch spellings ``autopar.cuda.synchronize()``,
    ``is_available()`` and ``device_count()`` are here too."""

    def __call__(self, i: int = 0) -> Device:
        return _cuda_device(i)

    def synchronize(self, device: Any = None) -> None:
        """Block until all work on ``device`` (every device if None) has finished (``autopar.synchronize``)."""
        synchronize(device)

    def is_available(self) -> bool:
        return num_gpus() > 0

    def device_count(self) -> int:
        return num_gpus()

    def __repr__(self) -> str:
        return "autopar.cuda"


cuda = _Cuda()

__all__ = sorted(
    {
        "AutoparError",
        "Benchmark",
        "BlockingCallError",
        "CaptureError",
        "Device",
        "DeviceError",
        "NodeLostError",
        "autograd",
        "capture",
        "cpu",
        "cuda",
        "d2l",
        "datasets",
        "enable_grad",
        "engine",
        "gluon",
        "gpu",
        "init",
        "nn",
        "no_grad",
        "num_gpus",
        "optim",
        "parallel",
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
        from autopar.arrays import _namespace

        value = getattr(_namespace, name)
        globals()[name] = value
        return value
    if name == "capture":
        from autopar._capture import capture

        globals()["capture"] = capture
        return capture
    if name == "profile":
        from autopar.profiler import profile

        globals()["profile"] = profile
        return profile
    if name in _SUBPACKAGES:
        import importlib

        module = globals()[name] = importlib.import_module(f"autopar.{name}")
        return module
    if name in ("autograd", "no_grad", "enable_grad"):
        import autopar.autograd as autograd

        globals().update(autograd=autograd, no_grad=autograd.no_grad, enable_grad=autograd.enable_grad)
        return globals()[name]
    raise AttributeError(f"module 'autopar' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
