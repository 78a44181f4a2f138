"""pintime.ladder: steps of known levels told apart; a step that fits nothing counted, not guessed."""

from __future__ import annotations

import numpy as np
import pytest
from pintime.ladder import _track, attribute


def test_track_single_and_simultaneous_moves():
    # big up, small up, both down (−3), small up, big up, then big down + small... (levels known)
    steps = np.array([+2, +1, -3, +1, +2, -1])  # from (0,0): big, small, both fall, small, big, small
    moved = _track(steps.astype(float), (2, 1), 0.05)
    assert moved.tolist() == [[1, 0], [0, 1], [-1, -1], [0, 1], [1, 0], [0, -1]]


def test_opposite_moves_from_known_levels():
    moved = _track(np.array([2.0, -1.0]), (2, 1), 0.05)  # (1,0): −1 is big down and small up at once
    assert moved.tolist() == [[1, 0], [-1, 1]]


def test_misfit_step_is_unattributed_and_levels_recover():
    moved = _track(np.array([2.0, -1.7, 2.0, 1.0, -1.0]), (2, 1), 0.05)
    assert moved[1].tolist() == [0, 0]  # fits no move
    assert moved[2:].tolist() == [[1, 0], [0, 1], [0, -1]]


def test_attribute_maps_pins_and_counts():
    # left: PA0's steps give the unit 0.2; right: PA3 up and down twice, a misfit, PA1 up and down
    amp = np.array([0.4, -0.4, 0.2, -0.2, 0.2, -0.2, 0.31, 0.4, -0.4, 0.4])
    column = np.array([0, 0, 1, 1, 1, 1, 1, 1, 1, 0])
    time = np.arange(len(amp)) * 1e-3
    pol = np.sign(amp).astype(np.int8)
    att = attribute(time, np.zeros(len(amp)), amp, pol, column, "t")
    assert att.unattributed == 1 and att.unattributed_s.tolist() == [6e-3]
    in_time = att.edges.time_order()
    assert att.edges.channel[in_time].tolist() == [0, 0, 4, 4, 4, 4, 2, 2, 0]  # PA0, PA3 ×4, PA1 ×2, PA0


def test_each_channel_learns_its_own_step_sizes():
    """The right channel's gain 3 % high and its small resistor 5 % off: the sizes are learned from its own
    steps, and every edge is attributed (a unit taken from the left channel would miss them all)."""
    rng = np.random.default_rng(0)
    left = np.tile([0.4, -0.4], 50) + rng.normal(0, 1e-5, 100)
    right = np.tile([0.412, 0.206 * 1.05, -0.412, -0.206 * 1.05], 25) + rng.normal(0, 1e-5, 100)
    amp = np.concatenate([left, right])
    column = np.repeat([0, 1], 100)
    att = attribute(np.arange(200) * 1e-3, np.zeros(200), amp, np.sign(amp).astype(np.int8), column, "t")
    assert att.unattributed == 0
    assert att.step_fs[1] == pytest.approx((0.412, 0.2163), abs=1e-4)
    assert sorted(set(att.edges.channel.tolist())) == [0, 2, 4]
