"""Run the Array API standard's official test suite (data-apis/array-api-tests)
against autopar and NumPy 2.x and print the comparison, per test module.

    python bench/array_api_tests.py PATH/TO/array-api-tests \
        [--max-examples 20] [--modules autopar numpy] [--random] [--keep DIR]

PATH is a checkout of the suite with its ``array-api`` spec submodule in
place (the suite reads the spec's function stubs).  The suite's own
requirements must be installed in this environment: ``pytest``,
``hypothesis``, ``ndindex`` and ``pytest-json-report``.  Each library runs in
its own pytest process with ``ARRAY_API_TESTS_MODULE=<library>`` and
``ARRAY_API_TESTS_VERSION=2023.12``, the hypothesis deadline off (timing is
not conformance), hypothesis derandomized (the same examples every run, so
two runs compare; ``--random`` draws fresh ones) and both extensions
(``linalg``, ``fft``) enabled; the counts come from pytest-json-report's
per-test outcomes.  Not part of CI:
CI cannot fetch the suite.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

OUTCOMES = ("passed", "failed", "skipped", "error")


def run_suite(checkout: Path, module: str, max_examples: int, report: Path, derandomize: bool) -> float:
    """Run the whole suite for one library; return the wall time in seconds."""
    env = dict(os.environ, ARRAY_API_TESTS_MODULE=module, ARRAY_API_TESTS_VERSION="2023.12")
    cmd = [
        sys.executable, "-m", "pytest", "array_api_tests/", "-q", "-p", "no:cacheprovider",
        f"--max-examples={max_examples}", "--disable-deadline",
        "--json-report", f"--json-report-file={report}", "--json-report-omit", "log", "keywords",
    ] + (["--derandomize"] if derandomize else [])
    start = time.perf_counter()
    subprocess.run(cmd, cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    if not report.exists():
        raise SystemExit(f"no report from the {module} run: run `{' '.join(cmd)}` in {checkout} to see why")
    return time.perf_counter() - start


def outcome(test: dict[str, Any]) -> str:
    """One of OUTCOMES for a pytest-json-report test record."""
    if test["outcome"] in ("passed", "failed", "skipped"):
        return str(test["outcome"])
    if test["outcome"] in ("xfailed", "xpassed"):
        return "failed" if test["outcome"] == "xfailed" else "passed"
    return "error"


def counts(report: Path) -> tuple[dict[str, collections.Counter[str]], dict[str, str]]:
    """Per test module: a Counter of outcomes; and every test's outcome by node id."""
    tests = json.loads(report.read_text())["tests"]
    per_module: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    by_id: dict[str, str] = {}
    for test in tests:
        module = test["nodeid"].split("::")[0].rsplit("/", 1)[-1].removesuffix(".py")
        result = outcome(test)
        per_module[module][result] += 1
        by_id[test["nodeid"]] = result
    return per_module, by_id


def table(results: dict[str, dict[str, collections.Counter[str]]]) -> str:
    modules = sorted({m for per in results.values() for m in per})
    libs = list(results)
    head = f"{'test module':<42}" + "".join(f"{lib + ' pass/fail/skip/err':>30}" for lib in libs)
    lines = [head, "-" * len(head)]
    totals = {lib: collections.Counter[str]() for lib in libs}
    for module in modules:
        row = f"{module:<42}"
        for lib in libs:
            c = results[lib].get(module, collections.Counter())
            totals[lib] += c
            row += f"{'/'.join(str(c[o]) for o in OUTCOMES):>30}"
        lines.append(row)
    lines.append("-" * len(head))
    lines.append(f"{'total':<42}" + "".join(f"{'/'.join(str(totals[lib][o]) for o in OUTCOMES):>30}" for lib in libs))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkout", type=Path, help="a checkout of data-apis/array-api-tests (with its array-api submodule)")
    parser.add_argument("--max-examples", type=int, default=20, help="hypothesis examples per test (default 20)")
    parser.add_argument("--modules", nargs="+", default=["autopar", "numpy"], help="array namespaces to run")
    parser.add_argument("--random", action="store_true", help="fresh hypothesis examples (default: derandomized)")
    parser.add_argument("--keep", type=Path, help="write the json reports here instead of a temporary folder")
    args = parser.parse_args()
    if not (args.checkout / "array_api_tests").is_dir():
        raise SystemExit(f"{args.checkout} has no array_api_tests/ folder: give the path of an array-api-tests checkout")
    out = args.keep or Path(tempfile.mkdtemp(prefix="array-api-tests-"))
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, collections.Counter[str]]] = {}
    by_id: dict[str, dict[str, str]] = {}
    for module in args.modules:
        report = out / f"{module}.json"
        seconds = run_suite(args.checkout, module, args.max_examples, report, not args.random)
        results[module], by_id[module] = counts(report)
        print(f"{module}: {sum(results[module].values(), collections.Counter()).total()} tests in {seconds:.0f} s", file=sys.stderr)
    print(table(results))
    if len(args.modules) == 2:
        a, b = args.modules
        worse = sorted(t for t, o in by_id[a].items() if o in ("failed", "error") and by_id[b].get(t) == "passed")
        better = sorted(t for t, o in by_id[b].items() if o in ("failed", "error") and by_id[a].get(t) == "passed")
        print(f"\n{len(worse)} tests fail on {a} but pass on {b}:")
        print("\n".join(f"  {t}" for t in worse) or "  (none)")
        print(f"{len(better)} tests fail on {b} but pass on {a}:")
        print("\n".join(f"  {t}" for t in better) or "  (none)")
    print(f"\nreports: {out}")


if __name__ == "__main__":
    main()
