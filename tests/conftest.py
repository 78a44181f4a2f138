"""Fixtures shared by several test files."""

from __future__ import annotations

from pathlib import Path

import pytest
from simbuild import make_build


@pytest.fixture(scope="session")
def build_16mhz(tmp_path_factory) -> Path:
    """A 16 MHz, 2-repetition table1 build (firmware, harness, simavr run) in a temporary BUILD: a time
    base that is not 1 µs per cycle."""
    return make_build(tmp_path_factory.mktemp("build16"), "sim", F_CPU=16000000, REPS=2, PROGRAMS="table1")
