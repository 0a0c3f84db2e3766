"""The gradient of every differentiable op of the table equals torch autograd's on torch's own
spelling of the same function (hypothesis over shapes and values), on both engines."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from _gradient_cases import CASES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autopar as ap
import autopar.nn.functional  # noqa: F401  (its entries are in the table)
from autopar import autograd
from autopar.arrays._autograd import Edge
from autopar.arrays._table import TABLE

pytestmark = [pytest.mark.usefixtures("eng"), pytest.mark.filterwarnings("ignore::UserWarning")]


def recorded(outputs: tuple[Any, ...]) -> set[str]:
    """The entries recorded on the way to ``outputs`` (``view`` for views)."""
    names, stack, seen = set(), [o._ag.node for o in outputs if type(o._ag) is Edge], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        names.add(node.entry.name if node.entry is not None else "view")
        stack.extend(ag.node for ag in node.inputs if type(ag) is Edge)
    return names


def test_every_differentiable_entry_has_a_gradient_case() -> None:
    differentiable = {name for name, entry in TABLE.items() if entry.differentiable}
    assert differentiable - set(CASES) == set()
    assert set(CASES) - differentiable == set()  # a case for an op that is not in the table, or not differentiable


def _as_tuple(out: Any) -> tuple[Any, ...]:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_gradient_equals_torch_autograd(name: str, data: Any) -> None:
    case = CASES[name]
    drawn = case.draw(data)
    inputs, keywords = drawn if isinstance(drawn, tuple) else (drawn, {})
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="head gradients"))
    ours_in = [ap.asarray(x, requires_grad=True) for x in inputs]
    outs = [o for o in _as_tuple(case.ours(*ours_in, **keywords)) if o.requires_grad]
    assert outs and name in recorded(tuple(outs)), (name, recorded(tuple(outs)))
    heads = []
    for o in outs:
        g = rng.standard_normal(o.shape)
        if o.dtype in (ap.complex64, ap.complex128):
            g = g + 1j * rng.standard_normal(o.shape)
        heads.append(np.asarray(g, dtype=o.dtype.name))
    autograd.backward(outs, [ap.asarray(g) for g in heads])
    if name == "dropout":  # the mask is autopar's own draw: the gradient is the head's, masked and scaled
        out, x = outs[0].numpy(), inputs[0]
        np.testing.assert_allclose(ours_in[0].grad.numpy(), heads[0] * (out != 0) / 0.7, rtol=1e-6)
        assert 0 < (out == 0).sum() < out.size  # some dropped, some kept
        np.testing.assert_allclose(out[out != 0], x[out != 0] / 0.7, rtol=1e-6)
        return
    theirs_in = [torch.tensor(x, requires_grad=True) for x in inputs]
    touts = [t for t in _as_tuple(case.theirs(*theirs_in, **keywords)) if t.requires_grad]
    assert len(touts) == len(outs), (name, len(touts), len(outs))
    for o, t in zip(outs, touts):
        np.testing.assert_allclose(o.numpy(), t.detach().resolve_conj().numpy(), rtol=1e-6, atol=1e-9, err_msg=f"{name} forward")
    torch.autograd.backward(touts, [torch.from_numpy(g) for g in heads])
    for i, (ours, theirs) in enumerate(zip(ours_in, theirs_in)):
        want = np.zeros(inputs[i].shape, inputs[i].dtype) if theirs.grad is None else theirs.grad.resolve_conj().numpy()
        got = ours.grad.numpy()
        assert got.dtype == want.dtype and got.shape == want.shape, (name, i, got.dtype, want.dtype, got.shape)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9, err_msg=f"{name}: gradient of input {i}")
