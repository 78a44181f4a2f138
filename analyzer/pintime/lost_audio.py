"""Lost or inserted audio found from the data: jumps in the phase of the clock reference and in the timing
of the measurement pin's frames.

**Reference.** The reference pin toggles every half MCU second (FORMAT.md §1), so in capture time its
edges are evenly spaced: ``t[k+1] − t[k] = s · n[k]`` with ``s`` the half period in capture seconds and
``n[k]`` the number of half periods between them (1, or more where an edge was missed). Audio lost between
two edges (an overflow the recorder did not list, a cut in an editor) makes that spacing short by the lost
time; audio inserted makes it long. Nothing else can: the card's clock wanders by nanoseconds over half a
second, and each edge's own error is its ``sigma``. The jump is known only modulo ``s``, and placed only
between two reference edges, half a second apart.

**Frames.** The frames' timing (:mod:`pintime.frame_timing`) shows jumps placed within one interval
(200 µs to 12 ms) and breaks where frames were lost.

Either way a jump is a spacing off by more than ``Z_LIMIT`` standard deviations of its own noise and by at
least ``MIN_JUMP_SAMPLES``. An edge located wrongly makes two opposite jumps on its either side: that is no
gap, and is not reported as one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from pintime.edges import MEASUREMENT_CHANNEL, REFERENCE_CHANNEL, Edges, is_reference
from pintime.frame_timing import DetectedGap, check_frames, steps

WANDER_S = 100e-9  # the card's clock wander over half a second, at most (Allan deviation 5e-8 at 1 s: 25 ns)
PERIOD_SPACINGS = 65  # a periodic signal's spacing is held against the median of this many about it
def find_jumps(edges: Edges, samplerate_hz: float) -> list[DetectedGap]:
    """The jumps in the reference channel's phase of ``edges`` (capture seconds), in time order.

    A channel that is not the reference (:func:`is_reference`) shows none.
    """
    ref = edges.on(REFERENCE_CHANNEL)
    if not is_reference(ref.time):
        return []
    spacing = np.diff(ref.time)
    typical = float(np.median(spacing))
    half_period_s = float(np.median(spacing / np.maximum(np.rint(spacing / typical), 1.0)))  # edges missed
    deviation = spacing - np.maximum(np.rint(spacing / half_period_s), 1.0) * half_period_s  # within ± s/2
    noise = np.sqrt(ref.sigma[:-1] ** 2 + ref.sigma[1:] ** 2 + WANDER_S ** 2)
    return _gaps(ref.time, deviation, noise, samplerate_hz, "reference")


def periodic_jumps(edges: Edges, samplerate_hz: float) -> list[DetectedGap]:
    """The jumps in the phase of a periodic signal on the measurement channel of ``edges`` (capture
    seconds; a dense square wave or PWM, :mod:`pintime.locate.shape.periodic`), in time order: its rising
    edges' spacings against the period where they are (the median of ``PERIOD_SPACINGS`` about each), modulo
    whole periods, as the reference's are. The noise of a spacing holds the two edges' σ and the spacings'
    own spread (their RMS but for the largest 1 %: a jittered signal's). A loss of whole periods, or of
    less than half a sample more, does not show."""
    from scipy.ndimage import median_filter  # only a periodic signal's check needs it (start-up time)

    pin = edges.on(MEASUREMENT_CHANNEL)
    time, sigma = pin.time[pin.polarity > 0], pin.sigma[pin.polarity > 0]
    if len(time) < 3:
        return []
    spacing = np.diff(time)
    period = median_filter(spacing, PERIOD_SPACINGS, mode="nearest")
    deviation = spacing - np.maximum(np.rint(spacing / period), 1.0) * period  # within ± a half period
    small = np.sort(np.abs(deviation))[:max(1, int(0.99 * len(deviation)))]
    noise = np.sqrt(sigma[:-1] ** 2 + sigma[1:] ** 2 + np.mean(small * small))
    return _gaps(time, deviation, noise, samplerate_hz, "period")


def _gaps(time: np.ndarray, deviation: np.ndarray, noise: np.ndarray, samplerate_hz: float,
          found_by: str) -> list[DetectedGap]:
    """The spacings between the evenly spaced edges at ``time`` that jump (:func:`steps`: ``deviation``
    from their spacing, against ``noise``), each as the audio lost between its two edges."""
    jump = steps(deviation, noise, np.ones(len(deviation) - 1, dtype=bool), samplerate_hz)
    return [DetectedGap(float(time[k]), float(time[k + 1]), float(-deviation[k]),
                        float(deviation[k] / noise[k]), (found_by,)) for k in np.flatnonzero(jump)]


@dataclass(frozen=True)
class LostAudio:
    """The capture's jumps set against the gaps its sidecar lists (the data wins where they disagree)."""

    detected: list[DetectedGap]  # every discontinuity found in the data, by either check
    unlisted: list[DetectedGap]  # of which no sidecar gap lies between its two edges
    unseen_s: list[float]  # listed gaps with no discontinuity found around them
    edges_dropped: int  # edges within (or within the locator's guard of) an unlisted gap, where it may lie
    reference_checked: bool  # whether the reference channel's phase was checked (is_reference)
    frames_checked_fraction: float  # of the measurement channel's span, inside intervals the frames check
    # (start, end) capture seconds, ascending: the measurement channel's span that neither the reference's
    # phase (between its first and last edge) nor the frames' timing checks, and of it what lies inside
    # decoded frames' groups (a cut there would move a number unseen)
    unchecked_s: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    unchecked_in_frames_s: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    span_s: float = 0.0  # the measurement channel's, first edge to last

    @property
    def checked_fraction(self) -> float:
        """Of the measurement channel's span, what the reference's phase or the frames' timing checks."""
        unchecked = float(np.sum(self.unchecked_s[:, 1] - self.unchecked_s[:, 0]))
        return 1.0 - unchecked / self.span_s if self.span_s > 0 else 0.0

    @property
    def boundaries_s(self) -> np.ndarray:
        """Where the capture is cut into stretches for the unlisted gaps: both ends of each."""
        return np.array([t for g in self.unlisted for t in (g.start_s, g.end_s)], dtype=np.float64)

    def agreement(self) -> dict[str, int]:
        """How many discontinuities both checks found, and each alone."""
        by = [g.found_by for g in self.detected]
        return {"both": by.count(("reference", "frames")), "reference_only": by.count(("reference",)),
                "frames_only": by.count(("frames",))}


def _merge(reference: list[DetectedGap], frames: list[DetectedGap],
           referenced: tuple[float, float] | None) -> list[DetectedGap]:
    """One list of discontinuities: a reference jump with frame discontinuities between its two edges is
    those, found by both: a frame jump placed within its interval and measured whole, a break placed where
    it and the jump's half second overlap and measured by the reference; the rest as each check found,
    but for an ambiguous frame jump or a break the checked reference shows no jump around (``referenced``:
    its first and last edge, the span it checks): the other of the pair lost the audio, the break's frames
    were misread. Beyond the reference's edges it shows nothing: there both of a pair are reported."""
    def vouched(h: DetectedGap) -> bool:
        return referenced is not None and referenced[0] <= h.start_s and h.end_s <= referenced[1]

    merged, used = [], {n for n, h in enumerate(frames) if h.ambiguous and vouched(h)}
    for g in reference:
        inside = [n for n, h in enumerate(frames) if h.end_s >= g.start_s and h.start_s <= g.end_s]
        both = [replace(h, start_s=max(g.start_s, h.start_s), end_s=min(g.end_s, h.end_s),
                        jump_s=g.jump_s if h.jump_s is None else h.jump_s, z=g.z if h.z is None else h.z,
                        found_by=("reference", "frames"), ambiguous=False)
                for h in map(frames.__getitem__, inside)]
        merged += both or [g]
        used.update(inside)
    # a break (audio lost by an amount the frames cannot tell) the checked reference shows no jump around is
    # frames the locator could not read, not lost audio: the reference sees any loss of half a sample
    merged += [h for n, h in enumerate(frames) if n not in used and not (h.jump_s is None and vouched(h))]
    return sorted(merged, key=lambda g: g.start_s)


def _outside(spans: np.ndarray, covered: tuple[float, float] | None) -> np.ndarray:
    """The parts of ``spans`` (rows of start, end) outside the span ``covered`` (None: all of them)."""
    if covered is None:
        return spans
    lo, hi = covered
    before = np.column_stack([spans[:, 0], np.minimum(spans[:, 1], lo)])
    after = np.column_stack([np.maximum(spans[:, 0], hi), spans[:, 1]])
    parts = np.concatenate([before, after]).reshape(-1, 2)
    parts = parts[parts[:, 1] > parts[:, 0]]
    return parts[np.argsort(parts[:, 0], kind="stable")]


def reconcile(edges: Edges, listed_s: np.ndarray, samplerate_hz: float, guard_s: float,
              located: Edges | None = None) -> tuple[Edges, LostAudio]:
    """Find the discontinuities of the ``located`` edges (capture seconds; default ``edges``) and set them
    against the listed gaps; ``edges`` are those kept (without the edges beside a listed gap: their frames
    would not decode, and the gap would be found only as a break, not placed within one interval).

    A discontinuity with a listed gap between its two edges (or within ``guard_s`` of them) is that gap
    (the sidecar says where). One without is lost audio nobody listed: it lies somewhere between the two
    edges, so every edge from one to the other (and within ``guard_s`` of them) is dropped, and the capture
    is cut at both ends.
    """
    found_in = edges if located is None else located
    frames = check_frames(found_in, samplerate_hz, listed_s, guard_s)
    ref_time = found_in.on(REFERENCE_CHANNEL).time
    referenced = is_reference(ref_time)
    span = (float(ref_time[0]), float(ref_time[-1])) if referenced else None
    detected = _merge(find_jumps(edges, samplerate_hz), frames.jumps + frames.breaks, span)
    listed = np.asarray(listed_s, dtype=np.float64)
    unlisted = [g for g in detected
                if not np.any((listed >= g.start_s - guard_s) & (listed <= g.end_s + guard_s))]
    unseen = [float(t) for t in listed
              if not any(g.start_s - guard_s <= t <= g.end_s + guard_s for g in detected)]
    drop = near_spans(edges.time, np.array([(g.start_s, g.end_s) for g in unlisted]).reshape(-1, 2), guard_s)
    fraction = frames.checked_s / frames.span_s if frames.span_s > 0 else 0.0
    coverage = (_outside(frames.unchecked, span), _outside(frames.unchecked_in_frames, span), frames.span_s)
    if not drop.any():  # the edges as they are: no copy of a long capture's
        return edges, LostAudio(detected, unlisted, unseen, 0, referenced, fraction, *coverage)
    kept = Edges(edges.time[~drop], edges.channel[~drop], edges.polarity[~drop], edges.sigma[~drop],
                 edges.unit_s, edges.source)
    return kept, LostAudio(detected, unlisted, unseen, int(np.count_nonzero(drop)), referenced, fraction,
                           *coverage)


def cut_spans(listed_s: np.ndarray, lost: LostAudio | None) -> np.ndarray:
    """Every place the capture is cut, as (start, end) in capture seconds, ascending: each listed gap (a
    point) and each unlisted discontinuity (the interval it lies in)."""
    spans = [(float(t), float(t)) for t in listed_s]
    spans += [] if lost is None else [(g.start_s, g.end_s) for g in lost.unlisted]
    return np.array(sorted(spans), dtype=np.float64).reshape(-1, 2)


def near_spans(time_s: np.ndarray, spans_s: np.ndarray, guard_s: float) -> np.ndarray:
    """Which of the times ``time_s`` lie inside one of ``spans_s`` (:func:`cut_spans`) or within ``guard_s``
    of one."""
    near = np.zeros(len(time_s), dtype=bool)
    for start, end in spans_s:
        near |= (time_s >= start - guard_s) & (time_s <= end + guard_s)
    return near
