"""Per-edge errors of the WAV edge locators against the exact simavr edges (``pintime validate``).

The exact edges are first mapped to capture time and matched to the located ones
(:mod:`pintime.validate.edgematch`), stretch by stretch between recording gaps.

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
errors about a straight line: the card's wander, the figure docs/design.md §10 quotes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pintime.capture.wav import DEFAULT_CHANNELS, Channels
from pintime.edges import Edges
from pintime.errors import PintimeError
from pintime.locate.locators.methods import METHODS
from pintime.locate.stream.capture_edges import CaptureEdges, gap_guard_s, locate_capture
from pintime.validate.edgematch import CAL_KNOT_S, about_lines, match_stretches

PHASE_BINS = 32  # sub-sample phase bins of the locator's bias (a smooth function of the phase)
PAIR_MIN_S, PAIR_MAX_S = 1e-4, 1e-3  # structure function fitted on pairs this far apart: wander ≲ 0.05 ns
PAIR_MAX_LAG = 64  # pairs up to this many edges apart (all pairs within 1 ms at ~4000 edges/s)
JACKKNIFE_BLOCKS = 16  # the random part's standard error: delete-one-block jackknife over the capture
ADEV_TAU_S = 1.0  # the clock's Allan deviation is reported at this averaging time
ADEV_SPACING_TOLERANCE = 0.01  # edges used for it lie within 1 % of the nominal spacing


@dataclass(frozen=True)
class EdgeErrors:
    """One edge locator's per-edge errors against the exact edges (:func:`errors_of`).

    Errors are taken about the mean of each channel and polarity (the card's and the pin's constant
    offsets) and a time map per stretch between recording gaps (module docstring)."""

    rms_ns: float  # RMS error about the 20 ms time map: what absolute time stamps see, clock wander included
    locator_rms_ns: float | None  # the locator's own RMS error, free of the wander; None: too few pairs
    locator_rms_se_ns: float | None  # its standard error; None: too few pairs
    phase_bias_rms_ns: float | None  # RMS of its sub-sample phase bias, part of ``locator_rms_ns``
    clock_adev_1s: float | None  # the card clock's Allan deviation at 1 s; None: no stretch 2 s long
    bias_rise_ns: float  # mean error of the measurement channel's rising edges
    bias_fall_ns: float  # mean error of its falling edges
    right_skew_ns: float | None  # reference less measurement channel's mean error (two ADCs); None: no ref.
    max_ns: float  # worst error about the time map
    crlb_ns: float  # RMS of the matched edges' Cramér–Rao bounds, to compare ``rms_ns`` with
    matched: int  # located edges matched to an exact edge
    located: int  # edges located
    exact: int  # exact edges
    stretches: int  # stretches between recording gaps compared (1 without gaps)
    beside_gaps: int  # located edges left out: beside a recording gap, or in too short a stretch
    calibration: str  # how the time map and the locator's own error were taken

    def to_json(self) -> dict[str, Any]:
        """The per-method entry of ``edges`` in the ``pintime validate`` JSON."""
        return asdict(self)


@dataclass(frozen=True)
class LocatorError:
    """An edge locator's own per-edge error, free of the sample clock's wander (:func:`locator_error`)."""

    rms_s: float  # its RMS error; NaN with too few pairs of edges
    rms_se_s: float  # the standard error of ``rms_s``; NaN with too few pairs
    phase_bias_rms_s: float  # RMS of its deterministic part, the sub-sample phase bias


def edge_errors(capture: Path, truth: Edges, channels: Channels = DEFAULT_CHANNELS,
                cuts_s: np.ndarray | None = None) -> dict[str, EdgeErrors | str]:
    """Per method (``METHODS``), the errors of the capture's located edges against the exact ``truth``, or
    why the method was not compared (it refuses the capture, or its edges miss the exact ones: the other
    methods at 44.1–48 kHz, whose edges have neighbours too near); the template method's failure is the
    validation's.

    A capture with gaps (listed in its sidecar or found in the data: ``cuts_s``, as
    :func:`pintime.lost_audio.cut_spans` gives them) gets a time map per stretch between them.
    """
    out: dict[str, EdgeErrors | str] = {}
    for method in METHODS:
        try:
            out[method] = errors_of(locate_capture(capture, method, False, *channels), truth, cuts_s)
        except PintimeError as err:
            if method == "template":
                raise
            out[method] = str(err).removeprefix(f"{capture}: ")
    return out


def errors_of(result: CaptureEdges, truth: Edges, cuts_s: np.ndarray | None = None) -> EdgeErrors:
    """Errors of one located capture against the exact edges ``truth`` (any time unit), stretch by
    stretch between the capture's ``cuts_s`` (:func:`edge_errors`)."""
    located = result.edges
    m = match_stretches(located, truth, cuts_s, gap_guard_s(result.info.samplerate_hz, result.template))
    idx, jdx, err, n_map, stretch = m.idx, m.jdx, m.err, m.n_map, m.stretch
    pol, channel = located.polarity[idx], located.channel[idx]
    # constant offsets of each channel and polarity (fall−rise delay, a second ADC's skew) are the card's
    # and the pin's, not the locator's: errors are taken about them
    group = 2 * channel.astype(np.int64) + (pol < 0)
    count = np.bincount(group, minlength=4)
    offset = np.bincount(group, err, 4) / np.maximum(count, 1)
    scatter = err - offset[group]
    time_s, crlb_s = located.time[idx], result.crlb_s[idx]
    # an edge the locator gave no amplitude (two edges within a sample, split by the inflection or
    # threshold locator) has no finite bound: it says nothing of the locator's random error
    bounded = np.isfinite(crlb_s)
    own = locator_error(time_s[bounded], scatter[bounded], pol[bounded], crlb_s[bounded], channel[bounded],
                        result.info.samplerate_hz, stretch[bounded])
    raw = about_lines(truth.time[jdx].astype(np.float64), time_s, stretch) - offset[group]
    adev = clock_adev(time_s, raw, channel, stretch=stretch)
    skew = float((np.mean(err[channel == 1]) - np.mean(err[channel == 0])) * 1e9) if count[2:].any() else None
    return EdgeErrors(
        rms_ns=float(np.sqrt(np.sum(scatter ** 2) / max(1, len(idx) - n_map - np.count_nonzero(count)))
                     * 1e9),
        locator_rms_ns=_ns(own.rms_s),
        locator_rms_se_ns=_ns(own.rms_se_s),
        phase_bias_rms_ns=_ns(own.phase_bias_rms_s),
        clock_adev_1s=adev,
        bias_rise_ns=float(offset[0]) * 1e9,
        bias_fall_ns=float(offset[1]) * 1e9,
        right_skew_ns=skew,
        max_ns=float(np.max(np.abs(scatter)) * 1e9),
        crlb_ns=float(np.sqrt(np.mean(crlb_s[bounded] ** 2)) * 1e9),
        matched=int(len(idx)),
        located=int(len(located.time)),
        exact=int(len(truth.time)),
        stretches=int(len(np.unique(stretch))),
        beside_gaps=m.beside_gaps,
        calibration="piecewise-linear time map"
                    + ("" if cuts_s is None or not len(cuts_s) else " per stretch between recording gaps")
                    + f", knots every {CAL_KNOT_S * 1e3:g} ms, all matched edges "
                    f"(RMS over the degrees of freedom it leaves); locator: phase bias plus the structure "
                    f"function's intercept on pairs {PAIR_MIN_S * 1e3:g}-{PAIR_MAX_S * 1e3:g} ms apart",
    )


def _ns(seconds: float) -> float | None:
    """Seconds in ns; None for NaN (too few pairs), which JSON cannot hold."""
    return None if np.isnan(seconds) else seconds * 1e9


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
                  stretch: np.ndarray | None = None) -> LocatorError:
    """The edge locator's own per-edge RMS error, free of the sample clock's wander (s).

    ``err_s`` are the errors about any smooth time map (the wander may remain in them). The deterministic
    part is :func:`phase_bias`; the random part is ``κ²·mean(c²)``, κ² the intercept of the structure
    function (module docstring) fitted by weighted least squares once with the wander's linear term and
    once with linear and quadratic terms: their mean is the estimate and half their difference, added in
    quadrature to the jackknife standard error, its uncertainty. The RMS and its standard error are NaN
    with fewer than 10 pairs of measurement-channel edges 0.1-1 ms apart, or with an edge whose bound is
    not finite. ``stretch`` labels the stretches
    between recording gaps (default: one): no pair spans a gap, whose lost audio the file times do not show.
    """
    b = phase_bias(time_s, err_s, polarity, samplerate_hz)
    # the bins' means carry noise of their own: var(mean) = var/count, summed over the edges of a bin
    b_var = max(0.0, float(np.mean(b ** 2)) - 2 * PHASE_BINS * float(np.var(err_s - b)) / len(err_s))
    ch0 = channel == 0
    same = np.zeros(len(time_s), np.int64) if stretch is None else stretch
    first, tau, d2, cc = _pairs(time_s[ch0], (err_s - b)[ch0], crlb_s[ch0] ** 2, same[ch0])
    nan = float("nan")
    if len(tau) < 10 or not np.all(np.isfinite(cc)):  # an unbounded edge: no scale for the fit
        return LocatorError(nan, nan, float(np.sqrt(b_var)))

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
    return LocatorError(rms, var_se / (2 * rms) if rms > 0 else nan, float(np.sqrt(b_var)))


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
    # far above its CRLB (why not an absolute floor: docs/design.md §11, "Validation's time map")
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

