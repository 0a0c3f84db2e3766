"""A bulk op's function: the small ops of a segment, run in push order, each with its own outcome.

``_bulk.py``'s note says when small ops form a segment; this is what its
engine op runs. The contract's failure rules hold per member, not per
segment: a member that reads a failed var is skipped and its writes take that
failure, a member that raises fails its own writes with a new failure named
after it, and the others run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from autopar.devices import Device
from autopar.engine import _failures
from autopar.engine._var import Failure, Var

if TYPE_CHECKING:
    from autopar.engine._op import Op


class Member:
    """One small op inside a segment."""

    __slots__ = ("fn", "args", "reads", "writes", "rw", "name")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], reads: tuple[Var, ...], writes: tuple[Var, ...],
                 rw: tuple[Var, ...], name: str) -> None:  # fmt: skip
        self.fn = fn
        self.args = args
        self.reads = reads
        self.writes = writes
        self.rw = rw
        self.name = name


class Segment:
    """The function of a bulk op: its members, run in push order, each with its own outcome."""

    __slots__ = ("op", "members", "held", "one_thread")

    def __init__(self, first: Member, one_thread: bool) -> None:
        self.op: Op | None = None
        self.members = [first]
        self.one_thread = one_thread  # some member could use several intra-op threads: run on one
        # Every var the segment holds, True where it writes it.
        self.held: dict[Var, bool] = {v: False for v in first.reads}
        self.held.update((v, True) for v in first.writes)

    def label(self) -> str:
        names = [m.name for m in self.members]
        shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        return f"bulk of {len(names)}: {shown}"

    def __call__(self) -> None:
        op = self.op
        assert op is not None
        if len(self.members) > 1:
            op._name = self.label()
        torch: Any = sys.modules["torch"] if self.one_thread else None
        threads = torch.get_num_threads() if torch is not None else 1
        if threads > 1:
            torch.set_num_threads(1)
        try:
            for member in self.members:
                _run_member(member, op.device)
        finally:
            if threads > 1:
                torch.set_num_threads(threads)


def _run_member(member: Member, device: Device) -> None:
    failure: Failure | None = None
    if _failures.seen:
        failure = _first_failure(member.reads) or _first_failure(member.rw)
    if failure is None:
        try:
            member.fn(*member.args)
        except BaseException as error:  # its own failure: the segment's other members go on
            failure = _failures.new_named(member.name, device, error)
    member.args = ()  # what the kernel reads and writes is not kept until the segment ends
    for var in member.writes:
        if failure is not None:
            var.failure = failure
        elif var.failure is not None:
            var.failure = None  # an overwrite that succeeded clears it (contract, failures rule 2)


def _first_failure(vars_: tuple[Var, ...]) -> Failure | None:
    for var in vars_:
        if var.failure is not None:
            return var.failure
    return None
