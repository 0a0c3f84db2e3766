"""What every command checks before it starts: settings, output paths, the machine.

A bad ``AUTOPAR_*`` value, a ``--plot`` into a missing folder or without
matplotlib, a ``--json`` that cannot be written: each is one line at the
start, not a traceback or a failure after the whole run.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

OUTPUTS = ("plot", "trace", "json")


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def settings_problem() -> str | None:
    """The first malformed ``AUTOPAR_*`` setting, as one line; None when all are fine."""
    from autopar import _config

    for read in (_config.engine_name, _config.cpu_devices, _config.max_pending, _config.exit_timeout,
                 _config.default_dtype, _config.capture_traces, _config.gc_freeze):  # fmt: skip
        try:
            read()
        except ValueError as error:
            return str(error)
    return None


def output_problem(args: Any) -> str | None:
    """The first output path of ``args`` that cannot be written (or drawn), as one line."""
    for name in OUTPUTS:
        path = getattr(args, name, None)
        if path is None:
            continue
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            return f"--{name} {path}: the folder {folder} does not exist; create it first"
        if not os.access(folder, os.W_OK):
            return f"--{name} {path}: the folder {folder} is not writable"
        if name == "plot" and importlib.util.find_spec("matplotlib") is None:
            return "--plot needs matplotlib: pip install 'autopar[plot]' (or pip install matplotlib)"
    return None


def device_warning(args: Any) -> str | None:
    """A warning when more CPU devices are asked for than there are cores."""
    from autopar import _config

    wanted = getattr(args, "cpu_devices", None) or _config.cpu_devices()
    have = cores()
    if wanted > have:
        return (f"{wanted} CPU devices on {have} core{'s' if have != 1 else ''}: devices share cores, so work on "
                "them takes turns instead of running side by side")
    return None


def load_average() -> float | None:
    """The 1-minute load average (None where the system does not tell)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None
