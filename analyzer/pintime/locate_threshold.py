"""Threshold method: where the signal crosses the middle of its two levels, by linear interpolation.

What logic-analyzer software does. Its error depends on where the edge falls between samples (the
sampled curve is not a straight line), so it is biased by up to a good fraction of a sample.
"""

from __future__ import annotations

import numpy as np

LEVEL_NEAR, LEVEL_FAR = 4, 12  # the levels are means of the samples this far before/after the edge


def locate_threshold(y: np.ndarray, noise_rms: float) -> tuple[np.ndarray, np.ndarray]:
    """Edge positions and their noise-only 1-sigma in windows centred on the edges.

    Parameters
    ----------
    y : (edges, 2W+1) samples, the coarse edge position at the centre index W (W >= LEVEL_FAR)
    noise_rms : standard deviation of the capture's noise

    Returns
    -------
    position (samples from the window start) and its standard deviation from noise alone; the sub-sample
    bias of the method is not in it (validation and the calibration train measure that).
    """
    c = y.shape[1] // 2
    before = np.mean(y[:, c - LEVEL_FAR:c - LEVEL_NEAR + 1], axis=1)
    after = np.mean(y[:, c + LEVEL_NEAR:c + LEVEL_FAR + 1], axis=1)
    mid = 0.5 * (before + after)
    rising = (after > before)[:, None]
    # first sample at or beyond the middle, searched outward from the centre region
    seg = y[:, c - 3:c + 4] - mid[:, None]
    past = np.where(rising, seg >= 0, seg <= 0)
    k = np.argmax(past[:, 1:] & ~past[:, :-1], axis=1)  # crossing between seg[k] and seg[k+1]
    rows = np.arange(len(y))
    y0, y1 = seg[rows, k], seg[rows, k + 1]
    slope = y1 - y0
    frac = -y0 / slope
    sigma = noise_rms * np.sqrt((1 - frac) ** 2 + frac ** 2 + 0.5 / LEVEL_FAR) / np.abs(slope)
    return c - 3 + k + frac, sigma
