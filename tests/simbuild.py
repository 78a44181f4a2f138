"""Private builds for tests: the project's own Makefile run into a temporary BUILD directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make_build(build: Path, *targets: str, **variables: object) -> Path:
    """``make -C ROOT BUILD=build VAR=value … targets`` (quiet; raises on failure); returns ``build``."""
    settings = [f"{name}={value}" for name, value in variables.items()]
    subprocess.run(["make", "-s", "-C", str(ROOT), f"BUILD={build}", *settings, *targets],
                   check=True, capture_output=True, text=True)
    return build
