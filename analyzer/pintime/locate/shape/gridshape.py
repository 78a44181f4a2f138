"""The recording chain's response learned from edges on a grid (:mod:`pintime.locate.shape.grid`), one shape
per polarity, and every edge located against it (docs/design.md §10, "Edges on a grid").

The chain is linear, so the samples are the sum of every edge's response, each polarity's own ``G±``
(a chain may distort its falling edges, not its rising ones), plus a slow baseline:

    x[n] = Σₖ G_{±k}(n − τₖ) + b(n),   G±(u) = S±(u) ± h(u)·σ(u)

``S±`` a cubic B-spline on the support ``[−L, R]``, zero at both ends; ``σ`` a fixed smooth step across the
support, after which every edge leaves ``±h(u)``, a sum of decays of fixed time constants with free heights
(a DC-coupled input keeps the pin's level, an AC-coupled one droops back to 0); ``b`` a cubic B-spline
with knots BASELINE_KNOT_SAMPLES apart (hum, the coupling's slow settling). At given times ``τ`` this is
linear in ``S±``, ``h``'s heights and ``b``: one sparse least-squares problem. Edges are then located one
by one in their *peeled* windows (the samples less every other edge's response at its current time),
``a·G(m − τ) + offset + slope``, by Gauss–Newton; the shapes learned again at the located times less their
warp, which the grid's line shows (:func:`_warp`).

Each shape's scale and origin are conventions: its largest |value| is 1, and ``u = 0`` lies where it first
reaches half of that (the same rule for both polarities: the fall − rise offset is one, as for any signal
without a pintime train). The noise is the learning fit's residual (robust RMS), never the signal's own
activity; an edge whose window the fit leaves more than chance allows (a spike, a missing neighbour) has
its σ scaled by the misfit, and one left far more than that is no edge of this shape, and is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import linalg, signal, sparse

from pintime.errors import PintimeError
from pintime.locate.shape import grid as gridmod
from pintime.locate.shape.template import bspline_weights

LEAD_SAMPLES = 8  # L: the response's support starts this far before the edge (a linear-phase filter's
TAIL_SAMPLES = 36  # pre-ringing) and ends R after it (ringing, an AC coupling's fast decay)
KNOT_CHOICES_SAMPLES = (0.125, 0.25, 0.5)  # finest first: the finest every phase interval holds
EDGES_PER_KNOT = 8  # ... for each polarity, this many edges per knot interval of sub-sample phase
BASELINE_KNOT_SAMPLES = 256
# after the support each edge leaves Σⱼ hⱼ·exp(−(u − R)/Tⱼ): an AC coupling's droop, slower than the support
# (a 20 Hz corner decays over 380 samples at 48 kHz), as a sum of decays of these time constants (∞: a
# DC-coupled input keeps the pin's level)
TAIL_TIMES_SAMPLES = (np.inf, *(16.0 * 2.0 ** k for k in range(10)))  # 16 … 8192 samples
RIDGE = 1e-6  # of the normal equations' mean diagonal: no direction the data leave free is singular
LEARN_EDGES = 6000  # the shapes are learned from at most this many edges of the learning span
LEARN_ROUNDS = 3  # learn shapes, locate, take out the warp the line shows
WARP_BINS = 32  # the warp periodic in the sub-sample phase is taken out in this many bins
FIT_HALF_SAMPLES = 6  # an edge's fit window: ±this many samples about it
GN_STEPS = 3  # Gauss–Newton steps per sweep
SWEEPS = 4  # peel and fit every edge again (its neighbours at their latest times)
# a window's residual over the noise's, per degree of freedom: beyond MISFIT_CHANCE (p < 1e-4 for 9 degrees
# of freedom) its σ is scaled by the misfit's square root; beyond MISFIT_DROP it is no edge of this shape
MISFIT_CHANCE = 3.9
MISFIT_DROP = 100.0
TABLE_PER_SAMPLE = 256  # G is tabulated this finely (linear interpolation: ~1e-6 of its peak)
# every σ is raised until all but TAIL_SHARE of the learning edges lie within TAIL_SIGMAS of their σ from
# the grid's line: a source's own jitter (seen alike by the fit and the centroid: docs/design.md §13) is no
# error of the fit, and cannot be told from one
TAIL_SHARE = 0.01
TAIL_SIGMAS = 4.0
MIN_TURNS = 2.0  # the learning line's drift knots are this many phase coverings apart (see grid_knot_s)


@dataclass(frozen=True)
class GridShape:
    """Each polarity's response (row 0 rising, 1 falling), the chain's noise, and how edges are found."""

    coef: np.ndarray  # (2, n_coef) B-spline coefficients of S± on [−L, R] (scaled, origin applied: below)
    knot_samples: float
    origin: np.ndarray  # (2,): u = 0 of each polarity lies this far (samples) after the support's start
    scale: np.ndarray  # (2,): each shape divided by this (its largest |G|)
    tails: np.ndarray  # hⱼ of each of TAIL_TIMES_SAMPLES (FS, before each polarity's scale)
    noise_rms: float  # the learning fit's residual, robust RMS (FS)
    cell_samples: float
    differentiated: bool  # edges are peaks of the signal itself (else of its difference)
    threshold: np.ndarray  # ... above this (rising, falling: grid.find_peaks)
    seed_offset: np.ndarray  # (2,): an edge lies this far after its peak (samples), per polarity
    shapes_differ: float  # RMS of G+ + G− over the support, of the shape's peak: 0 for mirror images
    line_scatter: float  # the learning edges' located times about the grid's line, MAD-σ (samples)
    # the TAIL_SHARE quantile of their departures from it in their own σ: what every σ must be raised by
    # for all but that share to lie within TAIL_SIGMAS of their σ
    tail_ratio: float
    table: np.ndarray  # (2, 2, points): G (unit peak) and G′ of each polarity every 1/TABLE_PER_SAMPLE
    # sample over the support, then one point more (G after the support: ±h)

    def evaluate(self, falling: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``G`` (unit peak) and ``G′`` at ``u`` samples from edges of polarity ``falling`` (interpolated
        in :attr:`table`)."""
        p = np.broadcast_to(falling, np.shape(u)).astype(np.int64)
        x = (u + self.origin[p]) * TABLE_PER_SAMPLE
        last = self.table.shape[-1] - 1
        i = np.clip(np.floor(x).astype(np.int64), 0, last - 1)
        f = np.clip(x - i, 0.0, 1.0)
        g = self.table[p, 0, i] * (1 - f) + self.table[p, 0, i + 1] * f
        dg = self.table[p, 1, i] * (1 - f) + self.table[p, 1, i + 1] * f
        before = x < 0
        return np.where(before, 0.0, g), np.where(before | (x > last), 0.0, dg)

    def crlb_s(self, time_s: np.ndarray, amp: np.ndarray, channel: np.ndarray, noise_rms: tuple[float, ...],
               samplerate_hz: float) -> np.ndarray:
        """Each edge's Cramér–Rao bound (s) for its step ``amp`` in the chain's noise, its shape's
        timing energy averaged over the sub-sample phase."""
        del channel
        energy = np.array([self._energy(bool(f)) for f in (0, 1)])
        falling = (np.asarray(amp) < 0).astype(np.int64)
        with np.errstate(divide="ignore"):
            return noise_rms[0] / np.abs(amp) / np.sqrt(energy[falling]) / samplerate_hz

    def _energy(self, falling: bool) -> float:
        m = np.arange(-LEAD_SAMPLES - 2, TAIL_SAMPLES + 3, dtype=np.float64)
        phase = np.linspace(0, 1, 16, endpoint=False)
        u = m[None, :] - phase[:, None]
        _, dg = self.evaluate(np.full(u.shape, falling), u)
        return float(np.mean(np.sum(dg ** 2, axis=1)))


def _spline(coef: np.ndarray, knot: float, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The B-spline ``S`` of coefficients ``coef`` and its slope at ``x`` samples after the support's
    start; 0 outside the support."""
    n_int = coef.shape[-1] - 3
    t = x / knot
    inside = (t >= 0) & (t < n_int)
    i = np.clip(np.floor(t).astype(np.int64), 0, n_int - 1)
    w, dw = bspline_weights(np.clip(t - i, 0.0, 1.0))
    c = coef[i[..., None] + np.arange(4)]
    return (np.where(inside, np.sum(w * c, axis=-1), 0.0),
            np.where(inside, np.sum(dw * c, axis=-1) / knot, 0.0))


def _smooth_step(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """σ across the support (0 before, 1 after, C¹) and its slope, at ``x`` samples after its start."""
    width = float(LEAD_SAMPLES + TAIL_SAMPLES)
    s = np.clip(x / width, 0.0, 1.0)
    return 3 * s ** 2 - 2 * s ** 3, np.where((x > 0) & (x < width), 6 * s * (1 - s) / width, 0.0)


def grid_knot_s(cell_samples: float, samplerate_hz: float) -> float:
    """The learning line's drift knot spacing (s): DRIFT_KNOT_S, or MIN_TURNS times the time the edges'
    sub-sample phases take to cover every phase to a quarter sample, if longer (a cell of nearly a whole
    or half number of samples walks the phase slowly, and a drift that bends faster trades against the
    shape warped along the phase, as a calibration train's line would)."""
    n = 16
    while n < (1 << 22) and _widest_gap(np.arange(n) * cell_samples) > 0.25:
        n *= 2
    return max(gridmod.DRIFT_KNOT_S, MIN_TURNS * n * cell_samples / samplerate_hz)


def _widest_gap(phase: np.ndarray) -> float:
    ordered = np.sort(np.mod(phase, 1.0))
    return float(np.max(np.diff(ordered, append=ordered[0] + 1.0)))


def learn_shape(x: np.ndarray, peaks: gridmod.Peaks, grid: gridmod.Grid, samplerate_hz: float
                ) -> tuple[GridShape, np.ndarray, np.ndarray]:
    """The shapes learned from the samples ``x`` holding the edges ``peaks`` on ``grid`` (their first
    LEARN_EDGES), with each polarity's seed offset; and those edges' located times and σ (samples)."""
    n_use = min(len(peaks.pos), LEARN_EDGES)
    seeds, falling, on = peaks.pos[:n_use], peaks.sign[:n_use] < 0, grid.on_grid[:n_use]
    sub = gridmod.Grid(grid.cell_samples, grid.piece[:n_use], grid.index[:n_use])
    stop = int(min(len(x), np.ceil(seeds[-1]) + TAIL_SAMPLES + 2))
    x = np.asarray(x[:stop], dtype=np.float64)
    knot_s = grid_knot_s(grid.cell_samples, samplerate_hz)
    tau = _line(seeds, sub, knot_s, samplerate_hz, on)
    tau = np.where(np.isnan(tau), seeds, tau)
    shape = None
    for _ in range(LEARN_ROUNDS):
        shape = _fit_shapes(x, tau, falling, peaks, grid.cell_samples)
        located, sigma, _, _ = locate(x, shape, tau, falling)  # in the shapes' convention (origin moved)
        line = _line(located, sub, knot_s, samplerate_hz, on & np.isfinite(located))
        tau = np.where(np.isfinite(located), located - _warp(located, line, falling), tau)
    assert shape is not None
    located, sigma, _, _ = locate(x, shape, tau, falling)
    line = _line(located, sub, gridmod.DRIFT_KNOT_S, samplerate_hz, on & np.isfinite(located))
    ok = np.isfinite(line) & np.isfinite(located) & (sigma > 0)
    resid = located[ok] - line[ok]
    scatter = 1.4826 * float(np.median(np.abs(resid - np.median(resid)))) if len(resid) else np.nan
    tail = float(np.quantile(np.abs(resid - np.median(resid)) / sigma[ok], 1 - TAIL_SHARE)) / TAIL_SIGMAS \
        if len(resid) else 1.0
    offset = np.array([float(np.nanmedian((located - seeds)[falling == f])) for f in (False, True)])
    return replace(shape, seed_offset=offset, line_scatter=scatter, tail_ratio=tail), located, sigma


def _warp(located: np.ndarray, line: np.ndarray, falling: np.ndarray) -> np.ndarray:
    """Each edge's share of the located times' departure from the grid's line that is periodic in the
    sub-sample phase: per polarity, the mean departure in each of WARP_BINS phase bins (less the
    polarity's mean), where a bin holds EDGES_PER_KNOT edges or more (0 elsewhere). A shape learned at the
    located times keeps their warp (locate/shape/blind.py); the line shows it, and it is taken out, while each
    edge's own departure (its source's jitter, a neighbour's pattern) stays."""
    out = np.zeros(len(located))
    d = located - line
    ok = np.isfinite(d)
    phase_bin = np.minimum((np.mod(np.where(ok, located, 0.0), 1.0) * WARP_BINS).astype(np.int64),
                           WARP_BINS - 1)
    for f in (False, True):
        mine = ok & (falling == f)
        if not mine.any():
            continue
        count = np.bincount(phase_bin[mine], minlength=WARP_BINS)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.bincount(phase_bin[mine], d[mine], minlength=WARP_BINS) / count
        mean = np.where(count >= EDGES_PER_KNOT, mean - np.mean(d[mine]), 0.0)
        out[mine] = mean[phase_bin[mine]]
    return out


def _line(pos: np.ndarray, grid: gridmod.Grid, knot_s: float, samplerate_hz: float, keep: np.ndarray
          ) -> np.ndarray:
    """The grid's line through ``pos`` with drift knots ``knot_s`` apart (:func:`grid.grid_line`)."""
    return gridmod.grid_line(np.where(np.isfinite(pos), pos, 0.0), grid, knot_s * samplerate_hz, keep)


def _fit_shapes(x: np.ndarray, tau: np.ndarray, falling: np.ndarray, peaks: gridmod.Peaks,
                cell_samples: float) -> GridShape:
    """Both polarities' ``S``, the tails' ``hⱼ`` and the baseline fitted to ``x`` with the edges at ``tau``
    (samples), normalized (:class:`GridShape`)."""
    knot = _knot(tau, falling)
    width = LEAD_SAMPLES + TAIL_SAMPLES
    n_int = int(round(width / knot))
    n_free = n_int - 3  # coefficients 3 … n_int − 1: S and its slope are 0 at both ends of the support
    rows, cols, vals = _shape_design(tau, falling, knot, n_int, len(x))
    tails = _tails(tau - LEAD_SAMPLES, np.where(falling, -1.0, 1.0), len(x))
    n_tail = tails.shape[1]
    n_base = int(np.ceil(len(x) / BASELINE_KNOT_SAMPLES)) + 3
    b_rows, b_cols, b_vals = _baseline_design(len(x), n_base)
    t_rows, t_cols = np.nonzero(tails)
    design = sparse.csr_matrix(
        (np.concatenate([vals, tails[t_rows, t_cols], b_vals]),
         (np.concatenate([rows, t_rows, b_rows]),
          np.concatenate([cols, 2 * n_free + t_cols, 2 * n_free + n_tail + b_cols]))),
        shape=(len(x), 2 * n_free + n_tail + n_base))
    normal = (design.T @ design).toarray()
    normal[np.diag_indices_from(normal)] += RIDGE * float(np.mean(np.diag(normal))) + 1e-300  # (one scale)
    sol = linalg.cho_solve(linalg.cho_factor(normal), design.T @ x)
    resid = x - design @ sol
    covered = slice(int(max(tau.min(), 0)), int(min(tau.max(), len(x))))
    r = resid[covered]
    noise = 1.4826 * float(np.median(np.abs(r - np.median(r))))
    coef = np.zeros((2, n_int + 3))
    coef[0, 3:n_int], coef[1, 3:n_int] = sol[:n_free], sol[n_free:2 * n_free]
    return _normalized(coef, knot, sol[2 * n_free:2 * n_free + n_tail], noise, cell_samples, peaks)


def _knot(tau: np.ndarray, falling: np.ndarray) -> float:
    """The finest knot spacing whose every interval of sub-sample phase holds EDGES_PER_KNOT edges of
    each polarity."""
    phase = np.mod(tau[np.isfinite(tau)], 1.0)
    fall = falling[np.isfinite(tau)]
    for knot in KNOT_CHOICES_SAMPLES:
        bins = round(1 / knot)
        if all(np.bincount(np.minimum((phase[fall == f] / knot).astype(np.int64), bins - 1),
                           minlength=bins).min() >= EDGES_PER_KNOT for f in (False, True)):
            return knot
    raise PintimeError("the edges' sub-sample phases leave parts of the response without data (a grid "
                       "cell of nearly a whole number of samples, or too few edges): record for longer")


def _shape_design(tau: np.ndarray, falling: np.ndarray, knot: float, n_int: int, length: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sparse design of both S: each edge's samples within its support, 4 B-spline weights each, on
    its polarity's free coefficients."""
    width = LEAD_SAMPLES + TAIL_SAMPLES
    n = np.floor(tau - LEAD_SAMPLES)[:, None] + np.arange(1, width + 1)[None, :]
    x = n - (tau[:, None] - LEAD_SAMPLES)  # in (0, width]
    t = x / knot
    i = np.minimum(np.floor(t).astype(np.int64), n_int - 1)
    w, _ = bspline_weights(t - i)
    j = i[..., None] + np.arange(4)
    keep = (j >= 3) & (j <= n_int - 1) & ((n >= 0) & (n < length))[..., None] & (t < n_int)[..., None]
    col = j - 3 + (n_int - 3) * falling[:, None, None]
    rows = np.broadcast_to(n[..., None], j.shape)
    return rows[keep].astype(np.int64), col[keep].astype(np.int64), w[keep]


def _tails(start: np.ndarray, weight: np.ndarray, length: int, heights: np.ndarray | None = None,
           inside: bool = True) -> np.ndarray:
    """What edges whose support starts at ``start`` (samples) leave, ``weight`` each (±1, or a step):
    per tail time constant Tⱼ, ``Σ weight·σ`` inside the support (unless not ``inside``) and
    ``Σ weight·exp(−(n − end)/Tⱼ)`` after it, at every sample (length, tails); with ``heights``, their
    sum weighted by them (length,)."""
    width = LEAD_SAMPLES + TAIL_SAMPLES
    n = np.floor(start)[:, None] + np.arange(1, width + 1)[None, :]
    s, _ = _smooth_step(n - start[:, None])
    within = (n >= 0) & (n < length)
    ramp = np.bincount(n[within].astype(np.int64), (s * weight[:, None])[within] * float(inside),
                       minlength=length)[:length].astype(np.float64)
    after = (np.floor(start) + width + 1).astype(np.int64)
    late = after - (start + width)  # how far past the support's end the first sample after it lies
    keep = after < length
    columns = []
    total = ramp * (0.0 if heights is None else float(np.sum(heights)))  # with heights: their sum alone
    for j, time in enumerate(TAIL_TIMES_SAMPLES):
        ratio = np.exp(-1.0 / time)
        kick = np.bincount(np.maximum(after[keep], 0), weight[keep] * ratio ** late[keep], minlength=length)
        decay = signal.lfilter([1.0], [1.0, -ratio], kick[:length])
        if heights is None:
            columns.append(ramp + decay)
        else:
            total += heights[j] * decay
    return total if heights is not None else np.stack(columns, axis=1)


def _baseline_design(length: int, n_base: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The slow baseline's cubic B-spline (knots BASELINE_KNOT_SAMPLES apart) at every sample."""
    t = np.arange(length) / BASELINE_KNOT_SAMPLES
    i = np.minimum(t.astype(np.int64), n_base - 4)
    w, _ = bspline_weights(t - i)
    rows = np.repeat(np.arange(length), 4)
    return rows, (i[:, None] + np.arange(4)).ravel(), w.ravel()


def _normalized(coef: np.ndarray, knot: float, tails: np.ndarray, noise: float, cell_samples: float,
                peaks: gridmod.Peaks) -> GridShape:
    """Each polarity's shape scaled to a unit largest |G| and its origin where |G| first reaches half of
    it before that peak; how far the two differ from mirror images."""
    width = LEAD_SAMPLES + TAIL_SAMPLES
    xs = np.linspace(0.0, width, 64 * width + 1)
    origin, scale, shapes, step = np.zeros(2), np.ones(2), [], float(np.sum(tails))
    for p, sign in ((0, 1.0), (1, -1.0)):
        g = _spline(coef[p], knot, xs)[0] + sign * step * _smooth_step(xs)[0]
        top = int(np.argmax(np.abs(g)))
        scale[p] = abs(g[top]) if g[top] != 0 else 1.0
        below = np.flatnonzero(np.abs(g[:top + 1]) < 0.5 * scale[p])
        k = int(below[-1]) if len(below) else 0
        a0, a1 = abs(g[k]), abs(g[min(k + 1, len(g) - 1)])
        origin[p] = xs[k] + (0.5 * scale[p] - a0) / (a1 - a0) * (xs[1] - xs[0]) if a1 != a0 else xs[k]
        shapes.append((origin[p], g / scale[p] * np.sign(g[top])))
    u = np.linspace(-LEAD_SAMPLES / 2, TAIL_SAMPLES / 2, 256)
    rise = np.interp(u + shapes[0][0], xs, shapes[0][1])
    fall = np.interp(u + shapes[1][0], xs, shapes[1][1])
    differ = float(np.sqrt(np.mean((rise - fall) ** 2)))
    return GridShape(coef, knot, origin, scale, tails, noise, cell_samples, peaks.differentiated,
                     peaks.threshold, np.zeros(2), differ, np.nan, np.nan, _table(coef, knot, step, scale))


def _table(coef: np.ndarray, knot: float, step: float, scale: np.ndarray) -> np.ndarray:
    """:attr:`GridShape.table` of the shapes ``coef`` and ``step`` (all tails' height at the support's
    end), each polarity divided by its scale."""
    width = LEAD_SAMPLES + TAIL_SAMPLES
    xs = np.arange(width * TABLE_PER_SAMPLE + 2) / TABLE_PER_SAMPLE
    out = np.zeros((2, 2, len(xs)))
    for p, sign in ((0, 1.0), (1, -1.0)):
        g, dg = _spline(coef[p], knot, xs)
        s, ds = _smooth_step(xs)
        out[p] = np.stack([g + sign * step * s, dg + sign * step * ds]) / scale[p]
    return out


def model(length: int, shape: GridShape, tau: np.ndarray, falling: np.ndarray, amp: np.ndarray
          ) -> np.ndarray:
    """Σ amp·G(n − τ) of the edges at every sample ``0 … length − 1``, their tails after them."""
    width = LEAD_SAMPLES + TAIL_SAMPLES
    ok = np.isfinite(tau)
    tau, falling, amp = tau[ok], falling[ok], amp[ok]
    start = np.floor(tau - shape.origin[falling.astype(np.int64)])
    n = start[:, None] + np.arange(1, width + 1)[None, :]
    g, _ = shape.evaluate(np.broadcast_to(falling[:, None], n.shape), n - tau[:, None])
    inside = (n >= 0) & (n < length)
    out = np.bincount(n[inside].astype(np.int64), (g * amp[:, None])[inside], minlength=length)[:length]
    sign = np.where(falling, -1.0, 1.0)
    weight = sign * amp / shape.scale[falling.astype(np.int64)]
    support = tau - shape.origin[falling.astype(np.int64)]  # where each edge's support starts
    return out + _tails(support, weight, length, shape.tails, inside=False)


def locate(x: np.ndarray, shape: GridShape, tau: np.ndarray, falling: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each edge's time (samples), σ (samples), step (the signal's sign) and misfit (its window's residual
    over the noise's, per degree of freedom), located in its peeled window from ``tau``; NaN where its
    window leaves ``x``."""
    m = np.arange(-FIT_HALF_SAMPLES, FIT_HALF_SAMPLES + 1, dtype=np.float64)
    tau = np.asarray(tau, dtype=np.float64).copy()
    amp = shape.scale[falling.astype(np.int64)].copy()  # the learned response's own height
    inside = (tau - FIT_HALF_SAMPLES - 1 >= 0) & (tau + FIT_HALF_SAMPLES + 1 < len(x))
    tau[~inside] = np.nan
    fall = np.broadcast_to(falling[:, None], (len(tau), len(m)))
    var = np.full(len(tau), np.nan)
    chi = np.full(len(tau), np.nan)
    for _ in range(SWEEPS):
        others = model(len(x), shape, tau, falling, amp)
        ok = np.isfinite(tau)
        centre = np.where(ok, np.rint(np.where(ok, tau, 0)), 0).astype(np.int64)
        idx = np.clip(centre[:, None] + m.astype(np.int64), 0, len(x) - 1)
        g, _ = shape.evaluate(fall, idx - np.where(ok, tau, 0)[:, None])
        y = x[idx] - others[idx] + amp[:, None] * g
        for _ in range(GN_STEPS):
            g, dg = shape.evaluate(fall, idx - np.where(ok, tau, 0)[:, None])
            jac = np.stack([g, -dg, np.ones_like(g), np.broadcast_to(m / FIT_HALF_SAMPLES, g.shape)], axis=1)
            gram = np.einsum("eil,ejl->eij", jac, jac) + 1e-12 * np.eye(4)
            p = np.linalg.solve(gram, np.einsum("eil,el->ei", jac, y)[..., None])[..., 0]
            with np.errstate(invalid="ignore", divide="ignore"):
                step = np.clip(p[:, 1] / p[:, 0], -0.5, 0.5)
            amp = np.where(ok, p[:, 0], amp)
            tau = np.where(ok, tau + np.nan_to_num(step), tau)
        fit = np.einsum("eil,ei->el", jac, p)
        chi = np.sum((y - fit) ** 2, axis=1) / (shape.noise_rms ** 2 * (len(m) - 4))
        var = np.linalg.inv(gram)[:, 1, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        sigma = shape.noise_rms * np.sqrt(var) / np.abs(amp) * np.sqrt(np.maximum(1.0, np.where(
            chi > MISFIT_CHANCE, chi, 1.0)))
    sign = np.where(falling, -1.0, 1.0)
    return tau, sigma, amp * sign, chi
