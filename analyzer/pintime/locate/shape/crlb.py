"""Noise of a capture and the Cramér–Rao bound of each edge time (docs/design.md §10).

For a known step shape ``A·s(t − τ)`` in white noise of standard deviation σ, no unbiased estimator of
``τ`` does better than ``σ_τ² = σ² / (A² Σₙ s′(nT − τ)²)``. σ is measured on the capture's quiet stretches
and ``s′`` is the learned template's derivative, so the bound comes from the capture alone.
"""

from __future__ import annotations

import numpy as np

from pintime.locate.shape.template import Template

CHUNK_SAMPLES = 64  # quiet stretches are cut into chunks this long, each detrended by a polynomial
# the noise an edge's fit sees: its window (11 samples) takes an offset and a slope, which hold all of a hum
# or drift that a cubic holds over a chunk (a straight line over 64 samples leaves hum's curvature in it:
# docs/design.md §13); the checks of a fit's residual compare it with the noise about a straight line
FIT_DEGREE = 3


def quiet_noise_rms(x: np.ndarray, edge_pos: np.ndarray, guard_samples: int,
                    degree: int = 1) -> tuple[float, int]:
    """Noise standard deviation of one channel from the chunks ``guard_samples`` away from every edge.

    A polynomial of ``degree`` is removed from each chunk (offset, droop and hum are smooth over 64
    samples); the variance is pooled with its ``degree + 1`` parameters per chunk taken off the degrees of
    freedom. Returns the standard deviation and the number of chunks used (0: no quiet stretch, σ NaN).
    """
    n_chunks = len(x) // CHUNK_SAMPLES
    starts = np.arange(n_chunks) * CHUNK_SAMPLES
    pos = np.sort(edge_pos)
    # nearest edge to either end of each chunk must be farther than the guard
    lo = np.searchsorted(pos, starts - guard_samples)
    hi = np.searchsorted(pos, starts + CHUNK_SAMPLES + guard_samples)
    quiet = starts[lo == hi]
    if quiet.size == 0:
        return float("nan"), 0
    chunks = x[quiet[:, None] + np.arange(CHUNK_SAMPLES)].astype(np.float64)
    basis = np.linalg.qr(np.vander(np.linspace(-1.0, 1.0, CHUNK_SAMPLES), degree + 1))[0]  # orthonormal
    chunks -= (chunks @ basis) @ basis.T
    dof = quiet.size * (CHUNK_SAMPLES - degree - 1)
    return float(np.sqrt(np.sum(chunks * chunks) / dof)), int(quiet.size)


def crlb_samples(template: Template, amp: np.ndarray, tau_samples: np.ndarray,
                 noise_rms: float | np.ndarray) -> np.ndarray:
    """Cramér–Rao bound (1-sigma, samples) of edges of amplitudes ``amp`` at positions ``tau_samples``;
    infinite for an edge of no amplitude (it carries no timing information)."""
    frac = np.asarray(tau_samples) - np.floor(tau_samples)
    with np.errstate(divide="ignore"):
        return noise_rms / (np.abs(amp) * np.sqrt(template.energy(frac)))
