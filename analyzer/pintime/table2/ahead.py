"""Visits read ahead: ``pintime measure``'s locating worker reads the visits file while the run is recorded
(:func:`pintime.liveworker.start_locating`), and the analysis at the END frame takes what it read instead of
reading it then (1.6 s of a 984 s run's results after END). Taken only while the file is unchanged (its
size and modification time), and once: it is let go as the rounds are joined, as a file read then is."""

from __future__ import annotations

from pathlib import Path

from pintime.errors import PintimeError
from pintime.table2.visits import SimRounds, load_sim_rounds

Stamp = tuple[Path, int, int]  # the file, its size and its modification time (ns)
_read: dict[Stamp, SimRounds] = {}  # at most one: what read_ahead read


def _stamp(path: Path) -> Stamp:
    status = path.stat()
    return path.resolve(), status.st_size, status.st_mtime_ns


def read_ahead(path: Path) -> None:
    """Read the visits file ``path`` now, for :func:`sim_rounds` to take; nothing where it cannot be read
    (the analysis reads it again and says why)."""
    _read.clear()
    try:
        _read[_stamp(path)] = load_sim_rounds(path)
    except (PintimeError, OSError):
        pass


def sim_rounds(path: Path) -> SimRounds:
    """The simavr run of the visits file ``path`` (:func:`pintime.table2.visits.load_sim_rounds`): what
    :func:`read_ahead` read of it, if it is unchanged since, else read now."""
    try:
        ahead = _read.pop(_stamp(path), None)
    except OSError:
        ahead = None
    _read.clear()
    return load_sim_rounds(path) if ahead is None else ahead
