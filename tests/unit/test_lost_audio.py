"""Lost or inserted audio found from the reference channel's phase (pintime.lost_audio)."""

from __future__ import annotations

import numpy as np
import pytest
from pintime.edges import REFERENCE_CHANNEL, Edges, is_reference
from pintime.lost_audio import find_jumps

RATE_HZ = 48_000.0


def reference(n: int = 40, sigma_s: float = 2e-9, ppm: float = 31.0, wander_adev: float = 5e-8,
              seed: int = 0) -> np.ndarray:
    """Reference edge times of a card running ``ppm`` fast whose clock wanders (white frequency noise of
    Allan deviation ``wander_adev`` at 1 s), each located with error ``sigma_s``."""
    rng = np.random.default_rng(seed)
    step = 0.5 * (1 + ppm * 1e-6)
    phase = np.cumsum(rng.normal(0.0, wander_adev * np.sqrt(0.5), n))  # random walk, half a second a step
    return 0.21 + np.arange(n) * step + phase + rng.normal(0.0, sigma_s, n)


def edges_of(time: np.ndarray, sigma_s: float = 2e-9) -> Edges:
    n = len(time)
    polarity = np.where(np.arange(n) % 2, -1, 1).astype(np.int8)
    return Edges(time, np.full(n, REFERENCE_CHANNEL, np.int8), polarity, np.full(n, sigma_s), 1.0, "test")


def test_a_steady_reference_shows_no_jump():
    for seed in range(20):
        assert find_jumps(edges_of(reference(seed=seed)), RATE_HZ) == []


@pytest.mark.parametrize("lost_samples", [1, 7, 3000, -2])  # −2: two samples inserted
def test_lost_audio_is_found_between_the_right_edges(lost_samples):
    t = reference()
    t[17:] -= lost_samples / RATE_HZ
    [gap] = find_jumps(edges_of(t), RATE_HZ)
    assert (gap.start_s, gap.end_s) == (t[16], t[17])
    assert gap.jump_s == pytest.approx(lost_samples / RATE_HZ, abs=1e-7)


def test_two_gaps_and_a_missed_edge():
    t = reference(60)
    t[10:] -= 5 / RATE_HZ
    t[40:] -= 0.123
    kept = np.delete(t, 25)  # an edge the locator missed: a double spacing, no jump
    gaps = find_jumps(edges_of(kept), RATE_HZ)
    assert [g.start_s for g in gaps] == [t[9], t[39]]


def test_one_mislocated_edge_is_no_gap():
    t = reference()
    t[20] += 30e-6
    assert find_jumps(edges_of(t), RATE_HZ) == []


def test_a_jump_within_the_edges_noise_is_not_claimed():
    """With 1 µs edges (the inflection locator), a one-sample loss at 192 kHz (5.2 µs) is within 8 σ:
    not claimed. The threshold follows the edges' own uncertainty."""
    t = reference(sigma_s=1e-6)
    t[17:] -= 1 / 192_000
    assert find_jumps(edges_of(t, sigma_s=1e-6), 192_000) == []


def test_another_signal_on_the_reference_channel_is_not_read_as_one():
    """A second signal there (a resistor ladder's other pins, any square wave that is not 1 s) is not the
    reference: its phase is not checked, rather than thousands of "jumps" reported."""
    assert is_reference(edges_of(reference()).on(1).time)
    pulses = np.sort(np.concatenate([np.arange(40) * 0.5, np.arange(40) * 0.5 + 17e-6]))
    assert not is_reference(edges_of(pulses).on(1).time)
    assert find_jumps(edges_of(pulses), RATE_HZ) == []
    assert not is_reference(edges_of(np.arange(40) * 0.01).on(1).time)  # a 50 Hz square wave
