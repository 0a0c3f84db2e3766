"""Optimizer updates as table entries: one engine op per parameter and step
(``parallel/_optim.py`` also updates a bucket of parameters in one op for plain SGD).

Each is written into the parameter (or a state array) through
``bind_into``: it reads the gradient and the old value and writes the new,
on the parameter's device -- local or remote alike, since it is an entry
found by name. Hyperparameters are Python-number operands, not static
parameters, so a learning rate that changes every step (Adam's bias
correction) does not make a new plan per step.

| entry             | writes | value                                                   |
|-------------------|--------|---------------------------------------------------------|
| ``sgd_update``    | w      | ``w - lr * (g * scale + weight_decay * w)``             |
| ``momentum_update`` | buf  | ``momentum * buf + (g * scale + weight_decay * w)``     |
| ``moment_update`` | m      | ``beta * m + (1 - beta) * (g * scale) ** power`` (power 1 or 2) |
| ``adam_update``   | w      | ``w - lr_t * m / (sqrt(v) + eps_t)``                    |
| ``count_update``  | t      | ``t + 1`` (a step count, any dtype)                     |
| ``adam_step_update`` | w   | ``w - lr / (1 - b1**t) * m / (sqrt(v) / sqrt(1 - b2**t) + eps)``, ``t`` a 0-d count array |

The last two are Adam's for a parameter on a cluster node (``parallel/_adam.py``; elsewhere
one op updates count, moments and parameter together).
"""

from __future__ import annotations

from typing import Any

import torch

from autopar.arrays._dtypes import DType
from autopar.arrays._table import define, promoting


def _sgd(w: torch.Tensor, g: torch.Tensor, lr: float, weight_decay: float, scale: float) -> torch.Tensor:
    step = g * scale if scale != 1.0 else g
    if weight_decay:
        step = step + weight_decay * w
    return w - lr * step


def _momentum(buf: torch.Tensor, g: torch.Tensor, w: torch.Tensor, momentum: float, weight_decay: float,
              scale: float) -> torch.Tensor:  # fmt: skip
    step = g * scale if scale != 1.0 else g
    if weight_decay:
        step = step + weight_decay * w
    return buf * momentum + step


def _moment(m: torch.Tensor, g: torch.Tensor, beta: float, power: float, scale: float) -> torch.Tensor:
    step = g * scale if scale != 1.0 else g
    if power == 2.0:
        step = step * step
    return m * beta + step * (1.0 - beta)


def _adam(w: torch.Tensor, m: torch.Tensor, v: torch.Tensor, lr_t: float, eps_t: float) -> torch.Tensor:
    return w - lr_t * (m / (torch.sqrt(v) + eps_t))


_UPDATE = promoting("real floating-point")
for _name, _kernel in (("sgd_update", _sgd), ("momentum_update", _momentum), ("moment_update", _moment),
                       ("adam_update", _adam)):  # fmt: skip
    define(_name, _kernel, _UPDATE, shape=lambda op, shapes, s: (shapes[0],), scalars=True, differentiable=False)


def _adam_step(w: torch.Tensor, m: torch.Tensor, v: torch.Tensor, t: torch.Tensor, lr: float, b1: float, b2: float,
               eps: float) -> torch.Tensor:  # fmt: skip
    """``w`` after one Adam update from its moments and its step count ``t`` (a 0-d tensor, counted already)."""
    t = t.to(torch.float64)
    step_size = (lr / (1.0 - torch.pow(b1, t))).to(w.dtype)
    root = torch.sqrt(1.0 - torch.pow(b2, t)).to(w.dtype)
    return w - step_size * (m / (torch.sqrt(v) / root + eps))


def _count(t: torch.Tensor) -> torch.Tensor:
    return t + 1


def _own_dtypes(op: str, dtypes: tuple[DType, ...], static: dict[str, Any]) -> Any:
    """The first operand's dtype out; every operand computed in its own (a count stays float64)."""
    return (dtypes[0],), dtypes


define("adam_step_update", _adam_step, _own_dtypes, shape=lambda op, shapes, s: (shapes[0],), scalars=True,
       differentiable=False)  # fmt: skip
define("count_update", _count, _own_dtypes, shape=lambda op, shapes, s: (shapes[0],), differentiable=False)
