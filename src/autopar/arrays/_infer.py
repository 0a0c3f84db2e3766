"""Result shapes from torch meta tensors.

A meta tensor has a shape and a dtype but no data: running an entry's kernel
on meta tensors gives the result shapes torch would produce, for every op
torch implements, without computing anything. It costs tens of
microseconds, so the dispatcher caches the answer in its plan for the call's
signature (``_dispatch.plan``). Errors torch raises on the meta tensors
(shapes that do not align, an axis out of range) are raised at the call, as
``ValueError``/``IndexError``/``TypeError`` naming the op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from autopar.arrays._table import OpDef

Shape = tuple[int, ...]


def shapes(
    entry: OpDef, in_shapes: tuple[Shape, ...], kernel_dtypes: tuple[torch.dtype, ...], static: dict[str, Any]
) -> tuple[Shape, ...]:
    """The result shapes of ``entry`` on inputs of these shapes and dtypes."""
    tensors = [torch.empty(s, dtype=d, device="meta") for s, d in zip(in_shapes, kernel_dtypes)]
    try:
        out = entry.kernel(*tensors, **static)
    except NotImplementedError:
        # No meta kernel: run on zero-filled CPU tensors instead.
        tensors = [torch.zeros(s, dtype=d) for s, d in zip(in_shapes, kernel_dtypes)]
        try:
            out = entry.kernel(*tensors, **static)
        except Exception as error:
            raise _explain(entry.name, in_shapes, static, error) from None
    except (RuntimeError, ValueError, IndexError, TypeError) as error:
        raise _explain(entry.name, in_shapes, static, error) from None
    if type(out) is not tuple:
        out = (out,)
    return tuple(tuple(t.shape) for t in out)


def _explain(op: str, in_shapes: tuple[Shape, ...], static: dict[str, Any], error: Exception) -> Exception:
    kind = type(error) if type(error) in (ValueError, IndexError, TypeError) else ValueError
    shown = ", ".join(str(s) for s in in_shapes)
    params = ", ".join(f"{k}={v!r}" for k, v in static.items() if k not in ("fn", "device"))
    message = str(error).split("\n")[0]
    return kind(f"{op}: invalid arguments (input shapes {shown}{'; ' + params if params else ''}): {message}")
