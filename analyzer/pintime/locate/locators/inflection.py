"""Inflection method (the paper's §6): the zero crossing of the second derivative, sub-sample by a parabola.

Moreno & Fischmeister locate an edge at its inflection point, "where the second derivative changes sign
between two neighboring peaks", with numerical derivatives and second-order interpolation of the zero
crossing. Here: the central first difference peaks at the edge; the second difference has a peak on
either side of it (the "neighbouring peaks"); between them it changes sign once, and a parabola through
the three second-difference samples around that sign change gives the sub-sample zero. Its error depends
on where the edge falls between samples (≈1 µs RMS at 192 kHz, docs/design.md §10): the baseline we beat.
"""

from __future__ import annotations

import numpy as np

SEARCH = 3  # samples either side of the coarse position where the first-derivative peak is sought


def locate_inflection(y: np.ndarray, noise_rms: float) -> tuple[np.ndarray, np.ndarray]:
    """Edge positions and their noise-only 1-sigma in windows centred on the edges.

    Parameters
    ----------
    y : (edges, 2W+1) samples, the coarse edge position at the centre index W
    noise_rms : standard deviation of the capture's noise

    Returns
    -------
    position (samples from the window start) and its standard deviation from noise alone (the method's
    sub-sample bias is not in it).
    """
    rows = np.arange(len(y))
    c = y.shape[1] // 2
    d1 = np.zeros_like(y)
    d1[:, 1:-1] = 0.5 * (y[:, 2:] - y[:, :-2])
    d2 = np.zeros_like(y)
    d2[:, 1:-1] = y[:, 2:] - 2 * y[:, 1:-1] + y[:, :-2]
    sign = np.sign(d1[rows, c])[:, None]  # rising: d1 peaks upward, d2 goes + then -
    peak = c - SEARCH + np.argmax(sign * d1[:, c - SEARCH:c + SEARCH + 1], axis=1)
    e2 = sign * d2
    # neighbouring peaks of the second derivative: max before the d1 peak, min after it
    offs = np.arange(-SEARCH, 1)
    before = peak + offs[np.argmax(e2[rows[:, None], peak[:, None] + offs], axis=1)]
    after = peak + np.arange(SEARCH + 1)[np.argmin(e2[rows[:, None], peak[:, None] + np.arange(SEARCH + 1)],
                                                   axis=1)]
    # the sign change between them nearest the d1 peak: e2[k] > 0 >= e2[k+1]
    idx = np.arange(y.shape[1] - 1)[None, :]
    change = (e2[:, :-1] > 0) & (e2[:, 1:] <= 0) & (idx >= before[:, None]) & (idx < after[:, None])
    k = np.where(change.any(axis=1), np.argmax(change, axis=1), peak)
    # parabola through the three second-difference samples centred on the one nearer zero
    centre = np.where(np.abs(e2[rows, k]) <= np.abs(e2[rows, k + 1]), k, k + 1)
    fm, f0, fp = e2[rows, centre - 1], e2[rows, centre], e2[rows, centre + 1]
    qa, qb = 0.5 * (fp + fm) - f0, 0.5 * (fp - fm)
    disc = np.maximum(qb * qb - 4 * qa * f0, 0.0)
    # root nearest the centre sample, in the form that stays exact when the parabola is nearly a line
    denom = qb + np.copysign(np.sqrt(disc), qb)
    x = -2 * f0 / np.where(denom == 0, np.inf, denom)
    x = np.clip(x, -1.0, 1.0)
    slope = np.abs(2 * qa * x + qb)
    sigma = noise_rms * np.sqrt(6.0) / np.maximum(slope, 1e-300)
    return centre + x, sigma
