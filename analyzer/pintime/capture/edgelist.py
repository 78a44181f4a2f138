"""Edge lists (``cycle,channel,level`` CSV from the simavr harness): exact edges in MCU cycles."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from pintime.edges import MAX_CHANNEL, Edges
from pintime.errors import PintimeError

HEADER = "cycle,channel,level"


def read_edge_list(path: str | Path) -> Edges:
    """Read an edge-list CSV: header ``cycle,channel,level``, one edge per line.

    ``level`` is the pin level after the edge, so polarity is +1 for level 1 and -1 for level 0. Times are
    cycles (``unit_s`` is None: the clock calibration finds the scale from the 1 s reference).

    Raises
    ------
    PintimeError
        On a missing or unreadable file, a wrong header, a non-integer field, a channel outside 0 … 8, a
        level other than 0/1, cycles going backwards or beyond 2**53, or a level that does not change on its
        channel.
    """
    path = Path(path)
    try:
        with open(path, encoding="ascii") as f:
            header = f.readline().strip()
            if header != HEADER:
                raise PintimeError(f"{path}: not an edge list (first line must be '{HEADER}')")
            with warnings.catch_warnings():  # no rows is an error of its own below, not a warning
                warnings.filterwarnings("ignore", "loadtxt: input contained no data")
                rows = np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2)
    except (OSError, UnicodeDecodeError) as err:
        raise PintimeError(f"{path}: cannot read edge list ({err.__class__.__name__}: {err})") from None
    except ValueError as err:
        raise PintimeError(f"{path}: malformed edge list ({err})") from None
    if rows.size == 0:
        raise PintimeError(f"{path}: edge list has no edges")
    if rows.shape[1] != 3:
        raise PintimeError(f"{path}: edge list rows must have 3 fields, found {rows.shape[1]}")
    cycle, channel, level = rows[:, 0], rows[:, 1], rows[:, 2]
    if np.any((channel < 0) | (channel > MAX_CHANNEL)):
        raise PintimeError(f"{path}: channel must be 0 (measurement), 1 (reference) or 2 … {MAX_CHANNEL} "
                           "(signal pins PA1 …)")
    if np.any((level != 0) & (level != 1)):
        raise PintimeError(f"{path}: level must be 0 or 1")
    if np.any(cycle < 0) or np.any(np.diff(cycle) < 0):
        raise PintimeError(f"{path}: cycles must be non-negative and non-decreasing")
    if cycle[-1] > 2**53:  # Edges.time is float64: integers beyond 2**53 would be rounded
        raise PintimeError(f"{path}: cycle {cycle[-1]} is too large to keep exact (limit 2**53)")
    for ch in np.unique(channel):
        lv = level[channel == ch]
        if np.any(lv[1:] == lv[:-1]):
            raise PintimeError(f"{path}: channel {ch} has two edges in a row to the same level")
    polarity = np.where(level == 1, 1, -1).astype(np.int8)
    return Edges(cycle.astype(np.float64), channel.astype(np.int8), polarity,
                 np.zeros(len(cycle)), None, str(path))
