"""Four signal pins on a stereo card: two pins per audio channel through a resistor ladder, told apart by
the size of each edge's step.

Wiring (README "Four signals on one stereo card"; KERNEL.md §7 for the pairing): each audio channel sums
two pins with weights 2 : 1, so a pin's edge is a step of ±2 or ±1 *units* and an edge of both pins at once
±3 or ±1 (one rises, the other falls). Both pins' levels are tracked, so each step is read against the
levels it starts from: for known levels the three possible moves (the big pin, the small pin, both)
predict three different steps. The 1 s reference is not recorded: the clock comes from the calibration
train (:func:`pintime.clock.calibrate_from_train`).

The unit is the measurement pin's step over its weight, from the channel's first edges: the RUN frame and
the calibration train, which the measurement pin makes alone (the other pins are low outside the frames
that use them, FORMAT.md §6 and KERNEL.md §3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pintime.edges import Edges
from pintime.errors import PintimeError

# audio channel (0 left, 1 right) → its (pin, weight) pairs, pins as Edges channels (0 = PA0, 2 … 4 = PA1 …
# PA3); the measurement pin is the big one of the left channel
LADDER: tuple[tuple[tuple[int, int], tuple[int, int]], ...] = (((0, 2), (3, 1)), ((2, 2), (4, 1)))
PIN_NAMES = {0: "PA0", 2: "PA1", 3: "PA2", 4: "PA3"}
UNIT_EDGES = 500  # the first edges of the left channel give the unit (the measurement pin's alone)
STEP_TOLERANCE_UNITS = 0.25  # a step farther than this from every move its levels allow is not attributed
STATES = ((0, 0), (0, 1), (1, 0), (1, 1))  # (big pin, small pin) levels
MOVES = ((1, 0), (0, 1), (1, 1))  # which pins toggle: the big one, the small one, both


@dataclass(frozen=True)
class Attribution:
    """The pin edges found on a ladder capture, and what could not be told apart."""

    edges: Edges  # on the pins' channels (0, 2, 3, 4); an edge of both pins at once is two rows
    unit_fs: float  # one unit of step, full-scale units
    located: int  # edges located on the two audio channels
    unattributed: int  # located edges whose step fits no move (or more than one) from the possible levels
    unattributed_s: np.ndarray  # their times, s
    simultaneous: int  # located edges that were both pins of a channel at once


def _track(steps_units: np.ndarray, weights: tuple[int, int]) -> np.ndarray:
    """Each step's pin edges: (edges, 2) of +1 (the pin rose), −1 (fell), 0 (did not move), for the big
    and the small pin; a row of 0 where the step cannot be told. Both pins start low (the firmware idles
    them low; a recording starts before the run).

    The set of level pairs the pins may have is carried from edge to edge: an edge is attributed when every
    pair in the set that allows a move within tolerance of the step gives the same pin edges; an edge that
    fits no move makes the levels unknown again (until a step only one level pair allows, such as ±3).
    """
    out = np.zeros((len(steps_units), 2), dtype=np.int8)
    possible = {(0, 0)}
    for i, s in enumerate(steps_units):
        fits = []
        for levels in possible:
            for move in MOVES:
                delta = tuple(m * (1 - 2 * v) for v, m in zip(levels, move, strict=True))
                if abs(s - (weights[0] * delta[0] + weights[1] * delta[1])) <= STEP_TOLERANCE_UNITS:
                    fits.append((levels, move, delta))
        if len({delta for _, _, delta in fits}) == 1:
            out[i] = fits[0][2]
        possible = ({(lv[0] ^ mv[0], lv[1] ^ mv[1]) for lv, mv, _ in fits} if fits else set(STATES))
    return out


def attribute(time_s: np.ndarray, sigma_s: np.ndarray, amp_fs: np.ndarray, polarity: np.ndarray,
              column: np.ndarray, source: str) -> Attribution:
    """Each located edge of a ladder capture (audio ``column`` 0 or 1, sorted by time) attributed to its
    pin or pins from its step: ``|amp_fs|`` (the locator's fitted amplitude) with the sign ``polarity``."""
    left = np.flatnonzero(column == 0)[:UNIT_EDGES]
    if left.size == 0:
        raise PintimeError(f"{source}: no edge on the left channel: no measurement pin to learn the ladder's "
                           "unit from")
    unit_fs = float(np.median(np.abs(amp_fs[left]))) / LADDER[0][0][1]
    index, pin, pin_polarity, lost, both = [], [], [], [], 0
    for c, ((big, w_big), (small, w_small)) in enumerate(LADDER):
        on = np.flatnonzero(column == c)
        moved = _track(np.abs(amp_fs[on]) / unit_fs * polarity[on], (w_big, w_small))
        lost.append(time_s[on[~moved.any(axis=1)]])
        both += int(np.sum(moved.all(axis=1)))
        for k, p in enumerate((big, small)):
            sel = moved[:, k] != 0
            index.append(on[sel])
            pin.append(np.full(int(sel.sum()), p, dtype=np.int8))
            pin_polarity.append(moved[sel, k])
    idx, pins, pol = np.concatenate(index), np.concatenate(pin), np.concatenate(pin_polarity)
    order = np.lexsort((pins, time_s[idx]))
    idx, pins, pol = idx[order], pins[order], pol[order]
    edges = Edges(time_s[idx], pins, pol.astype(np.int8), sigma_s[idx], 1.0, source)
    unattributed_s = np.sort(np.concatenate(lost))
    return Attribution(edges, unit_fs, int(np.sum(column <= 1)), len(unattributed_s), unattributed_s, both)
