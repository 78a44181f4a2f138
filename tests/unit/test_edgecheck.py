"""The validation's separation of the edge locator's error from the sound card's clock wander
(:func:`pintime.validate.edgecheck.locator_error`, :func:`pintime.validate.edgecheck.clock_adev`) on
synthetic errors
generated here with known parts: white per-edge noise σ, a bias that depends on the sub-sample phase, and
a clock whose phase is a random walk (white frequency noise of diffusion D: Allan deviation √(D/τ)).
Not the sound-card model: its parameters must never be what the estimator is checked against.
"""

from __future__ import annotations

import numpy as np
import pytest
from pintime.validate.edgecheck import clock_adev, locator_error
from pintime.validate.edgematch import time_map

FS_HZ = 192_000.0
SIGMA_S = 60e-12  # white per-edge error
CRLB_S = 45e-12  # what the synthetic edges claim as their bound (only scales the regression)
BIAS_S = 30e-12  # amplitude of the phase-dependent bias
ADEV_1S = 5e-9  # white FM: phase diffusion D = ADEV_1S² s (≈0.5 ns per 10 ms)


def synthetic(seed: int, duration_s: float, adev_1s: float) -> tuple[np.ndarray, ...]:
    """Edge times (s), errors (s), polarity, CRLB, channel, and the bias and wander parts separately."""
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.uniform(50e-6, 450e-6, int(duration_s / 250e-6)))
    pol = np.where(np.arange(len(t)) % 2 == 0, 1, -1).astype(np.int8)
    phase = np.mod(t * FS_HZ, 1.0)
    bias = BIAS_S * np.sin(2 * np.pi * phase) * np.where(pol > 0, 1.0, 0.5)
    white = rng.normal(0.0, SIGMA_S, len(t))
    wander = np.cumsum(rng.normal(0.0, 1.0, len(t)) * adev_1s * np.sqrt(np.diff(t, prepend=0.0)))
    err = bias + white + wander
    crlb = np.full(len(t), CRLB_S)
    return t, err, pol, crlb, np.zeros(len(t), np.int8), bias, wander


def expected_rms_s(bias: np.ndarray, pol: np.ndarray) -> float:
    centred = bias - np.where(pol > 0, bias[pol > 0].mean(), bias[pol < 0].mean())
    return float(np.sqrt(SIGMA_S ** 2 + np.mean(centred ** 2)))


@pytest.mark.parametrize("adev_1s", [0.0, ADEV_1S])
def test_locator_error_recovers_sigma_and_bias(adev_1s):
    t, err, pol, crlb, ch, bias, wander = synthetic(1, 20.0, adev_1s)
    err = err - time_map(t, t + err, t)[0] + t  # about the validation's 20 ms time map, as in use
    own = locator_error(t, err, pol, crlb, ch, FS_HZ)
    truth = expected_rms_s(bias, pol)
    if adev_1s:  # the wander dominates the plain RMS: the test separates something
        assert np.sqrt(np.mean(err ** 2)) > 3 * truth
    assert abs(own.rms_s - truth) < max(3 * own.rms_se_s, 0.03 * truth), (own, truth)
    assert 0 < own.rms_se_s < 0.05 * truth
    assert own.phase_bias_rms_s == pytest.approx(BIAS_S * np.sqrt((1 + 0.25) / 4), rel=0.05)


def test_locator_error_without_pairs_is_nan():
    t = np.arange(5) * 0.01  # 10 ms apart: no pairs within 1 ms
    own = locator_error(t, np.zeros(5), np.ones(5, np.int8), np.full(5, CRLB_S), np.zeros(5, np.int8), FS_HZ)
    assert np.isnan(own.rms_s) and np.isnan(own.rms_se_s)


def test_clock_adev_of_white_frequency_noise():
    t, err, pol, crlb, ch, bias, wander = synthetic(2, 200.0, ADEV_1S)
    assert clock_adev(t, err, ch) == pytest.approx(ADEV_1S, rel=0.15)
    assert clock_adev(t, err, ch, 4.0) == pytest.approx(ADEV_1S / 2, rel=0.25)


def test_clock_adev_steady_clock_and_short_capture():
    t, err, pol, crlb, ch, bias, wander = synthetic(3, 20.0, 0.0)
    assert clock_adev(t, err, ch) < 1e-9  # only the edges' own error, ≈ √3·σ / 1 s
    assert clock_adev(t[t < 1.5], err[t < 1.5], ch[t < 1.5]) is None


def test_locator_error_with_an_unbounded_edge_is_nan_not_zero():
    """An edge with no finite bound (a locator that gave it no amplitude) makes the structure function's
    scale infinite: the RMS and its standard error are both NaN, never an RMS of 0 without its error."""
    t, err, pol, crlb, ch, _, _ = synthetic(2, 2.0, 0.0)
    crlb[len(crlb) // 2] = np.inf
    own = locator_error(t, err, pol, crlb, ch, FS_HZ)
    assert np.isnan(own.rms_s) and np.isnan(own.rms_se_s)
