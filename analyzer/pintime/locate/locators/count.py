"""Count method: each edge on its whole sample only, the slow-clock measurement of Beilner (1988).

The edge is placed on the first sample past the middle of its two levels; nothing between samples is
interpolated and no edge model is learned. A pulse's width is then a whole number of samples (ticks of
the card's clock). For a duration of d ticks whose start falls at a uniformly random phase of the sample
clock, the count is ⌊d⌋ with probability 1 − frac(d) and ⌈d⌉ with probability frac(d): its mean is d
(unbiased) and its variance frac(d)·(1 − frac(d)) ticks² (:mod:`pintime.estimate.slowclock`). One edge's
own quantization error is uniform over a sample, so its 1-sigma is 1/√12 sample.
"""

from __future__ import annotations

import numpy as np

from pintime.locate.locators.threshold import locate_threshold

EDGE_SIGMA_SAMPLES = 1.0 / np.sqrt(12.0)  # a uniform error over one sample


def locate_count(y: np.ndarray, noise_rms: float) -> tuple[np.ndarray, np.ndarray]:
    """Whole-sample edge positions (samples from the window start) and their 1-sigma (1/√12 sample).

    ``y`` as for :func:`pintime.locate.locators.threshold.locate_threshold`: the first sample at or past the
    middle of the two levels is that method's crossing rounded up (its crossing lies strictly after the last
    sample not yet past the middle, and at or before the first one past it).
    """
    crossing, _ = locate_threshold(y, noise_rms)
    return np.ceil(crossing), np.full(len(y), EDGE_SIGMA_SAMPLES)
