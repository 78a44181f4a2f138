"""Rounding on a recording quieter than one LSB: the expected rounding error, and each edge's first-order
shift against the locator run on the rounded samples."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pintime.locate.locators.fit import TemplateTable
from pintime.locate.shape import quantization
from pintime.locate.shape.quantization import QuantizationModel, analog_noise_lsb, series_for, shared
from test_locate_template import ringing_template
from test_template_error import located, pulses


def expected_rounding_error(x: float, noise: float) -> float:
    """E[round(x + n) − (x + n)] for n ~ N(0, noise²), summed code by code."""
    codes = np.arange(math.floor(x) - 10, math.floor(x) + 12)
    cdf = [0.5 * (1 + math.erf((c + 0.5 - x) / (noise * math.sqrt(2)))) for c in codes]
    prob = np.diff(np.concatenate([[0.0], cdf]))
    return float(np.sum(prob * codes) - x)


@pytest.mark.parametrize("noise", [0.0, 0.05, 0.15, 0.3])
def test_rounding_error_is_the_expectation_over_the_noise(noise):
    """The sawtooth without noise, and its series damped by the noise, against the expectation summed over
    the codes."""
    x = np.linspace(-1.3, 2.1, 97)
    out = np.empty(len(x))
    quantization._rounding_errors(x, series_for(noise), out)
    want = [np.floor(v + 0.5) - v if noise == 0 else expected_rounding_error(v, noise) for v in x]
    np.testing.assert_allclose(out, want, atol=2e-4)


def test_analog_noise_and_when_rounding_is_shared():
    """The noise beneath the rounding's own LSB/√12, and the rounding shared below about half an LSB."""
    assert analog_noise_lsb(1 / math.sqrt(12), 1.0) == pytest.approx(0.0, abs=1e-6)  # the floor
    assert analog_noise_lsb(2.0 * math.sqrt(1 + 1 / 12), 2.0) == pytest.approx(1.0)
    assert shared(0.0) and shared(0.3) and not shared(0.6)


@pytest.mark.parametrize("offset", [0.1, 0.45, 0.8])
def test_first_order_shifts_are_those_of_locating_the_rounded_samples(offset):
    """Isolated edges and pulses of 4.8, 9.7 and 20 samples (one joint window, neighbours' ringing taken
    out), steps of 300 LSB at levels ``offset`` above the codes, no noise: the shifts the model gives from
    the edge list against locating the rounded samples."""
    base = ringing_template()
    times, sign = pulses(np.random.default_rng(7))
    step_lsb = 300.0
    n = np.arange(int(times[-1]) + 200, dtype=np.float64)  # levels 0 and 1, the final straight line left out
    x = sum(s * base.evaluate(np.minimum(n - e, base.support_end))[0]
            for e, s in zip(times, sign, strict=True))
    x = np.where(np.abs(x - np.round(x)) < 1e-3, np.round(x), x)  # the settled levels exactly 0 and 1
    rounded = (np.floor(offset + step_lsb * x + 0.5) - offset) / step_lsb
    table = TemplateTable.build(base)
    moved = located(table, rounded, times) - located(table, x, times)
    level = np.cumsum(sign) - sign
    model = QuantizationModel.build(table, step_lsb, 0.0).shifts_samples(times, sign, level, offset)
    assert np.abs(moved).max() > 1e-4  # rounding does move edges ...
    # ... as predicted, but for what the locator's Gauss–Seidel sweeps add: its neighbours' ringing taken
    # out of an edge's window with their own amplitudes and times, which rounding moved too (≈ 5 % here)
    np.testing.assert_allclose(model, moved, atol=0.1 * np.abs(moved).max())
