"""Where a WAV capture's learning pass reads (:mod:`pintime.locate.stream.capture_edges`): the blocks both
passes read it in, and the span of it the edge shape, the noise and the AC coupling are learned from: from the
first edges, or from a calibration train further on, or as long as a slow signal needs; and where in that
span the recording's level jumps (the input's gain moved in the first seconds), which a learning across
it cannot hold."""

from __future__ import annotations

import numpy as np

from pintime.capture.wav import WavInfo, iter_blocks
from pintime.locate.detect import detect
from pintime.locate.detect.blockdetect import BlockDetector
from pintime.locate.shape import train

BLOCK_FRAMES = 1 << 18  # 1.4 s per block at 192 kHz (4 MB of float32 stereo with its float64 channel copy)
PAD_FRAMES = 1024  # look-ahead/behind of a block: a group of close edges must fit in it
LEARN_MAX_S = 8.0  # the calibration train is at the start of a capture (FORMAT.md §6)
LEARN_MIN_EDGES = 400  # a span with fewer edges (a slow signal: a PPS) goes on until it holds this many
LEARN_SEARCH_S = 300.0  # a calibration train is looked for this far after the first edge (a run's length)
TRAIN_SPAN_S = 3.0  # a calibration train lasts 2.78 s (FORMAT.md §6)
TRAIN_LEAD_S = 0.1  # a learning span that starts at a train starts this much before it (its frame header)
CAL_PERIOD_S = 2777e-6  # a pintime calibration train's edge spacing (FORMAT.md §6), within 1 %
MARGIN = int(train.WINDOW[-1] - train.WINDOW[0])  # detection is trusted this far inside a block's data
# the level is read as each chunk's largest step strength (chunks holding an edge) …
LEVEL_CHUNK_S = 0.05
LEVEL_CHUNKS = 5  # … and a jump as the median of this many on against that of as many before …
# … moving this far (relative): beyond what a strong AC coupling makes of the calibration train's steps
# against the frames' after it (the level before each edge differs: docs/design.md §13)
LEVEL_JUMP = 0.25


def learn_span(info: WavInfo, smallest_step: float = 1.0) -> tuple[int, int, int]:
    """The frames the edge shape, the noise and the AC coupling are learned from, and the first frame of the
    first block whose measurement channel holds an edge: :func:`learn_span_decided`'s span."""
    return learn_span_decided(info, smallest_step)[0]


def learn_span_decided(info: WavInfo, smallest_step: float = 1.0) -> tuple[tuple[int, int, int], int | None]:
    """:func:`learn_span`'s span, and the end of the block where the scan for it stopped (None: at the
    file's end): a file that holds that block whole, its padding and the span decides it as any longer one
    does (:mod:`pintime.locate.stream.growing`).

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
    decided = None  # the end of the block the scan stopped at, None: the file's end
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
                decided = block.own_hi
                break  # learned from where it is (a calibration train, or any square wave)
            if abs(np.median(np.diff(pos[idx])) / (CAL_PERIOD_S * rate) - 1) < 0.01:
                start = max(first, int(pos[idx[0]] - TRAIN_LEAD_S * rate))
                return (start, int(min(start + LEARN_MAX_S * rate, info.frames)), first), block.own_hi
        if block.own_hi - first > LEARN_SEARCH_S * rate:
            decided = block.own_hi
            break
    start = 0 if first is None else first
    stop = start + LEARN_MAX_S * rate
    if first is not None:  # a slow signal: on to its LEARN_MIN_EDGES-th edge
        stop = max(stop, min(info.frames if enough is None else enough, start + LEARN_SEARCH_S * rate))
    return (start, int(min(stop, info.frames)), start), decided


def level_jump(info: WavInfo, start: int, stop: int) -> tuple[float, float] | None:
    """The first jump of the measurement channel's level in frames [start, stop): where (s) and by how
    much (the level after against before), or None. The level is each LEVEL_CHUNK_S chunk's largest
    step strength (:func:`detect.step_strength`, of the recorded samples: no coupling learned across the
    jump is needed), over the chunks that hold an edge (NOISE_FLOOR × the strength's noise); a jump is
    the median of LEVEL_CHUNKS of them against that of as many before moving more than LEVEL_JUMP, placed
    where that ratio moves most."""
    chunk = int(LEVEL_CHUNK_S * info.samplerate_hz)
    tops, at, noise = [], [], np.inf  # the quietest block's noise: one dense with edges reads them as noise
    for block in iter_blocks(info, BLOCK_FRAMES, PAD_FRAMES, start, stop):
        x = block.data[block.own_lo - block.first:block.own_hi - block.first, 0].astype(np.float64)
        peak = np.abs(detect.step_strength(x))
        n = len(peak) // chunk
        tops.append(peak[:n * chunk].reshape(n, chunk).max(axis=1))
        at.append(block.own_lo + chunk * np.arange(n))
        noise = min(noise, detect.strength_noise(x))
    top, frames = (np.concatenate(tops), np.concatenate(at)) if tops else (np.zeros(0), np.zeros(0))
    edged = top > detect.NOISE_FLOOR * noise
    level, frame = top[edged], frames[edged]
    ks = np.arange(LEVEL_CHUNKS, len(level) - LEVEL_CHUNKS + 1)
    ratio = np.array([np.median(level[k:k + LEVEL_CHUNKS]) / np.median(level[k - LEVEL_CHUNKS:k])
                      for k in ks])
    moved = np.flatnonzero(np.abs(ratio - 1.0) > LEVEL_JUMP)
    if not moved.size:
        return None
    # the windows that first straddle the jump read part of it: the jump is where the ratio is furthest
    # from 1 among the LEVEL_CHUNKS windows from the first that moved, after the start of the last chunk
    # before that window (its largest step may be the jump's other side): the level is steady before it
    near = np.arange(moved[0], min(moved[0] + LEVEL_CHUNKS, len(ks)))
    best = near[np.argmax(np.abs(np.log(ratio[near])))]
    return float(frame[ks[best] - 1]) / info.samplerate_hz, float(ratio[best])
