"""Every ``AUTOPAR_*`` setting, read in one place.

| variable               | default       | meaning                                                      |
|------------------------|---------------|--------------------------------------------------------------|
| ``AUTOPAR_ENGINE``     | ``threaded``  | engine policy: ``threaded`` or ``naive``                     |
| ``AUTOPAR_CPU_DEVICES``| ``1``         | split the machine's cores into this many CPU devices         |
| ``AUTOPAR_MAX_PENDING``| ``10000``     | bound on pushed-but-unfinished ops; ``push`` blocks past it  |
| ``AUTOPAR_EXIT_TIMEOUT``| ``30``       | seconds pending work may take at exit before it is cancelled |
| ``AUTOPAR_DATA``       | ``~/.cache/autopar/data`` | where datasets are looked for and downloaded to    |
| ``AUTOPAR_DEFAULT_DTYPE``| ``float32`` | ``autopar``'s default float: ``float32`` or ``float64`` (NumPy's dtype rules; ``autopar.numpy`` always has them) |
| ``AUTOPAR_CAPTURE_TRACES``| ``8``      | traces each ``autopar.capture`` function keeps (least recently used dropped) |
| ``AUTOPAR_GC_FREEZE``  | ``1``         | ``0``: leave Python's collector alone when arrays load (``_gc``) |

Each is read once, when first needed; code overrides them with
``engine.set_engine``, ``set_cpu_devices``, ``engine.set_max_pending`` and
``set_default_dtype``.
A malformed value raises ``ValueError`` naming the variable and what it takes.
"""

from __future__ import annotations

import os

ENGINES = ("threaded", "naive")
DEFAULT_MAX_PENDING = 10_000
DEFAULT_EXIT_TIMEOUT = 30.0
DEFAULT_CAPTURE_TRACES = 8


def _positive_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{name}={raw!r}: expected a whole number >= 1; unset it for the default {default}")
    return value


def engine_name() -> str:
    raw = os.environ.get("AUTOPAR_ENGINE", "threaded").strip().lower() or "threaded"
    if raw not in ENGINES:
        raise ValueError(f"AUTOPAR_ENGINE={raw!r}: expected one of {', '.join(ENGINES)}")
    return raw


def cpu_devices() -> int:
    return _positive_int("AUTOPAR_CPU_DEVICES", 1)


def max_pending() -> int:
    return _positive_int("AUTOPAR_MAX_PENDING", DEFAULT_MAX_PENDING)


def capture_traces() -> int:
    return _positive_int("AUTOPAR_CAPTURE_TRACES", DEFAULT_CAPTURE_TRACES)


def exit_timeout() -> float:
    raw = os.environ.get("AUTOPAR_EXIT_TIMEOUT")
    if raw is None or raw.strip() == "":
        return DEFAULT_EXIT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value < 0:
        raise ValueError(f"AUTOPAR_EXIT_TIMEOUT={raw!r}: expected seconds >= 0")
    return value


def default_dtype() -> str:
    raw = os.environ.get("AUTOPAR_DEFAULT_DTYPE", "").strip().lower() or "float32"
    if raw not in ("float32", "float64"):
        raise ValueError(f"AUTOPAR_DEFAULT_DTYPE={raw!r}: expected float32 (deep learning's default) "
                         "or float64 (NumPy's)")
    return raw


def gc_freeze() -> bool:
    raw = os.environ.get("AUTOPAR_GC_FREEZE", "").strip()
    if raw not in ("", "0", "1"):
        raise ValueError(f"AUTOPAR_GC_FREEZE={raw!r}: expected 1 (freeze what is alive when arrays load) or 0 "
                         "(leave Python's garbage collector alone); unset it for the default 1")
    return raw != "0"


def data_root() -> str:
    raw = os.environ.get("AUTOPAR_DATA", "").strip()
    if raw:
        return os.path.expanduser(raw)
    cache = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "autopar", "data")
