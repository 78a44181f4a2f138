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
# A step farther than this many standard deviations of the unit edges' steps (their noise) from every move
# its levels allow is not attributed: close edges the locator did not part give steps a few % off a whole
# number of units (default card, 1 MHz: their times then err by up to µs, KERNEL.md §7)
STEP_TOLERANCE_SIGMAS = 8.0
MAD_TO_SIGMA = 1.4826  # median absolute deviation → standard deviation, Gaussian
STATES = ((0, 0), (0, 1), (1, 0), (1, 1))  # (big pin, small pin) levels
MOVES = ((1, 0), (0, 1), (1, 1))  # which pins toggle: the big one, the small one, both


@dataclass(frozen=True)
class Attribution:
    """The pin edges found on a ladder capture, and what could not be told apart."""

    edges: Edges  # on the pins' channels (0, 2, 3, 4); an edge of both pins at once is two rows
    unit_fs: float  # one unit of step, full-scale units
    tolerance_units: float  # a step this far from every allowed move is not attributed
    located: int  # edges located on the two audio channels
    unattributed: int  # located edges whose step fits no move (or more than one) from the possible levels
    unattributed_s: np.ndarray  # their times, s
    simultaneous: int  # located edges that were both pins of a channel at once


def _track(steps_units: np.ndarray, weights: tuple[int, int], tolerance_units: float) -> np.ndarray:
    """Each step's pin edges: (edges, 2) of +1 (the pin rose), −1 (fell), 0 (did not move), for the big
    and the small pin; a row of 0 where the step cannot be told. Both pins start low (the firmware idles
    them low; a recording starts before the run).

    A step fits a move from a level pair when it lies within ``tolerance_units`` of the move's step. The
    level histories that fit every step are followed forward (the pairs each edge may start from) and
    backward (those from which the later steps still fit); an edge is attributed when every history
    gives it the same pin edges. An edge that fits no move from any possible pair is not attributed, and
    the levels after it are unknown again: the histories start anew. A step of ±1 reads as one pin rising
    and the other falling at once only where the levels before it are known (a single pair): with unknown
    levels, a history with the small pin's level inverted and each of its edges taken for such a pair fits
    every later step as well, and no later edge of the small pin could be told.
    """
    fits: list[list[tuple[tuple[int, int], tuple[int, int], tuple[int, int]]]] = []
    possible = {(0, 0)}
    for s in steps_units:
        here = []
        for levels in possible:
            for move in MOVES:
                delta = (move[0] * (1 - 2 * levels[0]), move[1] * (1 - 2 * levels[1]))
                if delta[0] * delta[1] < 0 and len(possible) > 1:
                    continue
                if abs(s - (weights[0] * delta[0] + weights[1] * delta[1])) <= tolerance_units:
                    here.append((levels, delta, (levels[0] ^ move[0], levels[1] ^ move[1])))
        fits.append(here)
        possible = {after for _, _, after in here} if here else set(STATES)
    out = np.zeros((len(steps_units), 2), dtype=np.int8)
    later = set(STATES)  # the pairs after edge i from which every later step fits
    for i in range(len(fits) - 1, -1, -1):
        kept = [(before, delta) for before, delta, after in fits[i] if after in later]
        if len({delta for _, delta in kept}) == 1:
            out[i] = kept[0][1]
        later = {before for before, _ in kept} if fits[i] else set(STATES)
    return out


def attribute(time_s: np.ndarray, sigma_s: np.ndarray, amp_fs: np.ndarray, polarity: np.ndarray,
              column: np.ndarray, source: str) -> Attribution:
    """Each located edge of a ladder capture (audio ``column`` 0 or 1, sorted by time) attributed to its
    pin or pins from its step: ``|amp_fs|`` (the locator's fitted amplitude) with the sign ``polarity``."""
    left = np.flatnonzero(column == 0)[:UNIT_EDGES]
    if left.size == 0:
        raise PintimeError(f"{source}: no edge on the left channel: no measurement pin to learn the ladder's "
                           "unit from")
    unit_steps = np.abs(amp_fs[left])
    unit_fs = float(np.median(unit_steps)) / LADDER[0][0][1]
    spread = MAD_TO_SIGMA * float(np.median(np.abs(unit_steps - np.median(unit_steps)))) / unit_fs
    tolerance = STEP_TOLERANCE_SIGMAS * spread
    index, pin, pin_polarity, lost, both = [], [], [], [], 0
    for c, ((big, w_big), (small, w_small)) in enumerate(LADDER):
        on = np.flatnonzero(column == c)
        moved = _track(np.abs(amp_fs[on]) / unit_fs * polarity[on], (w_big, w_small), tolerance)
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
    return Attribution(edges, unit_fs, tolerance, int(np.sum(column <= 1)), len(unattributed_s),
                       unattributed_s, both)
