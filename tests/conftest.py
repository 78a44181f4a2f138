"""Fixtures shared by every folder of tests/ (helpers are in support.py)."""

from __future__ import annotations

from pathlib import Path

import pintime  # noqa: F401  (first: one BLAS thread, as the command line has, before numpy loads)
import pytest
from support import make_build, require_sim

SIM_FIXTURES = {"make_sim", "build_16mhz"}  # each reads or makes a simavr run
SIM_FOLDER = Path(__file__).resolve().parent / "sim"  # every test here needs simavr (tests/README.md)
SHARED_SCOPES = {"session", "package", "module", "class"}  # a fixture computed once for many tests
CHEAP_SHARED = {"make_sim"}  # shared, but it only checks that files exist


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by marker and before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The marker ``sim`` (pytest.ini) on every test that needs `make sim`: those in tests/sim/ and those
    that use a fixture of :data:`SIM_FIXTURES`, directly or through another fixture; and its xdist group
    (:func:`shared_group`) on every test that shares an expensive fixture."""
    for item in items:
        if SIM_FIXTURES & set(getattr(item, "fixturenames", ())) or SIM_FOLDER in item.path.parents:
            item.add_marker(pytest.mark.sim)
        group = shared_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def shared_group(item: pytest.Item) -> str | None:
    """The worker group of a test under `pytest -n N --dist loadgroup` (`make test`): the tests that use one
    fixture computed once for many (a module's render, a session's build) run on one worker, so it is
    computed once, not once per worker; the first such fixture of tests/ (pytest's own are cheap) names the
    group: a session's by its own name, any other by the test's file. None: the test may run on any
    worker."""
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()) if info is not None else ():
        definitions = info.name2fixturedefs.get(name, ())
        if name in CHEAP_SHARED or not definitions or not definitions[-1].baseid:
            continue
        if definitions[-1].scope == "session":
            return name
        if definitions[-1].scope in SHARED_SCOPES:
            return item.nodeid.split("::")[0]
    return None


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
