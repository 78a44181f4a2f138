"""Learning the edge template from the calibration train (FORMAT.md, CAL frame; docs/design.md §10).

The CAL frame toggles the measurement pin every P cycles, P not a whole number of samples, so the true edge
times lie on a straight line ``τ_i = t₀ + i·P + δ·[edge i falls]`` whose sub-sample positions cover every
phase. Fitting the template and that line together learns the step response without the bias of any seed
estimator, and yields the train period in samples (the clock ratio) and the fall−rise offset δ.

In the card's samples the line is only nearly straight: the sample clock wanders by nanoseconds over the
train's seconds (docs/design.md §10), which a straight line would blur into the template. The line is
therefore continuous piecewise linear in the edge index, a knot every few edges (:func:`line_basis`). That
freedom must not take up what the template gets wrong as a function of the sub-sample phase: a template
shifted by a phase-dependent amount fits the samples as well as the true one at positions shifted by that
amount, and only the line's straightness tells them apart. Rising and falling edges each keep to their own
phases (the period's fraction ``f`` past a whole number puts one polarity's successive edges ``2f`` apart,
modulo a sample), so each stretch between knots must hold at least ``MIN_TURNS`` turns of each polarity's
phase: :func:`knot_edges`. At 192 and 48 kHz a turn takes 5 edges (knots 11 and 10 edges apart), at 96 kHz
11 (22), at 44.1 kHz (``2f`` = 0.93) 29 (59): with knots 8 apart there, a smooth phase-dependent error of
the template went into the line instead of being corrected (7.5 ns per edge).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pintime.errors import PintimeError
from pintime.locate.template import SETTLED_SAMPLES, Template
from pintime.locate.template_error import error_draws, learned_free

MIN_TRAIN_EDGES = 100  # fewer evenly spaced edges are not a calibration train
SPACING_TOLERANCE_SAMPLES = 2.0  # coarse positions are whole samples: spacing wobbles by ±1
TEMPLATE_HALF_SAMPLES = 48  # U: well beyond the anti-alias ringing of common ADC decimation filters
KNOT_SAMPLES = 0.0625  # spline knots: a sharp filter's edge needs 16 per sample to stay below the noise
FINE_EDGES = 500  # the fine template is fitted to this many train edges (cost ∝ edges × coefficients²)
COARSE_KNOT_SAMPLES = 0.25  # knots while the train's line converges (16× cheaper normal equations)
COARSE_EDGES = 250  # ... fitted to this many train edges (the line itself is fitted to all of them)
BASELINE_SAMPLES = 24  # window samples before the template's support: they pin each window's baseline
# learning window around an edge's coarse sample: the baseline stretch, then the support and two samples
# more (data beyond the support would let the template's end trade its slope against the baselines)
WINDOW = np.arange(-(TEMPLATE_HALF_SAMPLES + BASELINE_SAMPLES), TEMPLATE_HALF_SAMPLES + 2)
# a response that rings longer after its edge than U (a minimum-phase decimation filter: ~70 samples, all
# after it) has its support moved up to this far after the edge (response_lead), its windows with it
MAX_LEAD_SAMPLES = 36
WIDE_WINDOW = np.arange(WINDOW[0], WINDOW[-1] + 1 + MAX_LEAD_SAMPLES)  # the windows a lead is cut from
LEAD_STEP_SAMPLES = 12  # each move of the support (response_lead) …
LEAD_ROUNDS = MAX_LEAD_SAMPLES // LEAD_STEP_SAMPLES  # … and how many at most
END_SAMPLES = 8  # the support's ends compared (response_lead) …
CUT_RATIO = 10.0  # … and how much more ringing at its end than at its start cuts the response short
# train edges closer than this put their neighbours' support inside each other's learning window (the one
# before reaches into the baseline stretch): the template cannot be learned from the train, or learns a bias
NEIGHBOUR_FREE_SPACING_SAMPLES = TEMPLATE_HALF_SAMPLES - int(WINDOW[0])
MISFIT_MAX = 3.0  # a train fit leaving more than this × the noise (RMS) has not learned the edge's shape
# a train fit leaving more than this × the noise (RMS) in its windows' stretch before the support: the
# response reaches beyond ±U (a resampler's long ringing), so the ringing of an edge's neighbours within
# reach is not taken out (modelled cards: 1.07–1.17; libsoxr's and libsamplerate's best 96 → 48 kHz:
# 5.9–32, their edges with neighbours then off by 5–200 ns against σ of 0.1–0.5 ns)
BEFORE_MAX = 2.0
# … or more than this × the fit's own residual over its windows: the same reach, in a recording whose noise
# measure leaves it under BEFORE_MAX (16 bits, quantization). Every modelled card, the sweep of datasheet
# decimation filters (passband 0.27-0.455 fs, stopband 0.5-0.7 fs, linear and minimum phase) and the
# converters located: ≤ 1.083 (edges ≤ 1.53× their Cramér–Rao bound, ≤ 5.4 σ); a linear-phase filter
# whose transition band is 0.05 fs (0.45/0.50, 0.455/0.505) at 44.1-48 kHz: 1.27-1.41, its edges with
# neighbours 1.5-2.8× the bound and up to 9 σ (docs/results.md)
BEFORE_EXCESS_MAX = 1.15
# why a train's fit fails at a rate its spacing suits: the response is longer than the template
TOO_LONG = (f": the response rings beyond the ±{TEMPLATE_HALF_SAMPLES} samples of pintime's edge shape, as "
            "an operating system's sample-rate converter makes it (libsoxr's and libsamplerate's best do at "
            "44.1–48 kHz); record at the card's own rate, without resampling, or at 96 or 192 kHz")
# why a train's fit fails with nothing before its edges: the edges are not one shape (y + 0.004·y² on the
# recorded samples, −54 dB of second harmonic at full scale, left 4.6× the noise on the `default` card)
NOT_ONE_SHAPE = (": its edges are not one shape, as a nonlinear input makes rising and falling edges differ; "
                 "record at a lower level, the steps well below full scale")
MIN_ITERATIONS, MAX_ITERATIONS = 3, 20
RIPPLE_RATES = (32, 64, 128, 256)  # delta-sigma modulator rates, multiples of fs
RIPPLE_POWER = 100.0  # a ripple must carry this many times the power noise would put at its rate
RIPPLE_ROUNDS = 2  # fine refits with a ripple: the second takes its envelope from the first (1e-4 of it)
TOLERANCE_SAMPLES = 1e-6  # stop when the line's shape and δ move less than this (~5 ps)
KNOT_EDGES = 8  # the train's line bends at least this often (22 ms at 2777 µs): the clock wanders
MIN_TURNS = 2.0  # each polarity's phase turns this often between knots (1.1 turns left 12.8× the CRLB)
# the train's step height may stray this far (relative) from a steady drift: a pin's level follows its
# supply, which moves with load (every modelled card: ≤ 0.04 %); automatic gain control by 10-30 %
GAIN_TOLERANCE = 0.05
AGC = ("the card applies automatic gain control (AGC; on a laptop, in its microphone settings), or the "
       "board's supply varies. Switch AGC off and record again")


def agc_reason(what: str, change: str) -> str:
    """Why a recording whose ``what`` (a step height, a swing) changes as ``change`` says is refused."""
    return f"{what} changes {change}, where a digital pin's swing is steady: {AGC}"


GAIN_PARTS = 20  # stretches whose median heights are compared (a train's 1000 edges: 25 per polarity) …
GAIN_PART_EDGES = 5  # … each of this many edges at least


@dataclass(frozen=True)
class TrainFit:
    """The template learned from a calibration train and the line its edges lie on (samples)."""

    template: Template
    first_samples: float  # t₀: position of the first (rising) edge
    period_samples: float  # P
    fall_offset_samples: float  # δ: falling edges come this much later than the line of rising ones
    edges: int
    residual_rms: float  # of the samples, after the fit (noise plus template misfit)
    before_rms: float  # before the support, hum's cubic out: noise, unless the response reaches further
    knot_edges: int  # the line's knots are this many edges apart (:func:`knot_edges`)
    # the template moved by random draws of its own error (:func:`error_draws`)
    draws: tuple[Template, ...] = ()
    gain_change: float = 0.0  # how far the step's height strays from a steady drift (:func:`gain_change`)
    step: float = 0.0  # the train's steps' median height (the samples' units: full scale)
    # ``template`` moved by what each offset of the levels from the codes makes the learning learn from
    # the rounding of a recording quieter than one LSB (:mod:`pintime.locate.quantization`; else none)
    rounding_draws: tuple[Template, ...] = ()


def find_train(pos: np.ndarray, sign: np.ndarray) -> np.ndarray | None:
    """Indices of the longest run of evenly spaced, alternating edges (or None if shorter than 100)."""
    if pos.size < MIN_TRAIN_EDGES:
        return None
    gap = np.diff(pos).astype(np.float64)
    ok = (np.abs(np.diff(gap, prepend=np.nan)) <= SPACING_TOLERANCE_SAMPLES) & (sign[1:] == -sign[:-1])
    # runs of True in ok: edges j .. j+len of a run of gaps
    edges = np.flatnonzero(np.diff(np.concatenate([[0], ok.astype(np.int8), [0]])))
    if edges.size == 0:
        return None
    starts, stops = edges[::2], edges[1::2]
    best = int(np.argmax(stops - starts))
    lo, hi = starts[best] - 1, stops[best] + 1  # the run's first gap was checked against the one before it
    lo = max(lo, 0)
    if hi - lo < MIN_TRAIN_EDGES:
        return None
    return np.arange(lo, hi)


def knot_edges(period_samples: float) -> int:
    """Edges between the line's knots for a train of this period: ``KNOT_EDGES``, or more where one
    polarity's sub-sample phase turns slowly (it moves by ``2P`` modulo a sample from edge to edge of a
    polarity), so that each stretch holds ``MIN_TURNS`` turns of it."""
    walk = abs(2 * period_samples - round(2 * period_samples))  # per edge of one polarity, in turns
    edges_per_turn = 2.0 / max(walk, 1e-9)
    return max(KNOT_EDGES, int(np.ceil(MIN_TURNS * edges_per_turn)))


def line_basis(falling: np.ndarray, knot_every: int) -> np.ndarray:
    """Design of the train's edge positions: a continuous piecewise-linear function of the edge index, knots
    every ``knot_every`` edges (hat functions), then δ for the falling edges (last column)."""
    k = np.arange(len(falling), dtype=np.float64) / knot_every
    knots = np.arange(int(np.ceil(k[-1])) + 1)
    hat = np.maximum(0.0, 1.0 - np.abs(k[:, None] - knots[None, :]))
    return np.column_stack([hat, falling.astype(np.float64)])


def window_baseline() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The learning window's sample offsets (WINDOW, float), the ramp of its baseline terms (offset, slope,
    curvature: ``1, ramp, ramp²``) and an orthonormal basis of those terms, which learning projects out."""
    m = WINDOW.astype(np.float64)
    ramp = m / WINDOW[-1]
    return m, ramp, np.linalg.qr(np.stack([np.ones(len(m)), ramp, ramp * ramp], axis=1))[0]


def window_linear(template: Template, y: np.ndarray, u: np.ndarray, ramp: np.ndarray):
    """Per window: least-squares ``(A, a, b, c)`` of ``A·g(u) + a + b·ramp + c·ramp²`` at fixed positions.

    The baseline terms carry the DC offset, hum and the droop of earlier edges over the window.
    """
    g, dg = template.evaluate(u)
    ramp = np.broadcast_to(ramp, g.shape)
    cols = np.stack([g, np.ones_like(g), ramp, ramp * ramp], axis=-1)
    normal = cols.transpose(0, 2, 1) @ cols
    lin = np.linalg.solve(normal, np.einsum("elp,el->ep", cols, y)[:, :, None])[:, :, 0]
    return lin, cols, dg, normal


def modulator_ripple(u: np.ndarray, resid: np.ndarray, support_start: float) -> float:
    """Rate M (per sample) of a ripple cos/sin(2πMu) left in the residuals near the edges, or 0.

    A delta-sigma ADC samples at M·fs (M = 32 … 256) and its decimation filter passes that grid's images,
    so its step response carries a fine ripple of period 1/M sample that a smooth template cannot follow.
    The residuals (signed by each edge's polarity) are projected on each candidate rate; a rate is kept
    when its power stands far above what the noise (measured before the edges, where the windows hold
    only baseline) puts at any rate: exponentially distributed, mean 1. A smooth template's own misfit
    varies over a sample or more and puts next to nothing at these rates.
    """
    near = np.abs(u) < 2.0
    uu, rr = u[near], resid[near]
    noise_var = np.mean(resid[u < support_start] ** 2)
    power = {m: 2 * abs(np.sum(rr * np.exp(-2j * np.pi * m * uu))) ** 2 / (noise_var * len(rr))
             for m in RIPPLE_RATES}
    best, best_power = max(power.items(), key=lambda item: item[1])
    return float(best) if best_power > RIPPLE_POWER else 0.0


def common_gain(amp: np.ndarray, falling: np.ndarray) -> np.ndarray:
    """Each window's step amplitude for learning the template: per polarity, a straight line in the edge
    index fitted to the windows' own amplitudes ``amp``.

    The pin's step is the same every time (a slow drift aside). Left free per window, the amplitude takes
    up any template error of the form ``p(u)·g(u)`` with ``p`` periodic over one sample, since each window
    sees it as the constant ``p(−τ)`` times its step; the template then misstates its ringing by ~10⁻³ of
    the step, which locates a neighbour's edge 15-30 samples away wrong by up to 0.5 ns (96 kHz: 2.7× the
    Cramér–Rao bound on Table 1's edges, 1.2× with the common amplitude).
    """
    out = np.empty_like(amp)
    index = np.arange(len(amp), dtype=np.float64)
    for sel in (falling, ~falling):
        if np.count_nonzero(sel) > 1:
            out[sel] = np.polyval(np.polyfit(index[sel], amp[sel], 1), index[sel])
        else:
            out[sel] = amp[sel]
    return out


def clear_ends(pos: np.ndarray, idx: np.ndarray) -> np.ndarray | None:
    """The train ``idx`` without its first and last edges whose learning windows hold an edge from outside
    it (at low rates the frame header before it, FORMAT.md's SETTLE away, reaches the first windows)."""
    before = pos[idx[0] - 1] if idx[0] > 0 else -np.inf
    after = pos[idx[-1] + 1] if idx[-1] + 1 < len(pos) else np.inf
    keep = (pos[idx] - before > NEIGHBOUR_FREE_SPACING_SAMPLES) & \
           (after - pos[idx] > TEMPLATE_HALF_SAMPLES + int(WINDOW[-1]))
    idx = idx[np.argmax(keep):len(keep) - np.argmax(keep[::-1])] if keep.any() else idx[:0]
    return idx if len(idx) >= MIN_TRAIN_EDGES else None


def learn_from_train(y: np.ndarray, centre: np.ndarray, seed_samples: np.ndarray,
                     falling: np.ndarray, lead: int = 0,
                     rounding: Callable[[np.ndarray], list[np.ndarray]] | None = None) -> TrainFit:
    """Fit template and line to the windows of a calibration train.

    Parameters
    ----------
    y : (edges, len(WINDOW)) samples ``centre + lead + WINDOW`` of each train edge, in train order (none
        skipped)
    centre : (edges,) coarse sample index of each edge
    seed_samples : (edges,) absolute seed positions from any simple estimator (only the line's start)
    falling : (edges,) bool, the edge falls (in the signal's own polarity)
    lead : the template's support, and the windows, centred this many samples after the edges
    rounding : the rounding errors the windows' noise-free samples would have on a recording quieter than
        one LSB, per offset of their levels from the codes (:mod:`pintime.locate.quantization`): the
        template each makes the learning learn goes into ``TrainFit.rounding_draws``

    Each window's baseline (offset, slope, curvature: DC, hum, droop of the edge before) is solved jointly
    with the template; the stretch before the support, where the edge has no effect yet, keeps the
    template from trading shape against baselines.
    """
    n = len(y)
    every = knot_edges(np.polyfit(np.arange(n), seed_samples, 1)[0])
    v = line_basis(falling, every)
    line = np.linalg.lstsq(v, seed_samples, rcond=None)[0]
    m, ramp, nuisance = window_baseline()
    centre = centre + lead  # each window's first sample less WINDOW[0]

    def refit(template: Template, fresh: Template, carrier: float, targets: tuple | list = ()):
        """``fresh`` refitted at the current line (amplitudes and the ripple's envelope from ``template``),
        one line step, the residuals, and ``u`` with the residuals signed by each edge's polarity and each
        window's own amplitude; and the templates ``fresh`` learns from each of ``targets`` instead."""
        u = m[None, :] - (v @ line - centre)[:, None]
        fine = fresh.knot_samples < COARSE_KNOT_SAMPLES
        k = slice(None, None, max(1, n // (FINE_EDGES if fine else COARSE_EDGES)))
        lin, _, _, _ = window_linear(template, y[k], u[k], ramp)
        gain = np.broadcast_to(common_gain(lin[:, 0], falling[k])[:, None], u[k].shape)
        (fresh, *learned), factor = fresh.learn_each(u[k], gain, [y[k], *(t[k] for t in targets)], nuisance,
                                                     carrier, template)
        # line update by variable projection: per edge, the τ information left after the linear terms
        lin, cols, dg, n_ll = window_linear(fresh, y, u, ramp)
        resid = y - np.einsum("elp,ep->el", cols, lin)
        j_tau = -lin[:, :1] * dg
        n_lt = np.einsum("elp,el->ep", cols, j_tau)
        proj = np.linalg.solve(n_ll, n_lt[:, :, None])[:, :, 0]
        info = np.sum(j_tau * j_tau, axis=1) - np.sum(n_lt * proj, axis=1)
        grad = np.sum(j_tau * resid, axis=1) - np.sum(proj * np.einsum("elp,el->ep", cols, resid), axis=1)
        step = np.linalg.solve((v * info[:, None]).T @ v, v.T @ grad)
        return fresh, factor, step, resid, (u, resid * np.sign(lin[:, :1]), lin[:, 0]), learned

    # coarse knots until the line has converged (cheap), then the fine template with its ripple if any
    template = Template.initial(TEMPLATE_HALF_SAMPLES, COARSE_KNOT_SAMPLES, lead)
    for iteration in range(MAX_ITERATIONS):
        template, _, step, resid, signed, _ = refit(template, template, 0.0)
        line = line + step
        # a common shift of the knots trades off against the template's origin and creeps slowly; it does
        # not matter, the line's shape and δ do
        shape = step[:-1] - np.mean(step[:-1])
        if iteration + 1 >= MIN_ITERATIONS and np.max(np.abs(shape)) < TOLERANCE_SAMPLES \
                and abs(step[-1]) < TOLERANCE_SAMPLES:
            break
    carrier = modulator_ripple(signed[0], signed[1], lead - TEMPLATE_HALF_SAMPLES)
    fine = Template.initial(TEMPLATE_HALF_SAMPLES, KNOT_SAMPLES, lead)
    # the ripple's envelope is the template's own slope: again with the fine one's (Template.refit)
    for _ in range(RIPPLE_ROUNDS if carrier else 1):
        template, factor, step, resid, (_, _, amp), _ = refit(template, fine, carrier)
        line = line + step
    top = template.evaluate(np.array([template.support_end]))[0][0]  # the height normalized() scales to 1
    if rounding is not None:  # what the same windows' rounding would make it learn (line and shape kept)
        lin, cols, _, _ = window_linear(template, y, m[None, :] - (v @ line - centre)[:, None], ramp)
        # each edge's own step from the level before it, the same in every window: the recorded train is
        # periodic, its restored windows' baselines drift with the AC coupling undone
        steps = lin[:, :1] * (cols[:, :, 0] - falling[:, None] * top)
        rounded = refit(template, fine, carrier, rounding(steps))[-1]
    rms = float(np.sqrt(np.mean(resid * resid)))
    before = (m[None, :] - (v @ line - centre)[:, None]) < lead - TEMPLATE_HALF_SAMPLES
    # less each window's cubic: mains hum, which quadratic baselines leave largest at the windows' ends
    cubic = np.linalg.qr(ramp[:, None] ** np.arange(4))[0][:, 3]  # (−56 dBFS of 50 Hz was refused as ringing)
    before_rms = float(np.sqrt(np.mean((resid - np.outer(resid @ cubic, cubic))[before] ** 2)))
    final = template.normalized()
    shift = final.origin - template.origin  # edge times move with the origin
    period, first = np.polyfit(np.arange(n), v[:, :-1] @ line[:-1], 1)  # the line's mean slope: P
    draws = error_draws(final, template, factor, rms)
    return TrainFit(final, float(first + shift), float(period), float(line[-1]), n, rms, before_rms, every,
                    draws, gain_change(amp, falling), float(np.median(np.abs(amp)) * abs(top)),
                    () if rounding is None
                    else tuple(final.plus(learned_free(r), 1.0 / top) for r in rounded))


def gain_change(amp: np.ndarray, falling: np.ndarray) -> float:
    """How far the step height strays from :func:`common_gain`'s steady drift: the largest relative
    deviation of the median of each of up to GAIN_PARTS stretches (of GAIN_PART_EDGES edges at least) of
    each polarity's amplitudes ``amp``, in time order (medians: a window's noise, glitch or stray
    neighbour is no change of gain); 0 for a polarity with fewer than 4 stretches."""
    worst = 0.0
    for sel in (falling, ~falling):
        parts = min(GAIN_PARTS, int(np.count_nonzero(sel)) // GAIN_PART_EDGES)
        if parts >= 4:
            ratio = amp[sel] / common_gain(amp[sel], np.zeros(np.count_nonzero(sel), dtype=bool)) - 1.0
            worst = max(worst, max(abs(float(np.median(part))) for part in np.array_split(ratio, parts)))
    return worst


def check_gain(heights: np.ndarray, falling: np.ndarray, path: str, span_s: float, what: str) -> None:
    """Refuse a recording whose ``heights`` (the isolated edges' step heights, or a periodic signal's
    gains) stray more than GAIN_TOLERANCE from a steady line (:func:`gain_change`): a card's automatic gain
    control, which the AC coupling's learning and every σ would be wrong under (with a calibration train,
    :func:`checked_fit` checks its windows)."""
    change = gain_change(heights, falling)
    if change > GAIN_TOLERANCE:
        raise PintimeError(f"{path}: " + agc_reason(what, f"by up to {change:.0%} within {span_s:.3g} s"))


def response_lead(fit: TrainFit) -> int:
    """Where a train fit's template should have its support centred (samples after the edge): where it
    is, unless the response is cut short by the support's end while its start is quiet, as a minimum-phase
    decimation filter's is (no ringing before its edge, ~70 samples after it); then LEAD_STEP_SAMPLES
    further on (learning again sees more of it: LEAD_ROUNDS).

    Cut short when the ringing (:meth:`Template.ringing`) over the support's last END_SAMPLES (before the
    straight line it ends on) stands out of the spread of the template's error draws (mean square CUT_RATIO
    times the spread's) and has CUT_RATIO times the mean square of that over the first END_SAMPLES. A
    linear-phase filter rings alike before and after its edge; at the `minphase-48k` card's noise (0.46 FS,
    −92 dBFS) nothing of its tail beyond 48 samples stands out, at −110 dBFS it does (cut there, edges were
    4–6× their Cramér–Rao bound). The head's spread is ~10⁻² the tail's (its first coefficients are held at
    0): in it, −50 dBFS of hum stood out 7–14× and kept the tail cut (Differential 1000× +1.8 ns, 4σ)."""
    t = fit.template
    lo, end = t.lead_samples - t.half_samples, t.support_end
    u = np.arange(lo, end, 0.125)
    g = t.evaluate(u)[0]
    spread = np.sqrt(np.mean([(d.evaluate(u)[0] - g) ** 2 for d in fit.draws], axis=0))
    ringing, head = t.ringing(u), u < lo + END_SAMPLES
    tail = (u >= end - SETTLED_SAMPLES - END_SAMPLES) & (u < end - SETTLED_SAMPLES)
    tail_z2 = np.mean(np.divide(ringing, spread, out=np.zeros_like(u), where=spread > 0)[tail] ** 2)
    if tail_z2 > CUT_RATIO and np.mean(ringing[tail] ** 2) > CUT_RATIO * np.mean(ringing[head] ** 2):
        return min(t.lead_samples + LEAD_STEP_SAMPLES, MAX_LEAD_SAMPLES)
    return t.lead_samples


def checked_fit(y: np.ndarray, centre: np.ndarray, seed_samples: np.ndarray, falling: np.ndarray,
                noise_rms: float, path: str, rate_hz: int,
                rounding: Callable[[np.ndarray], list[np.ndarray]] | None = None
                ) -> tuple[TrainFit | None, str | None]:
    """:func:`learn_from_train`'s fit if it holds the response (it leaves at most MISFIT_MAX × the noise,
    and before the edges no more than noise: :func:`_reaches_beyond`), or else why not, the template then
    being learned blind: the train's edges are too close for the learning window, or a third of the train
    holds the shape where the whole does not (something in it: lost audio, which the capture's check then
    finds). ``y``: the windows on WIDE_WINDOW, from which each learning's are cut with its support's lead
    (:func:`response_lead`). ``rounding``: as :func:`learn_from_train` takes it.

    Raises PintimeError (naming ``path``) where the fit holds but the step's height along the train strays
    more than GAIN_TOLERANCE from a steady drift (:func:`gain_change`: automatic gain control, whose
    restored levels and edge shape would be no card's), and where the spacing suits the window and no
    third of the train holds a template either: the response is longer than the template (the stretch
    before the edges holds more than noise), or its edges are not one shape (it does not: a nonlinear
    input), and a blind one would leave the edges off by far more than their σ."""
    lead = 0
    fit, misfit_x, before_x = _attempt(y, centre, seed_samples, falling, noise_rms, lead, rounding)
    for _ in range(LEAD_ROUNDS):
        moved = lead if fit is None else response_lead(fit)
        if moved == lead:
            break
        attempt = _attempt(y, centre, seed_samples, falling, noise_rms, moved, rounding)
        if attempt[0] is None:
            break
        lead, (fit, misfit_x, before_x) = moved, attempt
    if fit is not None and _holds(fit, misfit_x, before_x):
        if fit.gain_change > GAIN_TOLERANCE:
            change = f"by up to {fit.gain_change:.0%} along the calibration train (2.8 s)"
            raise PintimeError(f"{path}: " + agc_reason("the edges' step height", change))
        return fit, None
    misfit = ("no template (singular normal equations)" if fit is None
              else f"{misfit_x:.1f}× the noise" if noise_rms > 0
              else f"{fit.residual_rms:.2g} FS RMS on a noise-free recording")
    period = float(np.median(np.diff(centre))) if fit is None else fit.period_samples
    if period <= NEIGHBOUR_FREE_SPACING_SAMPLES:
        return None, (f"the template fitted to the calibration train leaves {misfit}: its edges are "
                      f"{period:.1f} samples apart at {rate_hz} Hz, inside one another's learning window (it "
                      f"needs more than {NEIGHBOUR_FREE_SPACING_SAMPLES})")
    for part in np.array_split(np.arange(len(centre)), 3):
        if len(part) >= MIN_TRAIN_EDGES and _holds(*_attempt(y[part], centre[part], seed_samples[part],
                                                             falling[part], noise_rms, lead)):
            return None, (f"the template fitted to the calibration train leaves {misfit}, where a third of "
                          "it holds the shape: something in the train (lost audio?)")
    if fit is None:
        raise PintimeError(f"{path}: no template fits the calibration train's windows (singular normal "
                           f"equations){TOO_LONG}")
    before = f"{before_x:.1f}× the noise" if noise_rms > 0 else f"{fit.before_rms:.2g} FS RMS"
    before += f", {fit.before_rms / fit.residual_rms:.2f}× what the template leaves in them,"
    if not _reaches_beyond(fit, before_x):  # the response ends within the template: its shape differs
        raise PintimeError(f"{path}: the template fitted to the calibration train's windows leaves {misfit} "
                           f"(and {before} before their edges, where only noise belongs){NOT_ONE_SHAPE}")
    raise PintimeError(f"{path}: the calibration train's windows leave {before} before their edges, where no "
                       f"response should be, and the template fitted to them leaves {misfit}{TOO_LONG}")


def _holds(fit: TrainFit | None, misfit_x: float, before_x: float) -> bool:
    """Whether a fit (:func:`_attempt`) holds the response: it leaves at most MISFIT_MAX × the noise, and
    no more than noise before the edges (:func:`_reaches_beyond`; an unknown noise, NaN, refuses nothing)."""
    return fit is not None and not (misfit_x > MISFIT_MAX or _reaches_beyond(fit, before_x))


def _reaches_beyond(fit: TrainFit, before_x: float) -> bool:
    """Whether the stretch before the fit's support holds more than noise: more than BEFORE_MAX × the
    noise (``before_x``), or BEFORE_EXCESS_MAX × what the fit leaves over its windows."""
    return before_x > BEFORE_MAX or fit.before_rms > BEFORE_EXCESS_MAX * fit.residual_rms


def _attempt(y: np.ndarray, centre: np.ndarray, seed_samples: np.ndarray, falling: np.ndarray,
             noise_rms: float, lead: int,
             rounding: Callable[[np.ndarray], list[np.ndarray]] | None = None
             ) -> tuple[TrainFit | None, float, float]:
    """:func:`learn_from_train`'s fit with its support ``lead`` samples after the edges (``y`` on
    WIDE_WINDOW) and what it leaves in the noise's RMS, over the windows and before the edges (None, inf,
    inf where the normal equations are singular; NaN for an unknown noise)."""
    try:
        fit = learn_from_train(y[:, lead:lead + len(WINDOW)], centre, seed_samples, falling, lead, rounding)
    except np.linalg.LinAlgError:  # singular normal equations: no template of this support gives them
        return None, np.inf, np.inf
    with np.errstate(divide="ignore", invalid="ignore"):  # noise-free: inf
        misfit_x, before_x = np.divide([fit.residual_rms, fit.before_rms], noise_rms)
    return fit, float(misfit_x), float(before_x)
