"""``autopar devices | demo | bench | train | cluster``: see the parallelism from the shell."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from autopar.errors import AutoparError


def _parser() -> argparse.ArgumentParser:
    from autopar.cli import bench, cluster, demo, devices, train

    parser = argparse.ArgumentParser(
        prog="autopar",
        description="autopar: sequential array code, run in parallel automatically.",
        epilog="Run 'autopar COMMAND --help' for a command's options.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    devices.add_parser(sub)
    demo.add_parser(sub)
    bench.add_parser(sub)
    train.add_parser(sub)
    cluster.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        print("autopar: interrupted", file=sys.stderr)
        return 130
    except (AutoparError, ValueError, OSError, ImportError) as error:
        print(f"autopar {args.command}: error: {error}", file=sys.stderr)
        return 1
