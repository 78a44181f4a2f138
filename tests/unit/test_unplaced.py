"""Edges a locator cannot place: a window whose samples do not cross the middle of its two levels near the
detection has no position (the threshold and count methods give NaN there, never an extrapolated guess),
and the located edges keep none of them, only their count."""

from __future__ import annotations

import numpy as np
from pintime.locate.locators.count import locate_count
from pintime.locate.locators.threshold import locate_threshold
from pintime.locate.stream.store import EdgeStore

W = 16  # window half-width of the simple methods


def _step(at: float, width: int = 2 * W + 1) -> np.ndarray:
    """A unit rising step at sample ``at`` of the window, linear over one sample."""
    return np.clip(np.arange(width) - at + 0.5, 0.0, 1.0)


def test_a_crossing_near_the_centre_is_placed_and_one_far_from_it_is_not():
    y = np.stack([_step(W + 0.3), _step(W + 6.0), _step(W - 6.0)])
    position, sigma = locate_threshold(y, 1e-3)
    assert abs(position[0] - (W + 0.3)) < 0.1 and np.isfinite(sigma[0])  # the method's own bias: < 0.1
    assert np.isnan(position[1:]).all() and np.isinf(sigma[1:]).all()
    counted, _ = locate_count(y, 1e-3)
    assert np.isfinite(counted[0]) and np.isnan(counted[1:]).all()


def test_the_store_counts_edges_without_a_position_and_keeps_the_others():
    store = EdgeStore((1e-4,), None, 0.0, 48_000)
    block = np.array([[10.2, np.nan, 30.7],  # position (samples)
                      [0.01, np.inf, 0.01],  # sigma
                      [0.5, 0.5, -0.5],  # step
                      [0, 0, 0],  # channel
                      [1, 1, -1]])  # sign
    store.add([block])
    time_s, channel, sign, sigma_s, _ = store.arrays()
    assert store.unplaced == 1
    assert np.allclose(time_s * 48_000, [10.2, 30.7]) and sign.tolist() == [1, -1]


def test_the_store_keeps_each_channels_edges_in_time_order():
    """A fit can move an edge past the first of the next block (a detection split in two by noise at a
    level that fell to the threshold): each channel's edges still come out in time order, their fields
    with them, as everything downstream takes them (the frame decoder had raised)."""
    store = EdgeStore((1e-4, 1e-4), None, 0.0, 48_000)

    def block(pos: list[float], channel: int) -> np.ndarray:
        n = len(pos)
        return np.array([pos, np.arange(1, n + 1) * 0.01, [0.5] * n, [channel] * n, [1, -1, 1][:n]])
    store.add([block([10.0, 90.0], 0), block([12.0], 1)])
    store.add([block([80.0, 120.0, 130.0], 0), block([11.0], 1)])
    time_s, channel, sign, sigma_s, amp = store.arrays()
    assert np.allclose(time_s * 48_000, [10, 80, 90, 120, 130, 11, 12])
    assert channel.tolist() == [0, 0, 0, 0, 0, 1, 1]
    assert sign.tolist() == [1, 1, -1, -1, 1, 1, 1]
    assert np.allclose(sigma_s * 48_000, [0.01, 0.01, 0.02, 0.02, 0.03, 0.01, 0.01], rtol=1e-6)
    assert len(amp) == 7
