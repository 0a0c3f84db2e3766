"""autopar.numpy against NumPy itself: every name and parameter of the installed NumPy's public namespaces
(``__all__``, ``inspect.signature``) is served, or listed with its reason in autopar.numpy._unsupported, which
docs/arrays.md shows. The lists must be honest both ways: nothing listed exists after all."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import numpy
import pytest

import autopar.numpy as np
from autopar.numpy import _unsupported

# The table is NumPy 2's (written against 2.4); NumPy 1's namespace is another one.
pytestmark = pytest.mark.skipif(int(numpy.__version__.split(".")[0]) < 2, reason="autopar.numpy follows NumPy 2")

MODULES = {"": (numpy, np), "linalg.": (numpy.linalg, np.linalg), "fft.": (numpy.fft, np.fft),
           "random.": (numpy.random, np.random)}  # fmt: skip
_MISSING = object()
DOCS = Path(__file__).resolve().parents[1] / "docs" / "arrays.md"


def _names() -> dict[str, tuple[Any, Any]]:
    """Every public NumPy name (as ``linalg.eig``) -> (NumPy's object, autopar.numpy's or _MISSING)."""
    out = {}
    for prefix, (theirs, ours) in MODULES.items():
        for name in theirs.__all__:
            if not name.startswith("_") and name not in ("fft", "linalg", "random"):
                out[prefix + name] = (getattr(theirs, name), getattr(ours, name, _MISSING))
    return out


def test_every_numpy_name_is_served_or_listed_with_a_reason() -> None:
    listed = _unsupported.names()
    names = _names()
    missing = sorted(n for n, (_, ours) in names.items() if ours is _MISSING and n not in listed)
    assert missing == [], f"NumPy names autopar.numpy neither serves nor lists in _unsupported.NAMES: {missing}"
    served = sorted(n for n in listed if n in names and names[n][1] is not _MISSING)
    assert served == [], f"listed as unsupported but served (remove them from _unsupported.NAMES): {served}"
    unknown = sorted(n for n in listed if n not in names)
    assert unknown == [], f"listed names NumPy does not have: {unknown}"
    assert all(reason.strip() for reason, _ in _unsupported.NAMES)


def _parameters(fn: Any) -> dict[str, inspect.Parameter] | None:
    try:
        return dict(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None


def _lacking(theirs: dict[str, inspect.Parameter], ours: dict[str, inspect.Parameter]) -> list[str]:
    """NumPy's parameters that autopar's function does not take by that name. A required positional
    parameter counts as taken when ours has a positional one at the same place (NumPy's ``a``, the
    standard's ``x``); ours taking ``**kwargs`` takes everything."""
    if any(p.kind is p.VAR_KEYWORD for p in ours.values()):
        return []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    order = list(ours.values())
    lacking = []
    for i, (name, p) in enumerate(theirs.items()):
        if name in ours or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.kind in positional and p.default is p.empty and i < len(order) and order[i].kind in positional:
            continue
        lacking.append(name)
    return lacking


def test_every_numpy_parameter_is_taken_or_listed_with_a_reason() -> None:
    unexplained, used = [], set()
    for name, (theirs, ours) in _names().items():
        if ours is _MISSING or not callable(theirs) or isinstance(theirs, type):
            continue
        pt, po = _parameters(theirs), _parameters(ours)
        if pt is None or po is None:
            continue
        for p in _lacking(pt, po):
            if _unsupported.reason(name, p) is None:
                unexplained.append(f"{name}({p}=)")
            if p in _unsupported.FUNCTION_PARAMETERS.get(name, {}):
                used.add((name, p))
    assert unexplained == [], f"NumPy parameters refused without a reason in _unsupported: {unexplained}"
    stale = sorted(f"{f}({p}=)" for f, ps in _unsupported.FUNCTION_PARAMETERS.items() for p in ps if (f, p) not in used)
    assert stale == [], f"listed as refused but taken (or not NumPy's): {stale}"


def test_served_functions_keep_numpys_parameter_names_for_the_arguments_programs_pass() -> None:
    """The arguments the issue names are taken by name, as NumPy programs pass them."""
    for fn, params in [(np.round, ["decimals", "out"]), (np.sum, ["axis", "dtype", "out", "keepdims", "initial",
                       "where"]), (np.add, ["out", "where", "dtype", "casting"]), (np.fft.rfft, ["n", "axis", "norm"]),
                       (np.trapezoid, ["x", "dx", "axis"]), (np.einsum, ["optimize", "out"]), (np.argsort, ["kind"]),
                       (np.sort, ["kind"]), (np.bincount, ["weights", "minlength"]), (np.pad, ["mode"]),
                       (np.reshape, ["order"]), (np.ravel, ["order"]), (np.take, ["axis", "out", "mode"])]:  # fmt: skip
        assert set(params) <= set(inspect.signature(fn).parameters), fn


def test_docs_show_the_same_table() -> None:
    """docs/arrays.md mirrors _unsupported (its markdown(), between the markers): a row per group of names
    with its reason, per refused parameter, per function's refused parameter."""
    text = DOCS.read_text()
    start = text.index("<!-- unsupported-numpy: start -->") + len("<!-- unsupported-numpy: start -->")
    shown = text[start:text.index("<!-- unsupported-numpy: end -->")].strip()
    assert shown == _unsupported.markdown(), "regenerate the table in docs/arrays.md from _unsupported.markdown()"


@pytest.mark.parametrize("name", ["nditer", "vectorize", "random.PCG64"])
def test_a_missing_name_says_so_and_where_the_table_is(name: str) -> None:
    module, _, attr = name.rpartition(".")
    why = _unsupported.names()[name]
    with pytest.raises(AttributeError, match=re.escape(f"no attribute {attr!r}; NumPy's {name} is not supported: {why}")):
        getattr(getattr(np, module) if module else np, attr)
