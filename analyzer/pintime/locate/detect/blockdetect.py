"""Edge detection block by block (:mod:`pintime.locate.detect.detect` on each block column), with each
channel's typical edge strength remembered from block to block and its threshold following the recording's
level.

The threshold is half the first edges' strength. A recording whose level changes later (the input's gain
moved during the take, a card's automatic gain control) would leave it behind: near half the first level
its edges' strength stands at the threshold, and runs split; below half no edge is detected (docs/design.md
§13). So the detector follows the level: from the steps located in each block (:meth:`BlockDetector.track`,
the medians of its stretches against the first edges'), and, where a block holds few steps at the threshold,
from the block's own strongest steps when they are a pin's, many and alternating in sign
(:meth:`BlockDetector.steps`). Every change is kept (:attr:`BlockDetector.level_changes`) for the report;
one inside the learning span has the capture located again (:func:`pintime.locate.stream.capture_edges.
locate_capture`).
"""

from __future__ import annotations

import numpy as np

from pintime.capture.wav import Block
from pintime.locate.detect import detect
from pintime.locate.locators.methods import SIMPLE_HALF

TRACK_EDGES = 16  # a block's level is judged from this many located edges at least …
TRACK_PARTS = 16  # … in each of up to this many stretches of it, in order (0.3 s of table1 at 48 kHz)
# the threshold follows the level when a block's median step moves this far (relative) from the level the
# threshold was set for: far beyond a steady recording's spread of the step, within the range of
# thresholds that detect as well as one at half the strength (docs/design.md §13)
TRACK_TOLERANCE = 0.1
PIN_STEP = 0.25  # a block located again keeps the steps of at least this fraction of its lower level


class BlockDetector:
    """Edge detection per block column (:attr:`pintime.capture.wav.WavInfo.columns`), with the typical
    edge strength remembered from block to block and the recording's level followed."""

    def __init__(self, columns: int, smallest_step: float = 1.0, margin: int = 0, pad_frames: int = 0
                 ) -> None:
        self.swing: list[float | None] = [None] * columns
        # below 1 (a resistor ladder): every column detects steps down to this fraction of column 0's swing
        # (a ladder's steps are of several heights: its level is not followed)
        self.smallest_step = smallest_step
        self.margin, self.pad_frames = margin, pad_frames  # detection is trusted this far inside a block
        self.at_file_ends = 0  # edges found within SIMPLE_HALF samples of the file's start or end …
        # … and the edges less than this many samples from one (0: none), whose locations take its response
        # for theirs (docs/design.md §13): located, as their neighbours' fits need them, but not kept
        self.reach = 0.0
        # each edge's step is fitted with its neighbours (the template method), else read from its window,
        # which holds a close neighbour's step too: the level is then followed on isolated edges alone
        self.steps_fitted = True
        self.gain = [1.0] * columns  # the level the threshold is set for, against the first edges'
        # the noise, learned at the first level, times this: a gain moved before the card's converter scales
        # its analog noise with the step (1.6× the level left 8σ errors), one after it does not: the larger
        # of the block's levels and 1, an uncertainty never too small
        self.noise_scale = [1.0] * columns
        self._level: list[float | None] = [None] * columns  # the first stretch's median located step
        self._moved: set[int] = set()  # channels whose threshold moved: their block is located again
        self._reported = [1.0] * columns  # the last level change kept, per channel
        self._last_middle = [0.0] * columns  # the middle edge of the last stretch seen, per channel
        # (the sample after which the level changed, channel, the level against the first edges')
        self.level_changes: list[tuple[float, int, float]] = []

    def steps(self, block: Block, channel: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Absolute sample index and sign of the edges in the block's trusted part, and which of them to
        keep once located (not those within ``reach`` of an edge too near a file end)."""
        x = block.data[:, channel]
        shared = self.smallest_step < 1 and self.swing[0] is not None
        swing = self.swing[0] * self.smallest_step if shared else self.swing[channel]  # type: ignore[operator]
        threshold = detect.edge_threshold(x, None if swing is None else swing * self.gain[channel])
        if threshold is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0, bool)
        pos, strength = detect.find_steps(x, threshold)
        if self.swing[channel] is None and pos.size:
            self.swing[channel] = float(np.median(np.abs(strength)))
        elif len(pos) < TRACK_EDGES and self._level[channel] is not None:  # a channel with many edges
            pos, strength = self._fallen(x, threshold, pos, strength, channel)
        lo = self.margin if block.first > 0 else SIMPLE_HALF
        # the file's last block has no look-ahead: its data ends where the file does, and the file's last
        # edges are its own (trimming the margin there lost every edge in the last 0.6 ms of a capture)
        last = block.first + len(x) < block.own_hi + self.pad_frames
        hi = len(x) - (SIMPLE_HALF if last else self.margin)
        at_ends = ((pos < lo) & (block.first == 0)) | ((pos >= hi) & last)
        keep = (pos >= lo) & (pos < hi) & ~at_ends
        near = np.zeros(len(pos), bool)
        if self.reach and at_ends.any():
            near = keep & (np.min(np.abs(pos[:, None] - pos[at_ends]), axis=1) < self.reach)
        owned = (pos >= block.own_lo - block.first) & (pos < block.own_hi - block.first)
        self.at_file_ends += int(np.count_nonzero(at_ends) + np.count_nonzero(near & owned))
        return pos[keep] + block.first, np.sign(strength[keep]), ~near[keep]

    def _fallen(self, x: np.ndarray, threshold: float, pos: np.ndarray, strength: np.ndarray, channel: int
                ) -> tuple[np.ndarray, np.ndarray]:
        """A block with few steps at ``threshold``: its steps at half its own strongest instead, when that
        is below half the threshold and finds TRACK_EDGES steps or more, alternating in sign as one pin's
        do (crosstalk of a 1 Hz reference makes two a second; noise's alternate half the time) — the level
        fell below half what the threshold was set for. The threshold then follows it. Only on a channel
        whose level is followed (:meth:`track`): a 1 Hz reference's every block has few steps, and looking
        at each made `pintime analyze` of a 176 s capture 1.5 s slower."""
        probe = detect.edge_threshold(x, None)
        if probe is None or probe >= 0.5 * threshold:
            return pos, strength
        low_pos, low_strength = detect.find_steps(x, probe)
        sign = np.sign(low_strength)
        if len(low_pos) < TRACK_EDGES or np.mean(sign[1:] != sign[:-1]) < detect.DENSE_ALTERNATING:
            return pos, strength
        self.gain[channel] *= probe / threshold
        return low_pos, low_strength

    def track(self, located: list[np.ndarray]) -> tuple[bool, bool]:
        """Follow the level from one block's ``located`` edges (rows: position, sigma, step, channel, sign;
        one array per channel): their median step against the first stretch of the first block's, stretch
        by stretch. Whether a channel's level moved beyond TRACK_TOLERANCE from the one its threshold was
        set for, and whether it fell: the block is then to be located again, at the lower of the old and
        new levels so that the edges on either side of the change are detected (:meth:`pin_steps` keeps
        those of a pin's step), and :meth:`settle` called with what that finds; a fall, below half, also
        hid the previous block's last edges (detected in a few places, where noise lifted them over the
        threshold, and located without their neighbours, µs off): that block too."""
        fell = False
        for rows in located:
            levels = self._levels(rows)
            if levels is None:
                continue
            channel, gains, starts = levels
            moved = np.abs(gains / self.gain[channel] - 1) > TRACK_TOLERANCE
            if moved.any():
                fell |= float(gains.min()) < self.gain[channel]
                self.noise_scale[channel] = max(1.0, float(gains.max()), self.gain[channel])
                self.gain[channel] = min(float(gains.min()), self.gain[channel])
                self._moved.add(channel)
            else:
                self._report(channel, gains, starts)
        return bool(self._moved), fell

    def pin_steps(self, located: list[np.ndarray]) -> list[np.ndarray]:
        """A block located again after a change (``located``: rows as :meth:`track` takes them) without the
        steps of the channels that moved far below both levels, less than PIN_STEP of the lower: at 0.3× the
        old threshold, steps of 10⁻⁴ of the swing were found beside a full level's edges (the ringing
        between close ones), which broke its frames. Only fitted steps tell (``steps_fitted``)."""
        if not self.steps_fitted:
            return located
        out = []
        for rows in located:
            channel = int(rows[3, 0])
            level = self._level[channel]
            if channel in self._moved and level is not None:
                rows = rows[:, ~(np.abs(rows[2]) < PIN_STEP * self.gain[channel] * level)]
            out.append(rows)
        return out

    def settle(self, located: list[np.ndarray]) -> None:
        """The thresholds of the channels :meth:`track` moved at the level of the last stretch of their
        block located again (``located``): the level from there on."""
        for rows in located:
            levels = self._levels(rows)
            if levels is not None and levels[0] in self._moved:
                channel, gains, starts = levels
                self.gain[channel] = float(gains[-1])
                self.noise_scale[channel] = max(1.0, self.gain[channel])
                self._report(channel, gains, starts)
        self._moved.clear()

    def _levels(self, rows: np.ndarray) -> tuple[int, np.ndarray, np.ndarray] | None:
        """The channel of one block's located edges, the median step of each of up to TRACK_PARTS
        stretches of them against the first block's first stretch (isolated edges only unless
        ``steps_fitted``; at 48 kHz a block of the table1 run holds 13-21 of its 20 000), and the
        middle position of the last stretch seen before and of each; None with too few or on a ladder."""
        if rows.shape[1] < TRACK_EDGES or self.smallest_step != 1.0:
            return None
        channel, step, pos = int(rows[3, 0]), np.abs(rows[2]), rows[0]
        if not self.steps_fitted:
            gap = np.diff(pos)
            alone = np.concatenate([[True], gap >= self.reach]) & np.concatenate([gap >= self.reach, [True]])
            step, pos = step[alone], pos[alone]
        finite = np.isfinite(step)
        step, pos = step[finite], pos[finite]
        if len(step) < TRACK_EDGES:
            return None
        parts = np.array_split(np.arange(len(step)), min(TRACK_PARTS, len(step) // TRACK_EDGES))
        medians = np.array([np.median(step[part]) for part in parts])
        if self._level[channel] is None:  # where the swing and the edge shape were learned
            self._level[channel] = float(medians[0])
        middle = np.array([self._last_middle[channel]] + [pos[part[len(part) // 2]] for part in parts])
        return channel, medians / self._level[channel], middle

    def _report(self, channel: int, gains: np.ndarray, starts: np.ndarray) -> None:
        """Keep the level of a block's last stretch when it differs by more than TRACK_TOLERANCE from the
        last kept, with where the change began: after the middle edge of the stretch before the first that
        differs (``starts``: each stretch's middle position, after that of the last stretch seen before the
        block), most of whose edges are at the old level."""
        moved = np.abs(gains / self._reported[channel] - 1) > TRACK_TOLERANCE
        self._last_middle[channel] = float(starts[-1])
        if moved[-1]:
            first = int(np.argmax(moved))
            self._reported[channel] = float(gains[-1])
            self.level_changes.append((float(starts[first]), channel, float(gains[-1])))
