"""Template method: least-squares fit of the learned step response to each edge (docs/design.md §10).

In a window of samples ``m = −W … W`` around sample ``n₀`` the model of an edge at ``n₀ + φ`` is

    y[m] = A·g(m − φ) + a + b·m/W

with ``g`` the learned template (step response and droop after it) and ``a``/``b`` the local offset and
slope (DC, droop of earlier edges, hum). Writing ``φ = φ_q + δ`` around a tabulated phase ``φ_q`` and
expanding ``g`` to first order in ``δ`` makes the model linear in ``(A, A·δ, a, b)``; its pseudo-inverse
depends only on ``φ_q``, so it is precomputed for a fine grid of phases and every Gauss–Newton step of
every edge is one small matrix–vector product. Steps repeat until the phase stays in its grid cell
(the second-order error is then ≪ the Cramér–Rao bound).

Edges closer than the template's reach are fitted by subtracting, in each one's window, the others'
fitted ringing and fitting again (block Gauss–Seidel) until the times settle: in a few sweeps, since a
neighbour's ringing is a small part of the window. Edges so close that a neighbour's step lies inside
the window (both edges of a pulse a few samples long) share one window instead and are fitted
together (:mod:`pintime.locate.locators.joint`; docs/design.md §10: close edges must be fitted jointly).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pintime.compiled import kernel
from pintime.locate.locators.joint import fit_joint
from pintime.locate.shape.template import Template

# W: the fit uses 2W+1 samples, where most of s′² (the timing information) is. Wider windows lose less to
# the offset and slope but take in more of the learned template's error away from the edge, which shows as
# a bias that depends on the sub-sample phase: W is where the edges' error against their CRLB is least
# (docs/design.md §13)
FIT_HALF_SAMPLES = 5
PHASES_PER_SAMPLE = 1024  # grid of tabulated phases; first-order error at half a cell is ~1e-7 of A
PHASE_RANGE = (-1.0, 2.0)  # phases relative to the window centre the table covers
STEPS = 6  # Gauss–Newton steps from a seed within ~0.1 sample (threshold method): then in one grid cell; a
# modulator ripple in g′ makes each step land a part of the distance off, and more steps change nothing
# (docs/design.md §13)
RINGING_PER_SAMPLE = 128  # neighbours' ringing is tabulated this finely (interpolation error ≪ noise)
RINGING_MARGIN_SAMPLES = 2  # zero columns the ringing table has beyond the response (and slope) at each end
NEGLIGIBLE_RINGING = 1e-5  # of the step: ringing below this is ignored (noise is ≳ 1e-5 of a step)
# Gauss–Seidel sweeps after the first fit, until no time moves by more than SWEEP_TOLERANCE_SAMPLES: two
# suffice where a neighbour's ringing is a small part of a window; a neighbour reaching deep into it needs
# more to converge (docs/design.md §13)
SWEEPS = 8
SWEEP_TOLERANCE_SAMPLES = 1e-6
FIRST_STEPS = 1  # Gauss–Newton steps of that first fit: it only places the ringing the sweeps take out
# the sweep whose joint fits are also tried from other starts where they look like local minima
# (:func:`fit_joint`): the second, whose windows have lost their neighbours' ringing at settled times (in
# the first, most windows look suspect: docs/design.md §13)
EXPLORE_SWEEP = 2
JOINT_SAMPLES = FIT_HALF_SAMPLES + 2  # edges this close share a window: a neighbour's step is in it


@dataclass(frozen=True)
class TemplateTable:
    """The linear model per tabulated phase (pseudo-inverse, timing variance) and neighbours' ringing."""

    template: Template
    ringing: np.ndarray  # (128, columns): a neighbour's response without its final straight line at
    # u = column − columns/2 + row/128 (zero beyond ±ringing_half; float32: ringing ≲ 1e-2 of a step,
    # rounded to ≲ 1e-9 of it, far below the noise) …
    ringing_slope: np.ndarray  # … and its change to the next finer u (linear interpolation)
    ringing_half: int  # the response is 0 beyond ±ringing_half samples
    reach_samples: float  # neighbours closer than this (centre to centre) reach into a window
    pinv: np.ndarray  # (phases, 2, L): the pseudo-inverse's rows for A and A·δ (the others are not needed)
    timing_var: np.ndarray  # (phases,) variance of A·δ per unit noise variance: (JᵀJ)⁻¹ at (1, 1)

    @classmethod
    def build(cls, template: Template) -> TemplateTable:
        lo, hi = PHASE_RANGE
        n_phase = int((hi - lo) * PHASES_PER_SAMPLE)
        phase = lo + (np.arange(n_phase) + 0.5) / PHASES_PER_SAMPLE
        m = np.arange(-FIT_HALF_SAMPLES, FIT_HALF_SAMPLES + 1, dtype=np.float64)
        u = m[None, :] - phase[:, None]
        g, dg = template.evaluate(u)
        # columns: A·g, then (A·δ)·(−g′) for the first-order phase step, then offset and slope
        ramp = np.broadcast_to(m / FIT_HALF_SAMPLES, g.shape)
        jac = np.stack([g, -dg, np.ones_like(g), ramp], axis=1)
        gram = np.einsum("qil,qjl->qij", jac, jac)
        cov = np.linalg.inv(gram)
        half = int(np.ceil(template.support_end)) + 1
        cols = half + RINGING_MARGIN_SAMPLES
        ringing_u = np.arange(-cols, cols, 1.0 / RINGING_PER_SAMPLE)
        ringing = template.ringing(ringing_u)
        ringing[np.abs(ringing_u) >= half] = 0.0
        extent = np.max(np.abs(ringing_u[np.abs(ringing) > NEGLIGIBLE_RINGING]))
        reach = extent + FIT_HALF_SAMPLES + 1
        by_row = ringing.reshape(-1, RINGING_PER_SAMPLE).T  # [row, column]: u = column − cols + row/128
        slope_by_row = np.diff(ringing, append=0.0).reshape(-1, RINGING_PER_SAMPLE).T
        return cls(template, by_row.astype(np.float32), slope_by_row.astype(np.float32), half,
                   reach, np.einsum("qij,qjl->qil", cov[:, :2], jac), cov[:, 1, 1])


@dataclass(frozen=True)
class EdgeFit:
    """Per edge: phase from the window centre, its 1-sigma (samples), amplitude, convergence."""

    phase: np.ndarray
    sigma: np.ndarray
    amp: np.ndarray
    converged: np.ndarray


def fit_isolated(table: TemplateTable, y: np.ndarray, phase0: np.ndarray, noise_rms: float,
                 steps: int = STEPS) -> EdgeFit:
    """Fit one edge per window; ``y`` is (edges, 2W+1) centred on each edge's coarse sample.

    At most ``steps`` Gauss–Newton steps: an edge stops once a step leaves it in its grid cell. The
    uncertainty uses the capture's noise ``noise_rms`` (measured on quiet stretches; a window's own
    residual, from 2W+1 − 4 degrees of freedom, would make it scatter by ±20 %).
    """
    phase = np.empty(len(phase0))
    amp = np.empty(len(phase0))
    q = np.empty(len(phase0), dtype=np.int64)  # the grid cell each edge's last step used
    _fit_kernel(table.pinv, np.ascontiguousarray(y, dtype=np.float64), np.asarray(phase0, dtype=np.float64),
                steps, phase, amp, q)
    return _edge_fit(table, phase, amp, q, noise_rms)


def _edge_fit(table: TemplateTable, phase: np.ndarray, amp: np.ndarray, q: np.ndarray,
              noise_rms: float) -> EdgeFit:
    """The fits' uncertainties and convergence, from their last grid cells ``q``."""
    lo, hi = PHASE_RANGE
    cell = lo + (q + 0.5) / PHASES_PER_SAMPLE
    # var(A·δ)/A²: the amplitude is known far better than the timing term, its error is second order
    sigma = noise_rms * np.sqrt(table.timing_var[q]) / np.abs(amp)
    converged = (np.abs(phase - cell) <= 1.0 / PHASES_PER_SAMPLE) & (phase > lo) & (phase < hi)
    return EdgeFit(phase, sigma, amp, converged)


@kernel
def _fit_kernel(pinv, y, phase0, steps, phase, amp, q):  # pragma: no cover (compiled)
    """:func:`fit_isolated`'s Gauss–Newton steps, edge by edge, into ``phase``, ``amp`` and ``q``."""
    for e in range(y.shape[0]):
        phase[e], amp[e], q[e] = _fit_one(pinv, y[e], phase0[e], steps)


@kernel
def _fit_one(pinv, y, p, steps):  # pragma: no cover (compiled)
    """Gauss–Newton steps of one window ``y`` from phase ``p``: phase, amplitude, last grid cell."""
    lo = PHASE_RANGE[0]
    last_cell = pinv.shape[0] - 1
    a, cell = 0.0, -1
    for _ in range(steps):
        x = (p - lo) * PHASES_PER_SAMPLE
        new = min(int(x), last_cell) if x >= 0 else 0
        if new == cell:  # still in the cell of its last step: it would step to the same place
            break
        cell = new
        a = 0.0
        t = 0.0
        for k in range(len(y)):
            a += pinv[cell, 0, k] * y[k]
            t += pinv[cell, 1, k] * y[k]
        p = lo + (cell + 0.5) / PHASES_PER_SAMPLE + (t / a if a != 0 else 0.0)
    return p, a, cell


def fit_groups(table: TemplateTable, x: np.ndarray, centre: np.ndarray, phase0: np.ndarray,
               noise_rms: float) -> EdgeFit:
    """Fit edges whose neighbours reach into their windows.

    Edges within ``JOINT_SAMPLES`` of each other (a neighbour's step inside the window, e.g. both edges of
    a pulse a few samples long) are fitted jointly (:func:`fit_joint`); the others one per window. Every
    fit first loses the ringing of the edges outside it, at their latest fitted times (block Gauss–Seidel).

    Parameters
    ----------
    x : one channel's samples (float32 or float64)
    centre : each edge's coarse sample in ``x`` (sorted); its window and its neighbours' ringing lie in ``x``
    phase0 : seeds, relative to ``centre``
    """
    cluster = np.cumsum(np.diff(centre, prepend=centre[0] - JOINT_SAMPLES - 1) > JOINT_SAMPLES) - 1
    size = np.bincount(cluster)[cluster]
    phase = np.where(size > 1, np.clip(phase0, -1.0, 1.0), phase0).astype(np.float64)
    amp = np.zeros(len(centre))
    sigma = np.zeros(len(centre))
    single = np.flatnonzero(size == 1)
    first = np.flatnonzero((size > 1) & (np.diff(cluster, prepend=-1) > 0))
    # clusters of one shape (edge count and spacings) are fitted together
    shapes: dict[tuple[int, ...], list[int]] = {}
    for f in first.tolist():
        shapes.setdefault(tuple((centre[f:f + size[f]] - centre[f]).tolist()), []).append(f)
    q_single = np.empty(len(single), dtype=np.int64)
    for sweep in range(SWEEPS + 1):
        # every window loses its neighbours' ringing at their fits of the sweep before (none at first)
        known = (phase.copy(), amp.copy())
        _singles_kernel(table.pinv, table.ringing, table.ringing_slope, table.ringing_half + 2, x, centre,
                        single, *known, sweep > 0, STEPS if sweep else FIRST_STEPS, phase, amp, q_single)
        for offsets, firsts in shapes.items():
            k = np.asarray(firsts)[:, None] + np.arange(len(offsets))[None, :]
            lo = centre[k[:, 0]] - FIT_HALF_SAMPLES
            length = offsets[-1] + 2 * FIT_HALF_SAMPLES + 1
            y = x[lo[:, None] + np.arange(length)[None, :]].astype(np.float64)
            if sweep:
                y = y - _neighbour_ringing(table, lo, length, k[:, 0], k[:, -1], centre, *known)
            p, sg, a = fit_joint(table.template, y, centre[k] - lo[:, None] + phase[k], noise_rms,
                                 explore=sweep == EXPLORE_SWEEP)
            phase[k], sigma[k], amp[k] = p - (centre[k] - lo[:, None]), sg, a
        if sweep > EXPLORE_SWEEP and np.max(np.abs(phase - known[0]), initial=0.0) < SWEEP_TOLERANCE_SAMPLES:
            break
    sigma[single] = _edge_fit(table, phase[single], amp[single], q_single, noise_rms).sigma
    return EdgeFit(phase, sigma, amp, np.abs(phase) < 2.0)


@kernel
def _singles_kernel(pinv, ringing, ringing_slope, stop, x, centre, single, known_phase, known_amp,
                    with_ringing, steps, phase, amp, q):  # pragma: no cover (compiled)
    """One sweep of :func:`fit_groups` over its single edges ``single``: each window read from ``x``, less
    (``with_ringing``) its neighbours' ringing at ``known_phase`` and ``known_amp``, fitted from the edge's
    ``phase`` (:func:`_fit_one`), into ``phase``, ``amp`` and ``q`` (the last cell, per single edge)."""
    length = pinv.shape[2]
    y = np.empty(length)
    ring = np.empty(length)
    for i, e in enumerate(single):
        start = centre[e] - length // 2
        ring[:] = 0.0
        if with_ringing:
            window_ringing(ringing, ringing_slope, stop, start, e, e, centre, known_phase, known_amp, ring)
        for k in range(length):
            y[k] = x[start + k] - ring[k]
        phase[e], amp[e], q[i] = _fit_one(pinv, y, phase[e], steps)


def _neighbour_ringing(table: TemplateTable, start: np.ndarray, length: int, first: np.ndarray,
                       last: np.ndarray, centre: np.ndarray, phase: np.ndarray,
                       amp: np.ndarray) -> np.ndarray:
    """The ringing of the edges outside each window on its samples: the part of their responses
    ``A·g(u)`` the window must lose, all of it before an edge, after it only the ringing about its final
    straight line (that line, offset plus droop, is taken by the window's own offset and slope).

    Window ``w`` holds samples ``start[w] … start[w] + length − 1`` and its own edges ``first[w] …
    last[w]`` (indices into the sorted ``centre``); the edges before and after it are added as long as
    their response (``ringing_half`` samples either side, ±2 of phase) can reach it. Neighbours are never
    within the window, so ``u`` is far from 0 there, where ``g`` is smooth enough for linear
    interpolation in the fine table; samples beyond the table read its zero end columns.
    """
    out = np.zeros((len(start), length))
    _ringing_kernel(table.ringing, table.ringing_slope, table.ringing_half + 2, start, first, last,
                    centre, np.asarray(phase, dtype=np.float64), np.asarray(amp, dtype=np.float64), out)
    return out


@kernel
def _ringing_kernel(ringing, ringing_slope, stop, start, first, last, centre, phase, amp,
                    out):  # pragma: no cover (compiled)
    """:func:`_neighbour_ringing` window by window, added into ``out``."""
    for w in range(out.shape[0]):
        window_ringing(ringing, ringing_slope, stop, start[w], first[w], last[w], centre, phase, amp, out[w])


@kernel
def window_ringing(ringing, ringing_slope, stop, start, first, last, centre, phase, amp,
                    out):  # pragma: no cover (compiled)
    """The ringing of one window's neighbours (:func:`_neighbour_ringing`), neighbour by neighbour, added
    into ``out``."""
    j = first - 1
    while j >= 0 and centre[j] > start - stop:
        _add_response(ringing, ringing_slope, start - centre[j], phase[j], amp[j], out)
        j -= 1
    j = last + 1
    while j < len(centre) and centre[j] < start + len(out) - 1 + stop:
        _add_response(ringing, ringing_slope, start - centre[j], phase[j], amp[j], out)
        j += 1


@kernel
def _add_response(ringing, ringing_slope, offset, phase, amp, out):  # pragma: no cover (compiled)
    """Add ``A·ringing(u)`` at ``u = offset + l − phase`` for ``l = 0 … len(out) − 1`` (whole samples
    ``offset``): one table row (the sub-sample fraction is the same for every sample); samples beyond the
    table would read its zero end columns and are skipped."""
    fine = np.floor(-phase * RINGING_PER_SAMPLE)
    frac = -phase * RINGING_PER_SAMPLE - fine
    whole = int(fine) // RINGING_PER_SAMPLE
    row = int(fine) - whole * RINGING_PER_SAMPLE
    columns = ringing.shape[1]
    base = offset + whole + columns // 2
    for k in range(max(0, -base), min(len(out), columns - base)):
        out[k] += amp * (ringing[row, base + k] + frac * ringing_slope[row, base + k])
