"""pintime.ladder: steps of known levels told apart; a step that fits nothing counted, not guessed."""

from __future__ import annotations

import numpy as np
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
    time = np.arange(6) * 1e-3
    amp = np.array([0.4, -0.4, 0.2, -0.2, 0.31, 0.4])  # unit 0.2; right channel: PA3 up, down, misfit
    column = np.array([0, 0, 1, 1, 1, 0])
    pol = np.sign(amp).astype(np.int8)
    att = attribute(time, np.zeros(6), amp, pol, column, "t")
    assert att.unattributed == 1 and att.unattributed_s.tolist() == [4e-3]
    assert att.edges.channel.tolist() == [0, 0, 4, 4, 0]  # PA0, PA0, PA3 up/down, PA0
