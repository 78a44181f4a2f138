"""Lost or inserted audio found from the data: jumps in the phase of the clock reference and in the timing
of the measurement pin's frames.

**Reference.** The reference pin toggles every half MCU second (FORMAT.md §1), so in capture time its
edges are evenly spaced: ``t[k+1] − t[k] = s · n[k]`` with ``s`` the half period in capture seconds and
``n[k]`` the number of half periods between them (1, or more where an edge was missed). Audio lost between
two edges (an overflow the recorder did not list, a cut in an editor) makes that spacing short by the lost
time; audio inserted makes it long. Nothing else can: the card's clock wanders by nanoseconds over half a
second, and each edge's own error is its ``sigma``. The jump is known only modulo ``s``, and placed only
between two reference edges, half a second apart.

**Frames.** From a frame's SYNC to the end of its group every edge is cycle-exact (firmware/common/
frames.c), so every interval of one *class* lasts the same number of cycles wherever it occurs: the SYNC's
high and low, a 0 bit's high, a 1 bit's, a bit's low, the calibration train's period, and the SETTLE and
each group interval of a frame kind with the same fields but the repetition (pulse k of every LINE m = 20
frame; FORMAT.md §2 holds a SETTLE only to ±2 %, and program micro's interrupt groups start late).
A QUIET lasts the same for a given pair of frame kinds but for the firmware building the next header bit by
bit (its length falls by a fixed time per 1 bit; the slope is fitted, pooled over the pairs). An interval
off its class's median (over three or more members; two that disagree are both suspect) is a jump, placed
within that one interval (200 µs to 12 ms). Audio lost across a frame leaves it rejected: edges between
two decoded frames that no frame explains are a *break*, where audio may be lost or inserted by an amount
the frames cannot measure, narrowed to its intervals that last like no class of the capture. Intervals
of a single class member (table2's input-dependent pulses and QUIETs, the QUIETs around the CAL and END
frames) and everything outside decoded frames is not checked: the fraction checked is reported.

Either way a jump is a spacing off by more than ``Z_LIMIT`` standard deviations of its own noise and by at
least ``MIN_JUMP_SAMPLES``. An edge located wrongly makes two opposite jumps on its either side: that is no
gap, and is not reported as one.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, replace

import numpy as np

from pintime.edges import MEASUREMENT_CHANNEL, REFERENCE_CHANNEL, Edges
from pintime.frames import BIT1_HIGH_US, QUIET_MIN_US, Frame, decode_frames, frame_end, header_edge_count

Z_LIMIT = 8.0  # a jump is this many standard deviations of a spacing's own noise, at least
WANDER_S = 100e-9  # the card's clock wander over half a second, at most (Allan deviation 5e-8 at 1 s: 25 ns)
MIN_JUMP_SAMPLES = 0.5  # and at least half a sample: the least audio a recording can lose is one sample
OUTLIER_MATCH = 0.2  # two opposite neighbouring jumps this close in size are one mislocated edge
MAD_SIGMA = 1.4826  # median absolute deviation → standard deviation (normal)


@dataclass(frozen=True)
class DetectedGap:
    """Audio lost (or inserted) somewhere between two edges, in capture seconds of the file."""

    start_s: float  # the edge before it
    end_s: float  # the edge after it
    jump_s: float | None  # the time lost (< 0: inserted), modulo the reference's half period if only it
    # saw it; None: a break, audio lost or inserted across frames by an amount the data cannot measure
    z: float | None  # the jump in standard deviations of its spacing's noise (None: a break)
    found_by: tuple[str, ...]  # "reference", "frames" or both
    ambiguous: bool = False  # one of two frames' intervals that disagree: this one or the other lost audio


def _steps(deviation: np.ndarray, noise: np.ndarray, adjacent: np.ndarray,
           samplerate_hz: float) -> np.ndarray:
    """Which spacings jump: off by more than Z_LIMIT × ``noise`` and half a sample, less the pairs of
    opposite jumps of one mislocated edge (``adjacent[k]``: spacings k and k + 1 share an edge)."""
    z = deviation / noise
    jump = (np.abs(z) > Z_LIMIT) & (np.abs(deviation) >= MIN_JUMP_SAMPLES / samplerate_hz)
    outlier = np.zeros(len(jump), dtype=bool)  # one wrong edge: +e then −e on its either side
    pair = adjacent & jump[:-1] & jump[1:] & (np.sign(deviation[:-1]) != np.sign(deviation[1:])) \
        & (np.abs(deviation[:-1] + deviation[1:]) <= OUTLIER_MATCH * np.abs(deviation[:-1]))
    outlier[:-1] |= pair
    outlier[1:] |= pair
    return jump & ~outlier


REFERENCE_HALF_PERIOD_S = (0.45, 0.55)  # the 1 s reference's half period, s of the card's clock (any ppm)
REGULAR_FRACTION = 0.9  # of its spacings a whole number of half periods to within 1 %: lost audio is rare


def is_reference(ref: Edges) -> bool:
    """Whether a channel's edges (capture seconds) are the 1 s clock reference: three or more, their typical
    spacing half a second, and nearly all of them whole half periods apart (another signal on that channel,
    e.g. a resistor ladder's second pair of pins, would show thousands of "jumps")."""
    if len(ref.time) < 3:
        return False
    spacing = np.diff(ref.time)
    half_s = float(np.median(spacing))
    if not REFERENCE_HALF_PERIOD_S[0] <= half_s <= REFERENCE_HALF_PERIOD_S[1]:
        return False
    whole = np.maximum(np.rint(spacing / half_s), 1.0)
    return float(np.mean(np.abs(spacing / half_s - whole) < 0.01)) >= REGULAR_FRACTION


def find_jumps(edges: Edges, samplerate_hz: float) -> list[DetectedGap]:
    """The jumps in the reference channel's phase of ``edges`` (capture seconds), in time order.

    A channel that is not the reference (:func:`is_reference`) shows none.
    """
    ref = edges.on(REFERENCE_CHANNEL)
    if not is_reference(ref):
        return []
    spacing = np.diff(ref.time)
    typical = float(np.median(spacing))
    half_period_s = float(np.median(spacing / np.maximum(np.rint(spacing / typical), 1.0)))  # edges missed
    deviation = spacing - np.maximum(np.rint(spacing / half_period_s), 1.0) * half_period_s  # within ± s/2
    noise = np.sqrt(ref.sigma[:-1] ** 2 + ref.sigma[1:] ** 2 + WANDER_S ** 2)
    jump = _steps(deviation, noise, np.ones(len(spacing) - 1, dtype=bool), samplerate_hz)
    return [DetectedGap(float(ref.time[k]), float(ref.time[k + 1]), float(-deviation[k]),
                        float(deviation[k] / noise[k]), ("reference",)) for k in np.flatnonzero(jump)]


@dataclass(frozen=True)
class FrameTiming:
    """What the frames' timing shows (:func:`check_frames`)."""

    jumps: list[DetectedGap]  # intervals off their class
    breaks: list[DetectedGap]  # stretches between decoded frames that no frame explains
    checked_s: float  # capture time inside intervals compared with their class
    span_s: float  # capture time from the measurement channel's first edge to its last


def _frame_key(f: Frame) -> Hashable:
    """What a frame's timing depends on: its kind and fields, but for the repetition index."""
    return f.kind, tuple(sorted((k, v) for k, v in f.fields.items() if k != "rep"))


HEADER_CLASSES = 6  # classes 0-5: SYNC high, SYNC low, 0 bit's high, 1 bit's high, bit's low, CAL's SETTLE
CAL_CLASS = 6  # the calibration train's period; group and QUIET classes are numbered from 7 on


def _intervals(time_us: np.ndarray, frames: list[Frame]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[Hashable, list[int]], list[int]]:
    """The intervals of the decoded ``frames`` that a capture has few of: those of their headers, their
    QUIETs and their calibration trains, each with its first edge, its class number and the 1 bits of the
    header it precedes (QUIETs only, else 0); the frames of each kind and fields, whose groups' intervals
    (from the SETTLE on) are classes of their own, position by position (:func:`_group_jumps`); and the
    frames after which edges lie that no frame explains (breaks)."""
    first, cls, ones, breaks = [], [], [], []
    numbers: dict[Hashable, int] = {}
    by_key: dict[Hashable, list[int]] = {}
    for i, f in enumerate(frames):
        n_head, end, key = header_edge_count(f.kind), frame_end(f), _frame_key(f)
        head = np.arange(f.start, min(f.start + n_head - 1, end))  # edge → edge inside the header
        k = head - f.start
        high = np.diff(time_us[f.start:f.start + n_head])[:len(head)] >= BIT1_HIGH_US[0]
        code = np.where(k < 2, k, np.where(k % 2 == 0, 2 + high, 4))
        first.append(head)
        cls.append(code)
        ones.append(np.zeros(len(head)))
        if f.kind == "cal":  # the SETTLE, then the train's periods
            group = np.arange(f.start + n_head - 1, end)
            gcode = np.full(len(group), CAL_CLASS)
            gcode[:1] = 5
            first.append(group)
            cls.append(gcode)
            ones.append(np.zeros(len(group)))
        elif end > f.start + n_head - 1:
            by_key.setdefault(key, []).append(i)
        if i + 1 < len(frames):
            following = frames[i + 1]
            if following.start == end + 1:
                pair = numbers.setdefault(("quiet", key, _frame_key(following)),
                                          HEADER_CLASSES + 1 + len(numbers))
                header = time_us[following.start + 2:following.start + header_edge_count(following.kind)]
                bits = np.diff(header)
                first.append(np.array([end]))
                cls.append(np.array([-pair]))  # QUIET classes are negative
                ones.append(np.array([np.count_nonzero(bits[::2] >= BIT1_HIGH_US[0])], dtype=np.float64))
            else:
                breaks.append(i)
    if not first:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), by_key, breaks
    return (np.concatenate(first).astype(np.int64), np.concatenate(cls).astype(np.int64),
            np.concatenate(ones), by_key, breaks)


def _medians(values: np.ndarray, group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """The median of ``values`` in each group (numbered 0 … n_groups − 1; NaN for an empty one), and the
    groups' sizes."""
    count = np.bincount(group, minlength=n_groups)
    if not len(values):
        return np.full(n_groups, np.nan), count
    v = values[np.lexsort((values, group))]
    start = np.cumsum(count) - count
    lo, hi = start + np.maximum(count - 1, 0) // 2, start + count // 2
    top = len(v) - 1
    return np.where(count > 0, 0.5 * (v[np.minimum(lo, top)] + v[np.minimum(hi, top)]), np.nan), count


def _quiet_slope(duration: np.ndarray, cls: np.ndarray, ones: np.ndarray) -> float:
    """How much a QUIET shortens per 1 bit of the next header: the median slope between the median QUIETs
    of one pair of frame kinds with different numbers of 1 bits, pooled over the pairs (0 without any)."""
    quiet = np.flatnonzero(cls < 0)
    slopes: list[float] = []
    for c in np.unique(cls[quiet]):
        sel = quiet[cls[quiet] == c]
        values = np.unique(ones[sel])
        medians = np.array([np.median(duration[sel][ones[sel] == v]) for v in values])
        for a in range(len(values)):
            slopes += list((medians[a + 1:] - medians[a]) / (values[a + 1:] - values[a]))
    return float(np.median(slopes)) if slopes else 0.0


def _class_deviation(duration: np.ndarray, group: np.ndarray,
                     listed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each interval's deviation from its class (``group``: numbered 0 …; NaN: not checked), the class's
    own spread, and whether it is one of a class of two (ambiguous).

    Intervals with a listed gap in them (``listed``) are compared with their class but not part of it.
    The class is the median of three clean members or more; of two, each is compared with the other (when
    they disagree, either may have lost audio: both are suspect) and the listed ones with their mean; of
    one, only the listed ones are compared with it.
    """
    n = int(group.max()) + 1
    clean = ~listed
    median, count = _medians(duration[clean], group[clean], n)
    off = duration - median[group]
    size = count[group]
    mad, _ = _medians(np.abs(off[clean]), group[clean], n)
    pair = clean & (size == 2)
    deviation = np.where(pair, 2.0 * off, np.where((size > 2) | (listed & (size > 0)), off, np.nan))
    spread = np.where(size > 2, MAD_SIGMA * mad[group], 0.0)
    return deviation, spread, pair


def check_frames(edges: Edges, samplerate_hz: float, listed_s: np.ndarray | None = None,
                 guard_s: float = 0.0) -> FrameTiming:
    """The jumps and breaks in the timing of the measurement channel's frames (module docstring).

    ``listed_s``: gaps a sidecar lists (capture seconds); an interval within ``guard_s`` of one is checked
    but does not count in its class.

    Frames are decoded in nominal µs (every tolerance of the format is far wider than a card's clock
    error); a source of unknown time unit, or one with no frame, has nothing checked.
    """
    meas = edges.on(MEASUREMENT_CHANNEL)
    t = meas.time
    span_s = float(t[-1] - t[0]) if len(t) else 0.0
    if edges.unit_s is None or len(t) < 3:
        return FrameTiming([], [], 0.0, span_s)
    time_us = t * (edges.unit_s * 1e6)
    decode = decode_frames(time_us, meas.polarity)
    first, cls, ones, by_key, after = _intervals(time_us, decode.frames)
    del time_us
    listed_s = np.zeros(0) if listed_s is None else np.sort(np.asarray(listed_s, dtype=np.float64))
    spans = [(frame_end(decode.frames[i]), decode.frames[i + 1].start) for i in after]
    if not len(first):
        return FrameTiming([], [_break(t, a, b) for a, b in spans], 0.0, span_s)
    duration = t[first + 1] - t[first]
    duration = duration - _quiet_slope(duration, cls, ones) * ones
    listed = _listed(t, first, listed_s, guard_s)
    _, group = np.unique(cls, return_inverse=True)
    deviation, spread, pair = _class_deviation(duration, group, listed)
    medians, count = _medians(duration, group, int(group.max()) + 1)
    found = [_candidates(t, meas.sigma, first, deviation, spread, pair, samplerate_hz)]
    typical = [medians[count > 1]]
    for frames_of in by_key.values():
        found.append(_group_jumps(t, meas.sigma, [decode.frames[i] for i in frames_of], listed_s, guard_s,
                                  samplerate_hz, typical))
    first, deviation, noise, pair, checked_s = (np.concatenate(v) for v in zip(*found, strict=True))
    order = np.argsort(first)
    first, deviation, noise, pair = first[order], deviation[order], noise[order], pair[order]
    jump = _steps(deviation, noise, np.diff(first) == 1, samplerate_hz)
    jumps = [DetectedGap(float(t[j]), float(t[j + 1]), float(-d), float(d / s), ("frames",), bool(p))
             for j, d, s, p in zip(first[jump], deviation[jump], noise[jump], pair[jump], strict=True)]
    quiet_s = QUIET_MIN_US * 1e-6 / edges.unit_s
    classes = (np.sort(np.concatenate(typical)), meas.sigma, samplerate_hz, quiet_s)
    breaks = [_break(t, a, b, classes) for a, b in spans]
    return FrameTiming(jumps, breaks, float(np.sum(checked_s)), span_s)


GROUP_CHUNK = 1 << 20  # group intervals compared at once (a long capture's frames are many)


def _listed(t: np.ndarray, first: np.ndarray, listed_s: np.ndarray, guard_s: float) -> np.ndarray:
    """Which intervals (from edge ``first`` to the next) hold a listed gap, or lie within ``guard_s`` of
    one."""
    return (np.searchsorted(listed_s, t[first + 1] + guard_s, "right")
            > np.searchsorted(listed_s, t[first] - guard_s, "left"))


def _candidates(t: np.ndarray, sigma: np.ndarray, first: np.ndarray, deviation: np.ndarray,
                spread: np.ndarray, pair: np.ndarray, samplerate_hz: float) -> tuple[np.ndarray, ...]:
    """Of the intervals from edge ``first``: the checked ones (deviation not NaN) that jump, with their
    deviation, noise and pair flag (:func:`_steps` then drops the pairs of one mislocated edge), and
    the capture time inside the checked ones."""
    checked = ~np.isnan(deviation)
    first, deviation, spread, pair = first[checked], deviation[checked], spread[checked], pair[checked]
    noise = np.sqrt(sigma[first] ** 2 + sigma[first + 1] ** 2 + spread ** 2)
    noise = np.maximum(noise, np.finfo(np.float64).tiny)
    jump = ((np.abs(deviation / noise) > Z_LIMIT)
            & (np.abs(deviation) >= MIN_JUMP_SAMPLES / samplerate_hz))
    return (first[jump], deviation[jump], noise[jump], pair[jump],
            np.array([np.sum(t[first + 1] - t[first])]))


def _group_jumps(t: np.ndarray, sigma: np.ndarray, frames: list[Frame], listed_s: np.ndarray,
                 guard_s: float, samplerate_hz: float, typical: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """:func:`_candidates` among the group intervals (the SETTLE, then the group's own) of ``frames``, all of
    one kind and fields: interval k of every frame is one class. Appends to ``typical`` the median of each
    class of two or more. Taken a few positions at a time: the arrays stay small however long the
    capture."""
    lo = np.array([f.start + header_edge_count(f.kind) - 1 for f in frames], dtype=np.int64)
    length = frame_end(frames[0]) - int(lo[0])
    width = max(1, GROUP_CHUNK // len(lo))
    found = []
    for c0 in range(0, length, width):
        first = lo[:, None] + np.arange(c0, min(length, c0 + width))[None, :]
        duration = t[first + 1] - t[first]
        listed = _listed(t, first, listed_s, guard_s)
        deviation, spread, pair = _column_deviation(duration, listed)
        if len(lo) > 1:
            typical.append(np.median(duration, axis=0))
        found.append(_candidates(t, sigma, first.ravel(), deviation.ravel(), spread.ravel(), pair.ravel(),
                                 samplerate_hz))
    return tuple(np.concatenate(v) for v in zip(*found, strict=True))


def _column_medians(values: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column of ``values``, the median of the entries ``keep`` marks (NaN for none) and their
    count."""
    count = np.count_nonzero(keep, axis=0)
    v = np.sort(np.where(keep, values, np.inf), axis=0)
    cols = np.arange(values.shape[1])
    top = values.shape[0] - 1
    lo, hi = np.minimum(np.maximum(count - 1, 0) // 2, top), np.minimum(count // 2, top)
    return np.where(count > 0, 0.5 * (v[lo, cols] + v[hi, cols]), np.nan), count


def _column_deviation(duration: np.ndarray, listed: np.ndarray) -> tuple[np.ndarray, ...]:
    """:func:`_class_deviation` where each column of ``duration`` is a class."""
    clean = ~listed
    median, count = _column_medians(duration, clean)
    off = duration - median
    mad, _ = _column_medians(np.abs(off), clean)
    size = np.broadcast_to(count, duration.shape)
    pair = clean & (size == 2)
    deviation = np.where(pair, 2.0 * off, np.where((size > 2) | (listed & (size > 0)), off, np.nan))
    spread = np.where(size > 2, MAD_SIGMA * mad, 0.0)
    return deviation, spread, pair


def _break(t: np.ndarray, a: int, b: int,
           classes: tuple[np.ndarray, np.ndarray, float, float] | None = None) -> DetectedGap:
    """A break between edges ``a`` and ``b`` of ``t``, narrowed to the intervals in it shorter than a QUIET
    that last like no class of the capture: the cut lies among those (when none is odd, whole frames went
    with it: the break is all of it). ``classes``: the classes' medians (ascending), the edges' sigmas,
    the sample rate and the shortest QUIET, all in the edges' time unit (a QUIET's length varies with the
    header after it: no class median holds it)."""
    if classes is not None and len(classes[0]) and b - a > 1:
        typical, sigma, samplerate_hz, quiet_s = classes
        d = np.diff(t[a:b + 1])
        k = np.clip(np.searchsorted(typical, d), 1, len(typical) - 1)
        off = np.minimum(np.abs(d - typical[k - 1]), np.abs(d - typical[k])) if len(typical) > 1 \
            else np.abs(d - typical[0])
        noise = np.sqrt(sigma[a:b] ** 2 + sigma[a + 1:b + 1] ** 2)
        odd = np.flatnonzero((off > Z_LIMIT * noise) & (off >= MIN_JUMP_SAMPLES / samplerate_hz)
                             & (d < quiet_s))
        if len(odd):
            a, b = a + int(odd[0]), a + int(odd[-1]) + 1
    return DetectedGap(float(t[a]), float(t[b]), None, None, ("frames",))


@dataclass(frozen=True)
class LostAudio:
    """The capture's jumps set against the gaps its sidecar lists (the data wins where they disagree)."""

    detected: list[DetectedGap]  # every discontinuity found in the data, by either check
    unlisted: list[DetectedGap]  # of which no sidecar gap lies between its two edges
    unseen_s: list[float]  # listed gaps with no discontinuity found around them
    edges_dropped: int  # edges within (or within the locator's guard of) an unlisted gap, where it may lie
    reference_checked: bool  # whether the reference channel's phase was checked (is_reference)
    frames_checked_fraction: float  # of the measurement channel's span, inside intervals the frames check

    @property
    def boundaries_s(self) -> np.ndarray:
        """Where the capture is cut into stretches for the unlisted gaps: both ends of each."""
        return np.array([t for g in self.unlisted for t in (g.start_s, g.end_s)], dtype=np.float64)

    def agreement(self) -> dict[str, int]:
        """How many discontinuities both checks found, and each alone."""
        by = [g.found_by for g in self.detected]
        return {"both": by.count(("reference", "frames")), "reference_only": by.count(("reference",)),
                "frames_only": by.count(("frames",))}


def _merge(reference: list[DetectedGap], frames: list[DetectedGap], referenced: bool) -> list[DetectedGap]:
    """One list of discontinuities: a reference jump with frame discontinuities between its two edges is
    those, found by both: a frame jump placed within its interval and measured whole, a break placed where
    it and the jump's half second overlap and measured by the reference; the rest as each check found,
    but for an ambiguous frame jump or a break the checked reference (``referenced``) shows no jump around:
    the other of the pair lost the audio, the break's frames were misread."""
    merged, used = [], {n for n, h in enumerate(frames) if h.ambiguous and referenced}
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
    merged += [h for n, h in enumerate(frames) if n not in used and not (referenced and h.jump_s is None)]
    return sorted(merged, key=lambda g: g.start_s)


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
    referenced = is_reference(found_in.on(REFERENCE_CHANNEL))
    detected = _merge(find_jumps(edges, samplerate_hz), frames.jumps + frames.breaks, referenced)
    listed = np.asarray(listed_s, dtype=np.float64)
    unlisted = [g for g in detected
                if not np.any((listed >= g.start_s - guard_s) & (listed <= g.end_s + guard_s))]
    unseen = [float(t) for t in listed
              if not any(g.start_s - guard_s <= t <= g.end_s + guard_s for g in detected)]
    drop = near_spans(edges.time, np.array([(g.start_s, g.end_s) for g in unlisted]).reshape(-1, 2), guard_s)
    fraction = frames.checked_s / frames.span_s if frames.span_s > 0 else 0.0
    if not drop.any():  # the edges as they are: no copy of a long capture's
        return edges, LostAudio(detected, unlisted, unseen, 0, referenced, fraction)
    kept = Edges(edges.time[~drop], edges.channel[~drop], edges.polarity[~drop], edges.sigma[~drop],
                 edges.unit_s, edges.source)
    return kept, LostAudio(detected, unlisted, unseen, int(np.count_nonzero(drop)), referenced, fraction)


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
