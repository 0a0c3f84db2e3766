"""NumPy's names beyond the standard, against NumPy; MXNet's and PyTorch's spellings."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import autopar as ap

rng = np.random.default_rng(1)
M = rng.standard_normal((4, 5))
V = np.array([3.0, -1.0, np.nan, 2.0, 0.5])
I = np.array([[3, 0, 2], [1, 1, 4]])

CASES: list[tuple[str, Any]] = [
    ("absolute", (M,)), ("arccos", (M / 10,)), ("arctan2", (M, M)),
    ("power", (np.abs(M), 2.5)), ("mod", (I, 3)), ("true_divide", (I, 2)), ("fix", (M,)), ("rint", (M,)),
    ("degrees", (M,)), ("concatenate", ([M, M],)), ("amax", (M,)), ("around", (M * 100,)),
    ("isclose", (M, M + 1e-9)), ("average", (M,)), ("median", (M,)), ("quantile", (M, 0.3)),
    ("percentile", (M, [10, 90])), ("nanmax", (V,)), ("nanmin", (V,)), ("nanmean", (V,)), ("nanstd", (V,)),
    ("nansum", (V,)), ("nanargmax", (V,)), ("nancumsum", (V,)), ("ptp", (M,)), ("diff", (M,)), ("ediff1d", (M,)),
    ("nan_to_num", (V,)), ("cov", (M,)), ("corrcoef", (M,)), ("rot90", (M,)), ("trapezoid", (M,)),
    ("hstack", ([M, M],)), ("vstack", ([M, M],)), ("dstack", ([M, M],)), ("column_stack", ([V, V],)),
    ("fliplr", (M,)), ("flipud", (M,)), ("append", (M, M)), ("diag", (V[:3],)), ("diag", (M,)), ("diagflat", (I,)),
    ("tri", (3, 4)), ("logspace", (0, 2, 5)), ("modf", (M,)), ("isposinf", (np.array([np.inf, -np.inf, 1.0]),)),
    ("cumsum", (M,)), ("cumprod", (M,)), ("trace", (M,)), ("outer", (V[:2], V[:3])), ("inner", (M, M)),
    ("kron", (I, I)), ("einsum", ("ij,kj->ik", M, M)), ("tensordot", (M, M.T, 1)), ("swapaxes", (M, 0, 1)),
    ("unique", (I,)), ("argwhere", (I,)), ("flatnonzero", (I,)), ("count_nonzero", (I,)), ("clip", (M, -0.5, 0.5)),
    ("where", (M > 0, M, 0.0)), ("linspace", (0, 1, 7)), ("eye", (3,)), ("identity", (3,)), ("ravel", (M,)),
    ("squeeze", (M[None],)), ("expand_dims", (M, 1)), ("tile", (I, 2)), ("repeat", (I, 2)), ("roll", (M, 2)),
    ("sort", (M, 0)), ("argsort", (M, 0)), ("argmax", (M, 1)), ("sum", (M, 1)), ("mean", (M, 0)), ("std", (M,)),
    ("var", (M,)), ("prod", (I,)), ("cross", (M[:, :3], M[:, 2:])), ("digitize", (M, [-1.0, 0.0, 1.0])),
    ("intersect1d", (I, [1, 2, 9])), ("union1d", (I, [9])), ("setdiff1d", (I, [1])), ("bincount", (I.ravel(),)),
    ("rollaxis", (np.ones((2, 3, 4)), 2)), ("delete", (V, [0, 2])), ("pad", (I, 1)), ("trace", (I,)),
    ("atleast_2d", (V,)), ("array_split", (V, 2)), ("split", (M, 2)), ("take", (V, [0, 3])),
]  # fmt: skip


def _to_ap(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return ap.asarray(x)
    if isinstance(x, list) and x and isinstance(x[0], np.ndarray):
        return [ap.asarray(v) for v in x]
    return x


def _check(got: Any, want: Any, name: str) -> None:
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            _check(g, w, name)
        return
    g = got.numpy() if isinstance(got, ap.ndarray) else np.asarray(got)
    w = np.asarray(want)
    assert g.shape == w.shape, (name, g.shape, w.shape)
    np.testing.assert_allclose(g.astype(w.dtype) if w.dtype.kind == "b" else g, w, rtol=1e-5, atol=1e-6,
                               equal_nan=True, err_msg=name)  # fmt: skip


@pytest.mark.parametrize("name,args", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_numpy_function_matches_numpy(name: str, args: Any) -> None:
    got = getattr(ap, name)(*(_to_ap(a) for a in args))
    want = getattr(np, name)(*args)
    _check(got, want, name)


def test_predicates_and_python_answers() -> None:
    a = ap.asarray(M)
    assert ap.allclose(a, M + 1e-9) and not ap.allclose(a, M + 1)
    assert ap.array_equal(a, M) and not ap.array_equal(a, M[:2])
    assert ap.array_equiv(ap.ones((2, 2)), ap.ones(2))
    assert ap.isscalar(3.0) and ap.ndim(a) == 2 and ap.shape(a) == (4, 5) and ap.size(a) == 20
    assert ap.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert ap.may_share_memory(a, a[1:]) and not ap.may_share_memory(a, a.copy())
    assert ap.pi == np.pi and ap.e == np.e and ap.inf == np.inf and np.isnan(ap.nan) and ap.newaxis is None
    b = ap.zeros(3)
    ap.copyto(b, ap.asarray([1.0, 2.0, 3.0]))
    assert b.tolist() == [1.0, 2.0, 3.0]


def test_mxnet_spellings() -> None:
    from autopar import npx

    npx.set_np()
    x = ap.asarray([[-1.0, 2.0], [3.0, -4.0]])
    assert npx.relu(x).tolist() == [[0.0, 2.0], [3.0, 0.0]]
    np.testing.assert_allclose(npx.sigmoid(x).numpy(), 1 / (1 + np.exp(-x.numpy())), rtol=1e-6)
    np.testing.assert_allclose(npx.softmax(x).numpy(), torch.softmax(torch.tensor(x.numpy()), -1).numpy(), rtol=1e-6)
    np.testing.assert_allclose(npx.log_softmax(x, axis=0).numpy(),
                               torch.log_softmax(torch.tensor(x.numpy()), 0).numpy(), rtol=1e-6)  # fmt: skip
    npx.waitall()
    assert npx.cpu() == ap.cpu(0) and npx.num_gpus() == ap.num_gpus()
    y = x.as_in_context(ap.cpu())
    assert x.as_in_ctx(ap.cpu()).tolist() == x.tolist()
    assert y.asnumpy().tolist() == x.tolist() and x.context == ap.cpu(0)


def test_pytorch_spellings() -> None:
    x = ap.arange(6.0)
    v = x.view(2, 3)
    assert v.shape == (2, 3) and v.permute(1, 0).shape == (3, 2) and v.t().shape == (3, 2)
    assert v.unsqueeze(0).shape == (1, 2, 3) and v.sum(dim=1, keepdim=True).tolist() == [[3.0], [12.0]]
    assert v.mean(dim=0).tolist() == [1.5, 2.5, 3.5] and v.dim() == 2 and v.numel() == 6
    assert x.long().dtype == ap.int64 and x.int().dtype == ap.int32 and x.long().float().dtype == ap.float32
    assert x.double().dtype == ap.float64 and x.bool().dtype == ap.bool and x.half().dtype == ap.float16
    c = x.clone()
    c.add_(1).mul_(2)
    assert c.tolist() == [2.0, 4.0, 6.0, 8.0, 10.0, 12.0] and x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    c.zero_()
    assert c.tolist() == [0.0] * 6
    v[0] = 7  # v is a view of x, as in PyTorch
    assert x.tolist()[:3] == [7.0, 7.0, 7.0]
    with pytest.raises(ValueError, match="view: copy=False|cannot be reshaped without a copy"):
        v.T.view(6)
    ap.cuda.synchronize()
    assert ap.cuda.is_available() == (ap.num_gpus() > 0)
    assert x.to("float64").dtype == ap.float64 and x.to(ap.cpu()).device == ap.cpu(0)
    assert ap.zeros(2, 3).shape == (2, 3) and ap.ones(2, 3).sum().item() == 6.0
