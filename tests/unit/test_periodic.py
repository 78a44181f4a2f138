"""A periodic signal too dense for one edge's shape: its period learned by folding, and its edges located
against it (pintime.locate.shape.periodic), on signals whose edges are known exactly."""

from __future__ import annotations

import numpy as np
import pytest
from pintime.errors import PintimeError
from pintime.locate.detect import detect
from pintime.locate.shape.periodic import learn_channel, learn_periodic

NOISE_RMS = 1e-4
STEP = 0.5
RIPPLE_RATE = 32  # a modulator at 32 fs


def _step_table() -> tuple[np.ndarray, np.ndarray]:
    """:func:`response` on a grid of 1/64 sample: a symmetric impulse response (Gaussian main lobe and a
    ringing at 0.45 fs that decays over ~10 samples, reaching the neighbours 22 samples away), integrated."""
    grid = np.arange(-80.0, 80.0, 1 / 64)
    ringing = 0.3 * np.exp(-np.abs(grid) / 5) * np.cos(2 * np.pi * 0.45 * grid)
    impulse = np.exp(-0.5 * (grid / 0.7) ** 2) + ringing
    step = np.cumsum(impulse) - impulse / 2  # the integral up to each grid point (trapezoids)
    return grid, step / step[-1]


RESPONSE_GRID, RESPONSE_TABLE = _step_table()  # computed once: every rendered edge interpolates it


def response(u: np.ndarray) -> np.ndarray:
    """A card's step response ``u`` samples after the edge (:func:`_step_table`); its slope's centroid is
    the edge."""
    return np.interp(u, RESPONSE_GRID, RESPONSE_TABLE)


def render(period_samples: float, duty: float, periods: int, seed: int = 1, ripple_samples: float = 0.0,
           noise_rms: float = NOISE_RMS, drift: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Samples of a square wave (``STEP`` high, duty ``duty``) through :func:`response` with white noise,
    its exact edge times (samples) and signs. ``ripple_samples``: each edge's response moved by that much
    times cos(2π·RIPPLE_RATE·t), as a delta-sigma modulator's grid moves it. ``drift``: the period changes
    by this fraction, evenly, from the first period to the last."""
    k = np.arange(periods)
    rises = 100.3 + period_samples * (k + drift * (k * k / (2 * periods) - k / 2))
    own = period_samples * (1 + drift * ((k + 0.5) / periods - 0.5))  # each period's length
    times = np.sort(np.concatenate([rises, rises + duty * own]))
    sign = np.where(np.arange(len(times)) % 2, -1.0, 1.0)
    shifted = times + ripple_samples * np.cos(2 * np.pi * RIPPLE_RATE * times)
    n = np.arange(int(times[-1]) + 100)
    x = np.zeros(len(n))
    for t, s in zip(shifted, sign, strict=True):
        near = slice(max(int(t) - 80, 0), int(t) + 80)
        x[near] += s * STEP * response(n[near] - t)
        x[int(t) + 80:] += s * STEP  # beyond the response, the step's level
    x += np.random.default_rng(seed).normal(0.0, noise_rms, len(x))
    return x, times, sign


def located(x: np.ndarray, sign: np.ndarray, duty: float, period_samples: float):
    """Learn the period from the steepest samples and locate every edge against it."""
    pos, strength = detect.find_steps(x, 0.5 * STEP)
    assert np.array_equal(np.sign(strength), sign)
    periodic = learn_periodic(x, 0, pos.astype(np.float64), sign)
    assert periodic.period_samples == pytest.approx(period_samples, rel=1e-5)
    h = np.arange(-periodic.half_samples, periodic.half_samples + 1)
    inside = (pos + h[0] >= 0) & (pos + h[-1] < len(x))
    tau, sigma, gain = periodic.locate(x[pos[inside, None] + h], np.zeros(inside.sum()), sign[inside] < 0,
                                       periodic.residual_rms)
    return periodic, pos[inside] + tau, sigma, inside


def test_a_square_wave_at_half_duty_is_located_on_its_exact_times():
    """44.1 samples a period (1 kHz at 44.1 kHz, 30 ppm off): edges 22 samples apart, each in the others'
    ringing. At a 50 % duty the convention is exact (the falling edge is the rising one's mirror image), so
    the times themselves, not only their differences, agree with the truth within their σ."""
    period = 44.1 * (1 + 3e-5)
    x, times, sign = render(period, 0.5, 3000)
    periodic, found, sigma, inside = located(x, sign, 0.5, period)
    assert periodic.residual_rms == pytest.approx(NOISE_RMS, rel=0.1)  # the noise as the fits see it
    assert periodic.offset_sigma_samples < 1e-3 and periodic.carrier_per_sample == 0
    z = (found - times[inside]) / sigma
    assert np.sqrt(np.mean(z ** 2)) < 1.5 and np.max(np.abs(z)) < 6


def test_another_duty_keeps_each_polaritys_times_and_states_the_offsets_uncertainty():
    """A 30 % duty: the neighbours' ringing differs on the two sides of each edge, so the falling edges'
    offset from the rising ones is a convention; it is within a few of its stated uncertainty, and each
    polarity's times about their own line within their σ."""
    period = 44.1 * (1 + 3e-5)
    x, times, sign = render(period, 0.3, 3000)
    periodic, found, sigma, inside = located(x, sign, 0.3, period)
    error = found - times[inside]
    for pol in (1, -1):
        mine = sign[inside] == pol
        z = (error[mine] - np.mean(error[mine])) / sigma[mine]
        assert np.sqrt(np.mean(z ** 2)) < 1.5 and np.max(np.abs(z)) < 6
    rising = np.mean(error[sign[inside] > 0])
    falling = np.mean(error[sign[inside] < 0])
    assert abs(falling - rising) < 3 * periodic.offset_sigma_samples + 1e-4


def test_a_modulators_ripple_is_learned_from_the_line_and_taken_out():
    """Each edge's response moved by 4·10⁻⁴ sample × cos(2π·32·t), as a delta-sigma modulator's grid moves
    it (4× the edges' σ on RMS at this noise): no periodic W holds that, but the edges' departures from their
    line do. The rate is found and the ripple taken out: the times agree with the truth within their σ."""
    period = 44.1 * (1 + 3e-5)
    x, times, sign = render(period, 0.5, 3000, ripple_samples=4e-4, noise_rms=1e-5)
    periodic, found, sigma, inside = located(x, sign, 0.5, period)
    assert periodic.carrier_per_sample == RIPPLE_RATE
    z = (found - times[inside]) / sigma
    assert np.sqrt(np.mean(z ** 2)) < 1.5 and np.max(np.abs(z)) < 6
    assert np.sqrt(np.mean(((found + periodic.ripple_at(found) - times[inside]) / sigma) ** 2)) > 3


def test_a_drifting_period_is_followed():
    """A period drifting by 10⁻⁴ over the run, 44.1 ± 0.0022 samples (1 kHz at 44.1 kHz from an RC
    oscillator): the run's line, a smooth spline, follows it. Every edge within its σ."""
    x, times, sign = render(44.1, 0.5, 3000, drift=1e-4)
    periodic, found, sigma, inside = located(x, sign, 0.5, 44.1)
    error = found - times[inside]
    z = (error - np.mean(error)) / sigma
    assert np.sqrt(np.mean(z ** 2)) < 1.5 and np.max(np.abs(z)) < 6


def test_a_period_of_whole_samples_is_refused():
    """48 samples a period exactly (the signal clocked from the card's own clock): every sample falls on one
    of 48 phases, too few to trace the waveform. Refused, saying why."""
    x, _, sign = render(48.0, 0.5, 400)
    pos, _ = detect.find_steps(x, 0.5 * STEP)
    with pytest.raises(PintimeError, match="nearly a whole number of them"):
        learn_periodic(x, 0, pos.astype(np.float64), sign)


def test_edges_four_samples_apart():
    """8.82 samples a period (5 kHz at 44.1 kHz): the seeds' centroid window shrinks to a quarter of the
    4.4-sample spacing (at 3 samples the neighbours' opposite steps summed it to nothing: a traceback).
    Every edge within its σ."""
    x, times, sign = render(8.82 * (1 + 3e-5), 0.5, 3000)
    periodic = learn_channel(x, 0)  # the capture's learning path, seeds and all
    assert periodic is not None and periodic.half_samples == 2
    pos, _ = detect.find_steps(x, 0.5 * STEP)
    h = np.arange(-2, 3)
    inside = (pos + h[0] >= 0) & (pos + h[-1] < len(x))
    tau, sigma, _ = periodic.locate(x[pos[inside, None] + h], np.zeros(inside.sum()), sign[inside] < 0,
                                    periodic.residual_rms)
    z = (pos[inside] + tau - times[inside]) / sigma
    assert np.sqrt(np.mean(z ** 2)) < 1.5 and np.max(np.abs(z)) < 6


def test_edges_too_close_to_locate_are_refused():
    """A square wave 4.41 samples a period (10 kHz at 44.1 kHz): its edges 2.2 samples apart leave a fit
    window of 3 samples, no timing once level and gain are fitted (it came out with σ = ∞). Refused."""
    x, times, sign = render(4.41, 0.5, 400)
    with pytest.raises(PintimeError, match="too close to locate.*5.5 kHz at 44.1 kHz"):
        learn_periodic(x, 0, np.round(times), sign)


def test_dense_periodic_edges_are_told_from_a_calibration_train_and_from_noise():
    """A square wave 22 samples apart is dense periodic; the same wave 150 samples apart (a calibration
    train's spacing) is learned as a train; a block of noise holds no edges, however its peaks fall."""
    x, _, sign = render(44.1 * (1 + 3e-5), 0.5, 300)
    pos, _ = detect.find_steps(x, 0.5 * STEP)
    assert detect.dense_periodic(pos.astype(np.float64), sign)
    assert not detect.dense_periodic(pos * 7.0, sign)
    cut = np.concatenate([pos[:200], pos[200:] - 1000])  # 1000 samples lost: two runs, still one signal
    assert detect.dense_periodic(cut.astype(np.float64), sign) and len(detect.periodic_runs(cut, sign)) == 2
    assert detect.edge_threshold(x, None) == pytest.approx(0.5 * np.max(np.abs(detect.step_strength(x))))
    assert detect.edge_threshold(np.random.default_rng(3).normal(0, 1e-3, 200_000), None) is None
