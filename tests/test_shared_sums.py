"""Sums between CPU devices of one process (``parallel/_local.py``) against sums through copies
(forced on CPU devices, as GPUs and other machines' devices use them): a data-parallel step gives
the same bits either way, whatever its buckets hold, and after whatever happened to its arrays."""

from __future__ import annotations

import numpy as np
import pytest

import autopar as ap
from autopar import parallel
from autopar.parallel import _local


def _loss(params, x, y):  # type: ignore[no-untyped-def]
    w1, b1, w2 = params
    return ((ap.tanh(x @ w1 + b1) @ w2 - y) ** 2).mean()


def _train(monkeypatch, sums: str, n: int, optimizer, steps: int = 2, **options):  # type: ignore[no-untyped-def]
    """Parameters and gradients (bytes) after ``steps`` data-parallel steps on ``n`` CPU devices."""
    ap.set_cpu_devices(n)
    try:
        with monkeypatch.context() as m:
            if sums == "copies":
                m.setattr(_local, "shares_memory", lambda devices: False)
                m.setattr(_local, "shared_memory", lambda arrays: False)
            rng = np.random.default_rng(7)
            w0 = [rng.standard_normal(s).astype(np.float32) for s in ((4, 5), (5,), (5, 2))]
            replicas = parallel.replicate([ap.asarray(w) for w in w0], [ap.cpu(i) for i in range(n)])
            trainer = parallel.DataParallel(replicas, optimizer, **options)
            assert trainer._shared == (sums == "shared")
            for _ in range(steps):
                X, Y = rng.standard_normal((3 * n, 4)), rng.standard_normal((3 * n, 2))
                trainer.step_batch(_loss, X.astype(np.float32), Y.astype(np.float32))
            ap.waitall()
            return [[(p.numpy().tobytes(), p.grad.numpy().tobytes()) for p in row] for row in replicas]
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_one_parameter_buckets_update_with_the_bits_of_sums_through_copies(eng, monkeypatch, weight_decay) -> None:  # type: ignore[no-untyped-def]
    """A bucket of one parameter: through copies its update is the parameter's own op (not the bucket's
    one-pass kernel); summed in one op on shared memory it must update with the same bits."""
    got = {sums: _train(monkeypatch, sums, 3, parallel.sgd(0.1, weight_decay=weight_decay), bucket_size=1)
           for sums in ("shared", "copies")}  # fmt: skip
    assert got["shared"] == got["copies"]
