"""Golden tests, sigrok style: `pintime analyze` on each committed example capture (captures/*.wav), its
printed output diffed line by line against tests/golden/<case>.txt.

They need only the committed captures. The command runs as a user runs it, from the repository's root with
the capture's relative path, so the output holds no absolute path and no timing: nothing is normalised.

After a change that is meant to change the output (a new firmware revision in the captures' RUN frame after
`make example-captures`, a new column, another rounding), regenerate every expected file and review the diff:

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/golden
    git diff tests/golden
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import CAPTURES, ROOT

GOLDEN = Path(__file__).resolve().parent
UPDATE = os.environ.get("UPDATE_GOLDEN", "") not in ("", "0")
CASES = {  # expected file (without .txt) → `pintime analyze` arguments
    f"{capture.stem}": [capture.relative_to(ROOT).as_posix()] for capture in sorted(CAPTURES.glob("*.wav"))
} | {"table1-noisy.inflection": ["captures/table1-noisy.wav", "--method", "inflection"],
     "table1-default.quiet": ["captures/table1-default.wav", "-q"],
     "table1-default.verbose": ["captures/table1-default.wav", "-v"]}


def pintime(*argv: str) -> str:
    """``pintime ARGV`` in a fresh interpreter, from the repository's root: what it prints on stdout. It
    must succeed and print nothing on stderr."""
    done = subprocess.run([sys.executable, "-m", "pintime.cli", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0 and done.stderr == "", (done.returncode, done.stderr)
    return done.stdout


def test_every_committed_capture_has_a_case():
    assert {"table1-default", "table1-noisy", "table1-wide-filter"} <= set(CASES)


def test_quiet_is_the_tables_alone_and_verbose_adds_the_diagnostics():
    """-q prints what follows the default's header block; -v the same header and table, with each line fit's
    diagnostics below it (docs/design.md §6)."""
    default = (GOLDEN / "table1-default.txt").read_text()
    header, tables = default.split("\n\n", 1)
    assert all(line.split(":", 1)[0] in HEADER_LABELS for line in header.splitlines())
    assert (GOLDEN / "table1-default.quiet.txt").read_text() == tables
    verbose = (GOLDEN / "table1-default.verbose.txt").read_text()
    assert verbose.startswith(default.rstrip("\n")) and "intercept (ε)" in verbose
    assert "intercept" not in default


HEADER_LABELS = {"capture", "program", "clock", "calibration", "frames", "ladder", "edge shape", "rounding",
                 "warning"}


@pytest.mark.parametrize("case", CASES)
def test_analyze_output_is_the_golden_one(case):
    expected_file = GOLDEN / f"{case}.txt"
    actual = pintime("analyze", *CASES[case])
    if UPDATE:
        expected_file.write_text(actual)
        return
    if not expected_file.exists():
        pytest.fail(f"{expected_file.relative_to(ROOT)} missing: run `UPDATE_GOLDEN=1 .venv/bin/python -m "
                    "pytest tests/golden` and commit it")
    expected = expected_file.read_text()
    if actual != expected:
        diff = difflib.unified_diff(expected.splitlines(keepends=True), actual.splitlines(keepends=True),
                                    f"{expected_file.relative_to(ROOT)} (expected)",
                                    f"pintime analyze {' '.join(CASES[case])} (actual)")
        pytest.fail("output differs from the golden file (UPDATE_GOLDEN=1 regenerates it, see this "
                    "file's docstring):\n" + "".join(diff), pytrace=False)
