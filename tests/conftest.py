"""Fixtures shared by every folder of tests/ (helpers are in support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import make_build, require_sim


@pytest.fixture(scope="session")
def make_sim() -> Path:
    """``build/sim`` with `make sim`'s outputs, or the test is skipped, always with the same message.
    Session-scoped so that it is checked before any module fixture reads build/sim."""
    return require_sim()


@pytest.fixture(scope="session")
def build_16mhz(tmp_path_factory) -> Path:
    """A 16 MHz, 2-repetition table1 build (firmware, harness, simavr run) in a temporary BUILD: a time
    base that is not 1 µs per cycle."""
    return make_build(tmp_path_factory.mktemp("build16"), "sim", F_CPU=16000000, REPS=2, PROGRAMS="table1")
