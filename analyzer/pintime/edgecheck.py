"""Per-edge errors of the WAV edge locators against the exact simavr edges (``pintime validate``).

A capture's clock differs from the MCU's by an unknown ratio and offset and wanders slowly, so the exact
edge times (MCU cycles) are mapped to capture time by a continuous piecewise-linear function with knots
every ``CAL_KNOT_S`` (farther apart where edges are sparse, so that each knot interval holds
``EDGES_PER_KNOT`` edges on average), fitted by least squares on all matched edges of both channels
(with a tiny curvature penalty that bridges stretches without edges). The fit then absorbs a few percent
of the per-edge error variance at most; a single straight line would instead charge the clock's wander
(nanoseconds over a second, DESIGN.md §5) to the edge locator. The first map follows the reference
square wave, whose edges pair without ambiguity: a scale from one interval would drift out of the match
tolerance over a long capture (a 1 µs edge error over a 0.5 s period is 2 ppm: 1.6 ms after 800 s).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import spsolve

from pintime.edges import Edges
from pintime.errors import PintimeError
from pintime.locate import METHODS, CaptureEdges, locate_capture

CAL_KNOT_S = 0.02  # knot spacing of the piecewise-linear time map
MATCH_TOLERANCE_S = 20e-6  # a located edge matches the nearest mapped exact edge of its channel within this
SMOOTHING = 1e-6  # weight of the curvature penalty relative to one edge
MIN_MATCHED = 0.9  # a smaller matched fraction of the located edges: wrong capture or a broken time map
SHORT_INTERVAL_S = 1e-3  # intervals this short see the clock's wander only as ≲ 0.05 ns (DESIGN.md §5)


def edge_errors(capture: Path, truth: Edges) -> dict[str, Any]:
    """Per method: ``rms_ns``, ``bias_rise_ns``, ``bias_fall_ns``, ``max_ns``, ``crlb_ns`` and counts.

    ``bias_*`` are the mean errors of rising and falling edges (relative to the fitted time map, which
    takes out any error common to both); ``rms_ns`` and ``max_ns`` are the RMS and worst error about the
    bias of the edge's polarity, comparable with ``crlb_ns``, the RMS of the edges' Cramér–Rao bounds;
    ``interval_rms_ns`` is the same RMS seen through short intervals, free of the clock's wander.
    """
    return {method: errors_of(locate_capture(capture, method), truth) for method in METHODS}


def errors_of(result: CaptureEdges, truth: Edges) -> dict[str, Any]:
    """Errors of one located capture against the exact edges ``truth`` (any time unit)."""
    located = result.edges
    idx, err, n_map = _match(located, truth)
    pol = located.polarity[idx]
    bias = {p: float(np.mean(err[pol == p])) if np.any(pol == p) else 0.0 for p in (1, -1)}
    scatter = err - np.where(pol > 0, bias[1], bias[-1])
    return {
        "rms_ns": float(np.sqrt(np.sum(scatter ** 2) / max(1, len(idx) - n_map - 2)) * 1e9),
        "interval_rms_ns": _interval_rms(located, idx, scatter) * 1e9,
        "bias_rise_ns": bias[1] * 1e9,
        "bias_fall_ns": bias[-1] * 1e9,
        "max_ns": float(np.max(np.abs(scatter)) * 1e9),
        "crlb_ns": float(np.sqrt(np.mean(result.crlb_s[idx] ** 2)) * 1e9),
        "matched": int(len(idx)),
        "located": int(len(located.time)),
        "exact": int(len(truth.time)),
        "calibration": f"piecewise-linear time map, knots every {CAL_KNOT_S * 1e3:g} ms, all matched edges "
                       f"(RMS over the degrees of freedom it leaves)",
    }


def _interval_rms(located: Edges, idx: np.ndarray, scatter: np.ndarray) -> float:
    """Per-edge RMS error seen through intervals between consecutive measurement-channel edges less than
    ``SHORT_INTERVAL_S`` apart (the error of an interval, divided by √2): the sample clock's wander, which
    a time map follows only so far, moves both ends of a short interval alike and drops out."""
    ch0 = located.channel[idx] == 0
    t, e = located.time[idx][ch0], scatter[ch0]
    short = np.diff(t) < SHORT_INTERVAL_S
    if not short.any():
        return float("nan")
    return float(np.sqrt(np.mean(np.diff(e)[short] ** 2) / 2))


def match(located: Edges, truth: Edges) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the located edges that match an exact edge, and their errors (s) after calibration."""
    idx, err, _ = _match(located, truth)
    return idx, err


def _match(located: Edges, truth: Edges) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`match`, and the number of parameters of the time map the errors were taken about."""
    t_exact = truth.time.astype(np.float64)
    # first guess of the map: scale from the reference square wave, offset from the first edge
    ref_l, ref_t = located.time[located.channel == 1], t_exact[truth.channel == 1]
    if len(ref_l) >= 2 and len(ref_t) >= 2:
        scale = np.median(np.diff(ref_l)) / np.median(np.diff(ref_t))
    elif truth.unit_s is not None:
        scale = truth.unit_s
    else:
        raise PintimeError("cannot relate the exact edges' time unit to the capture (no reference edges)")
    first_l, first_t = located.time[located.channel == 0], t_exact[truth.channel == 0]
    if len(first_l) == 0 or len(first_t) == 0:
        raise PintimeError("no measurement-channel edges to compare")
    mapped = (t_exact - first_t[0]) * scale + first_l[0]
    if len(ref_l) >= 2 and len(ref_t) >= 2:
        # the scale from one median interval is off by ~(edge error / interval): over a long capture that
        # drifts past the tolerance, so first follow the reference square wave, whose edges pair without
        # ambiguity within a quarter period
        idx, jdx = _nearest(located, truth, mapped, (1,), 0.25 * float(np.median(np.diff(ref_l))))
        if len(idx) >= 2:
            mapped, _ = _time_map(t_exact[jdx], located.time[idx], t_exact)
    for _ in range(3):
        idx, jdx = _nearest(located, truth, mapped)
        if len(idx) < 2:
            raise PintimeError("the located edges do not match the exact ones (another capture?)")
        mapped, n_map = _time_map(t_exact[jdx], located.time[idx], t_exact)
    idx, jdx = _nearest(located, truth, mapped)
    if len(idx) < MIN_MATCHED * len(located.time):
        raise PintimeError(f"only {len(idx)} of the {len(located.time)} located edges match an exact edge "
                           f"within {MATCH_TOLERANCE_S * 1e6:g} µs (another capture?)")
    return idx, located.time[idx] - mapped[jdx], n_map


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
        k = np.clip(np.searchsorted(t_t, t_l), 1, len(ti) - 1)
        k = np.where(np.abs(t_l - t_t[k - 1]) < np.abs(t_l - t_t[k]), k - 1, k)
        ok = (np.abs(t_l - t_t[k]) < tolerance_s) & (located.polarity[li] == truth.polarity[ti[k]])
        pairs_l.append(li[ok])
        pairs_t.append(ti[k][ok])
    return np.concatenate(pairs_l), np.concatenate(pairs_t)


def _time_map(x: np.ndarray, y: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, int]:
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
