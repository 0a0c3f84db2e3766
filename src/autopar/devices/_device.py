"""Device names, parsing, and how the cores are split between CPU devices.

Remote devices. A device of a cluster node is named ``<node>/<kind>:<i>``
(``node1/cpu:0``, ``node1/cuda:0``): :attr:`Device.node` is the node's name,
``None`` for this process's own devices. ``Device("cpu:0")`` and
``Device("node0/cpu:0")`` differ even when the driver runs on node0: they are
different processes' memory. Whether a remote device exists is for the
cluster session to say; this layer never imports it (imports go downward):
the session registers a resolver (:func:`set_remote_resolver`) at connect.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from autopar import _config
from autopar.errors import DeviceError

_KIND_ALIASES = {"cpu": "cpu", "gpu": "cuda", "cuda": "cuda", "sim": "sim"}

_lock = threading.Lock()
_cpu_devices: int | None = None  # read from AUTOPAR_CPU_DEVICES on first use
_sim_devices = 0  # simulated stream devices, for tests of stream lanes
_interned: dict[tuple[str | None, str, int], "Device"] = {}

# The cluster session's answer to "does node/kind:index exist?": None if it does, else why not.
RemoteResolver = Callable[[str, str, int], "str | None"]
_remote_resolver: RemoteResolver | None = None


def set_remote_resolver(resolver: RemoteResolver | None) -> None:
    """Let the cluster session say which remote devices exist (``None``: not connected)."""
    global _remote_resolver
    _remote_resolver = resolver


def _machine_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def cpu_device_count() -> int:
    """How many CPU devices the cores are split into (``set_cpu_devices``)."""
    global _cpu_devices
    if _cpu_devices is None:
        with _lock:
            if _cpu_devices is None:
                _cpu_devices = _config.cpu_devices()
    return _cpu_devices


def _set_cpu_device_count(n: int) -> None:
    """Low level: change the split. The engine layer checks nothing is pending first."""
    global _cpu_devices
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_cpu_devices: n={n!r}; expected a whole number >= 1")
    with _lock:
        _cpu_devices = n


def sim_device_count() -> int:
    return _sim_devices


def set_sim_devices(n: int) -> None:
    """Make ``n`` simulated stream devices ``sim:0..n-1`` (for tests of stream lanes).

    A sim device has the lanes of a GPU; each lane's "stream" is a host thread
    that runs the callables an op queues with ``autopar.devices.launch``.
    """
    global _sim_devices
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"set_sim_devices: n={n!r}; expected a whole number >= 0")
    _sim_devices = n


def cpu_threads(index: int) -> int:
    """Intra-op threads of ``cpu:index``: an even share of the cores, at least one.

    Cores that do not divide evenly go to the lowest-numbered devices.
    """
    cores = _machine_cores()
    n = cpu_device_count()
    share, extra = divmod(cores, n)
    return max(1, share + (1 if index < extra else 0))


def num_gpus() -> int:
    """Number of usable CUDA devices (0 without CUDA, or without torch)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return 0
    if not torch.cuda.is_available():
        return 0
    return int(torch.cuda.device_count())


class Device:
    """A device: ``cpu:i`` or ``cuda:i``, or a cluster node's ``node1/cpu:i``.

    ``Device("cuda:1")`` parses ``"cpu"``, ``"cpu:1"``, ``"gpu:0"``, ``"cuda:0"``,
    ``"node1/cpu:0"``, a ``torch.device`` or another ``Device``. Devices compare
    equal by node, kind and index and print as ``cpu:0`` (``node1/cpu:0``).
    Naming a device that does not exist raises :class:`~autopar.DeviceError`.
    """

    __slots__ = ("kind", "index", "node")
    kind: str
    index: int
    node: str | None  # the cluster node holding it; None: this process

    def __new__(cls, spec: Any = "cpu", index: int | None = None) -> "Device":
        if isinstance(spec, Device) and index is None:
            return spec
        node, kind, idx = _parse(spec, index)
        key = (node, kind, idx)
        device = _interned.get(key)
        if device is None:
            device = object.__new__(cls)
            object.__setattr__(device, "kind", kind)
            object.__setattr__(device, "index", idx)
            object.__setattr__(device, "node", node)
            device = _interned.setdefault(key, device)
        device.check_exists()
        return device

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Device is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Device, (str(self),))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if isinstance(other, Device):
            return self.kind == other.kind and self.index == other.index and self.node == other.node
        return NotImplemented

    # Devices are interned (``__new__``, ``__reduce__``): equal devices are the same
    # object, so identity hashing is consistent with ``__eq__`` -- and, being C, it keeps
    # the engine's per-push lane lookup cheap.
    __hash__ = object.__hash__

    def __str__(self) -> str:
        if self.node is not None:
            return f"{self.node}/{self.kind}:{self.index}"
        return f"{self.kind}:{self.index}"

    __repr__ = __str__

    @property
    def local_name(self) -> str:
        """The device's name in the process that holds it: ``cpu:0`` for ``node1/cpu:0`` too."""
        return f"{self.kind}:{self.index}"

    @property
    def torch_name(self) -> str:
        """torch's name of the device in the process that holds it: ``"cpu"`` or ``"cuda:1"``."""
        return f"cuda:{self.index}" if self.kind == "cuda" else "cpu"

    @property
    def is_remote(self) -> bool:
        return self.node is not None

    @property
    def is_cuda(self) -> bool:
        return self.kind == "cuda"

    @property
    def has_streams(self) -> bool:
        """True when this device's lanes issue onto streams here (CUDA, simulated; not a remote device)."""
        return self.kind != "cpu" and self.node is None

    @property
    def torch_device(self) -> Any:
        """The matching ``torch.device`` (all CPU devices share torch's ``cpu``).

        A remote device has none here: its data lives in another process.
        """
        if self.node is not None:
            raise DeviceError(
                f"device {self}: its data lives on node {self.node}, not in this process; read it with "
                f"x.numpy(), or copy it here with x.to('cpu')"
            )
        import torch

        return torch.device("cuda", self.index) if self.kind == "cuda" else torch.device("cpu")

    def check_exists(self) -> None:
        """Raise :class:`DeviceError` unless this device exists now."""
        if self.node is not None:
            resolver = _remote_resolver
            why = ("no cluster is connected; call autopar.cluster.connect(address) first"
                   if resolver is None else resolver(self.node, self.kind, self.index))
            if why is not None:
                raise DeviceError(f"device {self} does not exist: {why}")
        elif self.kind == "cpu":
            if self.index == 0:  # always there: naming it reads no setting (a bad one is reported where it is used)
                return
            n = cpu_device_count()
            if self.index >= n:
                have = ", ".join(f"cpu:{i}" for i in range(n))
                raise DeviceError(
                    f"device cpu:{self.index} does not exist: there {'is' if n == 1 else 'are'} "
                    f"{n} CPU device{'s' if n != 1 else ''} ({have}); call "
                    f"autopar.set_cpu_devices({self.index + 1}) or set AUTOPAR_CPU_DEVICES={self.index + 1} "
                    f"to split the cores into more"
                )
        elif self.kind == "sim":
            if self.index >= _sim_devices:
                raise DeviceError(
                    f"device sim:{self.index} does not exist: {_sim_devices} simulated devices are set up; "
                    f"call autopar.devices.set_sim_devices({self.index + 1}) first"
                )
        elif self.kind == "cuda":
            n = num_gpus()
            if self.index >= n:
                if n == 0:
                    why = "no CUDA GPU is usable here"
                    if "torch" in sys.modules:
                        import torch

                        if torch.version.cuda is None:
                            why += f" (torch {torch.__version__} is a CPU-only build)"
                    raise DeviceError(
                        f"device cuda:{self.index} does not exist: {why}; use autopar.cpu(), "
                        f"or autopar.try_gpu() to fall back to the CPU"
                    )
                have = ", ".join(f"cuda:{i}" for i in range(n))
                raise DeviceError(
                    f"device cuda:{self.index} does not exist: there are {n} GPUs ({have}); "
                    f"use autopar.try_gpu({self.index}) to fall back to the CPU"
                )


def _parse(spec: Any, index: int | None) -> tuple[str | None, str, int]:
    if type(spec).__name__ == "device" and type(spec).__module__ == "torch":
        kind, idx = spec.type, spec.index
        if kind not in ("cpu", "cuda"):
            raise DeviceError(f"torch device {spec}: autopar runs on 'cpu' and 'cuda' devices only")
        return None, kind, (idx or 0) if index is None else index
    if not isinstance(spec, str):
        raise DeviceError(
            f"cannot make a device from {spec!r}: expected a string like 'cpu', 'cpu:1', 'cuda:0', "
            f"'node1/cpu:0', a torch.device or an autopar.Device"
        )
    text = spec.strip().lower()
    node, slash, text = text.rpartition("/")
    if slash and not _is_node_name(node):
        raise DeviceError(
            f"cannot parse device {spec!r}: a remote device is '<node>/<kind>:<i>', like 'node1/cpu:0', "
            f"where <node> is a node name from autopar.cluster.nodes()"
        )
    name, sep, num = text.partition(":")
    kind = _KIND_ALIASES.get(name)
    if kind is None or (sep and not num.isdigit()) or (slash and kind == "sim"):
        raise DeviceError(
            f"cannot parse device {spec!r}: expected 'cpu', 'cpu:<i>', 'gpu:<i>' or 'cuda:<i>', "
            f"or '<node>/' before one of them for a cluster node's device"
        )
    if sep and index is not None:
        raise DeviceError(f"device {spec!r} already names an index; do not pass index={index} too")
    idx = int(num) if sep else (0 if index is None else index)
    if isinstance(idx, bool) or not isinstance(idx, int) or idx < 0:
        raise DeviceError(f"device index {idx!r}: expected a whole number >= 0")
    return (node if slash else None), kind, idx


def _is_node_name(name: str) -> bool:
    return bool(name) and all(c.isalnum() or c in "-_." for c in name)


def cpu(i: int = 0) -> Device:
    """CPU device ``cpu:i``."""
    return Device("cpu", i)


def gpu(i: int = 0) -> Device:
    """CUDA device ``cuda:i`` (raises :class:`DeviceError` when it does not exist)."""
    return Device("cuda", i)


cuda = gpu


def try_gpu(i: int = 0) -> Device:
    """``gpu(i)`` if it exists; with no GPU, ``cpu(i)`` if the CPU is split into that many devices; else ``cpu()``.

    So the book's ``[try_gpu(i) for i in range(2)]`` names two devices that run
    side by side after ``set_cpu_devices(2)`` on a machine without GPUs."""
    n = num_gpus()
    if i < n:
        return gpu(i)
    if n == 0 and 0 <= i < cpu_device_count():
        return cpu(i)
    return cpu()


def try_all_gpus() -> list[Device]:
    """Every GPU; with none, every CPU device (``[cpu:0, cpu:1]`` after ``set_cpu_devices(2)``)."""
    n = num_gpus()
    return [gpu(i) for i in range(n)] if n else [cpu(i) for i in range(cpu_device_count())]
