"""Threshold method: where the signal crosses the middle of its two levels, by linear interpolation.

What logic-analyzer software does. Its error depends on where the edge falls between samples (the
sampled curve is not a straight line), so it is biased by up to a good fraction of a sample.
"""

from __future__ import annotations

import numpy as np

from pintime.compiled import kernel

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
    bias of the method is not in it (validation and the calibration train measure that). A window whose
    samples do not cross the middle of its levels near the centre has no position (NaN, sigma inf).
    """
    position, sigma = np.empty(len(y)), np.empty(len(y))
    _threshold_kernel(np.ascontiguousarray(y, dtype=np.float64), noise_rms, position, sigma)
    return position, sigma


@kernel(error_model="numpy")
def _threshold_kernel(y, noise_rms, position, sigma):  # pragma: no cover (compiled)
    """:func:`locate_threshold` window by window, into ``position`` and ``sigma``."""
    c = y.shape[1] // 2
    n_level = LEVEL_FAR - LEVEL_NEAR + 1
    for e in range(y.shape[0]):
        before = np.sum(y[e, c - LEVEL_FAR:c - LEVEL_NEAR + 1]) / n_level
        after = np.sum(y[e, c + LEVEL_NEAR:c + LEVEL_FAR + 1]) / n_level
        mid = 0.5 * (before + after)
        up = 1.0 if after > before else -1.0
        # the first crossing of the middle among samples c − 3 … c + 3: sample k not yet past it, k + 1 past
        # (none: no position, NaN, and the edge is left out and counted)
        k = -1
        for j in range(c - 3, c + 3):
            if up * (y[e, j + 1] - mid) >= 0 and not up * (y[e, j] - mid) >= 0:
                k = j
                break
        if k < 0:
            position[e] = np.nan
            sigma[e] = np.inf
            continue
        y0 = y[e, k] - mid
        slope = (y[e, k + 1] - mid) - y0
        frac = -y0 / slope
        sigma[e] = noise_rms * np.sqrt((1 - frac) ** 2 + frac ** 2 + 0.5 / LEVEL_FAR) / abs(slope)
        position[e] = k + frac
