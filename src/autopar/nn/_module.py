"""``nn.Module``: PyTorch's module, holding autopar arrays.

Design note
-----------
Why autopar has layers of its own rather than running ``torch.nn`` modules
on autopar arrays: an autopar array is not a ``torch.Tensor`` (it is a handle
on a value the engine has yet to compute), so ``torch.func.functional_call``
refuses it ("... is not an instance of torch.Tensor") and a torch layer's
forward refuses it as input; making arrays tensor subclasses would put
torch's dispatcher under every op. And the book's code needs more than the
layers: optimizers that update autopar arrays, ``DataParallel`` on autopar
devices, and Gluon's per-device parameters, which ``torch.nn`` has no word
for. So ``autopar.nn`` (PyTorch's names) and ``autopar.gluon`` (Gluon's) are
thin classes over ``nn.functional``, autograd and ``parallel``: every layer's
forward is a few public array operations, pushed like any other.

A module here is PyTorch's: ``__setattr__`` registers what is assigned -- a
module is a child, an array that requires grad is a parameter (so
``self.w = nn.Parameter(ap.randn(3))`` works as in torch), ``register_buffer``
keeps state that has no gradient (batch-norm statistics). ``parameters()``,
``named_parameters()``, ``children()``, ``modules()``, ``apply(fn)``,
``train()``/``eval()``, ``zero_grad()``, ``to(device)``, ``state_dict()``
and ``load_state_dict()`` behave as torch's. One difference: ``to(device)``
puts new arrays in the module (an autopar array never changes device). An
optimizer made before the move follows it: ``to()`` notes each moved
parameter's successor (``moved_to``), and ``autopar.optim`` looks it up, so
d2l's ``train_ch13`` -- optimizer first, then ``DataParallel(...).to(device)``
-- trains the parameters the model uses. A lazy layer's parameters are the same
story: until its first forward each is a placeholder (``uninitialized()``,
torch's ``UninitializedParameter``) that the real parameter succeeds, so an
optimizer made before the first batch -- d2l's current edition, lazy
``Residual`` blocks then ``optim.SGD(net.parameters())`` -- trains them.

Forward with other parameters (``DataParallel`` running a replica on another
device) swaps arrays into the modules' slots for the call: the forward only
pushes ops, so the swap lasts exactly as long as the Python call.
"""

from __future__ import annotations

import contextlib
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from autopar.arrays._array import NDArray


# id(parameter) -> (a weak reference to it, the copy Module.to() put in its place)
_successors: dict[int, tuple[weakref.ref[NDArray], NDArray]] = {}


def _note_move(old: NDArray, new: NDArray) -> None:
    key = id(old)
    _successors[key] = (weakref.ref(old, lambda _ref: _successors.pop(key, None)), new)


def moved_to(param: NDArray) -> NDArray:
    """The array that now stands for ``param`` in its module (``param`` itself if it was never moved)."""
    while True:
        entry = _successors.get(id(param))
        if entry is None or entry[0]() is not param:
            return param
        param = entry[1]


# id(array) -> a weak reference to it, for the arrays that are some module's parameter (nn.Parameter(x),
# or assigned to a module): a frozen one (requires_grad False) stays a parameter, as in torch.
_declared: dict[int, weakref.ref[NDArray]] = {}


def _declare(array: NDArray) -> NDArray:
    key = id(array)
    _declared[key] = weakref.ref(array, lambda _ref: _declared.pop(key, None))
    return array


def is_module_parameter(value: Any) -> bool:
    """Whether ``value`` was made by ``nn.Parameter`` or registered as a module's parameter."""
    entry = _declared.get(id(value))
    return entry is not None and entry() is value


# id(placeholder) -> a weak reference to it: a lazy layer's parameters before its first forward
_placeholders: dict[int, weakref.ref[NDArray]] = {}


def uninitialized() -> NDArray:
    """A lazy layer's parameter before its first forward (torch's ``UninitializedParameter``): an empty
    array that requires grad, which the real parameter succeeds (``moved_to``) when it is made."""
    from autopar.arrays._creation import zeros

    array: NDArray = zeros((0,)).requires_grad_()
    key = id(array)
    _placeholders[key] = weakref.ref(array, lambda _ref: _placeholders.pop(key, None))
    return array  # assigned to a layer, it is declared a parameter there


def is_uninitialized(value: Any) -> bool:
    entry = _placeholders.get(id(value))
    return entry is not None and entry() is value


def _is_parameter(value: Any) -> bool:
    return type(value) is NDArray and value.is_leaf and (value.requires_grad or is_module_parameter(value))


class Module:
    """Base class of layers and models, as ``torch.nn.Module``: subclass it, assign layers and
    parameters in ``__init__`` (after ``super().__init__()``), write ``forward``."""

    training: bool
    _parameters: dict[str, NDArray | None]
    _buffers: dict[str, NDArray | None]
    _modules: dict[str, Module | None]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments {args or ''}{kwargs or ''}")
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())

    # -- registration ---------------------------------------------------------------------------

    def _registries(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        try:
            return self.__dict__["_parameters"], self.__dict__["_buffers"], self.__dict__["_modules"]
        except KeyError:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before assigning "
                                 "layers or parameters in __init__") from None

    def __setattr__(self, name: str, value: Any) -> None:
        params, buffers, modules = self._registries()
        if isinstance(value, Module):
            for registry in (params, buffers):
                registry.pop(name, None)
            self.__dict__.pop(name, None)
            modules[name] = value
        elif _is_parameter(value):
            buffers.pop(name, None)
            modules.pop(name, None)
            self.__dict__.pop(name, None)
            params[name] = _declare(value)
        elif name in params:
            if value is not None and type(value) is not NDArray:
                raise TypeError(f"cannot assign {type(value).__name__} as parameter {name!r} "
                                "(an autopar array that requires grad, or None)")
            params[name] = value if value is None or _is_parameter(value) else _declare(value.requires_grad_())
        elif name in buffers:
            if value is not None and type(value) is not NDArray:
                raise TypeError(f"cannot assign {type(value).__name__} as buffer {name!r} (an autopar array, or None)")
            buffers[name] = value
        elif name in modules:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as child module {name!r} "
                                "(an nn.Module or None)")
            modules[name] = None
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        for registry in ("_parameters", "_buffers", "_modules"):
            found = self.__dict__.get(registry)
            if found is not None and name in found:
                return found[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        for registry in self._registries():
            if name in registry:
                del registry[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: NDArray | None) -> None:
        if param is not None and not _is_parameter(param):
            raise TypeError(f"register_parameter: {name!r} must be an autopar array that requires grad "
                            "(nn.Parameter(x)), or None")
        self._registries()[0][name] = param if param is None else _declare(param)

    def register_buffer(self, name: str, tensor: NDArray | None, persistent: bool = True) -> None:
        """State that is not a parameter (no gradient, not trained): moved by ``to()``, saved by ``state_dict()``
        unless ``persistent=False``."""
        if tensor is not None and type(tensor) is not NDArray:
            raise TypeError(f"register_buffer: {name!r} must be an autopar array or None, not {type(tensor).__name__}")
        self._registries()[1][name] = tensor
        transient = self.__dict__.setdefault("_non_persistent", set())
        if persistent:
            transient.discard(name)
        else:
            transient.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be an nn.Module, not {type(module).__name__}")
        self._registries()[2][name] = module

    register_module = add_module

    # -- traversal ---------------------------------------------------------------------------------

    def named_children(self) -> Iterator[tuple[str, Module]]:
        for name, module in self._modules.items():
            if module is not None:
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()

        def walk(module: Module, path: str) -> Iterator[tuple[str, Module]]:
            if id(module) in seen:
                return
            seen.add(id(module))
            yield path, module
            for name, child in module.named_children():
                yield from walk(child, f"{path}.{name}" if path else name)

        yield from walk(self, prefix)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def _named(self, registry: str, prefix: str, recurse: bool) -> Iterator[tuple[str, NDArray]]:
        seen: set[int] = set()
        for path, module in self.named_modules(prefix) if recurse else [(prefix, self)]:
            for name, value in getattr(module, registry).items():
                if value is not None and id(value) not in seen:
                    seen.add(id(value))
                    yield (f"{path}.{name}" if path else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, NDArray]]:
        return self._named("_parameters", prefix, recurse)

    def parameters(self, recurse: bool = True) -> Iterator[NDArray]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, NDArray]]:
        return self._named("_buffers", prefix, recurse)

    def buffers(self, recurse: bool = True) -> Iterator[NDArray]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """``fn`` on every submodule, then on this one (torch's order); returns this module."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # -- modes and state -----------------------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise ValueError(f"train: mode={mode!r}; expected True or False")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the accumulated gradients (``None``), or set them to zeros."""
        from autopar.arrays._autograd import no_grad

        for p in self.parameters():
            if p.grad is None or set_to_none:
                p.grad = None
            else:
                with no_grad():
                    p.grad[...] = 0

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Parameters and buffers on ``device`` (a copy of each that lives elsewhere); returns this module."""
        from autopar.devices import Device

        kwargs.pop("non_blocking", None)
        device = kwargs.pop("device", args[0] if args else None)
        if kwargs or len(args) > 1 or device is None:
            raise TypeError("Module.to(device): only a device is supported (dtypes: build the model in the dtype)")
        target = Device(device)
        from autopar.arrays._autograd import no_grad

        for module in self.modules():
            with no_grad():
                for name, p in list(module._parameters.items()):
                    if p is not None and p.device != target:
                        if is_uninitialized(p):  # a lazy layer's: made on the input's device at its first forward
                            continue
                        moved = _declare(p.detach().to(target, non_blocking=True).requires_grad_(p.requires_grad))
                        module._parameters[name] = moved
                        _note_move(p, moved)
                for name, b in list(module._buffers.items()):
                    if b is not None and b.device != target:
                        module._buffers[name] = b.to(target, non_blocking=True)
        return self

    def cpu(self) -> Module:
        from autopar.devices import cpu

        return self.to(cpu())

    def cuda(self, device: int = 0) -> Module:
        from autopar.devices import gpu

        return self.to(gpu(device))

    # names of state that loading skips when the module lacks it (batch norm: torch's num_batches_tracked)
    _ignored_state: tuple[str, ...] = ()

    def _state(self, prefix: str) -> Iterator[tuple[str, NDArray]]:
        """torch's walk: this module's parameters, its persistent buffers, then each child's -- a module or
        parameter shared by two paths appears under both names, as in torch's ``state_dict()``."""
        transient = self.__dict__.get("_non_persistent", ())
        for name, p in self._parameters.items():
            if p is not None:
                yield prefix + name, p
        for name, b in self._buffers.items():
            if b is not None and name not in transient:
                yield prefix + name, b
        for name, child in self.named_children():
            yield from child._state(f"{prefix}{name}.")

    def state_dict(self) -> dict[str, NDArray]:
        """Every parameter and persistent buffer by its dotted name (the arrays themselves, as torch's)."""
        return OrderedDict(self._state(""))

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Copy values (arrays, NumPy arrays, torch tensors) into the parameters and buffers of the same names."""
        import numpy as np

        from autopar.arrays._autograd import no_grad
        from autopar.arrays._creation import asarray

        own = self.state_dict()
        ignored = {f"{path}.{key}" if path else key for path, module in self._all_modules() for key in module._ignored_state}
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own and k not in ignored]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        with no_grad():
            for name, target in own.items():
                if name not in state_dict:
                    continue
                if is_uninitialized(target):
                    raise ValueError(f"load_state_dict: {name} belongs to a lazy layer that has not run yet; run "
                                     "one batch through the model first (its first forward makes its parameters)")
                value = state_dict[name]
                value = value.detach() if type(value) is NDArray else asarray(np.asarray(value), dtype=target.dtype)
                if tuple(value.shape) != tuple(target.shape):
                    raise ValueError(f"load_state_dict: {name} has shape {tuple(value.shape)}, "
                                     f"the module's {tuple(target.shape)}")
                target[...] = value if value.device == target.device else value.to(target.device, non_blocking=True)

    def _all_modules(self, path: str = "") -> Iterator[tuple[str, Module]]:
        yield path, self
        for name, child in self.named_children():
            yield from child._all_modules(f"{path}.{name}" if path else name)

    # -- forward ----------------------------------------------------------------------------------------

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no forward(); define it in the subclass")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    @contextlib.contextmanager
    def _swapped(self, arrays: dict[int, NDArray]) -> Iterator[None]:
        """For the block, every parameter and buffer ``p`` of the modules is ``arrays[id(p)]`` (where given)."""
        saved: list[tuple[dict[str, Any], str, Any]] = []
        try:
            for module in self.modules():
                for registry in (module._parameters, module._buffers):
                    for name, value in registry.items():
                        if value is not None and id(value) in arrays:
                            saved.append((registry, name, value))
                            registry[name] = arrays[id(value)]
            yield
        finally:
            for registry, name, value in saved:
                registry[name] = value

    # -- display ----------------------------------------------------------------------------------------

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        for name, child in self._modules.items():
            text = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {text}")
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        head = f"{type(self).__name__}({extra}" + ("\n" if extra else "\n")
        return head + "\n".join(lines) + "\n)"

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))


def Parameter(data: Any, requires_grad: bool = True) -> NDArray:  # noqa: N802 (torch's name)
    """``nn.Parameter(x)``: an array that a module registers as a parameter when assigned to it
    (a leaf that requires grad; a copy-free detach of ``x``)."""
    from autopar.arrays._creation import asarray

    array = data if type(data) is NDArray else asarray(data)
    out: NDArray = array.detach()
    return _declare(out.requires_grad_(requires_grad) if requires_grad else out)
