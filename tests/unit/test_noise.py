"""The noise of a capture's quiet stretches, as the checks and as an edge's fit see it."""

from __future__ import annotations

import numpy as np
from pintime.locate.shape.crlb import FIT_DEGREE, quiet_noise_rms


def test_white_noise_is_measured_without_bias_at_any_degree():
    """White noise of σ: both detrends give σ within 2 % (their fitted parameters off the degrees of
    freedom), and the chunks within the guard of an edge are left out."""
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 1e-4, 200_000)
    x[100_000:] += 0.3  # an edge: its chunk would hold the step
    for degree in (1, FIT_DEGREE):
        sigma, chunks = quiet_noise_rms(x, np.array([100_000]), 100, degree)
        assert abs(sigma / 1e-4 - 1) < 0.02 and 200_000 // 64 - 6 <= chunks < 200_000 // 64


def test_hum_leaves_the_noise_an_edge_fit_sees():
    """60 Hz hum 400× the noise (−50 dBFS through a laptop input's 100 + 300 Hz coupling, undone: ×13) at
    48 kHz: about a straight line a 64-sample chunk keeps the hum's curvature (σ several times too large);
    about a cubic, as the fit's offset and slope over its 11-sample window take it, the noise alone is left
    (within 5 %)."""
    rng = np.random.default_rng(2)
    n = np.arange(480_000)
    x = 4e-2 * np.sin(2 * np.pi * 60.0 * n / 48_000) + rng.normal(0.0, 1e-4, len(n))
    line, _ = quiet_noise_rms(x, np.zeros(0, np.int64), 0, 1)
    fit, _ = quiet_noise_rms(x, np.zeros(0, np.int64), 0, FIT_DEGREE)
    assert line > 2e-4
    assert abs(fit / 1e-4 - 1) < 0.05
