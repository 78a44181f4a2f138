"""The ``--short`` check shared by the benchmarks: every figure a run prints was produced.

A short run (``make bench-short``, part of ``make test``) works on a small input, so its figures say
nothing about the targets; it proves the benchmark still runs end to end and still yields each figure as
a finite number (or a yes/no answer). The full ``make bench`` judges the values.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _produced(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, list):
        return len(value) > 0 and all(_finite(v) for v in value)
    return _finite(value)


def _lookup(row: dict, key: str) -> Any:
    """``row["a"]["b"]`` for the key ``"a.b"``; None where a level is missing."""
    value: Any = row
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def missing_figures(rows: list[dict], keys: Iterable[str]) -> list[str]:
    """One line per figure (``key`` in a row, dotted for nested dicts) that is absent or not finite."""
    return [f"row {k}: {key} = {_lookup(row, key)!r}"
            for k, row in enumerate(rows) for key in keys if not _produced(_lookup(row, key))]


def finish(name: str, rows: list[dict], json_path: Path, short: bool, keys: list[str],
           checked: list[dict] | None = None) -> int:
    """Write the benchmark ``name``'s ``rows`` to ``json_path``; the exit status: in a short run
    :func:`check_short`'s on ``checked`` (default: every row), else 0."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(rows, indent=2) + "\n")
    return check_short(name, rows if checked is None else checked, keys) if short else 0


def check_short(name: str, rows: list[dict], keys: list[str]) -> int:
    """Print the verdict of a short run of the benchmark ``name``; the exit status (0: every figure)."""
    bad = missing_figures(rows, keys) if rows else ["no rows at all"]
    for line in bad:
        print(f"{name} --short: figure not produced: {line}", file=sys.stderr)
    if not bad:
        print(f"{name} --short: all {len(keys)} figures produced in each of {len(rows)} rows (values not "
              "judged in a short run)")
    return 1 if bad else 0
