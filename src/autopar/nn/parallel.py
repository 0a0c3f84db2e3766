"""``nn.parallel``: torch's ``scatter``, ``gather`` and ``DataParallel``, on autopar devices.

``DataParallel(module, device_ids)`` is torch's single-process data
parallelism, with torch's semantics: the module lives on ``device_ids[0]``;
each forward splits the batch along ``dim`` (one part per device), runs the
module on each part -- on the first device with the module's own
parameters, on each other device with copies of them made for this
forward --, and concatenates the outputs on ``output_device``. Everything is
recorded, so ``loss.backward()`` sends each device's gradients back (copies
on copy lanes) and sums them into the parameters' ``.grad`` on the first
device, where the optimizer updates them. Batch-norm statistics are updated
on the first device only (the other devices' copies are dropped), as in
torch.

What differs from torch is only how it runs: torch starts a thread per
device; here the forward pushes each device's ops and returns at once, the
engine runs the devices side by side, and each gradient's copy back starts
as soon as that gradient is computed, while backward goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autopar.arrays._array import NDArray
from autopar.devices import Device
from autopar.nn._module import Module, is_uninitialized

__all__ = ["DataParallel", "gather", "scatter"]


def _device(value: Any) -> Device:
    if isinstance(value, int) and not isinstance(value, bool):
        from autopar.devices import try_gpu

        return try_gpu(value)
    return Device(value)


def _chunks(size: int, parts: int) -> list[tuple[int, int]]:
    """torch.chunk's split: parts of ceil(size / parts), the last shorter, fewer parts when they run out."""
    step = -(-size // parts)
    return [(lo, min(lo + step, size)) for lo in range(0, size, step)] if size else []


def scatter(inputs: Any, target_gpus: Sequence[Any], dim: int = 0) -> Any:
    """Arrays split along ``dim`` into one part per device (as ``torch.chunk``), each on its device;
    tuples, lists and dicts are scattered element-wise; other objects are repeated."""
    devices = [_device(d) for d in target_gpus]

    def one(obj: Any) -> Any:
        if type(obj) is NDArray:
            axis = dim + obj.ndim if dim < 0 else dim
            parts = []
            for d, (lo, hi) in zip(devices, _chunks(obj.shape[axis], len(devices))):
                part = obj[(slice(None),) * axis + (slice(lo, hi),)]
                parts.append(part if part.device == d else part.to(d, non_blocking=True))
            return tuple(parts)
        if isinstance(obj, (tuple, list)) and obj:
            return [type(obj)(parts) if isinstance(obj, list) else tuple(parts) for parts in zip(*map(one, obj))]
        if isinstance(obj, dict) and obj:
            return [type(obj)(zip(obj.keys(), parts)) for parts in zip(*map(one, obj.values()))]
        return [obj for _ in devices]

    return one(inputs)


def gather(outputs: Sequence[Any], target_device: Any, dim: int = 0) -> Any:
    """The devices' outputs concatenated along ``dim`` on ``target_device`` (recorded: gradients flow back)."""
    from autopar.arrays._manipulation import concat

    target = _device(target_device)
    first = outputs[0]
    if type(first) is NDArray:
        moved = [o if o.device == target else o.to(target, non_blocking=True) for o in outputs]
        return moved[0] if len(moved) == 1 else concat(moved, axis=dim)
    if isinstance(first, (tuple, list)):
        return type(first)(gather(parts, target, dim) for parts in zip(*outputs))
    raise TypeError(f"gather: outputs must be autopar arrays (or tuples of them), got {type(first).__name__}")


class DataParallel(Module):
    """``DataParallel(module, device_ids=None, output_device=None, dim=0)``: see the module docstring.
    ``device_ids`` defaults to ``autopar.try_all_gpus()``; integers mean ``try_gpu(i)``."""

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None, output_device: Any = None,
                 dim: int = 0) -> None:  # fmt: skip
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: module must be an nn.Module, got {type(module).__name__}")
        from autopar.devices import try_all_gpus

        devices = [_device(d) for d in (try_all_gpus() if device_ids is None else device_ids)]
        if not devices:
            raise ValueError("DataParallel: device_ids is empty; give at least one device")
        if len(set(devices)) != len(devices):
            raise ValueError(f"DataParallel: device_ids name a device twice ({', '.join(map(str, devices))})")
        self.module = module
        self.device_ids = devices
        self.output_device = devices[0] if output_device is None else _device(output_device)
        self.dim = dim
        module.to(devices[0])

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        src = self.device_ids[0]
        for name, value in list(self.module.named_parameters()) + list(self.module.named_buffers()):
            if value.device != src and not is_uninitialized(value):  # a lazy layer's is made where its input is
                raise RuntimeError(f"DataParallel: the module's {name} is on {value.device}; its parameters and "
                                   f"buffers must be on device_ids[0] = {src} (call module.to({src}))")
        if len(self.device_ids) == 1:
            return self.module(*inputs, **kwargs)
        shards = scatter(inputs, self.device_ids, self.dim)
        extras = scatter(kwargs, self.device_ids, self.dim) if kwargs else [{} for _ in shards]
        outputs = []
        for device, args, kw in zip(self.device_ids, shards, extras):
            if device == src:
                outputs.append(self.module(*args, **kw))
                continue
            with self.module._swapped(self._replica_arrays(device)):
                outputs.append(self.module(*args, **kw))
        return gather(outputs, self.output_device, self.dim)

    def _replica_arrays(self, device: Device) -> dict[int, NDArray]:
        """This forward's copies on ``device``: parameters recorded (their gradients flow back), buffers not."""
        from autopar.arrays._autograd import no_grad

        arrays = {id(p): p.to(device, non_blocking=True) for p in self.module.parameters()}
        with no_grad():
            arrays.update({id(b): b.to(device, non_blocking=True) for b in self.module.buffers()})
        return arrays

    def extra_repr(self) -> str:
        return f"device_ids=[{', '.join(map(str, self.device_ids))}]"
