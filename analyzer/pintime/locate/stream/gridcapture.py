"""A capture whose edges lie on a grid and hold no calibration train, located block by block against the
response learned from the grid (:mod:`pintime.locate.shape.grid`, :mod:`pintime.locate.shape.gridshape`).

Only the measurement channel is located. Every σ is the fit's, scaled where the window's misfit is beyond
chance, and raised for all edges until all but 1 % of the learning edges lie within 4σ of the grid's line
(per piece, in stretches of DRIFT_KNOT_S): the source's own jitter and the shape's error are in that
scatter, and cannot be told apart, so an edge's σ holds both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pintime.capture.wav import WavInfo, iter_blocks
from pintime.edges import Edges
from pintime.errors import PintimeError
from pintime.locate.detect.detect import dense_periodic
from pintime.locate.shape import grid, gridshape, train
from pintime.locate.shape.blind import isolated_edges
from pintime.locate.stream.clipping import refuse_clipped
from pintime.locate.stream.learnspan import BLOCK_FRAMES, PAD_FRAMES

PROBE_S = 2.0  # a grid is looked for, and the shape learned, in this much of the learning span
ISOLATED_SHARE = 0.5  # a signal whose edges are mostly this far apart is learned blind (shape/blind.py)
# a grid finer than this (samples a cell: a UART at 44.1-48 kHz) is learned from all edges together
# (locate/shape/dense.py), whose σ holds its edges there; the grid's own σ would not
MIN_CELL_SAMPLES = 8.0


@dataclass(frozen=True)
class GridLearned:
    """What was learned: the shape, each edge's σ factor, and the learning edges' measures."""

    shape: gridshape.GridShape
    sigma_scale: float  # every σ multiplied by this (≥ 1)
    edges: int  # learning edges
    on_grid: float  # their share on the grid

    def crlb_s(self, time_s: np.ndarray, amp: np.ndarray, channel: np.ndarray, noise_rms: tuple[float, ...],
               samplerate_hz: float) -> np.ndarray:
        """Each edge's Cramér–Rao bound (:meth:`GridShape.crlb_s`)."""
        return self.shape.crlb_s(time_s, amp, channel, noise_rms, samplerate_hz)


def learn_grid(info: WavInfo, start: int, stop: int) -> GridLearned | None:
    """The grid's shape from the measurement channel's frames ``start`` … (PROBE_S at most); None when the
    edges lie on no grid, hold a calibration train, are a dense periodic signal's or mostly alone (other
    learners take those)."""
    stop = min(stop, start + int(PROBE_S * info.samplerate_hz))
    parts = [block.data[block.own_lo - block.first:block.own_hi - block.first, 0]
             for block in iter_blocks(info, BLOCK_FRAMES, PAD_FRAMES, start, stop)]
    x = np.concatenate(parts).astype(np.float64) if parts else np.zeros(0)
    peaks = grid.detect_peaks(x) if len(x) > 64 else None
    if peaks is None or len(peaks.pos) < grid.MIN_EDGES:
        return None
    coarse = np.rint(peaks.pos).astype(np.int64)
    if train.find_train(coarse, peaks.sign) is not None or isolated_edges(coarse).mean() >= ISOLATED_SHARE \
            or dense_periodic(coarse.astype(np.float64), peaks.sign):
        return None
    found = grid.find_grid(peaks)
    if found is None or found.on_grid.mean() < grid.GRID_SHARE or found.cell_samples < MIN_CELL_SAMPLES:
        return None
    refuse_clipped(info, 0, x, start)
    try:
        shape, located, sigma = gridshape.learn_shape(x, peaks, found, info.samplerate_hz)
    except PintimeError as err:
        cell_us = found.cell_samples / info.samplerate_hz * 1e6
        raise PintimeError(f"{info.path}: the signal's edges lie on a grid of {cell_us:.6g} µs, but {err}"
                           ) from None
    scale = max(1.0, shape.tail_ratio) if np.isfinite(shape.tail_ratio) else 1.0
    return GridLearned(shape, scale, len(located), float(found.on_grid.mean()))


def locate_grid(info: WavInfo, learned: GridLearned, start: int) -> tuple[Edges, np.ndarray, int, int]:
    """Every measurement-channel edge from frame ``start``: the edges (s), their steps, how many were
    dropped as no edge of the shape (a spike), and how many lie too near the file's ends."""
    shape = learned.shape
    times, sigmas, amps, signs = [], [], [], []
    dropped = at_ends = 0
    for block in iter_blocks(info, BLOCK_FRAMES, PAD_FRAMES, start):
        x = block.data[:, 0].astype(np.float64)
        refuse_clipped(info, 0, x, block.first)
        pos, sign, _ = grid.find_peaks(grid.detection_signal(x, shape.differentiated), shape.threshold)
        falling = sign < 0
        seeds = pos + shape.seed_offset[falling.astype(np.int64)]
        tau, sigma, amp, chi = gridshape.locate(x, shape, seeds, falling)
        at = seeds + block.first
        own = (at >= block.own_lo) & (at < block.own_hi)
        lost = ~np.isfinite(tau)
        spike = np.isfinite(chi) & (chi > gridshape.MISFIT_DROP)
        at_ends += int(np.count_nonzero(own & lost))
        dropped += int(np.count_nonzero(own & spike & ~lost))
        keep = own & ~lost & ~spike
        times.append((tau[keep] + block.first) / info.samplerate_hz)
        sigmas.append(sigma[keep] * learned.sigma_scale / info.samplerate_hz)
        amps.append(amp[keep])
        signs.append(np.where(falling[keep], -1, 1).astype(np.int8))
    time_s = np.concatenate(times) if times else np.zeros(0)
    order = np.argsort(time_s, kind="stable")
    sign_all = np.concatenate(signs)[order] if signs else np.zeros(0, np.int8)
    edges = Edges(time_s[order], np.zeros(len(time_s), np.int8), sign_all,
                  (np.concatenate(sigmas)[order] if sigmas else np.zeros(0)).astype(np.float32), 1.0,
                  str(info.path))
    return edges, (np.concatenate(amps)[order] if amps else np.zeros(0)), dropped, at_ends
