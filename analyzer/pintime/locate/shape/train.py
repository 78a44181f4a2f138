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
11 (22), at 44.1 kHz (``2f`` = 0.93) 29 (59); knots closer than that let a smooth phase-dependent error
of the template go into the line instead of being corrected (docs/design.md §13).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pintime.locate.locators.fit import FIT_HALF_SAMPLES
from pintime.locate.shape.template import Template
from pintime.locate.shape.template_error import error_draws, learned_free

MIN_TRAIN_EDGES = 100  # fewer evenly spaced edges are not a calibration train
SPACING_TOLERANCE_SAMPLES = 2.0  # coarse positions are whole samples: spacing wobbles by ±1
TEMPLATE_HALF_SAMPLES = 48  # U: well beyond the anti-alias ringing of common ADC decimation filters
# a response that rings beyond ±U either side (a linear-phase decimation filter whose transition band is 0.05
# fs: ~60-70 samples) is learned again on this support, where the train's spacing leaves room (88.2 kHz up)
LONG_HALF_SAMPLES = 96
KNOT_SAMPLES = 0.0625  # spline knots: a sharp filter's edge needs 16 per sample to stay below the noise
FINE_EDGES = 500  # the fine template is fitted to this many train edges (cost ∝ edges × coefficients²)
COARSE_KNOT_SAMPLES = 0.25  # knots while the train's line converges (16× cheaper normal equations)
COARSE_EDGES = 250  # ... fitted to this many train edges (the line itself is fitted to all of them)
BASELINE_SAMPLES = 24  # window samples before the template's support: they pin each window's baseline


def window(half: int) -> np.ndarray:
    """The learning window around an edge's coarse sample for a support of ±``half``: the baseline stretch,
    then the support and two samples more (data beyond the support would let the template's end trade its
    slope against the baselines)."""
    return np.arange(-(half + BASELINE_SAMPLES), half + 2)


WINDOW = window(TEMPLATE_HALF_SAMPLES)
FIT_COLUMNS = -int(WINDOW[0]) + np.arange(-FIT_HALF_SAMPLES, FIT_HALF_SAMPLES + 1)  # a window's, fitted
# a response that rings longer after its edge than U (a minimum-phase decimation filter: ~70 samples, all
# after it) has its support moved up to this far after the edge (response_lead), its windows with it
MAX_LEAD_SAMPLES = 36
# the windows a lead's and the long support's are cut from (:func:`cut`)
WIDE_WINDOW = np.arange(window(LONG_HALF_SAMPLES)[0],
                        max(WINDOW[-1] + MAX_LEAD_SAMPLES, window(LONG_HALF_SAMPLES)[-1]) + 1)


def neighbour_free(half: int) -> int:
    """Train edges this close or closer put their neighbours' support ±``half`` inside each other's learning
    window (the one before reaches into the baseline stretch): the template cannot be learned from the
    train, or learns a bias."""
    return half - int(window(half)[0])


NEIGHBOUR_FREE_SPACING_SAMPLES = neighbour_free(TEMPLATE_HALF_SAMPLES)
MIN_ITERATIONS, MAX_ITERATIONS = 3, 20
RIPPLE_RATES = (32, 64, 128, 256)  # delta-sigma modulator rates, multiples of fs
RIPPLE_POWER = 100.0  # a ripple must carry this many times the power noise would put at its rate
RIPPLE_ROUNDS = 2  # fine refits with a ripple: the second takes its envelope from the first (1e-4 of it)
TOLERANCE_SAMPLES = 1e-6  # stop when the line's shape and δ move less than this (~5 ps)
KNOT_EDGES = 8  # the train's line bends at least this often (22 ms at 2777 µs): the clock wanders
MIN_TURNS = 2.0  # each polarity's phase turns this often between knots (fewer: docs/design.md §13)
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
    # the rounding of a recording quieter than one LSB (:mod:`pintime.locate.shape.quantization`; else none)
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


def window_baseline(half: int = TEMPLATE_HALF_SAMPLES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The learning window's sample offsets (:func:`window`, float), the ramp of its baseline terms (offset,
    slope, curvature: ``1, ramp, ramp²``) and an orthonormal basis of those terms, which learning projects
    out."""
    m = window(half).astype(np.float64)
    ramp = m / m[-1]
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
    idx = idx[clear(pos[idx], outside(pos, idx), TEMPLATE_HALF_SAMPLES)]
    return idx if len(idx) >= MIN_TRAIN_EDGES else None


def outside(pos: np.ndarray, idx: np.ndarray, marks: np.ndarray | None = None) -> tuple[float, float]:
    """The positions of the edges just before and after the train ``idx`` of the edges at ``pos``, or of
    ``marks`` (recording gaps' ends) nearer to it (±inf: none)."""
    marks = np.zeros(0) if marks is None else marks
    before = pos[idx[0] - 1] if idx[0] > 0 else -np.inf
    after = pos[idx[-1] + 1] if idx[-1] + 1 < len(pos) else np.inf
    return (max(before, np.max(marks[marks < pos[idx[0]]], initial=-np.inf)),
            min(after, np.min(marks[marks > pos[idx[-1]]], initial=np.inf)))


def clear(centre: np.ndarray, around: tuple[float, float], half: int) -> slice:
    """The train edges at ``centre`` (in order) from the first to the last whose learning windows for a
    support of ±``half`` are clear of the edges ``around`` it (:func:`outside`)."""
    keep = (centre - around[0] > neighbour_free(half)) & (around[1] - centre > half + int(window(half)[-1]))
    return slice(int(np.argmax(keep)), len(keep) - int(np.argmax(keep[::-1]))) if keep.any() else slice(0, 0)


def cut(y: np.ndarray, half: int, lead: int) -> np.ndarray:
    """The windows (:func:`window`) of a support ±``half`` centred ``lead`` samples after the edges, from
    windows ``y`` on WIDE_WINDOW."""
    start = int(window(half)[0]) + lead - int(WIDE_WINDOW[0])
    return y[:, start:start + len(window(half))]


def learn_from_train(y: np.ndarray, centre: np.ndarray, seed_samples: np.ndarray,
                     falling: np.ndarray, lead: int = 0,
                     rounding: Callable[[np.ndarray], list[np.ndarray]] | None = None,
                     half: int = TEMPLATE_HALF_SAMPLES) -> TrainFit:
    """Fit template and line to the windows of a calibration train.

    Parameters
    ----------
    y : (edges, len(window(half))) samples ``centre + lead + window(half)`` of each train edge, in train
        order (none skipped)
    centre : (edges,) coarse sample index of each edge
    seed_samples : (edges,) absolute seed positions from any simple estimator (only the line's start)
    falling : (edges,) bool, the edge falls (in the signal's own polarity)
    lead : the template's support, and the windows, centred this many samples after the edges
    half : the support's half width (samples)
    rounding : the rounding errors the windows' noise-free samples would have on a recording quieter than
        one LSB, per offset of their levels from the codes (:mod:`pintime.locate.shape.quantization`): the
        template each makes the learning learn goes into ``TrainFit.rounding_draws``

    Each window's baseline (offset, slope, curvature: DC, hum, droop of the edge before) is solved jointly
    with the template; the stretch before the support, where the edge has no effect yet, keeps the
    template from trading shape against baselines.
    """
    n = len(y)
    every = knot_edges(np.polyfit(np.arange(n), seed_samples, 1)[0])
    v = line_basis(falling, every)
    line = np.linalg.lstsq(v, seed_samples, rcond=None)[0]
    # each window's first sample less window(half)[0]
    w = _TrainWindows(y, centre + lead, falling, v, *window_baseline(half))
    # coarse knots until the line has converged (cheap), then the fine template with its ripple if any
    template, line, signed = _coarse_line(w, line, Template.initial(half, COARSE_KNOT_SAMPLES, lead))
    carrier = modulator_ripple(signed[0], signed[1], lead - half)
    fine = Template.initial(half, KNOT_SAMPLES, lead)
    # the ripple's envelope is the template's own slope: again with the fine one's (Template.refit)
    for _ in range(RIPPLE_ROUNDS if carrier else 1):
        template, factor, step, resid, (_, _, amp), _ = _refit(w, line, template, fine, carrier)
        line = line + step
    top = template.evaluate(np.array([template.support_end]))[0][0]  # the height normalized() scales to 1
    rounded = None
    if rounding is not None:  # what the same windows' rounding would make it learn (line and shape kept)
        lin, cols, _, _ = window_linear(template, y, w.u(line), w.ramp)
        # each edge's own step from the level before it, the same in every window: the recorded train is
        # periodic, its restored windows' baselines drift with the AC coupling undone
        steps = lin[:, :1] * (cols[:, :, 0] - falling[:, None] * top)
        rounded = _refit(w, line, template, fine, carrier, rounding(steps))[-1]
    return _train_fit(w, line, template, factor, resid, amp, top, every, lead - half, rounded)


@dataclass(frozen=True)
class _TrainWindows:
    """A calibration train's windows as its fit takes them: samples, each window's first sample less
    ``window(half)[0]``, each edge's polarity, the line's basis (:func:`line_basis`), and the windows'
    sample offsets, ramp and baseline basis (:func:`window_baseline`)."""

    y: np.ndarray
    centre: np.ndarray
    falling: np.ndarray
    v: np.ndarray
    m: np.ndarray
    ramp: np.ndarray
    nuisance: np.ndarray

    def u(self, line: np.ndarray) -> np.ndarray:
        """Each window's samples' offsets from its edge on ``line``."""
        return self.m[None, :] - (self.v @ line - self.centre)[:, None]


def _refit(w: _TrainWindows, line: np.ndarray, template: Template, fresh: Template, carrier: float,
           targets: tuple | list = ()):
    """``fresh`` refitted at ``line`` (amplitudes and the ripple's envelope from ``template``), one line
    step, the residuals, and ``u`` with the residuals signed by each edge's polarity and each window's own
    amplitude; and the templates ``fresh`` learns from each of ``targets`` instead."""
    y, v, n = w.y, w.v, len(w.y)
    u = w.u(line)
    fine = fresh.knot_samples < COARSE_KNOT_SAMPLES
    k = slice(None, None, max(1, n // (FINE_EDGES if fine else COARSE_EDGES)))
    lin, _, _, _ = window_linear(template, y[k], u[k], w.ramp)
    gain = np.broadcast_to(common_gain(lin[:, 0], w.falling[k])[:, None], u[k].shape)
    (fresh, *learned), factor = fresh.learn_each(u[k], gain, [y[k], *(t[k] for t in targets)], w.nuisance,
                                                 carrier, template)
    # line update by variable projection: per edge, the τ information left after the linear terms
    lin, cols, dg, n_ll = window_linear(fresh, y, u, w.ramp)
    resid = y - np.einsum("elp,ep->el", cols, lin)
    j_tau = -lin[:, :1] * dg
    n_lt = np.einsum("elp,el->ep", cols, j_tau)
    proj = np.linalg.solve(n_ll, n_lt[:, :, None])[:, :, 0]
    info = np.sum(j_tau * j_tau, axis=1) - np.sum(n_lt * proj, axis=1)
    grad = np.sum(j_tau * resid, axis=1) - np.sum(proj * np.einsum("elp,el->ep", cols, resid), axis=1)
    step = np.linalg.solve((v * info[:, None]).T @ v, v.T @ grad)
    return fresh, factor, step, resid, (u, resid * np.sign(lin[:, :1]), lin[:, 0]), learned


def _coarse_line(w: _TrainWindows, line: np.ndarray,
                 template: Template) -> tuple[Template, np.ndarray, tuple]:
    """The coarse ``template`` and the ``line`` refitted in turn until the line's shape and δ settle: the
    template, the line, and the residuals signed (:func:`_refit`)."""
    for iteration in range(MAX_ITERATIONS):
        template, _, step, _, signed, _ = _refit(w, line, template, template, 0.0)
        line = line + step
        # a common shift of the knots trades off against the template's origin and creeps slowly; it does
        # not matter, the line's shape and δ do
        shape = step[:-1] - np.mean(step[:-1])
        if iteration + 1 >= MIN_ITERATIONS and np.max(np.abs(shape)) < TOLERANCE_SAMPLES \
                and abs(step[-1]) < TOLERANCE_SAMPLES:
            break
    return template, line, signed


def _train_fit(w: _TrainWindows, line: np.ndarray, template: Template, factor, resid: np.ndarray,
               amp: np.ndarray, top: float, every: int, support_start: int, rounded: list | None) -> TrainFit:
    """The fit's result: the template normalized, the line's start, period and δ, the residual (also
    before the support, from ``support_start`` samples after the edge), the template's error draws, the
    step height's change and size, and the templates the rounding would teach (``rounded``)."""
    n = len(w.y)
    rms = float(np.sqrt(np.mean(resid * resid)))
    before = w.u(line) < support_start
    # less each window's cubic: mains hum, which quadratic baselines leave largest at the windows' ends, is
    # no ringing (docs/design.md §13)
    cubic = np.linalg.qr(w.ramp[:, None] ** np.arange(4))[0][:, 3]
    before_rms = float(np.sqrt(np.mean((resid - np.outer(resid @ cubic, cubic))[before] ** 2)))
    final = template.normalized()
    shift = final.origin - template.origin  # edge times move with the origin
    period, first = np.polyfit(np.arange(n), w.v[:, :-1] @ line[:-1], 1)  # the line's mean slope: P
    draws = error_draws(final, template, factor, rms)
    return TrainFit(final, float(first + shift), float(period), float(line[-1]), n, rms, before_rms, every,
                    draws, gain_change(amp, w.falling), float(np.median(np.abs(amp)) * abs(top)),
                    () if rounded is None
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
