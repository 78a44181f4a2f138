"""A blind shape's error that follows the sub-sample phase, measured on a periodic run's line
(pintime.locate.shape.phasebias)."""

from __future__ import annotations

import numpy as np
import pytest
from pintime.locate.shape.phasebias import phase_sigma_scale


def _run(error_amplitude_samples: float, noise_samples: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A PWM's edges (period 960.0123 samples, high 288.37), each polarity moved by an error periodic in
    its sub-sample phase (opposite for the two, as a soft clipper's), plus white noise: positions, signs,
    σ."""
    rng = np.random.default_rng(3)
    rises = 40.0 + 960.0123 * np.arange(400)
    true = np.sort(np.concatenate([rises, rises + 288.37]))
    sign = np.where(np.arange(len(true)) % 2 == 0, 1, -1)
    bias = sign * error_amplitude_samples * np.sin(2 * np.pi * np.mod(true, 1.0))
    located = true + bias + rng.normal(0.0, noise_samples, len(true))
    return located, sign, np.full(len(true), noise_samples)


def test_noise_alone_leaves_every_sigma_as_its_fit():
    assert phase_sigma_scale(*_run(0.0, 0.01)) == 1.0


@pytest.mark.parametrize("amplitude", [0.02, 0.2])
def test_an_error_that_follows_the_phase_widens_every_sigma_to_hold_it(amplitude):
    located, sign, sigma = _run(amplitude, 0.01)
    widened = sigma * phase_sigma_scale(located, sign, sigma)
    held = np.hypot(amplitude, 0.01)  # the largest error, and the noise about it
    assert held * 0.9 <= widened[0] <= held * 1.5
