"""The count method's slow-clock model (pintime.estimate.slowclock) against simulated uniform phases:
Beilner's count distribution, the shared-phase covariance of a repetition's edges, and the phase test."""

from __future__ import annotations

import numpy as np
import pytest
from pintime.estimate.slowclock import (
    beilner_std_us,
    count_variance_ticks2,
    design,
    phase_test,
    sawtooth_covariance,
    shared_phase_std_us,
)

RNG_SEED = 20261123


def _counts(edges_ticks: np.ndarray, phases: np.ndarray) -> np.ndarray:
    """Whole-tick positions (ceil) of edges at ``edges_ticks`` shifted by each repetition's phase."""
    return np.ceil(phases[:, None] + edges_ticks[None, :])


def test_count_is_floor_or_ceil_with_beilners_probabilities():
    rng = np.random.default_rng(RNG_SEED)
    d = 3.3
    c = _counts(np.array([0.0, d]), rng.uniform(size=400_000))
    width = c[:, 1] - c[:, 0]
    assert set(np.unique(width)) == {3.0, 4.0}
    assert np.mean(width == 4.0) == pytest.approx(0.3, abs=0.003)  # P[⌈d⌉] = frac(d)
    assert np.mean(width) == pytest.approx(d, abs=0.003)  # unbiased
    assert np.var(width) == pytest.approx(count_variance_ticks2(np.array(d)), rel=0.01)  # f (1 − f) = 0.21
    assert count_variance_ticks2(np.array([2.0, 2.5, 7.25])) == pytest.approx([0.0, 0.25, 0.1875])


def test_two_edges_errors_covary_as_the_sawtooth_model_says():
    rng = np.random.default_rng(RNG_SEED + 1)
    phi = rng.uniform(size=400_000)
    for t in (0.0, 0.2, 0.5, 1.7, 3.95):
        e0 = np.ceil(phi) - phi
        e1 = np.ceil(phi + t) - (phi + t)
        assert np.cov(e0, e1)[0, 1] == pytest.approx(sawtooth_covariance(np.array(t)), abs=0.002)


@pytest.mark.parametrize("technique,n", [("direct", 1), ("executing", 10), ("differential", 5),
                                         ("line_fit", 10)])
def test_model_std_is_the_spread_of_simulated_repetitions(technique, n):
    """Pulses at fixed offsets within a repetition (so their phases are related), a uniform phase per
    repetition: the estimate's std over repetitions is the shared-phase model's; Beilner's independent
    widths give it for one pulse."""
    rng = np.random.default_rng(RNG_SEED + n)
    x = design(technique, n)
    true_params = np.array([19.37, 0.21])[:x.shape[1]]  # ticks: a 100 µs routine at 192 kHz, ε
    widths = x @ true_params
    gaps = rng.uniform(3.0, 40.0, size=len(widths))
    starts = np.cumsum(gaps + np.concatenate([[0.0], widths[:-1]]))
    edges = np.column_stack([starts, starts + widths]).ravel()
    c = _counts(edges, rng.uniform(size=20_000))
    c -= c[:, :1]
    estimates = (np.linalg.pinv(x) @ (c[:, 1::2] - c[:, 0::2]).T)[0]
    shared, independent = shared_phase_std_us(x, c, 1.0), beilner_std_us(x, c, 1.0)
    assert np.mean(estimates) == pytest.approx(true_params[0], abs=4 * shared[0] / np.sqrt(len(c)) + 1e-12)
    assert np.std(estimates, ddof=1) == pytest.approx(shared[0], rel=0.05)
    if technique in ("direct", "executing"):  # one pulse: the two models are Beilner's (10a)
        assert independent[0] == pytest.approx(shared[0], rel=0.02)


def test_phase_test_accepts_uniform_and_refuses_locked_phases():
    rng = np.random.default_rng(RNG_SEED + 2)
    assert phase_test(rng.uniform(0, 1000, size=400)).uniform
    weyl = 17.3 + 96002.208 * np.arange(350)  # +23 ppm at 192 kHz: a reference edge every 0.5 MCU s
    assert phase_test(weyl).uniform
    locked = 17.3 + 96000.0 * np.arange(350)  # a card clocked from the MCU's crystal: one phase
    test = phase_test(locked)
    assert not test.uniform and test.statistic >= 0.5 and test.p_value < 1e-12  # D = max(u, 1 − u)
    assert not phase_test(17.3 + 96000.0 * np.arange(350) + rng.uniform(0, 0.1, 350)).uniform
