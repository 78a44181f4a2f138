"""The frame decoder (pintime.frames) without a capture: the CRC and noise."""

from __future__ import annotations

import numpy as np
from pintime.frames import (
    crc16_ccitt_false,
    decode_frames,
)


def test_crc_check_value():
    assert crc16_ccitt_false(b"123456789") == 0x29B1  # FORMAT.md §4


def test_no_frames_in_noise():
    rng = np.random.default_rng(1)
    t = np.cumsum(rng.uniform(50, 3000, 2000))
    d = decode_frames(t, np.tile([1, -1], 1000))
    assert not d.frames and not d.inverted
