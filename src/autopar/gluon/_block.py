"""Gluon's ``Block``: children and parameters registered by assignment, ``initialize(ctx=...)``,
``collect_params()``, and a forward that uses the parameters of the input's device.

A block's forward reads ``self.weight.data(x.ctx)``: with parameters
initialised on several devices, the same network object runs on each
device's shard of a batch with that device's copy (d2l's
``net(x_shards[0]), net(x_shards[1])``). Train mode is MXNet's:
``autograd.record()`` enters it, so batch norm and dropout use batch
statistics and masks inside ``record()`` and running statistics outside.
``hybridize()`` is accepted and changes nothing: autopar already runs each
forward as engine ops.

Sharing parameters as Gluon 1 (and d2l's MXNet edition) does it,
``nn.Dense(8, params=shared.params)``: a parameter the block assigns takes
the one of the same name in ``params`` instead, so both layers use and
train the very same arrays (``share_parameters`` is Gluon 2's spelling).
"""

from __future__ import annotations

import contextlib
import re
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from autopar.gluon._parameter import Parameter, ParameterDict


class Block:
    """Base class of Gluon layers and models: subclass it, assign blocks and parameters in
    ``__init__`` (after ``super().__init__()``), write ``forward``."""

    def __init__(self, prefix: str | None = None, params: Any = None, **kwargs: Any) -> None:
        object.__setattr__(self, "_children", OrderedDict())
        object.__setattr__(self, "_reg_params", OrderedDict())
        if params is not None and not isinstance(params, dict):
            raise TypeError(f"{type(self).__name__}: params= must be another block's parameters "
                            f"(shared.params or shared.collect_params()), not {type(params).__name__}")
        object.__setattr__(self, "_shared", None if params is None else ParameterDict(params))

    def _registries(self) -> tuple[dict[str, Block], dict[str, Parameter]]:
        try:
            return self.__dict__["_children"], self.__dict__["_reg_params"]
        except KeyError:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before assigning "
                                 "blocks or parameters in __init__") from None

    def __setattr__(self, name: str, value: Any) -> None:
        children, params = self._registries()
        children.pop(name, None)
        params.pop(name, None)
        if isinstance(value, Block):
            children[name] = value
        elif isinstance(value, Parameter):
            shared = self.__dict__.get("_shared")
            found = shared.get(value.name) if shared else None
            if found is not None:
                if found.shape is not None and value.shape is not None and len(found.shape) != len(value.shape):
                    raise ValueError(f"{type(self).__name__}: the shared parameter {value.name!r} has shape "
                                     f"{found.shape}; this block's has {value.shape}")
                value = found
            params[name] = value
        object.__setattr__(self, name, value)

    def register_child(self, block: Block, name: str | None = None) -> Block:
        children, _ = self._registries()
        children[name or str(len(children))] = block
        return block

    def share_parameters(self, shared: dict[str, Parameter]) -> Block:
        """Use ``shared``'s parameters in place of this block's (and its children's) of the same dotted names
        (Gluon 2: ``dense1.share_parameters(dense0.collect_params())``)."""
        own = self.collect_params()
        for full, mine in own.items():
            theirs = shared.get(full)
            if theirs is None or theirs is mine:
                continue
            path, _, leaf = full.rpartition(".")
            block: Block = self
            for part in path.split(".") if path else []:
                block = block._registries()[0][part]
            for attr, p in list(block._registries()[1].items()):
                if p is mine:
                    setattr(block, attr, theirs)
        return self

    @property
    def params(self) -> ParameterDict:
        """This block's own parameters, by name (``net[0].params.get('weight')``)."""
        return ParameterDict(self._registries()[1])

    def collect_params(self, select: str | None = None) -> ParameterDict:
        """Every parameter of this block and its children, by dotted name (``"0.weight"``);
        ``select`` keeps the names that match a regular expression (``".*weight"``)."""
        out = ParameterDict()
        seen: set[int] = set()

        def walk(block: Block, path: str) -> None:
            for name, p in block._registries()[1].items():
                full = f"{path}.{name}" if path else name
                if id(p) not in seen and (select is None or re.match(select, full)):
                    seen.add(id(p))
                    out[full] = p
            for name, child in block._registries()[0].items():
                walk(child, f"{path}.{name}" if path else name)

        walk(self, "")
        return out

    def initialize(self, init: Any = None, ctx: Any = None, verbose: bool = False, force_reinit: bool = False) -> None:
        """Initialise every parameter on every device of ``ctx`` (deferred to the first forward for
        layers whose input size is not given). ``init`` applies where a parameter has none of its own."""
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def children(self) -> Iterator[Block]:
        return iter(self._registries()[0].values())

    def apply(self, fn: Callable[[Block], Any]) -> Block:
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """Accepted for Gluon code; autopar runs every forward as engine ops already."""
        for child in self.children():
            child.hybridize(active, **kwargs)

    @contextlib.contextmanager
    def name_scope(self) -> Iterator[None]:
        yield

    def zero_grad(self) -> None:
        self.collect_params().zero_grad()

    def forward(self, *args: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no forward(); define it in the subclass")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def __repr__(self) -> str:
        lines = [f"  ({name}): " + repr(child).replace("\n", "\n  ") for name, child in self._registries()[0].items()]
        if not lines:
            return f"{type(self).__name__}({self._describe()})"
        return f"{type(self).__name__}(\n" + "\n".join(lines) + "\n)"

    def _describe(self) -> str:
        return ""


class HybridBlock(Block):
    """Gluon's ``HybridBlock``: write ``forward(x)``, or Gluon 1's ``hybrid_forward(F, x, **params)``
    (``F`` has ``np`` and ``npx``; each parameter is passed as its value on the input's device)."""

    def forward(self, x: Any, *args: Any) -> Any:
        hybrid = getattr(self, "hybrid_forward", None)
        if hybrid is None:
            raise NotImplementedError(f"{type(self).__name__} has no forward(); define forward or hybrid_forward")
        device = getattr(x, "device", None)
        values = {name: p.data(device) for name, p in self._registries()[1].items()}
        return hybrid(_F, x, *args, **values)


class _Namespace:
    """The ``F`` that ``hybrid_forward`` receives: ``F.np`` (autopar) and ``F.npx``."""

    def __getattr__(self, name: str) -> Any:
        import autopar
        from autopar import npx

        if name == "np":
            return autopar
        if name == "npx":
            return npx
        return getattr(npx, name) if hasattr(npx, name) else getattr(autopar, name)


_F = _Namespace()
