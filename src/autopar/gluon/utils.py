"""``gluon.utils``: ``split_and_load`` (autopar.parallel's), ``clip_global_norm``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from autopar.parallel import split_and_load

__all__ = ["clip_global_norm", "split_and_load"]


def clip_global_norm(arrays: Sequence[Any], max_norm: float, check_isfinite: bool = True) -> float:
    """Scale ``arrays`` in place so their joint L2 norm is at most ``max_norm``; returns the norm before
    (this reads a value: it waits for the arrays)."""
    from autopar.arrays._autograd import no_grad

    total = math.sqrt(sum(float((a.astype("float32") ** 2).sum()) for a in arrays))
    if check_isfinite and not math.isfinite(total):
        raise ValueError(f"clip_global_norm: the norm is {total}")
    if total > max_norm:
        with no_grad():
            for a in arrays:
                a *= max_norm / total
    return total
