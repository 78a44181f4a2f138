"""The template locator's table lookups against slow, obviously correct evaluations."""

from __future__ import annotations

import numpy as np
from pintime.locate.locators.fit import (
    FIT_HALF_SAMPLES,
    PHASE_RANGE,
    PHASES_PER_SAMPLE,
    RINGING_PER_SAMPLE,
    STEPS,
    TemplateTable,
    _neighbour_ringing,
    fit_isolated,
)
from pintime.locate.shape import train
from pintime.locate.shape.template import Template
from pintime.locate.shape.train import gain_change
from pintime.locate.shape.traincheck import GAIN_TOLERANCE
from scipy.special import sici


def ringing_template() -> Template:
    """A band-limited step (sine integral): it rings for tens of samples on both sides."""
    half, knot = 48.0, 0.25
    u = -half + (np.arange(int(2 * half / knot) + 3) - 1.0) * knot
    coef = 0.5 + sici(np.pi * 0.9 * u)[0] / np.pi
    coef[:3] = 0.0
    return Template(half, knot, coef).normalized()


def slow_neighbour_ringing(table: TemplateTable, start, length, first, last, centre, phase, amp):
    """Every edge outside each window, by np.interp over the whole fine table (0 beyond it)."""
    columns = table.ringing.shape[1]
    u = -columns // 2 + np.arange(table.ringing.size) / RINGING_PER_SAMPLE
    fine = table.ringing.T.ravel()  # [column, row]: u ascending
    out = np.zeros((len(start), length))
    for w in range(len(start)):
        for j in range(len(centre)):
            if not first[w] <= j <= last[w]:
                at = start[w] + np.arange(length) - centre[j] - phase[j]
                out[w] += amp[j] * np.interp(at, u, fine, left=0.0, right=0.0)
    return out


def test_neighbour_ringing_sums_every_other_edge():
    """Single windows and a joint window of two edges, neighbours near and far (some out of reach), phases
    up to ±1.9 samples and one runaway fit (phase 40: its ringing leaves the table and counts 0)."""
    table = TemplateTable.build(ringing_template())
    assert np.abs(table.ringing).max() > 1e-3  # it does ring
    rng = np.random.default_rng(7)
    centre = np.cumsum(rng.integers(12, 70, 40)) + 100
    phase = rng.uniform(-1.9, 1.9, len(centre))
    phase[17] = 40.0
    amp = rng.choice([-0.5, 0.5], len(centre)) * rng.uniform(0.8, 1.2, len(centre))
    single = np.arange(len(centre))
    fast = _neighbour_ringing(table, centre - 8, 17, single, single, centre, phase, amp)
    slow = slow_neighbour_ringing(table, centre - 8, 17, single, single, centre, phase, amp)
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-7)  # float32 table: 1e-7 of a step
    pair = np.array([20])  # edges 20 and 21 share one window
    length = int(centre[21] - centre[20]) + 17
    fast = _neighbour_ringing(table, centre[pair] - 8, length, pair, pair + 1, centre, phase, amp)
    slow = slow_neighbour_ringing(table, centre[pair] - 8, length, pair, pair + 1, centre, phase, amp)
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-7)


def fixed_steps_fit(table: TemplateTable, y: np.ndarray, phase0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``STEPS`` Gauss–Newton steps for every edge, none skipped: phases and amplitudes."""
    lo, _ = PHASE_RANGE
    phase = phase0.copy()
    for _ in range(STEPS):
        q = np.clip(((phase - lo) * PHASES_PER_SAMPLE).astype(np.int64), 0, len(table.pinv) - 1)
        theta = np.einsum("eil,el->ei", table.pinv[q], y)
        phase = lo + (q + 0.5) / PHASES_PER_SAMPLE + theta[:, 1] / theta[:, 0]
    return phase, theta[:, 0]


def test_fit_isolated_stopping_early_changes_nothing():
    """An edge whose step left it in its grid cell stops: the result is that of every step taken (the
    compiled kernel against numpy: equal to 1e-3 of each edge's sigma, up to the order of the sums)."""
    template = ringing_template()
    table = TemplateTable.build(template)
    rng = np.random.default_rng(3)
    true = rng.uniform(-0.5, 0.5, 500)
    m = np.arange(-FIT_HALF_SAMPLES, FIT_HALF_SAMPLES + 1)
    y = 0.4 * template.evaluate(m[None, :] - true[:, None])[0] + 0.01 + rng.normal(0, 1e-5, (500, len(m)))
    seeds = true + rng.uniform(-0.2, 0.2, 500)
    fit = fit_isolated(table, y, seeds, 1e-5)
    phase, amp = fixed_steps_fit(table, y, seeds)
    assert np.all(np.abs(fit.phase - phase) <= 1e-3 * fit.sigma)
    np.testing.assert_allclose(fit.amp, amp, rtol=1e-9)
    assert fit.converged.all() and np.abs(fit.phase - true).max() < 1e-3


def test_gain_change_sees_a_swinging_gain_not_a_drift_or_noise():
    """The step height along a 1000-edge train: a steady drift of 1 % with 0.2 % noise per window and a
    few glitched windows is no change (under a tenth of the tolerance); a gain swinging ±10 % at 1 Hz over
    the 2.8 s is (> 5 %)."""
    rng = np.random.default_rng(1)
    t_s = np.arange(1000) * 2777e-6
    falling = np.arange(1000) % 2 == 1
    noise = 1 + 0.002 * rng.standard_normal(1000)
    steady = np.where(falling, -0.5, 0.5) * (1 + 0.01 * t_s / t_s[-1]) * noise
    steady[[10, 500, 900]] *= 1.5
    assert gain_change(steady, falling) < GAIN_TOLERANCE / 10
    swinging = steady * (1 + 0.1 * np.sin(2 * np.pi * t_s))
    assert gain_change(swinging, falling) > GAIN_TOLERANCE


def test_a_trains_outside_neighbours_are_the_nearer_of_edges_and_gaps():
    """The edges just before and after a train, or a recording gap's end where nearer (train.outside); the
    train's edges whose learning windows they leave clear (train.clear): the first one's ±96 window and
    its baseline stretch reach 216 samples back, the last one's 194 on."""
    pos = np.array([0, 300, 800, 1300, 1800, 2000])
    idx = np.arange(1, 5)
    assert train.outside(pos, idx) == (0, 2000)
    assert train.outside(pos, idx, np.array([100.0, 1900.0, 5000.0])) == (100.0, 1900.0)
    assert train.clear(pos[idx], (0, 2000), train.LONG_HALF_SAMPLES) == slice(0, 4)
    assert train.clear(pos[idx], (100, 1900), train.LONG_HALF_SAMPLES) == slice(1, 3)
    assert train.clear(pos[idx], (100, 1900), train.TEMPLATE_HALF_SAMPLES) == slice(0, 4)

