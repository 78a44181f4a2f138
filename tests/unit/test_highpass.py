"""The AC coupling learned from quiet stretches and undone (pintime.locate.coupling.highpass), on signals
built here: steps through known first-order high-passes, not the sound-card model."""

from __future__ import annotations

import numpy as np
import pytest
from pintime.locate.coupling.highpass import GUARD_SAMPLES, LEAK_HZ, Highpass, HighpassLearner
from pintime.locate.coupling.highpass_zero import ZeroLearner
from scipy import signal

FS = 48000


def coupled(corners_hz: tuple[float, ...], noise: float, seed: int = 0,
            spacing: tuple[int, int] = (48, 300), count: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """Pin steps of 0.1 FS (pulses and gaps of ``spacing`` samples, by default 1-6 ms) through first-order
    high-passes at ``corners_hz``, plus white noise and a DC offset; the samples and the edges' indices."""
    rng = np.random.default_rng(seed)
    edges = np.cumsum(rng.integers(*spacing, count))
    level = np.zeros(edges[-1] + 500)
    for k, e in enumerate(edges):
        level[e:] = 0.1 * ((k + 1) % 2)
    y = level
    for f_hz in corners_hz:
        b, a = signal.butter(1, f_hz, "highpass", fs=FS)
        y = signal.lfilter(b, a, y)
    return y + 2e-3 + noise * rng.standard_normal(len(y)), edges


def learn(y: np.ndarray, edges: np.ndarray) -> Highpass:
    learner = HighpassLearner(FS)
    learner.add(y, edges, edges, 0, len(y))
    return learner.result()


@pytest.mark.parametrize("corners_hz", [(300.0, 100.0), (20.0,), (300.0,)])
def test_the_corners_are_learned_from_the_quiet_stretches(corners_hz):
    h = learn(*coupled(corners_hz, 3e-5))
    assert len(h.coef) == len(corners_hz)  # one section is not taken for two
    np.testing.assert_allclose(sorted(h.corners_hz()), sorted(corners_hz), rtol=0.03)


def test_a_slow_signal_with_mains_hum_learns_the_corners():
    """Edges 0.2-0.8 s apart (a PPS-like signal) with 50 Hz hum at 1 % of the step: the long quiet
    stretches hold mostly hum, a sinusoid that obeys a recurrence of its own. Only the samples within
    DECAY_S of an edge are used, where the decay shows (95 and 305 Hz; from all of them: one corner of
    16 Hz)."""
    y, edges = coupled((300.0, 100.0), 3e-5, spacing=(9600, 38400), count=60)
    y = y + 1e-3 * np.sin(2 * np.pi * 50.0 * np.arange(len(y)) / FS + 0.3)
    h = learn(y, edges)
    np.testing.assert_allclose(sorted(h.corners_hz()), [100.0, 300.0], rtol=0.1)


@pytest.mark.parametrize("own", [True, False])
def test_a_channel_with_few_edges_learns_from_its_own_decays(own):
    """A 1 Hz reference (20 Hz coupling) beside a measurement pin whose edges come every 8 ms, with 60 Hz
    hum at 3 % of the step (−56 dBFS against README's 0.05 FS): the reference's samples within DECAY_S of
    the pin's edges are long after its own decay, hum, which obeys a recurrence of its own (learned with
    them: 17.7 Hz). Taken after its own edges only, they give its corner."""
    y, own_edges = coupled((20.0,), 3e-5, spacing=(48000, 48001), count=3)
    y = y + 3e-3 * np.sin(2 * np.pi * 60.0 * np.arange(len(y)) / FS + 0.3)
    pin = np.arange(1000, len(y), 400)
    every = np.sort(np.concatenate([own_edges, pin[np.abs(pin[:, None] - own_edges).min(axis=1) > 1000]]))
    learner = HighpassLearner(FS)
    learner.add(y, every, own_edges if own else every, 0, len(y))
    corners = learner.result().corners_hz()
    if own:
        np.testing.assert_allclose(corners, [20.0], rtol=0.03)
    else:  # what the test guards against
        assert len(corners) != 1 or abs(corners[0] / 20.0 - 1) > 0.05, corners


def test_a_channel_with_too_few_decays_of_its_own_learns_after_every_edge():
    """Fewer than MIN_QUIET samples after the channel's own edges (here none are its own): the samples
    after any channel's edge are taken, as they were before."""
    y, edges = coupled((20.0,), 3e-5)
    learner = HighpassLearner(FS)
    learner.add(y, edges, edges[:0], 0, len(y))
    np.testing.assert_allclose(learner.result().corners_hz(), [20.0], rtol=0.03)


def test_restored_steps_are_flat_between_edges():
    """Learned from a noisy recording, the restoration turns the noise-free one back into levels: between
    edges (1-6 ms) a straight line leaves under 3e-3 of the step (corners learned to a few %: a slow
    exponential of that size, whose bend over an 11-sample fit window is ~1e-6 of the step), where the
    recording drooped by a fifth to all of it; every step comes back the same size."""
    y, edges = coupled((300.0, 100.0), 3e-5)
    clean, _ = coupled((300.0, 100.0), 0.0)
    x = learn(y, edges).restore(clean)
    for a, b in zip(edges[10:60], edges[11:61], strict=True):
        seg = x[a + 2:b]
        m = np.arange(len(seg))
        assert np.max(np.abs(seg - np.polyval(np.polyfit(m, seg, 1), m))) < 3e-3 * 0.1
        assert np.ptp(clean[a + 2:b]) > 0.02
    steps = np.abs(x[edges[10:60] + 2] - x[edges[10:60] - 1])
    assert np.ptp(steps) < 0.01 * np.mean(steps)


def test_too_few_quiet_samples_learn_nothing():
    y, edges = coupled((300.0,), 3e-5)
    assert learn(y[:300], edges[edges < 300]).coef == ()
    assert Highpass((), 0.0, FS).restore(y[:10]).tolist() == y[:10].tolist()


@pytest.mark.parametrize("corners_hz", [(2.0,), (300.0, 100.0)])
def test_a_minimum_phase_filters_ringing_is_no_corner(corners_hz):
    """A quiet card whose decimation filter is minimum phase rings near fs/2 for tens of samples after
    each edge, beyond the quiet samples' guard (here 7e-3 of the step 40 samples after it). The recurrence
    is fitted on the quiet samples smoothed, which keeps the coupling's decay and drops that ringing
    (unsmoothed: 2 Hz was learned with a second corner of 5500 Hz, 100 and 300 Hz as one of 13 Hz)."""
    y, edges = coupled(corners_hz, 0.0)
    ring = signal.minimum_phase(signal.firwin(141, 0.9, window=("kaiser", 12.0)), half=False)
    ring /= ring.sum()
    assert np.max(np.abs(np.cumsum(ring)[40:] - 1)) > 1e-3
    y = signal.lfilter(ring, 1.0, y) + 1e-6 * np.random.default_rng(1).standard_normal(len(y))
    h = learn(y, edges)
    assert len(h.coef) == len(corners_hz)
    np.testing.assert_allclose(sorted(h.corners_hz()), sorted(corners_hz), rtol=0.01)


@pytest.mark.parametrize("corners_hz", [(300.0, 100.0), (20.0,), (200.0,), (120.0,)])
def test_a_channel_with_few_decays_takes_the_other_channels_poles_only_where_they_fit(corners_hz):
    """A 1 Hz reference beside the measurement pin on a card coupled at 100 and 300 Hz: its one decay in the
    first seconds, at a step 1000× the noise, determines one corner only (34 Hz: its edges 1.4 µs early at
    README's level). The measurement channel's poles, learned from hundreds of decays, fit its samples
    better, and are taken; a channel coupled otherwise keeps its own single corner."""
    pin = learn(*coupled((300.0, 100.0), 3e-5))
    y, edges = coupled(corners_hz, 1e-4, seed=2, spacing=(48000, 48001), count=2)
    learner = HighpassLearner(FS)
    learner.add(y, edges, edges, 0, len(y))
    own = learner.result()
    assert len(own.coef) == 1  # what the test is about: its own decay gives one corner
    shared = learner.with_poles(pin)
    if len(corners_hz) == 2:
        assert shared is not None
        np.testing.assert_allclose(sorted(shared.corners_hz()), sorted(pin.corners_hz()))
        step = shared.restore(y)[edges[0] + 20] - shared.restore(y)[edges[0] - 20]
        assert step == pytest.approx(0.1, rel=0.05)  # the pin's step, restored (its own corner: 0.034)
    else:
        assert shared is None
        np.testing.assert_allclose(own.corners_hz(), corners_hz, rtol=0.03)


def test_a_block_without_edges_adds_its_quiet_samples_to_the_zeros_learning():
    """A learning span's block with no edge on an order-2 channel (a silence, a ladder's quiet pin) had
    ended in a traceback (the edges' neighbours were sized for one edge)."""
    learner = ZeroLearner(48000, GUARD_SAMPLES, LEAK_HZ)
    noise = np.random.default_rng(1).normal(0.0, 1e-4, 4096)
    learner.add(noise, np.zeros(0, np.int64), np.zeros(0), 0, len(noise), True)
    assert learner.count > 0 and not learner.impulses
    assert learner.result() == 1.0  # nothing learned: both zeros at DC
