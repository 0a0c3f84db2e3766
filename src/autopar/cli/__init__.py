"""``autopar devices | demo | bench | train | cluster``: see the parallelism from the shell.

Before a command runs, its settings and outputs are checked (``_checks.py``):
problems are one line at the start, never a traceback or a failure after
the whole run. Unknown options get the command's own usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from autopar.errors import AutoparError


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    from autopar.cli import bench, cluster, demo, devices, train

    parser = argparse.ArgumentParser(
        prog="autopar",
        description="autopar: sequential array code, run in parallel automatically.",
        epilog="Run 'autopar COMMAND --help' for a command's options.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (devices, demo, bench, train, cluster):
        module.add_parser(sub)
    return parser, dict(sub.choices)


def main(argv: Sequence[str] | None = None) -> int:
    from autopar.cli import _checks

    parser, commands = _parser()
    args, extra = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if extra:
        commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")  # exits 2, the command's usage
    problem = _checks.settings_problem() or _checks.output_problem(args)
    if problem is not None:
        print(f"autopar {args.command}: error: {problem}", file=sys.stderr)
        return 2
    warning = _checks.device_warning(args)
    if warning is not None:
        print(f"autopar {args.command}: warning: {warning}", file=sys.stderr)
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        print("autopar: interrupted", file=sys.stderr)
        return 130
    except (AutoparError, ValueError, OSError, ImportError) as error:
        print(f"autopar {args.command}: error: {error}", file=sys.stderr)
        return 1
