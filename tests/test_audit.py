"""Rules the mutation audit found unguarded: each test names the mutation it catches."""

from __future__ import annotations

import math

import pytest

import autopar as ap


@pytest.mark.parametrize(("other", "want"), [("float32", "float32"), ("int64", "bfloat16"), ("float16", "float32")])
def test_bfloat16_promotes_with_dtypes_numpy_knows(other: str, want: str) -> None:
    """Catches ``or`` -> ``and`` in ``_dtypes.promote``'s check for a dtype NumPy lacks (it raised)."""
    a = ap.ones(2, dtype="bfloat16")
    b = ap.ones(2, dtype=other)
    assert (a + b).dtype == ap.asarray([1], dtype=want).dtype
    assert (b + a).dtype == (a + b).dtype


def test_sign_of_nan_is_nan() -> None:
    """Catches ``sign(nan)`` giving 0 (torch's answer; NumPy and the standard say nan)."""
    out = ap.sign(ap.asarray([math.nan, -2.0, 0.0, 3.0])).tolist()
    assert math.isnan(out[0]) and out[1:] == [-1.0, 0.0, 1.0]


def test_train_refuses_zero_epochs(capsys) -> None:  # type: ignore[no-untyped-def]
    """Catches ``--epochs 0`` being accepted (a run that trains nothing and reports it)."""
    from autopar.cli import main

    assert main(["train", "--epochs", "0"]) == 1
    assert "--epochs must be a whole number >= 1" in capsys.readouterr().err
