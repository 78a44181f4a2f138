"""The edge shape learned from edges that are never alone (pintime.locate.shape.dense): a UART-like burst
signal whose edges lie a few samples apart, through a response that rings into its neighbours, edges known
exactly."""

from __future__ import annotations

import numpy as np
import pytest
from pintime.errors import PintimeError
from pintime.locate.detect import detect
from pintime.locate.shape import train
from pintime.locate.shape.blind import EDGES_PER_KNOT, KNOT_CHOICES_SAMPLES
from pintime.locate.shape.dense import MAX_SPAN_EDGES, learn_dense
from test_periodic import NOISE_RMS, STEP, response

BIT_SAMPLES = 4.7  # 9600 baud at 44.1 kHz is 4.59 samples a bit


def render_bytes(n_bytes: int, seed: int = 2, bit_samples: float = BIT_SAMPLES, whole: bool = False,
                 pause: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bytes (idle high, a start bit, 8 random bits, a stop bit) 200–1000 samples apart (``whole``: a whole
    number of samples; ``pause`` False: none) through :func:`response`, with white noise: the samples, the
    exact edge times (samples) and their signs."""
    rng = np.random.default_rng(seed)
    times, signs, t, level = [], [], 300.3, 1
    for _ in range(n_bytes):
        t += (float(rng.integers(200, 1000)) if whole else rng.uniform(200.0, 1000.0)) if pause else 0.0
        for k, bit in enumerate([0, *rng.integers(0, 2, 8), 1]):
            if bit != level:
                times.append(t + k * bit_samples)
                signs.append(1.0 if bit else -1.0)
                level = bit
        t += 10 * bit_samples
    times_a, signs_a = np.array(times), np.array(signs)
    n = np.arange(int(times_a[-1]) + 300)
    x = np.full(len(n), STEP)  # idle high
    for time, s in zip(times_a, signs_a, strict=True):
        near = slice(int(time) - 80, int(time) + 80)
        x[near] += s * STEP * response(n[near] - time)
        x[int(time) + 80:] += s * STEP
    return x + rng.normal(0.0, NOISE_RMS, len(x)), times_a, signs_a


def learned(x: np.ndarray, sign: np.ndarray):
    pos, strength = detect.find_steps(x, 0.5 * STEP)
    assert np.array_equal(np.sign(strength), sign)  # every edge detected, none twice
    y = x[pos[:, None] + train.WINDOW[None, :]]
    return learn_dense(pos, sign, y, pos.astype(np.float64), NOISE_RMS, KNOT_CHOICES_SAMPLES, EDGES_PER_KNOT)


def test_the_shape_of_edges_never_alone_is_learned_from_all_of_them_together():
    """No edge has a window to itself (a neighbour every 4.7 samples within a byte), yet the learned
    response matches the true one to a few times the noise over its whole support, at the time origin
    the template's convention puts at its half-way point (the response's own: it is symmetric)."""
    x, times, sign = render_bytes(400)
    template = learned(x, sign)
    u = np.linspace(-train.TEMPLATE_HALF_SAMPLES + 1, train.TEMPLATE_HALF_SAMPLES - 1, 2001)
    misfit = template.evaluate(u)[0] - response(u)
    assert np.max(np.abs(misfit)) < 10 * NOISE_RMS / STEP, np.max(np.abs(misfit))


def test_too_few_edges_with_every_neighbour_detected_is_said():
    x, _, sign = render_bytes(12)
    with pytest.raises(PintimeError, match="only .* edges to learn the edge shape from"):
        learned(x, sign)


def test_edges_all_at_one_sub_sample_phase_are_said_not_to_determine_the_shape():
    """Bits of a whole 5 samples and bytes a whole number of samples apart: every edge at one phase, which
    shows the response at that phase only."""
    x, _, sign = render_bytes(400, bit_samples=5.0, whole=True)
    with pytest.raises(PintimeError, match="do not determine it"):
        learned(x, sign)


def test_a_line_sending_without_pause_holds_edges_noise_does_not():
    """Bytes back to back: the ringing fills every sample, so the noise measure is the ringing's and the
    steps stand less than 30 of it high; they alternate in sign and have one height, so the block holds
    edges. White noise with mains hum holds none."""
    x, _, sign = render_bytes(1500, pause=False)
    block = x[:65536]
    assert np.max(np.abs(detect.step_strength(block))) < detect.NOISE_FLOOR * detect.strength_noise(block)
    threshold = detect.edge_threshold(block, None)
    assert threshold is not None
    pos, strength = detect.find_steps(block, threshold)
    assert np.array_equal(np.sign(strength), sign[:len(pos)])
    rng = np.random.default_rng(1)
    hum = 1e-3 * np.sin(2 * np.pi * 50 / 44100 * np.arange(65536))
    assert detect.edge_threshold(rng.normal(0.0, NOISE_RMS, 65536) + hum, None) is None


def test_only_the_first_edges_of_a_long_span_are_learned_from():
    """A learning block holds every edge of its seconds (40 000 of a UART's at 192 kHz), and each round
    locates every one it learns from: the shape comes from the first MAX_SPAN_EDGES only (the rest,
    NaN here, are never read), so its cost and memory stay bounded."""
    x, times, sign = render_bytes(800)
    assert len(times) > MAX_SPAN_EDGES
    pos, strength = detect.find_steps(x, 0.5 * STEP)
    y = x[pos[:, None] + train.WINDOW[None, :]]
    y[MAX_SPAN_EDGES:] = np.nan
    template = learn_dense(pos, sign, y, pos.astype(np.float64), NOISE_RMS, KNOT_CHOICES_SAMPLES,
                           EDGES_PER_KNOT)
    u = np.linspace(-train.TEMPLATE_HALF_SAMPLES + 1, train.TEMPLATE_HALF_SAMPLES - 1, 2001)
    assert np.max(np.abs(template.evaluate(u)[0] - response(u))) < 10 * NOISE_RMS / STEP
