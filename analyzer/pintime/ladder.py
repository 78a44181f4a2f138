"""Four signal pins on a stereo card: two pins per audio channel through a resistor ladder, told apart by
the size of each edge's step.

Wiring (docs/ladder.md; KERNEL.md §7 for the pairing): each audio channel sums
two pins with weights 2 : 1, so a pin's edge is a step of ±2 or ±1 *units* and an edge of both pins at once
±3 or ±1 (one rises, the other falls). Both pins' levels are tracked, so each step is read against the
levels it starts from: for known levels the three possible moves (the big pin, the small pin, both)
predict three different steps. The 1 s reference is not recorded: the clock comes from the calibration
train (:func:`pintime.clock.calibrate_from_train`).

Each channel's two step sizes are learned from its own edges, so resistor tolerances and a gain that
differs between the card's channels do not matter: they start from the measurement pin's step over its
weight, from the left channel's first edges (the RUN frame and the calibration train, which the measurement
pin makes alone: the other pins are low outside the frames that use them, FORMAT.md §6 and KERNEL.md §3),
and each channel's steps are then taken for the nearest of its big pin's, its small pin's and both pins'
steps, and the single-pin ones re-centre the two sizes (medians).
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
# A step farther than this many standard deviations of its channel's single-pin steps (their scatter about
# the two sizes) from every move its levels allow is not attributed: close edges the locator did not part
# give steps a few % off (their times then err by up to µs, KERNEL.md §7)
STEP_TOLERANCE_SIGMAS = 8.0
SIZE_ROUNDS = 3  # assign-and-re-centre rounds learning a channel's step sizes
MAD_TO_SIGMA = 1.4826  # median absolute deviation → standard deviation, Gaussian
STATES = ((0, 0), (0, 1), (1, 0), (1, 1))  # (big pin, small pin) levels
MOVES = ((1, 0), (0, 1), (1, 1))  # which pins toggle: the big one, the small one, both


@dataclass(frozen=True)
class Attribution:
    """The pin edges found on a ladder capture, and what could not be told apart."""

    edges: Edges  # on the pins' channels (0, 2, 3, 4); an edge of both pins at once is two rows
    step_fs: tuple[tuple[float, float], ...]  # per audio channel: its big and its small pin's step, FS
    tolerance_fs: tuple[float, ...]  # per audio channel: a step this far from every allowed move is left out
    located: int  # edges located on the two audio channels
    unattributed: int  # located edges whose step fits no move (or more than one) from the possible levels
    unattributed_s: np.ndarray  # their times, s
    simultaneous: int  # located edges that were both pins of a channel at once


def _step_sizes(magnitude: np.ndarray, guess: tuple[float, float]) -> tuple[float, float, float]:
    """One channel's big and small pin's steps (FS) and the σ of its single-pin steps about them, from its
    step magnitudes and a first ``guess`` of the two sizes (module docstring)."""
    big, small = guess
    if not len(magnitude):  # a channel without edges: nothing to learn, nothing to attribute
        return big, small, 0.0
    for _ in range(SIZE_ROUNDS):
        nearest = np.argmin(np.abs(magnitude[:, None] - np.array([big, small, big + small])), axis=1)
        big = float(np.median(magnitude[nearest == 0])) if np.any(nearest == 0) else big
        small = float(np.median(magnitude[nearest == 1])) if np.any(nearest == 1) else small
    deviation = np.concatenate([magnitude[nearest == 0] - big, magnitude[nearest == 1] - small])
    return big, small, MAD_TO_SIGMA * float(np.median(np.abs(deviation)))


def _track(steps_units: np.ndarray, weights: tuple[float, float], tolerance_units: float) -> np.ndarray:
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
    unit_fs = float(np.median(np.abs(amp_fs[left]))) / LADDER[0][0][1]
    index, pin, pin_polarity, lost, both, sizes, tolerances = [], [], [], [], 0, [], []
    for c, ((big, w_big), (small, w_small)) in enumerate(LADDER):
        on = np.flatnonzero(column == c)
        big_fs, small_fs, spread_fs = _step_sizes(np.abs(amp_fs[on]), (w_big * unit_fs, w_small * unit_fs))
        sizes.append((big_fs, small_fs))
        tolerances.append(STEP_TOLERANCE_SIGMAS * spread_fs)
        moved = _track(np.abs(amp_fs[on]) / small_fs * polarity[on], (big_fs / small_fs, 1.0),
                       tolerances[-1] / small_fs)
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
    _refuse_no_ladder(edges, source)
    unattributed_s = np.sort(np.concatenate(lost))
    return Attribution(edges, tuple(sizes), tuple(tolerances), int(np.sum(column <= 1)), len(unattributed_s),
                       unattributed_s, both)


def _refuse_no_ladder(edges: Edges, source: str) -> None:
    """PintimeError unless some audio channel shows both of its pins' steps: one step size per channel is
    a recording of single pins (a pin and the 1 s reference), whose edges a ladder reading would give to
    pins they are not."""
    count = {p: int(np.sum(edges.channel == p)) for p in PIN_NAMES}
    if any(count[big] and count[small] for (big, _), (small, _) in LADDER):
        return
    per_pin = ", ".join(f"{PIN_NAMES[p]} {n}" for p, n in count.items())
    raise PintimeError(f"{source}: no resistor ladder found: no channel shows two pins' steps ({per_pin} "
                       "edges): a capture of single pins needs no --ladder")


def format_attribution(att: Attribution) -> str:
    """One line: ``ladder:`` and :func:`attribution_text`."""
    return f"ladder: {attribution_text(att)}"


def attribution_text(att: Attribution) -> str:
    """Edges located, attributed per pin, simultaneous, and those left out (never guessed)."""
    per_pin = ", ".join(f"{name} {int(np.sum(att.edges.channel == ch))}" for ch, name in PIN_NAMES.items())
    left_out = ("all attributed" if att.unattributed == 0 else
                f"{att.unattributed} NOT attributed (their step fits no move of the pins; first at "
                + ", ".join(f"{t:.6f}" for t in att.unattributed_s[:5])
                + (" …" if att.unattributed > 5 else "") + " s): left out of every pin")
    return (f"{att.located} edges located on two channels, {left_out}; pin edges {per_pin}; "
            f"{att.simultaneous} of two pins at once")
