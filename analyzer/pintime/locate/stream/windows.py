"""The samples around edges in a block of a capture, as the locators take them."""

from __future__ import annotations

import numpy as np

from pintime.capture.wav import Block, WavInfo
from pintime.compiled import kernel
from pintime.locate.coupling.highpass import RestoredBlock
from pintime.locate.stream.clipping import clipped_error


def windows(block: Block, channel: int, pos: np.ndarray, offsets: np.ndarray, info: WavInfo) -> np.ndarray:
    """Samples ``pos + offsets`` of one channel (float64); refuses clipped ones (:mod:`clipping`'s rule,
    on the samples as recorded when the block is restored)."""
    y = np.empty((len(pos), len(offsets)))
    raw = block.raw if isinstance(block, RestoredBlock) else block.data
    row = _gather_kernel(raw, channel, pos - block.first, offsets, info.clips_at, y)
    if raw is not block.data:
        _gather_kernel(block.data, channel, pos - block.first, offsets, np.inf, y)
    if row >= 0:
        raise clipped_error(info, channel, int(pos[row]))
    return y


@kernel
def _gather_kernel(data, channel, rows, offsets, clip_level, y):  # pragma: no cover (compiled)
    """``y[e, k] = data[rows[e] + offsets[k], channel]``; returns the first window holding a sample at or
    beyond ``clip_level`` (-1: none)."""
    clipped = -1
    for e in range(len(rows)):
        for k in range(len(offsets)):
            y[e, k] = data[rows[e] + offsets[k], channel]
            if clipped < 0 and abs(y[e, k]) >= clip_level:
                clipped = e
    return clipped
