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

The errors about that map are what a user's absolute time stamps see, but a 20 ms map cannot follow a
card's faster wander (a random walk of the phase: ≈0.5 ns per 10 ms on good cards). The locator's own
error is separated from it using only the exact and located times (:func:`locator_error`):

- its deterministic part, a bias that depends on where the edge falls between two samples, is the mean
  error per sub-sample phase bin and polarity (the wander is independent of that phase and averages out);
- its random part is the intercept of the error's structure function: for pairs of edges τ apart,
  ``E[(e_j − e_i)²] = κ²·(c_i² + c_j²) + D·τ (+ C·τ²)``, ``c`` the edges' Cramér–Rao bounds; the clock's
  phase wander only adds terms that vanish with τ (linear for white frequency noise, quadratic for a
  frequency that holds over more than τ). Only pairs 0.1–1 ms apart enter, where the wander is small.

The clock itself is reported as the Allan deviation of its frequency at 1 s (:func:`clock_adev`), from the
errors about a straight line: the card's wander, the figure DESIGN.md §5 quotes.

A recording with gaps (:mod:`pintime.capture.gaps`) is compared stretch by stretch: each gets its own time
map, and each stretch after a gap is first placed on the exact edges anew (:func:`match_stretches`), as
the audio a PortAudio overflow lost is not known.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import spsolve

from pintime.capture.gaps import RecordingGaps, near_gaps, read_gaps
from pintime.edges import Edges
from pintime.errors import PintimeError
from pintime.locate.capture_edges import METHODS, CaptureEdges, gap_guard_s, locate_capture

CAL_KNOT_S = 0.02  # knot spacing of the piecewise-linear time map
MATCH_TOLERANCE_S = 20e-6  # a located edge matches the nearest mapped exact edge of its channel within this
SMOOTHING = 1e-6  # weight of the curvature penalty relative to one edge
MIN_MATCHED = 0.9  # a smaller matched fraction of the located edges: wrong capture or a broken time map
PHASE_BINS = 32  # sub-sample phase bins of the locator's bias (a smooth function of the phase)
PAIR_MIN_S, PAIR_MAX_S = 1e-4, 1e-3  # structure function fitted on pairs this far apart: wander ≲ 0.05 ns
PAIR_MAX_LAG = 64  # pairs up to this many edges apart (all pairs within 1 ms at ~4000 edges/s)
JACKKNIFE_BLOCKS = 16  # the random part's standard error: delete-one-block jackknife over the capture
ADEV_TAU_S = 1.0  # the clock's Allan deviation is reported at this averaging time
ADEV_SPACING_TOLERANCE = 0.01  # edges used for it lie within 1 % of the nominal spacing
MIN_STRETCH_EDGES = 16  # a stretch between recording gaps with fewer located edges is left out
PLACE_EDGES = 64  # a stretch after a gap is placed on the exact edges by at least this many edges
PLACE_SPAN_S = 2.0  # anchors in its first this long, checked on edges this near (drift from the scale ≲ 4 µs)
PLACE_MISSES = 3  # of which a placement may miss this many (edges the locator got wrong)
PLACE_ANCHORS = 4  # measurement edges tried in turn as the stretch's anchor


def edge_errors(capture: Path, truth: Edges) -> dict[str, Any]:
    """Per method: ``rms_ns``, ``bias_rise_ns``, ``bias_fall_ns``, ``max_ns``, ``crlb_ns`` and counts.

    ``bias_*`` are the mean errors of the measurement channel's rising and falling edges (relative to the
    fitted time map, which takes out any error common to both), ``right_skew_ns`` the reference channel's
    mean error less the measurement channel's (a card with two ADCs); ``rms_ns`` and ``max_ns`` are the
    RMS and worst error about the mean of the edge's channel and polarity and the 20 ms time map (what
    absolute time stamps see, the card's clock wander included), comparable with ``crlb_ns``, the RMS of
    the edges' Cramér–Rao bounds; ``locator_rms_ns`` ± ``locator_rms_se_ns`` is the locator's own RMS
    error, free of the clock's wander (:func:`locator_error`), and ``clock_adev_1s`` the card clock's
    Allan deviation at 1 s. A capture with recording gaps (its sidecar, :mod:`pintime.capture.gaps`) gets a
    time map per stretch between them; ``beside_gaps`` counts the located edges left out near a gap.
    """
    gaps = read_gaps(capture)
    return {method: errors_of(locate_capture(capture, method), truth, gaps) for method in METHODS}


def errors_of(result: CaptureEdges, truth: Edges, gaps: RecordingGaps | None = None) -> dict[str, Any]:
    """Errors of one located capture against the exact edges ``truth`` (any time unit), stretch by
    stretch between recording ``gaps``."""
    located = result.edges
    m = match_stretches(located, truth, gaps)
    idx, jdx, err, n_map, stretch = m.idx, m.jdx, m.err, m.n_map, m.stretch
    pol, channel = located.polarity[idx], located.channel[idx]
    # constant offsets of each channel and polarity (fall−rise delay, a second ADC's skew) are the card's
    # and the pin's, not the locator's: errors are taken about them
    group = 2 * channel.astype(np.int64) + (pol < 0)
    count = np.bincount(group, minlength=4)
    offset = np.bincount(group, err, 4) / np.maximum(count, 1)
    scatter = err - offset[group]
    time_s, crlb_s = located.time[idx], result.crlb_s[idx]
    own = locator_error(time_s, scatter, pol, crlb_s, channel, result.info.samplerate_hz, stretch)
    raw = _about_lines(truth.time[jdx].astype(np.float64), time_s, stretch) - offset[group]
    adev = clock_adev(time_s, raw, channel, stretch=stretch)
    skew = (np.mean(err[channel == 1]) - np.mean(err[channel == 0])) * 1e9 if count[2:].any() else None
    return {
        "rms_ns": float(np.sqrt(np.sum(scatter ** 2) / max(1, len(idx) - n_map - np.count_nonzero(count)))
                        * 1e9),
        **{f"{name}_ns": None if np.isnan(own[f"{name}_s"]) else own[f"{name}_s"] * 1e9
           for name in ("locator_rms", "locator_rms_se", "phase_bias_rms")},  # None: too few pairs (JSON)
        "clock_adev_1s": adev,
        "bias_rise_ns": float(offset[0]) * 1e9,
        "bias_fall_ns": float(offset[1]) * 1e9,
        "right_skew_ns": skew,
        "max_ns": float(np.max(np.abs(scatter)) * 1e9),
        "crlb_ns": float(np.sqrt(np.mean(result.crlb_s[idx] ** 2)) * 1e9),
        "matched": int(len(idx)),
        "located": int(len(located.time)),
        "exact": int(len(truth.time)),
        "stretches": int(len(np.unique(stretch))),
        "beside_gaps": m.beside_gaps,
        "calibration": "piecewise-linear time map"
                       + ("" if gaps is None else " per stretch between recording gaps")
                       + f", knots every {CAL_KNOT_S * 1e3:g} ms, all matched edges "
                       f"(RMS over the degrees of freedom it leaves); locator: phase bias plus the structure "
                       f"function's intercept on pairs {PAIR_MIN_S * 1e3:g}-{PAIR_MAX_S * 1e3:g} ms apart",
    }


def phase_bias(time_s: np.ndarray, err_s: np.ndarray, polarity: np.ndarray,
               samplerate_hz: float) -> np.ndarray:
    """Each edge's share of its polarity's mean error in its sub-sample phase bin (``PHASE_BINS`` bins).

    The phase is that of the located time on the capture's sample grid; the clock's wander and the
    noise are independent of it, so a bin's mean keeps only the locator's phase-dependent bias.
    """
    frac = np.mod(time_s * samplerate_hz, 1.0)
    k = np.minimum((frac * PHASE_BINS).astype(np.int64), PHASE_BINS - 1)
    k = k + np.where(polarity > 0, 0, PHASE_BINS)  # rising edges' bins, then falling edges'
    count = np.bincount(k, minlength=2 * PHASE_BINS)
    mean = np.bincount(k, err_s, 2 * PHASE_BINS) / np.maximum(count, 1)
    return mean[k]


def locator_error(time_s: np.ndarray, err_s: np.ndarray, polarity: np.ndarray, crlb_s: np.ndarray,
                  channel: np.ndarray, samplerate_hz: float,
                  stretch: np.ndarray | None = None) -> dict[str, float]:
    """The edge locator's own per-edge RMS error, free of the sample clock's wander (s).

    ``err_s`` are the errors about any smooth time map (the wander may remain in them). The deterministic
    part is :func:`phase_bias`; the random part is ``κ²·mean(c²)``, κ² the intercept of the structure
    function (module docstring) fitted by weighted least squares once with the wander's linear term and
    once with linear and quadratic terms: their mean is the estimate and half their difference, added in
    quadrature to the jackknife standard error, its uncertainty. Returns ``locator_rms_s``,
    ``locator_rms_se_s`` and ``phase_bias_rms_s`` (the first two NaN with fewer than 10 pairs of
    measurement-channel edges 0.1-1 ms apart). ``stretch`` labels the stretches between recording gaps
    (default: one): no pair spans a gap, whose lost audio the file times do not show.
    """
    b = phase_bias(time_s, err_s, polarity, samplerate_hz)
    # the bins' means carry noise of their own: var(mean) = var/count, summed over the edges of a bin
    b_var = max(0.0, float(np.mean(b ** 2)) - 2 * PHASE_BINS * float(np.var(err_s - b)) / len(err_s))
    ch0 = channel == 0
    same = np.zeros(len(time_s), np.int64) if stretch is None else stretch
    first, tau, d2, cc = _pairs(time_s[ch0], (err_s - b)[ch0], crlb_s[ch0] ** 2, same[ch0])
    nan = float("nan")
    if len(tau) < 10:
        return {"locator_rms_s": nan, "locator_rms_se_s": nan, "phase_bias_rms_s": float(np.sqrt(b_var))}

    block = first * JACKKNIFE_BLOCKS // int(ch0.sum())  # pairs grouped by their first edge's block
    (k_lin, jack_lin), (k_quad, jack_quad) = (_intercept(tau, d2, cc, block, q) for q in (False, True))
    k2, model_spread = 0.5 * (k_lin + k_quad), 0.5 * abs(k_quad - k_lin)
    jack = 0.5 * (jack_lin + jack_quad)
    n = len(jack)
    se2 = (n - 1) / n * float(np.sum((jack - jack.mean()) ** 2)) if n > 1 else nan
    mean_c2 = float(np.mean(cc)) / 2
    var = k2 * mean_c2 + b_var
    rms = float(np.sqrt(max(0.0, var)))
    var_se = float(np.sqrt(se2 + model_spread ** 2)) * mean_c2
    return {"locator_rms_s": rms, "locator_rms_se_s": var_se / (2 * rms) if rms > 0 else nan,
            "phase_bias_rms_s": float(np.sqrt(b_var))}


def _pairs(t: np.ndarray, e: np.ndarray, c2: np.ndarray, stretch: np.ndarray) -> tuple[np.ndarray, ...]:
    """For the pairs PAIR_MIN_S … PAIR_MAX_S apart within one stretch: first edge's index, τ, (e_j − e_i)²
    and c_i² + c_j²."""
    parts = [(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0))]
    for lag in range(1, min(PAIR_MAX_LAG, len(t) - 1) + 1):
        tau = t[lag:] - t[:-lag]
        ok = np.flatnonzero((tau >= PAIR_MIN_S) & (tau <= PAIR_MAX_S) & (stretch[lag:] == stretch[:-lag]))
        parts.append((ok, tau[ok], (e[ok + lag] - e[ok]) ** 2, c2[ok + lag] + c2[ok]))
    first, tau, d2, cc = (np.concatenate(x) for x in zip(*parts, strict=True))
    return first, tau, d2, cc


def _intercept(tau: np.ndarray, d2: np.ndarray, cc: np.ndarray, block: np.ndarray,
               quadratic: bool) -> tuple[float, np.ndarray]:
    """κ² of ``d² = κ²·cc + D·τ (+ C·τ²)`` by weighted least squares (var d² ∝ E[d²]², iterated), and κ²
    with each block's pairs left out in turn (the full fit's weights kept: the normal equations subtract)."""
    scale_c, x = float(np.mean(cc)), tau / PAIR_MAX_S
    design = np.column_stack([cc / scale_c, x] + ([x * x] if quadratic else []))
    y = d2 / scale_c
    w = np.ones(len(y))
    # the floor keeps a fit crossing zero from blowing up; relative to the data, as y ~ 1e9 for a locator
    # far above its CRLB (an absolute 1e-3 gave 3 pairs 1e22 times the others' weight: singular jackknife)
    floor = 1e-3 * float(np.mean(y))
    for _ in range(3):
        dw = design * w[:, None]
        beta = np.linalg.solve(dw.T @ design, dw.T @ y)
        w = 1.0 / np.maximum(design @ beta, floor) ** 2
    dw = design * w[:, None]
    n_blocks, p = int(block.max()) + 1, design.shape[1]
    normal = np.empty((n_blocks, p, p))
    for i in range(p):
        for j in range(p):
            normal[:, i, j] = np.bincount(block, dw[:, i] * design[:, j], n_blocks)
    rhs = np.stack([np.bincount(block, dw[:, i] * y, n_blocks) for i in range(p)], axis=-1)
    used = np.bincount(block, minlength=n_blocks) > 0
    left_out = np.linalg.solve(normal.sum(0)[None] - normal[used], (rhs.sum(0)[None] - rhs[used])[..., None])
    return float(beta[0]), left_out[:, 0, 0]


def clock_adev(time_s: np.ndarray, err_s: np.ndarray, channel: np.ndarray, tau_s: float = ADEV_TAU_S,
               stretch: np.ndarray | None = None) -> float | None:
    """Allan deviation at ``tau_s`` of the capture clock's frequency relative to the MCU's.

    ``err_s`` are the located minus the exact times about one straight line (so the wander is in them),
    less the mean fall−rise offset (which would read as frequency steps between edges of either polarity).
    Every measurement-channel edge i starts a triple i, j, k with ``t_j ≈ t_i + τ`` and ``t_k ≈ t_j + τ``
    (nearest edges, within ``ADEV_SPACING_TOLERANCE``); the mean frequencies ``y₁``, ``y₂`` over the two
    spans give ``σ_y²(τ) = ⟨(y₂ − y₁)²⟩ / 2`` (overlapping estimate). The locator's error adds ≈ 3σ²/τ²,
    negligible at 1 s. ``stretch`` labels the stretches between recording gaps (default: one): a triple
    lies within one. None when no stretch is 2τ long.
    """
    t, x = time_s[channel == 0], err_s[channel == 0]
    seg = np.zeros(len(t), np.int64) if stretch is None else stretch[channel == 0]
    if len(t) < 3 or t[-1] - t[0] < 2 * tau_s:
        return None
    j = np.clip(np.searchsorted(t, t + tau_s), 0, len(t) - 1)
    k = np.clip(np.searchsorted(t, t[j] + tau_s), 0, len(t) - 1)
    ok = (np.abs(t[j] - t - tau_s) < ADEV_SPACING_TOLERANCE * tau_s) & \
         (np.abs(t[k] - t[j] - tau_s) < ADEV_SPACING_TOLERANCE * tau_s) & (seg[j] == seg) & (seg[k] == seg)
    if not ok.any():
        return None
    i, j, k = np.flatnonzero(ok), j[ok], k[ok]
    y1, y2 = (x[j] - x[i]) / (t[j] - t[i]), (x[k] - x[j]) / (t[k] - t[j])
    return float(np.sqrt(0.5 * np.mean((y2 - y1) ** 2)))


def _about_lines(t_exact: np.ndarray, time_s: np.ndarray, stretch: np.ndarray) -> np.ndarray:
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


def match_stretches(located: Edges, truth: Edges, gaps: RecordingGaps | None) -> Matched:
    """Match the located edges of each stretch between recording ``gaps`` on the exact edges, with a time
    map of its own (the audio a gap lost is unknown: each stretch is placed on the exact edges anew)."""
    t_exact = truth.time.astype(np.float64)
    if gaps is None:
        stretch, keep = np.zeros(len(located.time), np.int64), np.ones(len(located.time), bool)
    else:
        stretch = np.searchsorted(gaps.times_s, located.time)
        keep = ~near_gaps(located.time, gaps, gap_guard_s(gaps.samplerate_hz))
    scale = _scale(located, stretch, truth)
    parts, n_map, last = [], 0, -1
    for s in np.unique(stretch[keep]):
        sel = np.flatnonzero(keep & (stretch == s))
        if len(sel) < MIN_STRETCH_EDGES:
            keep[sel] = False
            continue
        part = Edges(located.time[sel], located.channel[sel], located.polarity[sel], located.sigma[sel],
                     located.unit_s, located.source)
        anchor = _first_anchor(part, truth) if last < 0 else _place(part, truth, t_exact, scale, last)
        idx, jdx, err, n = _match_stretch(part, truth, t_exact, scale, anchor)
        parts.append((sel[idx], jdx, err, np.full(len(idx), s)))
        n_map, last = n_map + n, int(jdx.max())
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


def _place(located: Edges, truth: Edges, t_exact: np.ndarray, scale: float, after: int) -> tuple[int, int]:
    """(located, exact) indices of one measurement-channel edge pair that places a stretch after a gap.

    Anchors are tried in turn: the stretch's measurement edges after its PLACE_ANCHORS longest intervals in
    its first PLACE_SPAN_S (rare ones: few exact edges follow an interval as long). The candidates for an
    anchor are the exact edges after ``after`` of its polarity after an interval as long. Each other
    measurement edge of the stretch, nearest to the anchor first and at most PLACE_SPAN_S from it, mapped
    by ``scale``, must find an exact edge of its polarity within MATCH_TOLERANCE_S; a candidate that misses
    more than PLACE_MISSES of them is out. The repetitions of a run differ only in their frame headers, so
    edges are checked until one candidate is left (at least PLACE_EDGES); the first anchor left with one
    places the stretch.
    """
    lm = np.flatnonzero(located.channel == 0)
    em = np.flatnonzero((truth.channel == 0) & (np.arange(len(t_exact)) > after))
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
            k = np.clip(np.searchsorted(et, target), 1, len(et) - 1)
            k = np.where(np.abs(target - et[k - 1]) < np.abs(target - et[k]), k - 1, k)
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
    return idx, jdx, located.time[idx] - mapped[jdx], n_map


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
