"""The array's gradient methods, in MXNet's and PyTorch's spellings (design: ``_autograd.py``).

MXNet: ``x.attach_grad(grad_req="write")``, ``y.backward(out_grad)``,
``x.grad``, ``x.detach()``. PyTorch: ``x.requires_grad`` (and its setter),
``x.requires_grad_()``, ``loss.backward(gradient, retain_graph=)``,
``x.grad`` (``None`` until the first backward; assignable, ``x.grad = None``
resets it), ``x.is_leaf``, ``x.grad_fn``, ``x.detach()``/``detach_()``.
"""

from __future__ import annotations

from typing import Any

from autopar.arrays import _autograd
from autopar.arrays._autograd import Edge, Leaf


class GradMethods:
    """Mixed into NDArray: gradients."""

    __slots__ = ()
    _ag: Any

    @property
    def grad(self) -> Any:
        """The gradient accumulated for this array (a leaf that requires grad), else None."""
        ag = self._ag
        return ag.grad if type(ag) is Leaf else None

    @grad.setter
    def grad(self, value: Any) -> None:
        ag = self._ag
        if type(ag) is not Leaf:
            raise RuntimeError("grad: only a leaf array that requires grad has a gradient to set; "
                               "call x.requires_grad_() or x.attach_grad() first")  # fmt: skip
        if value is not None:
            shape, dtype, device = value.shape, value.dtype, value.device
            if (shape, dtype, device) != (ag.shape, ag.dtype, ag.device):
                raise ValueError(f"grad: the gradient must have the array's shape, dtype and device, "
                                 f"{ag.shape} {ag.dtype} on {ag.device}; got {shape} {dtype} on {device}")  # fmt: skip
            value = value.detach()
        from autopar.arrays import _interpreters

        if _interpreters.active:  # a capture: ``p.grad = None`` inside it is part of what it replays
            hook = getattr(_interpreters.current(), "grad_set", None)
            if hook is not None:
                hook(ag, value)
        ag.grad = value

    @property
    def requires_grad(self) -> bool:
        return self._ag is not None

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> Any:
        """PyTorch's: make this array a leaf whose gradients accumulate into ``.grad``."""
        ag = self._ag
        if type(ag) is Edge:
            if requires_grad:
                return self
            raise RuntimeError("requires_grad_(False): this array is the result of a recorded operation; "
                               "use y = x.detach() for a copy that does not require grad")  # fmt: skip
        if not requires_grad:
            self._ag = None
        elif ag is None:
            _autograd.mark(self, "add", True, zeros=None)  # type: ignore[arg-type]
        else:
            ag.always = True
        return self

    def attach_grad(self, grad_req: str = "write", stype: Any = None) -> None:
        """MXNet's: allocate ``x.grad`` (zeros) and record ops on ``x`` inside ``autograd.record()``.

        ``grad_req="write"`` (default): each backward overwrites ``x.grad``; ``"add"``: accumulates;
        ``"null"``: no gradient.
        """
        if stype is not None:
            raise ValueError(f"attach_grad: stype={stype!r}; autopar has dense gradients only")
        from autopar.arrays._creation import zeros

        _autograd.mark(self, grad_req, False, zeros=lambda: zeros(self.shape, dtype=self._dtype, device=self.device))  # type: ignore[arg-type,attr-defined]

    @property
    def is_leaf(self) -> bool:
        return type(self._ag) is not Edge

    @property
    def grad_fn(self) -> Any:
        """The recorded operation that made this array (PyTorch's ``grad_fn``), or None."""
        ag = self._ag
        return ag.node if type(ag) is Edge else None

    def detach(self) -> Any:
        """The same data (sharing the storage), without gradient history."""
        from autopar.arrays._array import make

        return make(self.shape, self._dtype, self.device, self._storage, self._view)  # type: ignore[attr-defined]

    def detach_(self) -> Any:
        self._ag = None
        return self

    def backward(self, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False, *,
                 head_grad: Any = None, out_grad: Any = None, train_mode: bool = True) -> None:  # fmt: skip
        """Push the gradient ops of everything this array was computed from; returns at once.

        The gradient of this array is ``gradient`` (MXNet: ``head_grad``/``out_grad``), ones by
        default, for any shape. Each leaf's ``.grad`` is readable as soon as its own gradient
        has been computed. ``retain_graph=True`` keeps the graph for another backward.
        """
        given = [g for g in (gradient, head_grad, out_grad) if g is not None]
        if len(given) > 1:
            raise ValueError("backward: pass the head gradient once (gradient=, head_grad= or out_grad=)")
        from autopar.arrays._backward import backward

        backward([self], [given[0] if given else None], bool(retain_graph), create_graph)
