"""An edge's time without a sub-sample bias: the centroid of its window's first difference (docs/design.md
§10).

The Gaussian-windowed centroid is the solution ``c`` of ``Σₘ w(m − ½ − c)·(m − ½ − c)·(y[m] − y[m−1]) = 0``.
The difference is the response convolved with a one-sample box; times the smooth window it stays
band-limited below the sample rate wherever the card's response is (every anti-alias filter stops well
short of fs), so by Poisson's summation formula the sum equals its integral, which depends on ``c`` and
the edge time only through their difference: ``c`` is the edge time plus a constant, at any phase. A
straight baseline (DC, droop) adds a constant to the difference, which the odd weight ``w·x`` does not
see. A narrower window keeps out close neighbours but is band-limited less well: its error periodic in
the phase grows as its spectrum at fs/2, ``exp(−(π·σ)²/2)`` (10⁻¹² at σ = 3 samples, 7·10⁻³ at 1).
"""

from __future__ import annotations

import numpy as np

from pintime.locate.shape import train

CENTROID_SIGMA_SAMPLES = 3.0  # the centroid's Gaussian window (its spectrum is 10⁻¹² at 0.4 fs)
CENTROID_ITERATIONS = 30


def centroids(y: np.ndarray, start: np.ndarray, sigma_samples: float = CENTROID_SIGMA_SAMPLES) -> np.ndarray:
    """Each window's (``y`` on :data:`train.WINDOW`) centroid of its first difference in a Gaussian window
    of ``sigma_samples``, samples from the window's centre, iterated from ``start`` (NaN where the window
    holds no step: its weights sum to 0; its callers' fits then fail, never a warning on stderr)."""
    x = train.WINDOW[1:].astype(np.float64) - 0.5
    d = np.diff(y, axis=1)
    c = np.asarray(start, dtype=np.float64).copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        for _ in range(CENTROID_ITERATIONS):
            w = np.exp(-0.5 * ((x[None, :] - c[:, None]) / sigma_samples) ** 2) * d
            c = np.sum(w * x[None, :], axis=1) / np.sum(w, axis=1)
    return c
