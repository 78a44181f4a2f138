"""The located edges of a capture, kept compactly while the capture is read block by block (docs/design.md
§11, streaming and memory)."""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np

from pintime.locate.shape.crlb import crlb_samples
from pintime.locate.shape.template import Template

FIRST_CAPACITY_EDGES = 1 << 16  # a channel's arrays start this long and grow by an eighth when they fill
GROWTH = 8  # (numpy fills what an array grows by: its spare room is resident memory)


class GrowingArray:
    """A 1-D array appended to in place: numpy's resize reallocates, which for a large array moves its
    pages instead of copying them, so a long capture's edges are never held twice while they are
    gathered."""

    def __init__(self, dtype: type) -> None:
        self.data: np.ndarray = np.empty(FIRST_CAPACITY_EDGES, dtype)
        self.count = 0

    def extend(self, values: np.ndarray) -> None:
        """Append ``values``."""
        need = self.count + len(values)
        if need > len(self.data):
            self.data.resize(max(need, len(self.data) + len(self.data) // GROWTH), refcheck=False)
        self.data[self.count:need] = values
        self.count = need

    def final(self, total: int | None = None) -> np.ndarray:
        """The values, in an array of ``total`` items (default: just them) whose rest the caller fills;
        this object is spent."""
        self.data.resize(self.count if total is None else total, refcheck=False)
        out, self.data = self.data, np.empty(0, self.data.dtype)
        return out


class EdgeStore:
    """The located edges, channel by channel, block by block (18 bytes an edge: time, signal sign, sigma,
    step; sigma and step in single precision); a block's samples are gone once it is located. The edges
    come out channel-major, as :class:`pintime.edges.Edges` keeps them, with no copy of the first channel's
    (nearly all of a capture's edges are the measurement pin's)."""

    DTYPES = (np.float64, np.int8, np.float32, np.float32)  # time (s), sign, sigma (s), step (FS)

    def __init__(self, noise: tuple[float, ...], rms: float | None, own_sigma: float, fs: int,
                 steps: bool = True, sigma_scale: float = 1.0) -> None:
        self.noise, self.fs, self.steps = np.asarray(noise), fs, steps  # steps: keep each edge's step
        self.sigma_scale = sigma_scale  # every σ times this (Template.sigma_scale)
        # the method's error on the train beyond its own uncertainty (the bias the train revealed)
        self.bias2 = None if rms is None else max(0.0, rms ** 2 - own_sigma ** 2)
        self.columns = [[GrowingArray(dtype) for dtype in self.DTYPES] for _ in noise]
        self.unplaced = 0  # edges detected that the method could not place (no finite position): left out

    def add(self, located: list[np.ndarray]) -> None:
        """One block's edges, per channel (rows: position, sigma, amplitude, channel, sign; samples), each
        sorted: blocks own consecutive stretches, so each channel's whole is sorted. Their uncertainties
        are raised to the train's error (and by ``sigma_scale``), and all is kept in seconds. An edge
        without a finite position is counted (``unplaced``), not kept."""
        for block in located:
            placed = np.isfinite(block[0])  # e.g. the threshold method finds no crossing near a detection
            self.unplaced += int(np.count_nonzero(~placed))
            block = block[:, placed]
            if not block.shape[1]:
                continue
            pos, sigma, amp, channel, sign = block[:, np.argsort(block[0], kind="stable")]
            if self.bias2 is not None:
                sigma = np.sqrt(sigma ** 2 + self.bias2)
            values = (pos / self.fs, sign, sigma * self.sigma_scale / self.fs, amp if self.steps else amp[:0])
            for column, value in zip(self.columns[int(channel[0])], values, strict=True):
                column.extend(value)

    def arrays(self) -> tuple[np.ndarray, ...]:
        """Time (s), channel, sign, sigma (s) and step (FS; none if not kept) of every edge, channel-major
        (the first channel's arrays grown in place to hold the others' after theirs)."""
        fields = []
        for k in range(len(self.DTYPES)):
            counts = [c[k].count for c in self.columns]
            out = self.columns[0][k].final(sum(counts))
            at = counts[0]
            for c in range(1, len(self.columns)):
                out[at:at + counts[c]] = self.columns[c][k].final()
                at += counts[c]
            fields.append(out)
        time_s, sign, sigma_s, amp = fields
        counts = [column[0].count for column in self.columns]
        for at, count in zip(np.cumsum([0, *counts[:-1]]), counts, strict=True):
            part = slice(at, at + count)  # a fit that moved an edge past the next block's first: sorted
            if np.any(time_s[part][1:] < time_s[part][:-1]):
                order = np.argsort(time_s[part], kind="stable")
                for values in (time_s, sign, sigma_s) + ((amp,) if len(amp) else ()):
                    values[part] = values[part][order]
        channel = np.repeat(np.arange(len(counts), dtype=np.int8), counts)
        return time_s, channel, sign, sigma_s, amp


def edge_crlb_s(template: Template, time_s: np.ndarray, amp: np.ndarray, channel: np.ndarray,
                noise: tuple[float, ...], fs: float) -> np.ndarray:
    """The Cramér–Rao bound (1-sigma, s) of edges at ``time_s`` of steps ``amp`` on ``channel`` (each's
    noise RMS in ``noise``)."""
    return crlb_samples(template, amp, time_s * fs, 1.0) * np.asarray(noise)[channel] / fs


def release_free_memory() -> None:
    """Hand the C heap's free memory back to the system (glibc's ``malloc_trim``; elsewhere nothing): the
    blocks' temporaries leave tens of MB free but resident, which a long capture's later steps would add
    to."""
    name = ctypes.util.find_library("c")
    trim = getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    if trim is not None:
        trim(0)
