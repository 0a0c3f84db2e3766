"""Gluon's ``Parameter``: one array per device it was initialised on.

``initialize(init, ctx=[d0, d1])`` makes the value once (on ``d0``, from the
initializer) and a copy of it on every other device, so every device starts
from the same numbers; each copy gets its gradient buffer (``grad_req``:
``"write"`` overwrites at each backward, ``"add"`` accumulates, ``"null"``
none -- running statistics). A layer whose input size is not given
(``Dense(10)``, ``Conv2D(64, 3)``) has a shape with zeros until its first
forward; its initialisation is deferred until then, and happens on every
device at once. ``data(ctx)`` is the copy a forward on ``ctx`` uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from autopar.arrays._array import NDArray
from autopar.devices import Device

_GRAD_REQS = ("write", "add", "null")


class DeferredInitializationError(RuntimeError):
    """A parameter was read before the first forward told its shape."""


def _device_list(op: str, ctx: Any) -> list[Device]:
    from autopar.devices import cpu

    if ctx is None:
        return [cpu()]
    many = ctx if isinstance(ctx, (list, tuple)) else [ctx]
    devices = [Device(c) for c in many]
    if not devices or len(set(devices)) != len(devices):
        raise ValueError(f"{op}: ctx={ctx!r}; give one device or a list of distinct devices")
    return devices


class Parameter:
    """A trainable (or, with ``grad_req="null"``, fixed) array of a block, on one or more devices."""

    def __init__(self, name: str = "weight", grad_req: str = "write", shape: Any = None, dtype: Any = "float32",
                 init: Any = None, allow_deferred_init: bool = True, differentiable: bool = True) -> None:  # fmt: skip
        self.name = name
        self._shape: tuple[int, ...] | None = None if shape is None else tuple(int(s) for s in (
            (shape,) if isinstance(shape, int) else shape))  # fmt: skip
        self.dtype = dtype
        self.init = init
        self._grad_req = "null" if not differentiable else self._valid_req(grad_req)
        self._data: dict[Device, NDArray] = {}
        self._deferred: tuple[Any, list[Device]] | None = None

    @staticmethod
    def _valid_req(req: str) -> str:
        if req not in _GRAD_REQS:
            raise ValueError(f"Parameter: grad_req={req!r}; expected one of {', '.join(_GRAD_REQS)}")
        return req

    def __repr__(self) -> str:
        return f"Parameter {self.name} (shape={self.shape}, dtype={self.dtype})"

    @property
    def shape(self) -> tuple[int, ...] | None:
        return self._shape

    @shape.setter
    def shape(self, value: Sequence[int]) -> None:
        self._shape = tuple(int(s) for s in value)

    @property
    def grad_req(self) -> str:
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        self._grad_req = self._valid_req(req)
        for array in self._data.values():
            self._attach(array)

    def _attach(self, array: NDArray) -> None:
        if self._grad_req == "null":
            if array.requires_grad:
                array.requires_grad_(False)
        else:
            array.attach_grad(self._grad_req)

    # -- initialisation -----------------------------------------------------------------------------

    def _known(self) -> bool:
        return self._shape is not None and all(s > 0 for s in self._shape)

    def initialize(self, init: Any = None, ctx: Any = None, default_init: Any = None, force_reinit: bool = False) -> None:
        """Make the value on every device of ``ctx`` (default ``cpu(0)``), now or at the first forward."""
        from autopar import init as initializers

        if self._data and not force_reinit:
            return
        devices = _device_list(f"Parameter {self.name}.initialize", ctx)
        chosen = initializers.create(self.init if self.init is not None else
                                     init if init is not None else default_init or initializers.Uniform())  # fmt: skip
        self._data = {}
        self._deferred = (chosen, devices)
        if self._known():
            self._finish()

    def _finish_deferred_init(self, shape: Sequence[int]) -> None:
        """The first forward tells the shape (the unknown sizes filled in): initialise now. A size that
        was known and differs is an input of the wrong size: a ValueError here, at the layer's call."""
        new = tuple(int(s) for s in shape)
        known = self._shape
        if known is not None and (len(known) != len(new) or any(k and k != n for k, n in zip(known, new))):
            raise ValueError(f"Parameter {self.name!r} has shape {known}, but this input needs {new}: the layer "
                             "was made (in_units, in_channels, or its first batch) for inputs of another size")
        self._shape = new
        if self._deferred is not None and not self._data:
            self._finish()

    def _finish(self) -> None:
        from autopar.arrays._autograd import no_grad
        from autopar.arrays._creation import asarray

        assert self._deferred is not None and self._shape is not None
        chosen, devices = self._deferred
        with no_grad():
            first = asarray(chosen(self.name, self._shape, self.dtype, devices[0]), dtype=self.dtype,
                            device=devices[0])  # fmt: skip
            arrays = [first] + [first.copyto(d) for d in devices[1:]]
        for array in arrays:
            self._attach(array)
        self._data = dict(zip(devices, arrays))
        self._deferred = None

    def reset_ctx(self, ctx: Any) -> None:
        """Move the value to the devices of ``ctx`` (a copy of the first device's on each)."""
        devices = _device_list(f"Parameter {self.name}.reset_ctx", ctx)
        if not self._data:
            if self._deferred is not None:
                self._deferred = (self._deferred[0], devices)
            return
        source = next(iter(self._data.values())).detach()
        arrays = [source.copyto(d) for d in devices]
        for array in arrays:
            self._attach(array)
        self._data = dict(zip(devices, arrays))

    # -- access ---------------------------------------------------------------------------------------

    def _check(self, ctx: Any) -> NDArray:
        if not self._data:
            if self._deferred is not None:
                raise DeferredInitializationError(
                    f"Parameter {self.name!r} has not been initialized yet because its initialization was deferred "
                    f"until the first forward (its shape {self._shape} has unknown sizes); run a batch through the "
                    "network first")  # fmt: skip
            raise RuntimeError(f"Parameter {self.name!r} has not been initialized; call net.initialize(ctx=...) first")
        if ctx is None:
            if len(self._data) == 1:
                return next(iter(self._data.values()))
            from autopar.devices import cpu

            ctx = cpu()
        device = Device(ctx)
        if device not in self._data:
            raise RuntimeError(f"Parameter {self.name!r} was not initialized on {device}; it was only initialized on "
                               f"[{', '.join(map(str, self._data))}] (give every device to initialize(ctx=...))")
        return self._data[device]

    def data(self, ctx: Any = None) -> NDArray:
        """The value on ``ctx`` (the only device, or ``cpu(0)``, when not given)."""
        return self._check(ctx)

    def list_data(self) -> list[NDArray]:
        self._check(next(iter(self._data), None))
        return list(self._data.values())

    def grad(self, ctx: Any = None) -> NDArray:
        array = self._check(ctx)
        if array.grad is None:
            raise RuntimeError(f"Parameter {self.name!r} has no gradient (grad_req='null')")
        grad: NDArray = array.grad
        return grad

    def list_grad(self) -> list[NDArray]:
        return [self.grad(d) for d in self.list_ctx()]

    def list_ctx(self) -> list[Device]:
        if not self._data and self._deferred is not None:
            return list(self._deferred[1])
        return list(self._data)

    def set_data(self, data: Any) -> None:
        """Write ``data`` into the value on every device."""
        from autopar.arrays._autograd import no_grad

        with no_grad():
            for device, array in self._data.items():
                value = data.to(device, non_blocking=True) if type(data) is NDArray and data.device != device else data
                array[...] = value

    def zero_grad(self) -> None:
        from autopar.arrays._autograd import no_grad

        with no_grad():
            for array in self._data.values():
                if array.grad is not None:
                    array.grad[...] = 0


class ParameterDict(dict[str, Parameter]):
    """Parameters by name (``collect_params()``), with Gluon's methods over all of them."""

    def get(self, name: str, default: Any = None) -> Any:
        """The parameter called ``name``, or whose name ends with ``name`` (``params.get('weight')``)."""
        if name in self:
            return self[name]
        for key, value in self.items():
            if key.endswith(("." + name, "_" + name)):
                return value
        return default

    def _values(self) -> Iterable[Parameter]:
        return self.values()

    def initialize(self, init: Any = None, ctx: Any = None, verbose: bool = False, force_reinit: bool = False) -> None:
        for p in self._values():
            p.initialize(None, ctx, default_init=init, force_reinit=force_reinit)

    def zero_grad(self) -> None:
        for p in self._values():
            p.zero_grad()

    def reset_ctx(self, ctx: Any) -> None:
        for p in self._values():
            p.reset_ctx(ctx)

    def setattr(self, name: str, value: Any) -> None:
        """Set an attribute (``grad_req``, ``init``...) on every parameter."""
        for p in self._values():
            setattr(p, name, value)
