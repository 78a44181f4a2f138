"""Clock calibration (pintime.clock): the weighted fit of all reference edges, and the simavr run."""

from __future__ import annotations

import numpy as np
import pytest
from pintime.clock import calibrate, calibration_train_ppm, fit_edge_line, train_fall_minus_rise_us
from pintime.edges import REFERENCE_CHANNEL, Edges
from pintime.errors import PintimeError


def reference_edges(n: int, ppm: float, fall_offset_s: float, noise_s: float, seed: int = 0) -> Edges:
    """A 1 s square wave of MCU time seen by a capture clock running ``ppm`` fast (times in seconds)."""
    rng = np.random.default_rng(seed)
    k = np.arange(n)
    polarity = np.where(k % 2 == 0, 1, -1).astype(np.int8)
    time = 0.3 + k * 0.5 * (1 + ppm * 1e-6) + fall_offset_s * (polarity < 0) + rng.normal(0, noise_s, n)
    return Edges(time, np.full(n, REFERENCE_CHANNEL, np.int8), polarity, np.full(n, noise_s), 1.0, "test")


def test_recovers_rate_and_asymmetry_within_uncertainty():
    e = reference_edges(400, ppm=-37.5, fall_offset_s=2e-6, noise_s=50e-9)
    c = calibrate(e)
    # slope σ of a straight-line fit of n equally spaced points: σ·√(12/(n(n²−1))) per half second
    expected_sigma_ppm = 2 * 50e-9 * np.sqrt(12 / (400 * (400**2 - 1))) * 1e6
    assert c.rate_ppm_sigma == pytest.approx(expected_sigma_ppm, rel=0.3)
    assert abs(c.rate_ppm + 37.5) < 4 * c.rate_ppm_sigma
    assert abs(c.fit.fall_offset - 2e-6) < 4 * c.fit.fall_offset_sigma
    assert c.residual_rms_us == pytest.approx(0.05, rel=0.2)


def test_missing_reference_edges_are_numbered_correctly():
    e = reference_edges(100, ppm=120.0, fall_offset_s=0.0, noise_s=1e-9)
    keep = np.ones(100, bool)
    keep[[7, 8, 9, 50]] = False  # a dropout (odd count: rising/falling both lost)
    c = calibrate(Edges(e.time[keep], e.channel[keep], e.polarity[keep], e.sigma[keep], 1.0, "test"))
    assert c.rate_ppm == pytest.approx(120.0, abs=1e-3)


def test_exact_reference_gives_zero_uncertainty_only_with_exact_edges():
    e = reference_edges(10, ppm=0.0, fall_offset_s=0.0, noise_s=0.0)
    c = calibrate(e)
    assert c.rate_ppm == pytest.approx(0.0, abs=1e-6) and c.rate_ppm_sigma == pytest.approx(0.0, abs=1e-6)


def test_cycle_time_base_needs_f_cpu_for_ppm():
    k = np.arange(6)
    e = Edges(1000.0 + k * 8_000_000.0, np.ones(6, np.int8), np.where(k % 2 == 0, 1, -1).astype(np.int8),
              np.zeros(6), None, "cycles")
    c = calibrate(e)
    assert c.rate_ppm is None
    assert c.to_us(np.array([16_000_000.0]))[0] == pytest.approx(1e6, rel=1e-13)
    assert c.to_cycles(np.array([1234.0]), 16_000_000)[0] == pytest.approx(1234.0, rel=1e-13)
    assert c.with_unit(1 / 16e6).rate_ppm == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("n", [0, 2])
def test_too_few_reference_edges(n):
    e = reference_edges(n, 0.0, 0.0, 0.0)
    with pytest.raises(PintimeError, match="at least 3"):
        calibrate(e)


def test_reference_that_is_no_square_wave():
    e = reference_edges(10, 0.0, 0.0, 0.0)
    bad = e.time.copy()
    bad[5] += 0.2
    with pytest.raises(PintimeError, match="evenly spaced"):
        calibrate(Edges(bad, e.channel, e.polarity, e.sigma, 1.0, "t"))
    with pytest.raises(PintimeError, match="alternate"):
        calibrate(Edges(e.time, e.channel, np.ones(10, np.int8), e.sigma, 1.0, "t"))


def test_weights_follow_sigma():
    k = np.arange(20.0)
    t = 5 + 2 * k
    t[3] += 1.0  # a bad edge with a large sigma barely moves the weighted fit
    sigma = np.full(20, 1e-3)
    sigma[3] = 1e3
    fit = fit_edge_line(t, k, np.zeros(20, bool) | (k % 2 == 1), sigma)
    assert fit.step == pytest.approx(2.0, abs=1e-6)




def test_train_fall_minus_rise_cancels_wander():
    """A train's fall-minus-rise offset beside a wandering clock: the wander (5 ns of phase, smooth over the
    train's 2.8 s) cancels in each falling edge's difference to its rising neighbours; the estimate is
    within 4σ of the truth and σ is what 1000 edges of 0.1 ns noise give (4/3 · 1.5 · 0.1² ns² / 499)."""
    rng = np.random.default_rng(7)
    k = np.arange(1000)
    polarity = np.where(k % 2 == 0, 1, -1)
    wander_us = 5e-3 * np.sin(2 * np.pi * k / 700)
    noise_us = rng.normal(0, 1e-4, len(k))
    time_us = 2777.0 * k + 0.0025 * (polarity < 0) + wander_us + noise_us
    offset, sigma = train_fall_minus_rise_us(time_us, polarity)
    expected_sigma = 1e-4 * np.sqrt(4 / 3 * 1.5 / 499)
    assert sigma == pytest.approx(expected_sigma, rel=0.3)
    assert abs(offset - 0.0025) < 4 * sigma


def test_train_check_shows_the_clocks_wander_between_its_halves():
    """A train whose clock ratio steps by 0.01 ppm at its middle: its mean period error is half the step
    beyond the first half's, and the halves' difference is the step, which the period's σ (from the
    scatter about one line) does not show: a train and a reference over other seconds may differ by it."""
    n, period_us = 1000, 2777.0
    k = np.arange(n)
    ratio = np.where(k < n // 2, 1.0, 1.0 + 0.01e-6)
    time_us = np.concatenate([[0.0], np.cumsum(np.full(n - 1, period_us) * ratio[1:])])
    polarity = np.where(k % 2 == 0, 1, -1).astype(np.int8)
    ppm, sigma, halves_ppm = calibration_train_ppm(time_us, polarity, 2777, 1_000_000)
    assert halves_ppm == pytest.approx(0.01, rel=1e-3)
    assert ppm == pytest.approx(0.005, rel=0.01) and sigma < halves_ppm / 100
