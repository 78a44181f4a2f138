"""Jumps in the timing of the measurement pin's frames: lost or inserted audio found from the data
(:mod:`pintime.lost_audio` sets them beside the reference's and the sidecar's).

From a frame's SYNC to the end of its group every edge is cycle-exact (firmware/common/frames.c), so every
interval of one *class* lasts the same number of cycles wherever it occurs: the SYNC's high and low, a
0 bit's high, a 1 bit's, a bit's low, the calibration train's period, and the SETTLE and each group
interval of a frame kind with the same fields but the repetition (pulse k of every LINE m = 20 frame;
FORMAT.md §2 holds a SETTLE only to ±2 %, and program micro's interrupt groups start late). A QUIET lasts
the same for a given pair of frame kinds but for the firmware building the next header bit by bit (its
length falls by a fixed time per 1 bit; the slope is fitted, pooled over the pairs). An interval off its
class's median (over three or more members; two that disagree are both suspect) is a jump, placed within
that one interval (200 µs to 12 ms). Audio lost across a frame leaves it rejected: edges between two
decoded frames that no frame explains are a *break*, where audio may be lost or inserted by an amount the
frames cannot measure, narrowed to its intervals that last like no class of the capture. Intervals of a
single class member (table2's input-dependent pulses and QUIETs, the QUIETs around the CAL and END frames)
and everything outside decoded frames is not checked: the fraction checked is reported.

A jump (here and in the reference's phase) is a spacing off by more than ``Z_LIMIT`` standard deviations
of its own noise and by at least ``MIN_JUMP_SAMPLES``. An edge located wrongly makes two opposite jumps on
its either side: that is no gap, and is not reported as one.

Memory: a long capture has millions of intervals. Headers (a few classes of millions of members) are
taken a few thousand frames at a time, twice: once gathering each class's durations, once comparing each
interval with its class; groups (many classes of few members) a kind and fields, and a few positions, at a
time. No array as long as the capture's edges is made.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

from pintime.edges import MEASUREMENT_CHANNEL, Edges
from pintime.frames import (
    BIT1_HIGH_US,
    QUIET_MIN_US,
    Frame,
    ScaledTimes,
    decode_frames,
    frame_end,
    header_edge_count,
)

Z_LIMIT = 8.0  # a jump is this many standard deviations of a spacing's own noise, at least
MIN_JUMP_SAMPLES = 0.5  # and at least half a sample: the least audio a recording can lose is one sample
OUTLIER_MATCH = 0.2  # two opposite neighbouring jumps this close in size are one mislocated edge
MAD_SIGMA = 1.4826  # median absolute deviation → standard deviation (normal)
HEADER_CLASSES = 6  # classes 0-5: SYNC high, SYNC low, 0 bit's high, 1 bit's high, bit's low, CAL's SETTLE
CAL_CLASS = 6  # the calibration train's period; QUIET classes are numbered from −7 down
FRAME_CHUNK = 512  # frames whose header intervals are taken at once
GROUP_CHUNK = 1 << 18  # group intervals compared at once


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


def steps(deviation: np.ndarray, noise: np.ndarray, adjacent: np.ndarray, samplerate_hz: float) -> np.ndarray:
    """Which spacings jump: off by more than Z_LIMIT × ``noise`` and half a sample, less the pairs of
    opposite jumps of one mislocated edge (``adjacent[k]``: spacings k and k + 1 share an edge)."""
    jump = _jumps(deviation, noise, samplerate_hz)
    outlier = np.zeros(len(jump), dtype=bool)  # one wrong edge: +e then −e on its either side
    pair = adjacent & jump[:-1] & jump[1:] & (np.sign(deviation[:-1]) != np.sign(deviation[1:])) \
        & (np.abs(deviation[:-1] + deviation[1:]) <= OUTLIER_MATCH * np.abs(deviation[:-1]))
    outlier[:-1] |= pair
    outlier[1:] |= pair
    return jump & ~outlier


def _jumps(deviation: np.ndarray, noise: np.ndarray, samplerate_hz: float) -> np.ndarray:
    return (np.abs(deviation / noise) > Z_LIMIT) & (np.abs(deviation) >= MIN_JUMP_SAMPLES / samplerate_hz)


@dataclass(frozen=True)
class FrameTiming:
    """What the frames' timing shows (:func:`check_frames`)."""

    jumps: list[DetectedGap]  # intervals off their class
    breaks: list[DetectedGap]  # stretches between decoded frames that no frame explains
    checked_s: float  # capture time inside intervals compared with their class
    span_s: float  # capture time from the measurement channel's first edge to its last
    # (start, end) in capture time, ascending and disjoint: the measurement channel's span not compared
    # with any class (single members, before the first frame and after the last), and of it what lies
    # inside decoded frames' groups, where a cut would change a number
    unchecked: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    unchecked_in_frames: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))


@dataclass
class _Check:
    """What a check needs of the capture: the measurement channel's times (source units) and sigmas, the
    same in µs, the listed gaps with their guard, and the sample rate."""

    t: np.ndarray
    sigma: np.ndarray
    time_us: ScaledTimes
    listed_s: np.ndarray
    guard_s: float
    samplerate_hz: float

    def listed(self, first: np.ndarray) -> np.ndarray:
        """Which intervals (from edge ``first`` to the next) hold a listed gap, or lie within the guard of
        one."""
        t, g = self.t, self.guard_s
        return (np.searchsorted(self.listed_s, t[first + 1] + g, "right")
                > np.searchsorted(self.listed_s, t[first] - g, "left"))

    def candidates(self, first: np.ndarray, deviation: np.ndarray, spread: np.ndarray,
                   pair: np.ndarray) -> tuple[np.ndarray, ...]:
        """Of the intervals from edge ``first``: the checked ones (deviation not NaN) that jump, with their
        deviation, noise and pair flag (:func:`steps` then drops the pairs of one mislocated edge), and the
        capture time inside the checked ones, and the spans of the unchecked ones (:func:`_merged`)."""
        t, sigma = self.t, self.sigma
        checked = ~np.isnan(deviation)
        unchecked = _merged(np.column_stack([t[first[~checked]], t[first[~checked] + 1]]))
        first, deviation, spread, pair = first[checked], deviation[checked], spread[checked], pair[checked]
        noise = np.sqrt(sigma[first] ** 2 + sigma[first + 1] ** 2 + spread ** 2)
        noise = np.maximum(noise, np.finfo(np.float64).tiny)
        jump = _jumps(deviation, noise, self.samplerate_hz)
        return (first[jump], deviation[jump], noise[jump], pair[jump],
                np.array([np.sum(t[first + 1] - t[first])]), unchecked)


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
    listed = np.zeros(0) if listed_s is None else np.sort(np.asarray(listed_s, dtype=np.float64))
    c = _Check(t, meas.sigma, ScaledTimes(t, edges.unit_s * 1e6), listed, guard_s, samplerate_hz)
    frames = decode_frames(c.time_us, meas.polarity).frames
    by_key, after = _layout(frames)
    spans = [(frame_end(frames[i]), frames[i + 1].start) for i in after]
    if not frames:
        return FrameTiming([], [_break(t, a, b) for a, b in spans], 0.0, span_s, np.array([[t[0], t[-1]]]))
    typical: list[np.ndarray] = []
    found = [_header_jumps(c, frames, typical)]
    found += [_group_jumps(c, [frames[i] for i in of_key], typical) for of_key in by_key.values()]
    first, deviation, noise, pair, checked_s, unchecked = (np.concatenate(v)
                                                          for v in zip(*found, strict=True))
    in_groups = _merged(_inside_groups(unchecked, t, frames))
    ends = np.array([[t[0], t[frames[0].start]], [t[frame_end(frames[-1])], t[-1]]])
    unchecked = _merged(np.concatenate([unchecked, ends[ends[:, 1] > ends[:, 0]]]))
    order = np.argsort(first)
    first, deviation, noise, pair = first[order], deviation[order], noise[order], pair[order]
    jump = steps(deviation, noise, np.diff(first) == 1, samplerate_hz)
    jumps = [DetectedGap(float(t[j]), float(t[j + 1]), float(-d), float(d / s), ("frames",), bool(p))
             for j, d, s, p in zip(first[jump], deviation[jump], noise[jump], pair[jump], strict=True)]
    quiet_s = QUIET_MIN_US * 1e-6 / edges.unit_s
    classes = (np.sort(np.concatenate(typical)), meas.sigma, samplerate_hz, quiet_s)
    return FrameTiming(jumps, [_break(t, a, b, classes) for a, b in spans], float(np.sum(checked_s)), span_s,
                       unchecked, in_groups)


def _merged(spans: np.ndarray) -> np.ndarray:
    """``spans`` (rows of start, end) as the fewest disjoint ones, ascending: touching ones joined."""
    if not len(spans):
        return np.zeros((0, 2))
    spans = spans[np.argsort(spans[:, 0], kind="stable")]
    reach = np.maximum.accumulate(spans[:, 1])
    new = np.concatenate([[True], spans[1:, 0] > reach[:-1]])
    starts = np.flatnonzero(new)
    return np.column_stack([spans[starts, 0], reach[np.append(starts[1:] - 1, len(spans) - 1)]])


def _inside_groups(spans: np.ndarray, t: np.ndarray, frames: list[Frame]) -> np.ndarray:
    """Those of ``spans`` that lie within one decoded frame's group, from its first edge to its last, where
    the estimates' pulses are (not a header, a SETTLE or a QUIET)."""
    grouped = [f for f in frames if f.group_hi > f.group_lo]
    if not grouped or not len(spans):
        return np.zeros((0, 2))
    start = t[np.array([f.group_lo for f in grouped], dtype=np.int64)]
    end = t[np.array([f.group_hi - 1 for f in grouped], dtype=np.int64)]
    k = np.searchsorted(start, spans[:, 0], "right") - 1
    inside = (k >= 0) & (spans[:, 1] <= end[np.maximum(k, 0)])
    return spans[inside]


def _frame_key(f: Frame) -> Hashable:
    """What a frame's timing depends on: its kind and fields, but for the repetition index."""
    return f.kind, tuple(sorted((k, v) for k, v in f.fields.items() if k != "rep"))


def _layout(frames: list[Frame]) -> tuple[dict[Hashable, list[int]], list[int]]:
    """The frames with a group (but the calibration train's, a header class) by kind and fields, and the
    frames after which edges lie that no frame explains (breaks)."""
    by_key: dict[Hashable, list[int]] = defaultdict(list)
    breaks = []
    for i, f in enumerate(frames):
        end = frame_end(f)
        if f.kind != "cal" and end > f.start + header_edge_count(f.kind) - 1:
            by_key[_frame_key(f)].append(i)
        if i + 1 < len(frames) and frames[i + 1].start != end + 1:
            breaks.append(i)
    return by_key, breaks


def _header_intervals(time_us: ScaledTimes, frames: list[Frame], lo: int, hi: int,
                      numbers: dict[Hashable, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The header intervals of ``frames[lo:hi]``, their QUIETs after them and their calibration trains:
    each one's first edge (ascending), class and the 1 bits of the header it precedes (QUIETs only, else
    0). ``numbers`` numbers the QUIET classes (pairs of frame kinds and fields), kept across calls."""
    part = frames[lo:hi]
    start = np.array([f.start for f in part], dtype=np.int64)
    n_head = np.array([header_edge_count(f.kind) for f in part], dtype=np.int64)
    end = np.array([frame_end(f) for f in part], dtype=np.int64)
    # edge → edge inside each header, k-th of its frame
    head, k = _runs(start, np.maximum(np.minimum(start + n_head - 1, end) - start, 0))
    high = time_us[head + 1] - time_us[head] >= BIT1_HIGH_US[0]
    cls = [np.where(k < 2, k, np.where(k % 2 == 0, 2 + high, 4))]
    # the calibration trains: the SETTLE, then the train's periods
    cal = np.array([f.kind == "cal" for f in part], dtype=bool)
    group, g = _runs(start[cal] + n_head[cal] - 1, np.maximum(end[cal] - (start[cal] + n_head[cal] - 1), 0))
    cls.append(np.where(g == 0, 5, CAL_CLASS))
    # the QUIETs between adjacent frames; QUIET classes are negative
    quiet, pair, following = [], [], []
    for i in range(lo, hi):
        if i + 1 < len(frames) and frames[i + 1].start == end[i - lo] + 1:
            quiet.append(end[i - lo])
            pair.append(-numbers.setdefault((_frame_key(frames[i]), _frame_key(frames[i + 1])),
                                            HEADER_CLASSES + 1 + len(numbers)))
            following.append(i + 1)
    cls.append(np.array(pair, dtype=np.int64))
    # the 1 bits of the header after each QUIET: its bits' highs from its third edge on
    f_start = np.array([frames[i].start for i in following], dtype=np.int64)
    f_head = np.array([header_edge_count(frames[i].kind) for i in following], dtype=np.int64)
    bit, b = _runs(f_start + 2, np.maximum((f_head - 2) // 2, 0), step=2)
    inside = bit + 1 < len(time_us)
    one = np.zeros(len(bit), dtype=bool)
    one[inside] = time_us[bit[inside] + 1] - time_us[bit[inside]] >= BIT1_HIGH_US[0]
    owner = np.repeat(np.arange(len(following)), np.maximum((f_head - 2) // 2, 0))
    ones = np.bincount(owner[one], minlength=len(following)).astype(np.float64)
    first = np.concatenate([head, group, np.array(quiet, dtype=np.int64)])
    order = np.argsort(first, kind="stable")  # each frame's header, train and QUIET, frame by frame
    return (first[order], np.concatenate(cls).astype(np.int64)[order],
            np.concatenate([np.zeros(len(head) + len(group)), ones])[order])


def _runs(first: np.ndarray, count: np.ndarray, step: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``first[j] + step·k`` for ``k`` < ``count[j]`` of every ``j``, run after run, and each one's ``k``."""
    k = np.arange(int(np.sum(count))) - np.repeat(np.cumsum(count) - count, count)
    return np.repeat(first, count) + step * k, k


def _median(values: np.ndarray) -> float:
    """The median (NaN of none): the middle value, or the mean of the middle two. ``values`` is sorted in
    place (a class of millions of intervals is not copied for it)."""
    if not len(values):
        return float("nan")
    values.sort()
    return float(0.5 * (values[(len(values) - 1) // 2] + values[len(values) // 2]))


def _header_jumps(c: _Check, frames: list[Frame], typical: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """The candidate jumps (:meth:`_Check.candidates`) among the header, QUIET and calibration-train
    intervals of ``frames``; appends to ``typical`` the median of each class of two or more."""
    chunks = [(lo, min(lo + FRAME_CHUNK, len(frames))) for lo in range(0, len(frames), FRAME_CHUNK)]
    numbers: dict[Hashable, int] = {}
    parts: dict[int, list[tuple[np.ndarray, ...]]] = defaultdict(list)  # per class: durations, listed, 1 bits
    for lo, hi in chunks:
        first, cls, ones = _header_intervals(c.time_us, frames, lo, hi, numbers)
        duration, listed = c.t[first + 1] - c.t[first], c.listed(first)
        order = np.argsort(cls, kind="stable")
        for part in np.split(order, np.flatnonzero(np.diff(cls[order])) + 1):
            k = int(cls[part[0]])
            parts[k].append((duration[part], listed[part], ones[part] if k < 0 else np.zeros(0)))
    quiets = {k: (np.concatenate([p[0] for p in v]), np.concatenate([p[2] for p in v]))
              for k, v in parts.items() if k < 0}
    slope = _quiet_slope(quiets)
    stats = {}  # class → (median, clean members, MAD) of its clean members
    for k in sorted(parts):  # a class at a time, its parts let go as it is joined
        d, listed = (np.concatenate(v) for v in zip(*[p[:2] for p in parts.pop(k)], strict=True))
        if k < 0:
            d = d - slope * quiets[k][1]
        clean = d[~listed]  # a copy, sorted in place below
        median = _median(clean)
        stats[k] = (median, len(clean), _median(np.abs(clean - median)))
        if len(d) > 1:
            typical.append(np.array([median if len(clean) == len(d) else _median(d)]))
    found = []
    for lo, hi in chunks:
        first, cls, ones = _header_intervals(c.time_us, frames, lo, hi, numbers)
        duration = c.t[first + 1] - c.t[first] - slope * ones
        keys, inverse = np.unique(cls, return_inverse=True)
        of_class = [np.array([stats[int(k)][j] for k in keys])[inverse] for j in range(3)]
        deviation, spread, pair = _deviation(duration, c.listed(first), *of_class)
        found.append(c.candidates(first, deviation, spread, pair))
    return tuple(np.concatenate(v) for v in zip(*found, strict=True))


def _quiet_slope(quiets: dict[int, tuple[np.ndarray, np.ndarray]]) -> float:
    """How much a QUIET shortens per 1 bit of the next header: the median slope between the median QUIETs
    of one pair of frame kinds with different numbers of 1 bits, pooled over the pairs (0 without any).
    ``quiets``: per pair, its QUIETs' durations and 1 bits."""
    slopes: list[float] = []
    for duration, ones in quiets.values():
        values = np.unique(ones)
        medians = np.array([np.median(duration[ones == v]) for v in values])
        for a in range(len(values)):
            slopes += list((medians[a + 1:] - medians[a]) / (values[a + 1:] - values[a]))
    return float(np.median(slopes)) if slopes else 0.0


def _deviation(duration: np.ndarray, listed: np.ndarray, median: np.ndarray, size: np.ndarray,
               mad: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each interval's deviation from its class (NaN: not checked), the class's own spread, and whether it
    is one of a class of two (ambiguous); ``median``, ``size`` and ``mad`` of its class's clean members.

    Intervals with a listed gap in them (``listed``) are compared with their class but not part of it.
    The class is the median of three clean members or more; of two, each is compared with the other (when
    they disagree, either may have lost audio: both are suspect) and the listed ones with their mean; of
    one, only the listed ones are compared with it.
    """
    off = duration - median
    pair = ~listed & (size == 2)
    deviation = np.where(pair, 2.0 * off, np.where((size > 2) | (listed & (size > 0)), off, np.nan))
    spread = np.where(size > 2, MAD_SIGMA * mad, 0.0)
    return deviation, spread, pair


def _group_jumps(c: _Check, frames: list[Frame], typical: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """The candidate jumps (:meth:`_Check.candidates`) among the group intervals (the SETTLE, then the
    group's own) of ``frames``, all of one kind and fields: interval k of every frame is one class. Appends
    to ``typical`` the median of each class of two or more."""
    lo = np.array([f.start + header_edge_count(f.kind) - 1 for f in frames], dtype=np.int64)
    length = frame_end(frames[0]) - int(lo[0])
    width = max(1, GROUP_CHUNK // len(lo))
    found = []
    for c0 in range(0, length, width):
        first = lo[:, None] + np.arange(c0, min(length, c0 + width))[None, :]
        duration, listed = c.t[first + 1] - c.t[first], c.listed(first)
        median, size = _column_medians(duration, ~listed)
        mad, _ = _column_medians(np.abs(duration - median), ~listed)
        if len(lo) > 1:
            typical.append(np.median(duration, axis=0))
        size = np.broadcast_to(size, duration.shape)
        deviation, spread, pair = _deviation(duration, listed, median, size, mad)
        found.append(c.candidates(first.ravel(), deviation.ravel(), spread.ravel(), pair.ravel()))
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
