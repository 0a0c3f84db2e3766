"""Every code block of README.md runs as printed.

Python blocks run one after another in one fresh interpreter, each in a
namespace of its own (a block that uses a name it does not define fails, as
it would for a reader who pastes it), with ``AUTOPAR_DATA`` pointing at an
empty folder (nothing is downloaded) and a temporary working folder. Shell
blocks run with bash in that folder. A block preceded by
``<!-- not run by tests/test_readme.py: REASON -->`` is left to what REASON
names: ``install`` (the quick start: CI's script installs and tests the same
way), ``cluster`` (the cluster tests run those), ``measurement`` (benchmark
runs of minutes). ``text`` blocks are output, not code.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
REASONS = {"install", "cluster", "measurement"}
_BLOCK = re.compile(r"(?:<!-- not run by tests/test_readme\.py: (?P<reason>[\w-]+) -->\n)?```(?P<lang>[\w-]*)\n(?P<code>.*?)```",
                    re.S)  # fmt: skip


def blocks() -> list[tuple[int, str, str, str | None]]:
    """(line, language, code, reason not run) of every fenced block."""
    text = README.read_text()
    out = []
    for m in _BLOCK.finditer(text):
        line = text.count("\n", 0, m.start("code"))
        out.append((line, m.group("lang"), m.group("code"), m.group("reason")))
    return out


def test_every_block_says_what_it_is() -> None:
    found = blocks()
    assert len(found) >= 8
    for line, lang, _, reason in found:
        assert lang in ("python", "bash", "text"), f"README.md:{line}: a block without a language ({lang!r})"
        assert reason is None or reason in REASONS, f"README.md:{line}: unknown reason {reason!r}"


_DRIVER = r'''
import json, sys, traceback
results = []
for line, code in json.load(sys.stdin):
    namespace = {"__name__": "__main__"}
    try:
        exec(compile(code, f"README.md:{line}", "exec"), namespace)
        import autopar
        autopar.waitall()
        autopar.set_cpu_devices(1)
        results.append([line, None])
    except BaseException:
        results.append([line, traceback.format_exc()])
print("RESULTS " + json.dumps(results))
'''


def test_python_blocks_run_as_printed(tmp_path: Path) -> None:
    code = [(line, c) for line, lang, c, reason in blocks() if lang == "python" and reason is None]
    assert len(code) >= 5
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOPAR_")}
    env["AUTOPAR_DATA"] = str(tmp_path / "data")
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run([sys.executable, "-c", _DRIVER], input=json.dumps(code), capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=600)  # fmt: skip
    marker = [l for l in proc.stdout.splitlines() if l.startswith("RESULTS ")]
    assert marker, proc.stdout[-3000:] + proc.stderr[-3000:]
    failures = [f"README.md:{line}\n{error}" for line, error in json.loads(marker[-1][len("RESULTS "):]) if error]
    assert not failures, "\n".join(failures)


def test_shell_blocks_run_as_printed(tmp_path: Path) -> None:
    for line, lang, code, reason in blocks():
        if lang == "bash" and reason is None:
            proc = subprocess.run(["bash", "-euo", "pipefail", "-c", code], capture_output=True, text=True, cwd=tmp_path,
                                  timeout=600)  # fmt: skip
            assert proc.returncode == 0, f"README.md:{line}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"


@pytest.mark.parametrize(
    "path", ["README.md", *sorted(str(p.relative_to(README.parent)) for p in (README.parent / "docs").rglob("*.md"))]
)
def test_user_docs_name_no_issue_and_no_path_outside_the_repo(path: str) -> None:
    text = (README.parent / path).read_text()
    for pattern in (r"(?i)\bissue \d+", r"(?i)issue's", r"\.\./shared", r"\bSPEC\b", r"/work/", r"\.\./mxvenv"):
        found = re.search(pattern, text)
        assert found is None, f"{path}: {found.group(0)!r} at {text.count(chr(10), 0, found.start()) + 1}"
