"""The exact simavr edges placed on a capture's located edges: matching and the time map between them.

A capture's clock differs from the MCU's by an unknown ratio and offset and wanders slowly, so the exact
edge times (MCU cycles) are mapped to capture time by a continuous piecewise-linear function with knots
every ``CAL_KNOT_S`` (farther apart where edges are sparse, so that each knot interval holds
``EDGES_PER_KNOT`` edges on average), fitted by least squares on all matched edges of both channels
(with a tiny curvature penalty that bridges stretches without edges). The fit then absorbs a few percent
of the per-edge error variance at most; a single straight line would instead charge the clock's wander
(nanoseconds over a second, docs/design.md §10) to the edge locator. The first map follows the reference
square wave, whose edges pair without ambiguity: a scale from one interval would drift out of the match
tolerance over a long capture (a 1 µs edge error over a 0.5 s period is 2 ppm: 1.6 ms after 800 s).

A recording with gaps (listed, :mod:`pintime.capture.gaps`, or found in the data, :mod:`pintime.lost_audio`)
is compared stretch by stretch: each gets its own time map, and each stretch after a gap is first placed on
the exact edges anew (:func:`match_stretches`), as the audio a PortAudio overflow lost is not known.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import spsolve

from pintime.edges import Edges, nearest_index
from pintime.errors import PintimeError
from pintime.lost_audio import near_spans

CAL_KNOT_S = 0.02  # knot spacing of the piecewise-linear time map
MATCH_TOLERANCE_S = 20e-6  # a located edge matches the nearest mapped exact edge of its channel within this
SMOOTHING = 1e-6  # weight of the curvature penalty relative to one edge
MIN_MATCHED = 0.9  # a smaller matched fraction of the located edges: wrong capture or a broken time map
MIN_STRETCH_EDGES = 16  # a stretch between recording gaps with fewer located edges is left out
PLACE_EDGES = 64  # a stretch after a gap is placed on the exact edges by at least this many edges
PLACE_SPAN_S = 2.0  # anchors in its first this long, checked on edges this near (drift from the scale ≲ 4 µs)
PLACE_MISSES = 3  # of which a placement may miss this many (edges the locator got wrong)
PLACE_ANCHORS = 4  # measurement edges tried in turn as the stretch's anchor
FOLLOW_START_S = 0.25  # without a reference, the map is first fitted this far around the anchor, then 2×, 4×…


def about_lines(t_exact: np.ndarray, time_s: np.ndarray, stretch: np.ndarray) -> np.ndarray:
    """The located times less a straight line through each stretch's (exact, located) times: errors
    that keep the clock's wander."""
    raw = np.empty(len(time_s))
    for s in np.unique(stretch):
        on = stretch == s
        x = t_exact[on] - t_exact[on][0]
        raw[on] = time_s[on] - np.polyval(np.polyfit(x, time_s[on], 1), x)
    return raw


def match(located: Edges, truth: Edges) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the located edges that match an exact edge, and their errors (s) after calibration."""
    m = match_stretches(located, truth, None)
    return m.idx, m.err


@dataclass(frozen=True)
class Matched:
    """Located edges paired with exact ones, and their errors about each stretch's time map."""

    idx: np.ndarray  # the located edges that match an exact edge
    jdx: np.ndarray  # the exact edge each of them matches
    err: np.ndarray  # located minus mapped exact time (s)
    stretch: np.ndarray  # the gap-free stretch each lies in (all 0 without recording gaps)
    n_map: int  # parameters of the time maps the errors were taken about
    beside_gaps: int  # located edges left out: within the locator's gap guard, or in too short a stretch


def match_stretches(located: Edges, truth: Edges, cuts_s: np.ndarray | None, guard_s: float = 0.0) -> Matched:
    """Match the located edges of each stretch between the capture's cuts on the exact edges, with a time
    map of its own (the audio a gap lost is unknown: each stretch is placed on the exact edges anew).

    ``cuts_s``: (start, end) rows in capture seconds, ascending (:func:`pintime.lost_audio.cut_spans`), or
    None; edges inside one or within ``guard_s`` of it are left out."""
    t_exact = truth.time.astype(np.float64)
    if cuts_s is None or not len(cuts_s):
        stretch, keep = np.zeros(len(located.time), np.int64), np.ones(len(located.time), bool)
    else:
        stretch = np.searchsorted(cuts_s[:, 1], located.time)
        keep = ~near_spans(located.time, cuts_s, guard_s)
    scale = _scale(located, stretch, truth)
    parts, n_map, last = [], 0, None
    for s in np.unique(stretch[keep]):
        sel = np.flatnonzero(keep & (stretch == s))
        if len(sel) < MIN_STRETCH_EDGES:
            keep[sel] = False
            continue
        part = Edges(located.time[sel], located.channel[sel], located.polarity[sel], located.sigma[sel],
                     located.unit_s, located.source)
        anchor = _first_anchor(part, truth) if last is None else _place(part, truth, t_exact, scale, last)
        idx, jdx, err, n = _match_stretch(part, truth, t_exact, scale, anchor)
        parts.append((sel[idx], jdx, err, np.full(len(idx), s)))
        n_map, last = n_map + n, float(t_exact[jdx].max())
    if not parts:
        raise PintimeError("no stretch between recording gaps holds enough located edges to compare")
    idx, jdx, err, seg = (np.concatenate(x) for x in zip(*parts, strict=True))
    return Matched(idx, jdx, err, seg, n_map, int(np.count_nonzero(~keep)))


def _scale(located: Edges, stretch: np.ndarray, truth: Edges) -> float:
    """First guess of capture seconds per exact time unit: the reference square wave's median interval
    within stretches against the exact one (or the exact edges' own unit)."""
    ref = located.channel == 1
    ref_t = truth.time[truth.channel == 1].astype(np.float64)
    same = np.diff(stretch[ref]) == 0
    if same.any() and len(ref_t) >= 2:
        return float(np.median(np.diff(located.time[ref])[same]) / np.median(np.diff(ref_t)))
    if truth.unit_s is not None:
        return truth.unit_s
    raise PintimeError("cannot relate the exact edges' time unit to the capture (no reference edges)")


def _first_anchor(located: Edges, truth: Edges) -> tuple[int, int]:
    """The first located and the first exact measurement-channel edge (the capture holds the run's start)."""
    first_l, first_t = np.flatnonzero(located.channel == 0), np.flatnonzero(truth.channel == 0)
    if len(first_l) == 0 or len(first_t) == 0:
        raise PintimeError("no measurement-channel edges to compare")
    return int(first_l[0]), int(first_t[0])


def _place(located: Edges, truth: Edges, t_exact: np.ndarray, scale: float,
           after: float) -> tuple[int, int]:
    """(located, exact) indices of one measurement-channel edge pair that places a stretch after a gap.

    Anchors are tried in turn: the stretch's measurement edges after its PLACE_ANCHORS longest intervals in
    its first PLACE_SPAN_S (rare ones: few exact edges follow an interval as long). The candidates for an
    anchor are the exact edges after time ``after`` of its polarity after an interval as long. Each other
    measurement edge of the stretch, nearest to the anchor first and at most PLACE_SPAN_S from it, mapped
    by ``scale``, must find an exact edge of its polarity within MATCH_TOLERANCE_S; a candidate that misses
    more than PLACE_MISSES of them is out. The repetitions of a run differ only in their frame headers, so
    edges are checked until one candidate is left (at least PLACE_EDGES); the first anchor left with one
    places the stretch.
    """
    lm = np.flatnonzero(located.channel == 0)
    em = np.flatnonzero((truth.channel == 0) & (t_exact > after))
    et, ep = t_exact[em], truth.polarity[em]
    exact_interval_s = np.diff(et, prepend=-np.inf) * scale
    early = np.diff(located.time[lm])[located.time[lm[1:]] - located.time[lm[0]] <= PLACE_SPAN_S]
    left = []
    for a in np.argsort(-early, kind="stable")[:PLACE_ANCHORS] + 1:
        t0 = located.time[lm[a]]
        interval_s = t0 - located.time[lm[a - 1]]
        cand = np.flatnonzero((ep == located.polarity[lm[a]])
                              & (np.abs(exact_interval_s - interval_s) < MATCH_TOLERANCE_S))
        misses = np.zeros(len(cand), np.int64)
        others = np.delete(lm, a)
        others = others[np.argsort(np.abs(located.time[others] - t0), kind="stable")]
        for n, i in enumerate(others[np.abs(located.time[others] - t0) <= PLACE_SPAN_S]):
            if len(cand) <= 1 and n >= PLACE_EDGES:
                break
            target = et[cand] + (located.time[i] - t0) / scale
            k = nearest_index(et, target)
            misses += (np.abs(et[k] - target) * scale >= MATCH_TOLERANCE_S) | (ep[k] != located.polarity[i])
            cand, misses = cand[misses <= PLACE_MISSES], misses[misses <= PLACE_MISSES]
        if len(cand) == 1:
            return int(lm[a]), int(em[cand[0]])
        left.append(len(cand))
    where = f"the located edges after a recording gap (from {located.time[0]:.6f} s)"
    if max(left, default=0) == 0:
        raise PintimeError(f"{where} match no exact edges (another capture?)")
    raise PintimeError(f"{where} match the exact ones at {max(left)} places: cannot tell which audio the gap "
                       "lost")


def _match_stretch(located: Edges, truth: Edges, t_exact: np.ndarray, scale: float,
                   anchor: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The matches of one gap-free stretch: located and exact indices, errors about its time map, and the
    map's number of parameters. ``anchor``: a (located, exact) pair of edges known to be the same edge."""
    mapped = (t_exact - t_exact[anchor[1]]) * scale + located.time[anchor[0]]
    ref_l = located.time[located.channel == 1]
    if len(ref_l) >= 2 and np.count_nonzero(truth.channel == 1) >= 2:
        # the scale from one median interval is off by ~(edge error / interval): over a long capture that
        # drifts past the tolerance, so first follow the reference square wave, whose edges pair without
        # ambiguity within a quarter period
        idx, jdx = _nearest(located, truth, mapped, (1,), 0.25 * float(np.median(np.diff(ref_l))))
        if len(idx) >= 2:
            mapped, _ = time_map(t_exact[jdx], located.time[idx], t_exact)
    else:
        # no reference (a mono capture): the nominal scale is off by the clocks' ppm, so follow the
        # measurement edges outward from the anchor, each span's line placing twice the span
        t0, reach_s = located.time[anchor[0]], float(np.max(np.abs(located.time - located.time[anchor[0]])))
        span_s = FOLLOW_START_S
        while True:
            idx, jdx = _nearest(located, truth, mapped, (0,))
            near = np.abs(located.time[idx] - t0) <= span_s
            if np.count_nonzero(near) >= 2:
                line = np.polyfit(t_exact[jdx[near]], located.time[idx[near]], 1)
                mapped = np.polyval(line, t_exact)
            if span_s >= reach_s:
                break
            span_s *= 2
    # the map from the measurement pin's edges, and from a reference edge only where the pin has none
    # within 2 knots before it or after it: a card's two channels may be sampled apart (two ADCs), and a
    # reference edge among the pin's would bend the map toward that offset; a lone one keeps the map from
    # following the wander blind through the pin's long silences (docs/design.md §11, "Validation's time
    # map", has the figures)
    pin_time = located.time[located.channel == 0]
    for _ in range(3):
        idx, jdx = _nearest(located, truth, mapped)
        on_pin = located.channel[idx] == 0
        keep = on_pin | _unbracketed(located.time[idx], pin_time, 2 * CAL_KNOT_S)
        idx, jdx = idx[keep], jdx[keep]
        if len(idx) < 2:
            raise PintimeError("the located edges do not match the exact ones (another capture?)")
        mapped, n_map = time_map(t_exact[jdx], located.time[idx], t_exact)
    idx, jdx = _nearest(located, truth, mapped)
    if len(idx) < MIN_MATCHED * len(located.time):
        raise PintimeError(f"only {len(idx)} of the {len(located.time)} located edges match an exact edge "
                           f"within {MATCH_TOLERANCE_S * 1e6:g} µs (another capture?)")
    return idx, jdx, located.time[idx] - mapped[jdx], n_map


def _unbracketed(t: np.ndarray, sorted_t: np.ndarray, reach: float) -> np.ndarray:
    """Whether each of ``t`` lacks one of ``sorted_t`` within ``reach`` before it or after it."""
    padded = np.concatenate([[-np.inf], sorted_t, [np.inf]])
    k = np.searchsorted(padded, t)
    return np.asarray((t - padded[k - 1] > reach) | (padded[k] - t > reach))


def _nearest(located: Edges, truth: Edges, mapped: np.ndarray, channels: tuple[int, ...] = (0, 1),
             tolerance_s: float = MATCH_TOLERANCE_S) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (located index, exact index): same channel and polarity, nearest, within the tolerance."""
    pairs_l, pairs_t = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for ch in channels:
        li = np.flatnonzero(located.channel == ch)
        ti = np.flatnonzero(truth.channel == ch)
        if li.size == 0 or ti.size < 2:
            continue
        t_l, t_t = located.time[li], mapped[ti]
        k = nearest_index(t_t, t_l)
        ok = (np.abs(t_l - t_t[k]) < tolerance_s) & (located.polarity[li] == truth.polarity[ti[k]])
        pairs_l.append(li[ok])
        pairs_t.append(ti[k][ok])
    return np.concatenate(pairs_l), np.concatenate(pairs_t)


def time_map(x: np.ndarray, y: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, int]:
    """Least-squares continuous piecewise-linear map x → y (knots every CAL_KNOT_S of y), evaluated at
    ``at``, and its number of parameters the data determine (the knots next to data points).

    Fitted as a correction to the straight line through the data, so the knots carry only the wander.
    """
    line = np.polyfit(x - x[0], y, 1)
    resid = y - np.polyval(line, x - x[0])
    knot_x = CAL_KNOT_S / line[0]  # knot spacing in x units
    n_knots = int(np.ceil((max(x.max(), at.max()) - min(x.min(), at.min())) / knot_x)) + 2
    origin = min(x.min(), at.min())

    def design(v: np.ndarray) -> sparse.csr_matrix:
        pos = (v - origin) / knot_x
        k = np.minimum(pos.astype(np.int64), n_knots - 2)
        f = pos - k
        rows = np.repeat(np.arange(len(v)), 2)
        cols = np.column_stack([k, k + 1]).ravel()
        return sparse.csr_matrix((np.column_stack([1 - f, f]).ravel(), (rows, cols)), shape=(len(v), n_knots))

    a = design(x)
    curv = sparse.diags([1.0, -2.0, 1.0], [0, 1, 2], shape=(n_knots - 2, n_knots))
    normal = (a.T @ a + SMOOTHING * (curv.T @ curv) + 1e-12 * sparse.eye(n_knots)).tocsc()
    knots = spsolve(normal, a.T @ resid)
    return np.polyval(line, at - x[0]) + design(at) @ knots, len(np.unique(a.indices))
