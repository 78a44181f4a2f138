"""Where a WAV capture's learning pass reads (:mod:`pintime.locate.capture_edges`): the blocks both passes
read it in, and the span of it the edge shape, the noise and the AC coupling are learned from: from the
first edges, or from a calibration train further on, or as long as a slow signal needs."""

from __future__ import annotations

import numpy as np

from pintime.capture.wav import WavInfo, iter_blocks
from pintime.locate import train
from pintime.locate.blockdetect import BlockDetector

BLOCK_FRAMES = 1 << 18  # 1.4 s per block at 192 kHz (4 MB of float32 stereo with its float64 channel copy)
PAD_FRAMES = 1024  # look-ahead/behind of a block: a group of close edges must fit in it
LEARN_MAX_S = 8.0  # the calibration train is at the start of a capture (FORMAT.md §6)
LEARN_MIN_EDGES = 400  # a span with fewer edges (a slow signal: a PPS) goes on until it holds this many
LEARN_SEARCH_S = 300.0  # a calibration train is looked for this far after the first edge (a run's length)
TRAIN_SPAN_S = 3.0  # a calibration train lasts 2.78 s (FORMAT.md §6)
TRAIN_LEAD_S = 0.1  # a learning span that starts at a train starts this much before it (its frame header)
CAL_PERIOD_S = 2777e-6  # a pintime calibration train's edge spacing (FORMAT.md §6), within 1 %
MARGIN = int(train.WINDOW[-1] - train.WINDOW[0])  # detection is trusted this far inside a block's data


def learn_span(info: WavInfo, smallest_step: float = 1.0) -> tuple[int, int, int]:
    """The frames the edge shape, the noise and the AC coupling are learned from, and the first frame of the
    first block whose measurement channel holds an edge.

    The span is LEARN_MAX_S from that block (a recording may begin in silence, seconds before the board is
    reset), unless a pintime calibration train (alternating edges CAL_PERIOD_S apart) lies too far beyond
    it to be learned from there, within LEARN_SEARCH_S: a recording that begins inside an earlier run, then
    the board is reset. The span then starts just before the train, and every edge before it is left out
    (the caller reports it). A span of LEARN_MAX_S with fewer than LEARN_MIN_EDGES edges and no train (a
    slow signal, such as a PPS output) goes on until it holds that many, within LEARN_SEARCH_S. The first
    LEARN_MAX_S when no block holds an edge."""
    rate = info.samplerate_hz
    det = BlockDetector(1, smallest_step, MARGIN, PAD_FRAMES)
    first = None
    pos, sign = np.zeros(0, np.int64), np.zeros(0)  # the edges of the last LEARN_MAX_S scanned
    count, enough = 0, None  # edges from the first block with one; the frame after the LEARN_MIN_EDGES-th
    for block in iter_blocks(info, BLOCK_FRAMES, PAD_FRAMES):
        p, g, _ = det.steps(block, 0)
        own = (p >= block.own_lo) & (p < block.own_hi)
        if first is None and own.any():
            first = block.own_lo
        if first is None:
            continue
        if enough is None and count + np.count_nonzero(own) >= LEARN_MIN_EDGES:
            enough = int(p[own][LEARN_MIN_EDGES - count - 1]) + len(train.WINDOW)
        count += int(np.count_nonzero(own))
        pos, sign = np.concatenate([pos, p[own]]), np.concatenate([sign, g[own]])
        recent = pos >= block.own_hi - LEARN_MAX_S * rate
        pos, sign = pos[recent], sign[recent]
        idx = train.find_train(pos, sign)
        if idx is not None:
            if pos[idx[0]] + TRAIN_SPAN_S * rate <= first + LEARN_MAX_S * rate:
                break  # learned from where it is (a calibration train, or any square wave)
            if abs(np.median(np.diff(pos[idx])) / (CAL_PERIOD_S * rate) - 1) < 0.01:
                start = max(first, int(pos[idx[0]] - TRAIN_LEAD_S * rate))
                return start, int(min(start + LEARN_MAX_S * rate, info.frames)), first
        if block.own_hi - first > LEARN_SEARCH_S * rate:
            break
    start = 0 if first is None else first
    stop = start + LEARN_MAX_S * rate
    if first is not None:  # a slow signal: on to its LEARN_MIN_EDGES-th edge
        stop = max(stop, min(info.frames if enough is None else enough, start + LEARN_SEARCH_S * rate))
    return start, int(min(stop, info.frames)), start
