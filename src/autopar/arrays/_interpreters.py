"""Where an op goes besides this process's engine: targets registered from the layers above.

The dispatcher (``_dispatch.py``) runs an op on this process's devices
itself. An op on a device of a cluster node (``node1/cpu:0``) goes to the
*remote* interpreter instead, which the cluster layer registers when it is
imported (``autopar.cluster._remote``): the array layer never imports the
cluster (imports go downward). Until one is registered, a remote device
cannot exist, and :data:`remote` raises the error a user would see for it.

Everything the array layer asks of a remote interpreter is in :class:`Remote`;
``_dispatch`` (bind, bind_into), ``_array`` (reading a value), ``_copy``
(copies to and from a node), ``_random`` (seeding a node's generator) and
``_backward`` (gradient buffers and gradient ops on a node) call it through
:data:`remote`, never by module name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from autopar.errors import DeviceError

if TYPE_CHECKING:
    import torch

    from autopar import engine
    from autopar.arrays._table import OpDef
    from autopar.devices import Device


class Remote(Protocol):
    """What the array layer asks of the cluster (``autopar.cluster._remote`` implements it)."""

    def bind(self, entry: OpDef, plan: Any, args: Sequence[Any], static: dict[str, Any], device: Device, lane: str,
             state: tuple[engine.Var, ...], label: str) -> Any:  # fmt: skip
        """Step 4 of ``_dispatch.bind`` on a node's device: results there, the op sent there."""

    def bind_into(self, entry: OpDef, target: Any, args: Sequence[Any], static: dict[str, Any], what: str,
                  casting: str, device: Device, lane: str, reads: tuple[engine.Var, ...]) -> Any:  # fmt: skip
        """Step 4 of ``_dispatch.bind_into`` on a node's device."""

    def fetch(self, a: Any) -> torch.Tensor:
        """The value of remote array ``a`` (its var ready) as a CPU tensor here; blocks."""

    def copy_to_device(self, src: Any, dst: Device, name: str) -> Any:
        """``src`` on ``dst``, where one of them is a node's device."""

    def alloc(self, shape: tuple[int, ...], dtype: Any, device: Device) -> Any:
        """An array on a node's device that nothing has written yet."""

    def seed(self, device: Device, var: engine.Var, n: int) -> None:
        """Seed the generator of a node's device with ``n``."""

    def push_grad(self, node: Any, outs: Sequence[Any], targets: Sequence[Any], retain: bool) -> None:
        """Push the gradient op of a recorded op that ran on a node's device."""


class _NoCluster:
    """The remote interpreter while no cluster layer is loaded: every call says how to get one."""

    @staticmethod
    def _fail(device: Any) -> DeviceError:
        return DeviceError(f"device {device}: no cluster is connected; call autopar.cluster.connect(address) first")

    def bind(self, entry: Any, plan: Any, args: Any, static: Any, device: Any, *rest: Any) -> Any:
        raise self._fail(device)

    def bind_into(self, entry: Any, target: Any, args: Any, static: Any, what: Any, casting: Any, device: Any,
                  *rest: Any) -> Any:  # fmt: skip
        raise self._fail(device)

    def fetch(self, a: Any) -> Any:
        raise self._fail(a.device)

    def copy_to_device(self, src: Any, dst: Any, name: str) -> Any:
        raise self._fail(dst if dst.node is not None else src.device)

    def alloc(self, shape: Any, dtype: Any, device: Any) -> Any:
        raise self._fail(device)

    def seed(self, device: Any, var: Any, n: int) -> None:
        raise self._fail(device)

    def push_grad(self, node: Any, outs: Any, targets: Any, retain: bool) -> None:
        raise self._fail(node.device)


remote: Remote = _NoCluster()


def set_remote(target: Remote) -> None:
    """The cluster layer registers its interpreter (once, when it is imported)."""
    global remote
    remote = target
