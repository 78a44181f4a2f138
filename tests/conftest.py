"""Fixtures shared by every folder of tests/ (helpers are in support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import make_build, require_sim

SIM_FIXTURES = {"make_sim", "build_16mhz"}  # each reads or makes a simavr run
SIM_FOLDER = Path(__file__).resolve().parent / "sim"  # every test here needs simavr (tests/README.md)


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The marker ``sim`` (pytest.ini) on every test that needs `make sim`: those in tests/sim/ and those
    that use a fixture of :data:`SIM_FIXTURES`, directly or through another fixture."""
    for item in items:
        if SIM_FIXTURES & set(getattr(item, "fixturenames", ())) or SIM_FOLDER in item.path.parents:
            item.add_marker(pytest.mark.sim)


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
