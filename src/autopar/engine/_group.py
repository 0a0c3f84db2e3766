"""Groups: calls whose pushes are all-or-nothing under Ctrl-C (the contract on data parallelism).

``backward()``, a data-parallel step and ``allreduce`` each push many ops. A
Ctrl-C landing between two of those pushes left half of them pushed: a
``.grad`` partly written with no failure stored, one replica updated and the
other not. A function decorated with :func:`atomic` is a *group*:

- it is protected (``_ki``): a Ctrl-C landing anywhere inside it -- in its own
  code, in the array layer, in a push -- is deferred, and raised when the
  group returns, after its last push. So every array the group would write
  is written (or fails for a reason of its own);
- while it runs, the thread counts as inside an op (``_run._local``): no op
  runs on the calling thread (``inline``; the naive policy only queues), so no
  op's function -- the one place a Ctrl-C is raised at once -- runs inside
  the group; and its pushes never wait for back-pressure, a wait a Ctrl-C
  would end. A group's pushes are bounded by the size of the model;
- when it returns, the naive policy runs what the group queued (on the calling
  thread, as always: a Ctrl-C there stops an op and is stored as its failure,
  after every push was made).

A blocking call inside a group (reading a value) raises
:class:`~autopar.BlockingCallError`: under the naive policy it would wait for
ops that run only when the group returns. A group nested in another group
(the step's ``backward``) is part of the outer one.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from autopar.engine import _args, _ki, _run
from autopar.engine._op import Op

F = TypeVar("F", bound=Callable[..., Any])

def atomic(name: str) -> Callable[[F], F]:
    """Make the decorated function a group named ``name`` (module docstring)."""

    def decorate(fn: F) -> F:
        marker = Op(None, (), (), _args._DEFAULT_DEVICE, _run.GROUP, 0, name, -1)
        where = f"{name}, whose pushes are made as one group"

        def grouped(*args: Any, **kwargs: Any) -> Any:
            local = _run._local
            if local.op is not None:  # inside another group (or an op): that one decides
                return fn(*args, **kwargs)
            local.op, local.where = marker, where
            try:
                return fn(*args, **kwargs)
            finally:
                local.op, local.where = None, ""
                engine = sys.modules["autopar.engine"]._engine
                if engine is not None:
                    engine.flush()
                if _ki.deferred:
                    _ki.check()

        _ki.protect(grouped)  # one code object for every group
        return functools.wraps(fn)(grouped)  # type: ignore[return-value]

    return decorate
