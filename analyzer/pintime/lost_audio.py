"""Lost or inserted audio found from the data: jumps in the phase of the clock reference.

The reference pin toggles every half MCU second (FORMAT.md §1), so in capture time its edges are evenly
spaced: ``t[k+1] − t[k] = s · n[k]`` with ``s`` the half period in capture seconds and ``n[k]`` the number
of half periods between them (1, or more where an edge was missed). Audio lost between two edges (an
overflow the recorder did not list, a cut in an editor) makes that spacing short by the lost time; audio
inserted makes it long. Nothing else can: the card's clock wanders by nanoseconds over half a second, and
each edge's own error is its ``sigma``. A spacing off by more than ``Z_LIMIT`` standard deviations, and by
at least ``MIN_JUMP_SAMPLES``, is a jump: a *detected gap*.

Where the audio was lost between the two edges the reference cannot tell, so a detected gap is the whole
interval between them; the jump is known only modulo ``s`` (half a second lost is invisible). An edge
located wrongly makes two opposite jumps on its either side: that is no gap, and is not reported as one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pintime.edges import REFERENCE_CHANNEL, Edges

Z_LIMIT = 8.0  # a jump is this many standard deviations of a spacing's own noise, at least
WANDER_S = 100e-9  # the card's clock wander over half a second, at most (Allan deviation 5e-8 at 1 s: 25 ns)
MIN_JUMP_SAMPLES = 0.5  # and at least half a sample: the least audio a recording can lose is one sample
OUTLIER_MATCH = 0.2  # two opposite neighbouring jumps this close in size are one mislocated edge


@dataclass(frozen=True)
class DetectedGap:
    """Audio lost (or inserted) somewhere between two reference edges, in capture seconds of the file."""

    start_s: float  # the reference edge before it
    end_s: float  # the reference edge after it
    jump_s: float  # the time lost (< 0: inserted), modulo the reference's half period
    z: float  # the jump in standard deviations of its spacing's noise


def find_jumps(edges: Edges, samplerate_hz: float) -> list[DetectedGap]:
    """The jumps in the reference channel's phase of ``edges`` (capture seconds), in time order.

    Fewer than three reference edges show no jump (there is no spacing to compare with).
    """
    ref = edges.on(REFERENCE_CHANNEL)
    if len(ref.time) < 3:
        return []
    spacing = np.diff(ref.time)
    typical = float(np.median(spacing))
    half_period_s = float(np.median(spacing / np.maximum(np.rint(spacing / typical), 1.0)))  # edges missed
    deviation = spacing - np.maximum(np.rint(spacing / half_period_s), 1.0) * half_period_s  # within ± s/2
    noise = np.sqrt(ref.sigma[:-1] ** 2 + ref.sigma[1:] ** 2 + WANDER_S ** 2)
    z = deviation / noise
    jump = (np.abs(z) > Z_LIMIT) & (np.abs(deviation) >= MIN_JUMP_SAMPLES / samplerate_hz)
    outlier = np.zeros(len(jump), dtype=bool)  # one wrong edge: +e then −e on its either side
    pair = jump[:-1] & jump[1:] & (np.sign(deviation[:-1]) != np.sign(deviation[1:])) \
        & (np.abs(deviation[:-1] + deviation[1:]) <= OUTLIER_MATCH * np.abs(deviation[:-1]))
    outlier[:-1] |= pair
    outlier[1:] |= pair
    return [DetectedGap(float(ref.time[k]), float(ref.time[k + 1]), float(-deviation[k]), float(z[k]))
            for k in np.flatnonzero(jump & ~outlier)]


@dataclass(frozen=True)
class LostAudio:
    """The capture's jumps set against the gaps its sidecar lists (the data wins where they disagree)."""

    detected: list[DetectedGap]  # every jump found in the data
    unlisted: list[DetectedGap]  # of which no sidecar gap lies between the two reference edges
    unseen_s: list[float]  # listed gaps with no jump around them (lost audio a multiple of half a second?)
    edges_dropped: int  # edges between the two reference edges of an unlisted gap, where it may lie

    @property
    def boundaries_s(self) -> np.ndarray:
        """Where the capture is cut into stretches for the unlisted gaps: both ends of each."""
        return np.array([t for g in self.unlisted for t in (g.start_s, g.end_s)], dtype=np.float64)


def reconcile(edges: Edges, listed_s: np.ndarray, samplerate_hz: float,
              guard_s: float) -> tuple[Edges, LostAudio]:
    """Find the jumps of ``edges`` (capture seconds) and set them against the listed gaps ``listed_s``.

    A jump with a listed gap between its two reference edges is that gap (the sidecar says where). A jump
    without one is lost audio nobody listed: it lies somewhere between the two edges, so every edge from
    one to the other (and within ``guard_s`` of them) is dropped, and the capture is cut at both ends.
    """
    detected = find_jumps(edges, samplerate_hz)
    listed = np.asarray(listed_s, dtype=np.float64)
    unlisted = [g for g in detected if not np.any((listed >= g.start_s) & (listed <= g.end_s))]
    unseen = [float(t) for t in listed if not any(g.start_s <= t <= g.end_s for g in detected)]
    drop = np.zeros(len(edges.time), dtype=bool)
    for g in unlisted:
        drop |= (edges.time > g.start_s - guard_s) & (edges.time < g.end_s + guard_s)
    if not drop.any():  # the edges as they are: no copy of a long capture's
        return edges, LostAudio(detected, unlisted, unseen, 0)
    kept = Edges(edges.time[~drop], edges.channel[~drop], edges.polarity[~drop], edges.sigma[~drop],
                 edges.unit_s, edges.source)
    return kept, LostAudio(detected, unlisted, unseen, int(np.count_nonzero(drop)))
