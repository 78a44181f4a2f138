"""A recording located while it is written (``pintime measure``): at its end, exactly the edges
:func:`pintime.locate.stream.capture_edges.locate_capture` finds in the whole file, of which only the blocks
not yet complete are left to locate.

Why the edges are the same. The locating pass reads the file in blocks of BLOCK_FRAMES frames with
PAD_FRAMES on either side, from the learning span's start, and carries from one block to the next only
its own state (the detector that follows the level, the last block, the edges kept):
:class:`~pintime.locate.stream.capture_edges.LocatingPass`. A block is *complete* once the file holds its
frames and its padding: its samples are then those the whole file's same block holds, so it gives the same
edges, and the file's end is nowhere in its reach. The learning is made once, when the frames written decide
it (:func:`~pintime.locate.stream.capture_edges.growing_pass`), and is then what the whole file's is. A
change of the level inside the learning span stops the pass and learns again before it, as the whole
file's location does. Where the gaps the sidecar lists at the end are not those it listed when the
learning was made, the learning may differ (a gap marks where a train ends): the whole file is located
again. So is a recording whose learning takes another way than one pass (edges on a grid, a learning that
fails: ``given_up`` says why), and one that ends before its learning is decided. Tested byte for byte
against the whole file's location (tests/pipeline/test_growing.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pintime.capture.gaps import read_gaps
from pintime.capture.wav import DEFAULT_CHANNELS, Channels, WavInfo, open_wav, open_written
from pintime.errors import PintimeError
from pintime.locate.stream.capture_edges import CaptureEdges, LocatingPass, growing_pass
from pintime.locate.stream.learnspan import BLOCK_FRAMES, PAD_FRAMES


class GrowingCapture:
    """The location of the recording ``path`` as its recorder writes it: :meth:`grow` after each flush,
    :meth:`finish` once the file is closed. The method is the template's and the edges' steps are not kept,
    as ``pintime analyze`` locates (:func:`pintime.pipeline.analyze`); ``channels`` as the file's."""

    def __init__(self, path: str | Path, channels: Channels = DEFAULT_CHANNELS):
        self.path, self.channels = Path(path), channels
        self.located: LocatingPass | None = None
        self.given_up: str | None = None  # why the whole file is located at the end instead
        self.gaps_s = np.zeros(0)  # the sidecar's gaps when the learning was made (s)

    @property
    def located_s(self) -> float:
        """How much of the recording is located (s from its start)."""
        if self.located is None:
            return 0.0
        return self.located.next_frame / self.located.run.info.samplerate_hz

    def grow(self, frames: int) -> None:
        """Learn once the first ``frames`` frames (flushed by the recorder) decide it; locate the blocks
        they complete."""
        if self.given_up is not None:
            return
        info = open_written(self.path, frames, *self.channels)
        if self.located is None:
            self._begin(info)
        if self.located is not None:
            self.located.reopened(info)  # (the file's end, for the snapshot)
            complete = (frames - PAD_FRAMES - self.located.next_frame) // BLOCK_FRAMES
            if complete > 0:
                self._feed(info, self.located.next_frame + complete * BLOCK_FRAMES)

    def snapshot(self) -> CaptureEdges | None:
        """The location of the recording as if it ended at the frames it was last grown to (a copy of the
        pass, the blocks it has not located located as the file's last); None before the learning or where
        the whole file is to be located at the end."""
        if self.located is None or self.given_up is not None:
            return None
        located = self.located.copy()
        return _fed(located, located.run.info, None).result()

    def finish(self) -> CaptureEdges | None:
        """The closed recording's location, its last blocks located now; None where the whole file is to
        be located instead (``given_up`` says why)."""
        if self.given_up is None and self.located is None:
            self.given_up = "the recording ended before the edge shape could be learned"
        if self.located is None or self.given_up is not None:
            return None
        info = open_wav(self.path, *self.channels)
        if not np.array_equal(self._gaps_s(info.frames), self.gaps_s):
            self.given_up = "the sidecar lists gaps it did not list when the edge shape was learned"
            return None
        self.located.reopened(info)
        self._feed(info, None)
        return None if self.located is None else self.located.result()

    def _begin(self, info: WavInfo) -> None:
        begun = growing_pass(self.path, info, "template")
        if isinstance(begun, str):
            self.given_up = begun
        elif begun is not None:
            self.located, self.gaps_s = begun, self._gaps_s(info.frames)

    def _gaps_s(self, frames: int) -> np.ndarray:
        try:
            gaps = read_gaps(self.path, frames)
        except PintimeError:  # the whole file's analysis says what is wrong
            return np.full(1, np.nan)
        return np.zeros(0) if gaps is None else gaps.times_s

    def _feed(self, info: WavInfo, stop_frame: int | None) -> None:
        assert self.located is not None
        try:
            self.located = _fed(self.located, info, stop_frame)
        except PintimeError as err:  # (a clipped edge) the whole file's analysis says it
            self.located, self.given_up = None, f"locating failed ({err})"


def _fed(located: LocatingPass, info: WavInfo, stop_frame: int | None) -> LocatingPass:
    """``located`` fed the blocks of ``info`` up to ``stop_frame`` (None: the file's end); where the pass
    stops at a change of the level, the pass learned again before it, fed from the span's start."""
    while True:
        reader = located.blocks(info, stop_frame)
        change = next((c for c in map(located.feed, reader) if c is not None), None)
        reader.close()
        if change is None:
            return located
        located = located.again_before(change / info.samplerate_hz)
