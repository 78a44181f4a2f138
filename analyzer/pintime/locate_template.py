"""Template method: least-squares fit of the learned step response to each edge (DESIGN.md §5).

In a window of samples ``m = −W … W`` around sample ``n₀`` the model of an edge at ``n₀ + φ`` is

    y[m] = A·g(m − φ) + a + b·m/W

with ``g`` the learned template (step response and droop after it) and ``a``/``b`` the local offset and
slope (DC, droop of earlier edges, hum). Writing ``φ = φ_q + δ`` around a tabulated phase ``φ_q`` and
expanding ``g`` to first order in ``δ`` makes the model linear in ``(A, A·δ, a, b)``; its pseudo-inverse
depends only on ``φ_q``, so it is precomputed for a fine grid of phases and every Gauss–Newton step of
every edge is one small matrix–vector product. Steps repeat until the phase stays in its grid cell
(the second-order error is then ≪ the Cramér–Rao bound).

Edges closer than the template's reach are fitted jointly by subtracting, in each one's window, the
others' fitted responses and fitting again (block Gauss–Seidel); it converges in a few sweeps because
a neighbour's ringing is a small part of the window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pintime.template import Template

FIT_HALF_SAMPLES = 8  # W: the fit uses 2W+1 samples, where nearly all of s′² (the timing information) is
PHASES_PER_SAMPLE = 1024  # grid of tabulated phases; first-order error at half a cell is ~1e-7 of A
PHASE_RANGE = (-1.0, 2.0)  # phases relative to the window centre the table covers
STEPS = 3  # Gauss–Newton steps from a seed within ~0.1 sample (threshold method): then in one grid cell
RINGING_PER_SAMPLE = 128  # neighbours' ringing is tabulated this finely (interpolation error ≪ noise)
NEGLIGIBLE_RINGING = 1e-5  # of the step: ringing below this is ignored (noise is ≳ 1e-5 of a step)
SETTLED_SAMPLES = 4.0  # the template's last samples, where only a straight line (level, droop) is left
SWEEPS = 1  # Gauss–Seidel sweeps after the first fit: a neighbour's ringing is a small part of a window


@dataclass(frozen=True)
class TemplateTable:
    """The linear model per tabulated phase (pseudo-inverse, timing variance) and neighbours' ringing."""

    template: Template
    ringing_u: np.ndarray  # fine grid of u (samples) ...
    ringing: np.ndarray  # ... and a neighbour's response there, without its final straight line
    reach_samples: float  # neighbours closer than this (centre to centre) reach into a window
    pinv: np.ndarray  # (phases, P, L)
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
        end = template.half_samples
        settled = np.linspace(end - SETTLED_SAMPLES, end, 64)  # the straight line the response ends on
        slope, offset = np.polyfit(settled, template.evaluate(settled)[0], 1)
        ringing_u = np.arange(-end - 1, end + 1, 1.0 / RINGING_PER_SAMPLE)
        g_u, _ = template.evaluate(ringing_u)
        ringing = np.where(ringing_u > 0, g_u - (offset + slope * ringing_u), g_u)
        extent = np.max(np.abs(ringing_u[np.abs(ringing) > NEGLIGIBLE_RINGING]))
        reach = extent + FIT_HALF_SAMPLES + 1
        return cls(template, ringing_u, ringing, reach, np.einsum("qij,qjl->qil", cov, jac), cov[:, 1, 1])

    def response(self, u: np.ndarray, amp: np.ndarray) -> np.ndarray:
        """The part of a neighbour's response ``A·g(u)`` a window must lose: all of it before the edge,
        after it only the ringing about its final straight line (the line itself, offset plus droop, is
        taken by the window's own offset and slope, and is only as good as the template's end).
        Neighbours are never within the window, so ``u`` is far from 0 here, where ``g`` is smooth
        enough for linear interpolation in a fine table.
        """
        return amp * np.interp(u, self.ringing_u, self.ringing, left=0.0, right=0.0)


@dataclass(frozen=True)
class EdgeFit:
    """Per edge: phase from the window centre, its 1-sigma (samples), amplitude, convergence."""

    phase: np.ndarray
    sigma: np.ndarray
    amp: np.ndarray
    converged: np.ndarray


def fit_isolated(table: TemplateTable, y: np.ndarray, phase0: np.ndarray, noise_rms: float) -> EdgeFit:
    """Fit one edge per window; ``y`` is (edges, 2W+1) centred on each edge's coarse sample.

    The uncertainty uses the capture's noise ``noise_rms`` (measured on quiet stretches; a window's own
    residual, from 2W+1 − 4 degrees of freedom, would make it scatter by ±20 %).
    """
    lo, hi = PHASE_RANGE
    n_phase = table.pinv.shape[0]
    phase = phase0.astype(np.float64).copy()
    for _ in range(STEPS):
        q = np.clip(((phase - lo) * PHASES_PER_SAMPLE).astype(np.int64), 0, n_phase - 1)
        theta = np.einsum("eil,el->ei", table.pinv[q, :2], y)  # A and A·δ: the rest is not needed
        amp = theta[:, 0]
        cell = lo + (q + 0.5) / PHASES_PER_SAMPLE
        phase = cell + theta[:, 1] / np.where(amp == 0, np.inf, amp)
    # var(A·δ)/A²: the amplitude is known far better than the timing term, its error is second order
    sigma = noise_rms * np.sqrt(table.timing_var[q]) / np.abs(amp)
    converged = (np.abs(phase - cell) <= 1.0 / PHASES_PER_SAMPLE) & (phase > lo) & (phase < hi)
    return EdgeFit(phase, sigma, amp, converged)


def fit_groups(table: TemplateTable, y: np.ndarray, centre: np.ndarray, phase0: np.ndarray,
               noise_rms: float) -> EdgeFit:
    """Fit edges whose neighbours reach into their windows, subtracting the neighbours' fitted responses.

    Parameters
    ----------
    y : (edges, 2W+1) windows centred on each edge's coarse sample ``centre`` (absolute, sorted)
    phase0 : seeds, relative to ``centre``
    """
    fit = fit_isolated(table, y, phase0, noise_rms)
    m = np.arange(-FIT_HALF_SAMPLES, FIT_HALF_SAMPLES + 1)
    reach = table.reach_samples
    for _ in range(SWEEPS):
        others = np.zeros_like(y)
        for shift in range(1, len(y)):  # each edge's neighbour `shift` edges later, and back
            i = np.flatnonzero(centre[shift:] - centre[:-shift] < reach)
            if i.size == 0:
                break  # edges are sorted: farther neighbours are out of reach too
            for a, b in ((i, i + shift), (i + shift, i)):
                u = (centre[a] - centre[b] - fit.phase[b])[:, None] + m[None, :]
                others[a] += table.response(u, fit.amp[b, None])
        fit = fit_isolated(table, y - others, fit.phase, noise_rms)
    return fit
