"""The edge template learned blind from edges too close together to be learned one at a time: a UART line,
a burst of pulses (no calibration train, no edge alone; docs/design.md §10).

Isolated edges (:mod:`pintime.locate.shape.blind`) need ~120 samples free around each; a 9600-baud UART at
44.1 kHz puts an edge every 4.6 samples. The card is linear, so every learning window is the sum of the
responses of all edges that reach it, each the pin's one step ``±A`` through the one response ``g``:

    y[m] = Σₖ sₖ·g(m − dₖ) + a + b·m + c·m²        (sₖ = ±1, dₖ: edge k's time from the window's centre)

which is linear in ``g``'s B-spline coefficients at given times (an edge further back than the support
adds only ``g``'s straight line, which the baseline takes). Times and template alternate as in blind
learning, each edge located in its *peeled* window, its neighbours' responses at their current times
subtracted (:meth:`_Windows.peeled`). The times start from centroids in a window narrow enough to keep
the neighbours out, whose error periodic in the sub-sample phase the alternation of template fits and
learning keeps (the warp blind learning describes); the last rounds take each peeled window's wide
centroid instead (:mod:`pintime.locate.locators.centroid`), which has none and, once template and times
reproduce the samples, sees the edge as exactly as if it were alone, whatever warp they share. Where the
edges' pattern hides part of the response from every window (a train: only its harmonics show) the times are
not pinned down, and the fit and the centroid then disagree: refused.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy import linalg

from pintime.compiled import kernel
from pintime.errors import PintimeError
from pintime.locate.locators.centroid import centroids
from pintime.locate.locators.fit import FIT_HALF_SAMPLES, EdgeFit, TemplateTable, fit_isolated
from pintime.locate.shape import train
from pintime.locate.shape.template import N_ZERO, Template, covered_knots

# rounds of locating every edge in its peeled window and learning again: first by the template's fit,
# which takes out the first centroids' random error but keeps their error periodic in the phase, then by
# the peeled window's wide centroid, which has none (docs/design.md §13)
FIT_ROUNDS = 8
CENTROID_ROUNDS = 4
MAX_WINDOWS = 600  # the template is learned from this many windows (cost ∝ windows × neighbours²)
# ... spread over the first this many edges, every one of which is located each round (cost and memory ∝
# edges × neighbours: a learning block at 192 kHz holds 40 000 of a UART's edges)
MAX_SPAN_EDGES = 5 * MAX_WINDOWS
FIRST_SIGMA_SAMPLES = 1.0  # the first centroids' window: a neighbour 4.6 samples away weighs 2.5e-5
# edges reaching a window, at most (median): the cost grows with their square (docs/design.md §13)
MAX_NEIGHBOURS = 32
MIN_WINDOWS = 100  # fewer windows with every neighbour known do not determine the template
# an edge reaches a window when its support overlaps it: centres within this of the window's ends
REACH_SAMPLES = train.TEMPLATE_HALF_SAMPLES + 2
# the fit and the centroid of the learning windows may differ by this many times the fits' σ (RMS): above
# what a line with pauses leaves, below lines that never pause (docs/design.md §13). Up to MAX_AGREEMENT every
# edge's σ is multiplied by the disagreement; beyond, refused
AGREEMENT = 3.0
MAX_AGREEMENT = 10.0
DISAGREE = ("fit and centroid of each edge disagree that much (a pattern too regular, as a UART's sending "
            "without pause, hides part of the response)")


def learn_dense(pos: np.ndarray, sign: np.ndarray, y: np.ndarray, seeds: np.ndarray, noise_rms: float,
                knots: tuple[float, ...], edges_per_knot: int) -> Template:
    """Template from the edges at ``pos`` (samples, ascending; polarity ``sign``; windows ``y`` on
    :data:`train.WINDOW`; threshold ``seeds``, samples), whose neighbours reach into their windows; the
    capture's noise ``noise_rms``. Knots: the finest of ``knots`` whose every interval of sub-sample phase
    holds ``edges_per_knot`` edges."""
    span = slice(0, MAX_SPAN_EDGES)
    pos, sign, y, seeds = pos[span], sign[span], y[span], seeds[span]
    lo = pos + int(train.WINDOW[0]) - REACH_SAMPLES
    hi = pos + int(train.WINDOW[-1]) + REACH_SAMPLES
    first, last = np.searchsorted(pos, lo, "left"), np.searchsorted(pos, hi, "right")
    # edges whose every neighbour was detected are located; windows whose every edge is located teach
    reach = float(np.median(last - first))
    if reach > MAX_NEIGHBOURS:
        raise PintimeError(f"its edges are {np.median(np.diff(pos)):.3g} samples apart, {reach:.0f} of them "
                           f"reaching each edge's window (learning them together takes {MAX_NEIGHBOURS} at "
                           "most): a signal this dense is learned only from a grid its edges keep or a "
                           "period they repeat")
    located = np.flatnonzero((lo > pos[0]) & (hi < pos[-1]))
    known = located[(first[located] >= located[0]) & (last[located] <= located[-1] + 1)] \
        if len(located) else located
    if len(known) < MIN_WINDOWS:
        raise PintimeError(f"only {len(known)} edges to learn the edge shape from, with every edge near "
                           f"them detected (it needs {MIN_WINDOWS}): record for longer")
    use = known[np.linspace(0, len(known) - 1, min(MAX_WINDOWS, len(known))).round().astype(np.int64)]
    # start: each edge's centroid in a window narrow enough that its neighbours barely count
    tau = centroids(y, seeds - pos, FIRST_SIGMA_SAMPLES)
    lost = ~(np.abs(tau) < FIT_HALF_SAMPLES)  # no centroid (a window without a step, NaN): its threshold's
    tau[lost] = np.nan_to_num((seeds - pos)[lost], nan=0.0, posinf=0.0, neginf=0.0)  # steepest sample
    phase = np.mod(pos[use] + tau[use], 1.0)
    covered = covered_knots(phase, knots, edges_per_knot)
    if not covered:
        raise PintimeError(f"the {len(use)} edges to learn the edge shape from do not determine it (their "
                           "sub-sample phases leave parts of it without data): record for longer")
    try:
        return _learn(_Windows(pos, sign, y, first, last, use), _Windows(pos, sign, y, first, last, located),
                      tau, sign[located] > 0, covered[0], noise_rms)
    except np.linalg.LinAlgError:  # the windows leave some of the shape free (a few bursts, each one phase)
        raise PintimeError(f"the {len(use)} edges to learn the edge shape from do not determine it: record "
                           "for longer, or a signal that pauses (a UART between bytes)") from None


def _learn(teach: _Windows, locate: _Windows, tau: np.ndarray, rising: np.ndarray, knot: float,
           noise_rms: float) -> Template:
    """The alternation of :func:`learn_dense` (windows that teach, windows located), its check."""
    located = locate.use
    template, tau = teach.refit(Template.initial(train.TEMPLATE_HALF_SAMPLES, knot), tau)
    for centroid in [False] * FIT_ROUNDS + [True] * CENTROID_ROUNDS:
        peeled = locate.peeled(template, tau)
        tau[located] = centroids(*peeled) if centroid else _fit(template, peeled).phase
        template, tau = teach.refit(template, tau)
    # the fit and the centroid of each peeled window see its edge through different weights: they agree
    # to their noise unless the pattern hides part of the response from the windows
    peeled = locate.peeled(template, tau)
    fit = _fit(template, peeled, noise_rms)
    disagree = fit.phase - centroids(*peeled)
    disagree[rising] -= disagree[rising].mean()
    disagree[~rising] -= disagree[~rising].mean()
    ratio = np.sqrt(np.mean(disagree ** 2) / np.mean(fit.sigma ** 2))
    if not ratio <= MAX_AGREEMENT:
        raise PintimeError(f"the edge shape learned leaves their times undetermined: the fit and the "
                           f"centroid of each edge disagree by {ratio:.3g}× their noise (a pattern too "
                           "regular, as a train's or a UART's sending without pause, hides part of the "
                           "response)")
    return template if ratio <= AGREEMENT else replace(template, sigma_scale=float(ratio), sigma_why=DISAGREE)


def _fit(template: Template, peeled: tuple[np.ndarray, np.ndarray], noise_rms: float = 1.0) -> EdgeFit:
    """Each window's edge time from the template's fit to its peeled window (:meth:`_Windows.peeled`)."""
    y, d = peeled
    return fit_isolated(TemplateTable.build(template), y[:, train.FIT_COLUMNS], d, noise_rms)


class _Windows:
    """The windows of the edges ``use`` and, per window, the edges ``first[e] … last[e]`` that reach it."""

    def __init__(self, pos: np.ndarray, sign: np.ndarray, y: np.ndarray, first: np.ndarray,
                 last: np.ndarray, use: np.ndarray) -> None:
        self.pos, self.sign, self.use = pos, sign.astype(np.float64), use
        self.y = np.ascontiguousarray(y[use], dtype=np.float64)
        self.ptr = np.concatenate([[0], np.cumsum(last[use] - first[use])])
        self.members = np.concatenate([np.arange(first[e], last[e]) for e in use])
        self.owner = np.repeat(np.arange(len(use)), np.diff(self.ptr))
        self.m, _, self.nuisance = train.window_baseline()
        self.seen = self._beside_baseline(self.y)  # what the edges must explain

    def _beside_baseline(self, y: np.ndarray) -> np.ndarray:
        """Windows ``y`` with their baseline (offset, slope, curvature) projected out."""
        return y - (y @ self.nuisance) @ self.nuisance.T

    def offsets(self, tau: np.ndarray) -> np.ndarray:
        """Each window's edges' times from the window's centre."""
        return (self.pos[self.members] + tau[self.members] - self.pos[self.use][self.owner]).astype(float)

    def refit(self, template: Template, tau: np.ndarray) -> tuple[Template, np.ndarray]:
        """The template minimising every window's misfit, baseline projected out, at times ``tau``; and
        the times in its convention (normalizing moves its origin)."""
        n_free = len(template.coef) - N_ZERO
        normal, rhs = np.zeros((n_free, n_free)), np.zeros(n_free)
        qd = np.zeros((len(self.use), self.nuisance.shape[1], n_free))
        _normal_equations(self.seen, self.ptr, self.offsets(tau), self.sign[self.members], self.nuisance,
                          self.m, template.half_samples, template.knot_samples, template.origin,
                          n_free + N_ZERO, normal, rhs, qd)
        flat = qd.reshape(-1, n_free)
        normal -= flat.T @ flat
        coef = np.zeros(n_free + N_ZERO)
        coef[N_ZERO:] = linalg.cho_solve(linalg.cho_factor(normal), rhs)
        learned = replace(template, coef=coef).normalized()
        return learned, tau + (learned.origin - template.origin)

    def peeled(self, template: Template, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each window less its neighbours' responses (a common step, fitted), and its own edge's time."""
        d = self.offsets(tau)
        g, _ = template.evaluate(self.m[None, :] - d[:, None])
        g *= self.sign[self.members][:, None]
        mine = self.members == self.use[self.owner]
        whole = np.add.reduceat(g, self.ptr[:-1], axis=0)
        shape = self._beside_baseline(whole)  # the pin's step against the template's, baselines aside
        step = np.sum(shape * self.seen) / np.sum(shape * shape)
        return self.y - step * (whole - g[mine]), d[mine]


@kernel
def _normal_equations(y, ptr, offset, sign, nuisance, m, half, knot, origin, n_coef, normal, rhs,
                      qd):  # pragma: no cover (compiled)
    """Accumulate ``DᵀD``, ``Dᵀy`` and per window ``QᵀD`` of the design whose row (window w, sample j)
    is ``Σₖ sₖ·B(m[j] − dₖ)`` over the window's edges ``ptr[w] … ptr[w+1]`` (B: the cubic B-spline basis
    with its straight line after the support, the first N_ZERO coefficients fixed at 0)."""
    n_free = n_coef - N_ZERO
    n_int = n_coef - 3
    row = np.zeros(n_free)
    touched = np.empty(n_free, dtype=np.int64)
    is_touched = np.zeros(n_free, dtype=np.bool_)
    for w in range(y.shape[0]):
        for j in range(y.shape[1]):
            n_touched = 0
            for q in range(ptr[w], ptr[w + 1]):
                u = m[j] - offset[q] + origin
                if u <= -half:
                    continue
                x = min((u + half) / knot, float(n_int))
                i = min(int(x), n_int - 1)
                t = x - i
                s = 1.0 - t
                weights = (s * s * s / 6.0, (3 * t * t * t - 6 * t * t + 4) / 6.0,
                           (-3 * t * t * t + 3 * t * t + 3 * t + 1) / 6.0, t * t * t / 6.0)
                slopes = (-s * s / 2.0, (3 * t * t - 4 * t) / 2.0, (-3 * t * t + 2 * t + 1) / 2.0,
                          t * t / 2.0)
                beyond = max(u - half, 0.0) / knot
                for k in range(4):
                    c = i + k - N_ZERO
                    if c < 0:
                        continue
                    if not is_touched[c]:
                        is_touched[c] = True
                        touched[n_touched] = c
                        n_touched += 1
                    row[c] += sign[q] * (weights[k] + beyond * slopes[k])
            for a in range(n_touched):
                ca = touched[a]
                va = row[ca]
                rhs[ca] += va * y[w, j]
                for b in range(n_touched):
                    normal[ca, touched[b]] += va * row[touched[b]]
                for p in range(nuisance.shape[1]):
                    qd[w, p, ca] += nuisance[j, p] * va
            for a in range(n_touched):
                row[touched[a]] = 0.0
                is_touched[touched[a]] = False
