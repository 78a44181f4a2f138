"""The located edges of a capture, kept compactly while the capture is read block by block (docs/design.md
§11, streaming and memory)."""

from __future__ import annotations

import mmap

import numpy as np

from pintime.locate.crlb import crlb_samples
from pintime.locate.template import Template

RESULT_CHUNK_EDGES = 1 << 20  # located edges are kept in arrays of this many (26 MB)


class EdgeStore:
    """The located edges, block by block, in the compact form they are kept in (34 bytes an edge: time,
    channel, signal sign, sigma, Cramér–Rao bound, step); a block's samples are gone once it is located.

    Blocks are gathered until ``RESULT_CHUNK_EDGES`` edges are pending, which are then finished together
    (their bound from one table of the template's energy) and copied into arrays of that many edges
    mapped from the system (:func:`mapped_array`): small arrays kept between a block's large temporaries
    would pin the heap memory those leave behind, and so would large arrays the allocator placed on the
    heap (a one-hour capture's located edges held three times their size so)."""

    DTYPES = (np.float64, np.int8, np.int8, np.float64, np.float64, np.float64)

    def __init__(self, template: Template, noise: tuple[float, ...], rms: float | None, own_sigma: float,
                 fs: int) -> None:
        self.template, self.noise, self.fs = template, np.asarray(noise), fs
        # the method's error on the train beyond its own uncertainty (the bias the train revealed)
        self.bias2 = None if rms is None else max(0.0, rms ** 2 - own_sigma ** 2)
        self.pending: list[np.ndarray] = []
        self.pending_edges = 0
        self.chunks: list[list[np.ndarray]] = [[] for _ in self.DTYPES]
        self.filled = RESULT_CHUNK_EDGES  # edges in the last chunk of each field (full: none open)

    def add(self, located: list[np.ndarray]) -> None:
        """One block's edges (rows: position, sigma, amplitude, channel, sign; samples), each part sorted:
        blocks own consecutive stretches, so the whole is sorted."""
        if not located:
            return
        block = np.concatenate(located, axis=1)
        self.pending.append(block[:, np.argsort(block[0], kind="stable")])
        self.pending_edges += block.shape[1]
        if self.pending_edges >= RESULT_CHUNK_EDGES:
            self._finish_pending()

    def _finish_pending(self) -> None:
        """The pending edges' uncertainties raised to the train's error, their bound, all in seconds, into
        the chunks."""
        if not self.pending:
            return
        pos, sigma, amp, channel, sign = np.concatenate(self.pending, axis=1)
        self.pending, self.pending_edges = [], 0
        channel = channel.astype(np.int8)
        if self.bias2 is not None:
            sigma = np.sqrt(sigma ** 2 + self.bias2)
        crlb = crlb_samples(self.template, amp, pos, 1.0) * self.noise[channel] / self.fs
        fields = (pos / self.fs, channel, sign, sigma / self.fs, crlb, amp)
        done = 0
        while done < len(pos):
            if self.filled == RESULT_CHUNK_EDGES:
                for chunks, dtype in zip(self.chunks, self.DTYPES, strict=True):
                    chunks.append(mapped_array(RESULT_CHUNK_EDGES, dtype))
                self.filled = 0
            n = min(len(pos) - done, RESULT_CHUNK_EDGES - self.filled)
            for chunks, values in zip(self.chunks, fields, strict=True):
                chunks[-1][self.filled:self.filled + n] = values[done:done + n]
            self.filled += n
            done += n

    def arrays(self) -> tuple[np.ndarray, ...]:
        """Time (s), channel, sign, sigma (s), CRLB (s) and step (FS) of every edge, one array each (each
        field's chunks are released as it is joined)."""
        self._finish_pending()
        joined = []
        for chunks, dtype in zip(self.chunks, self.DTYPES, strict=True):
            if chunks:
                chunks[-1] = chunks[-1][:self.filled]
            joined.append(np.concatenate(chunks) if chunks else np.zeros(0, dtype))
            chunks.clear()
        return tuple(joined)


def mapped_array(n: int, dtype: type) -> np.ndarray:
    """An array of ``n`` items in memory mapped for it alone: returned to the system when it is released,
    wherever the allocator's heap stands."""
    return np.frombuffer(mmap.mmap(-1, n * np.dtype(dtype).itemsize), dtype)
