"""Every edge of a WAV capture, located to sub-sample precision with a selectable method.

Two passes over the file, both in overlapping blocks (memory bounded, any length):

1. *Learning* over the first seconds: detect the measurement channel's edges, find the calibration train
   (FORMAT.md, CAL frame), learn the edge template from it together with the train's line
   (:mod:`pintime.locate.shape.train`), and measure the noise on quiet stretches
   (:mod:`pintime.locate.shape.crlb`). Edges beside a recording gap (:mod:`pintime.capture.gaps`) are left
   out, and the train is the longest one between gaps.
2. *Locating* the whole capture: detect the edges of both channels block by block and locate them with
   the chosen method; close edges are fitted jointly (template method).

Without a calibration train the template is learned blind from the first isolated edges
(:mod:`pintime.locate.shape.blind`: seeded by an estimator without sub-sample bias, then alternating fit and
refit), or from all edges together where none is alone (:mod:`pintime.locate.shape.dense`), which is reported;
a slow signal's learning span goes on until it holds enough edges.
Uncertainties: the template method's come from each fit; for every method they are raised, if need be, to
the RMS error the method shows against the calibration train's straight line, which includes its
sub-sample bias.
"""

from __future__ import annotations

from collections.abc import Generator
from copy import deepcopy
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, NamedTuple

import numpy as np

from pintime.capture.gaps import read_gaps
from pintime.capture.wav import DEFAULT_REFERENCE, Block, WavInfo, iter_blocks, open_wav
from pintime.edges import Edges, is_reference
from pintime.errors import PintimeError
from pintime.locate.coupling.highpass import Highpass, check_restored, learn_highpass, restore_block
from pintime.locate.detect import detect
from pintime.locate.detect.blockdetect import BlockDetector
from pintime.locate.locators.fit import FIT_HALF_SAMPLES, TemplateTable, fit_groups, fit_isolated
from pintime.locate.locators.methods import (
    METHODS,
    SIMPLE_HALF,
    chunk_swings,
    locate_single,
    method_error,
    neighbour_reach,
    seed_phases,
    step_heights,
)
from pintime.locate.shape import train, traincheck
from pintime.locate.shape.bend import Bend, BendSums, refuse_bent
from pintime.locate.shape.blind import isolated_edges, learn_blind
from pintime.locate.shape.crlb import FIT_DEGREE, quiet_noise_rms
from pintime.locate.shape.periodic import Periodic, learn_from_capture, periodic_rows
from pintime.locate.shape.quantization import rounding_errors
from pintime.locate.shape.template import Template
from pintime.locate.stream.ahead import ahead
from pintime.locate.stream.gridcapture import GridLearned, learn_grid, locate_grid
from pintime.locate.stream.learnspan import (
    BLOCK_FRAMES,
    LEARN_MAX_S,
    MARGIN,
    PAD_FRAMES,
    learn_span,
    learn_span_decided,
    level_jump,
)
from pintime.locate.stream.store import EdgeStore, edge_crlb_s, release_free_memory
from pintime.locate.stream.windows import windows

# An edge's location uses samples up to the template's half-support on either side (its own window, or
# its neighbours' in a joint fit): edges this close to a recording gap may see the jump, and are dropped
# (a long support's, train.LONG_HALF_SAMPLES, twice that: gap_guard_s).
GAP_GUARD_SAMPLES = 2 * train.TEMPLATE_HALF_SAMPLES
LEARN_EDGES = 1300  # enough measurement-channel edges to hold the whole train (1000 edges)
# learned again before a jump of the level, the train must end this many of its periods before it: else the
# jump cut it short (it came within the train: the step changed along it, as automatic gain control does)
JUMP_CLEAR_PERIODS = 10
# a step is detected at 30× the strength's noise (detect.NOISE_FLOOR), ≥ 20× the samples': isolated steps
# whose median stands below this many times the noise are noise, refused as such (docs/design.md §13)
MIN_STEP_NOISE = 10.0


@dataclass(frozen=True)
class CaptureEdges:
    """The located edges of a capture and what was learned on the way."""

    edges: Edges  # times in seconds of the capture clock (sample 0 at t = 0)
    method: str
    inverted: bool | None  # the capture is inverted (None: no quiet interval to tell)
    noise_rms: tuple[float, ...]  # per channel (measurement, then reference if any), full-scale units
    # Periodic: a dense periodic signal's whole period (locate/shape/periodic.py); GridLearned: the response
    # learned from edges on a grid (locate/stream/gridcapture.py)
    template: Template | Periodic | GridLearned
    train: train.TrainFit | None  # None: no calibration train, template learned blind
    method_rms_s: float | None  # RMS error of the method against the train's line (None: no train)
    info: WavInfo
    train_refused: str | None = None  # why a calibration train found was not learned from (None: it was)
    highpass: tuple[Highpass, ...] = ()  # per channel: the AC coupling learned and undone (highpass.py)
    # each edge's step (FS, the signal's sign): the CRLB and a ladder's pins need it; empty when not kept
    amp: np.ndarray = field(default_factory=lambda: np.zeros(0))
    learn_span_s: tuple[float, float] = (0.0, LEARN_MAX_S)  # the seconds the edge shape was learned from
    skipped_s: tuple[float, float] | None = None  # a stretch with edges left out: an earlier run's end
    unplaced: int = 0  # edges detected that the method could not place (left out, frames with them lost)
    at_file_ends: int = 0  # edges too near the file's start or end to be located, and those within reach
    # where the recording's level changed (BlockDetector.level_changes: the threshold followed it): the time
    # after which it did (s), channel, level against the first edges'
    level_changes: tuple[tuple[float, int, float], ...] = ()
    bend: Bend | None = None  # the input's bend (template method; None: not found, or the level changed)

    @property
    def crlb_s(self) -> np.ndarray:
        """The Cramér–Rao bound of each edge (1-sigma, s), computed on each use (validation needs it, an
        analysis does not: a long capture's would be another array per edge)."""
        e = self.edges
        if isinstance(self.template, (Periodic, GridLearned)):
            return self.template.crlb_s(e.time, self.amp, e.channel, self.noise_rms, self.info.samplerate_hz)
        return edge_crlb_s(self.template, e.time, self.amp, e.channel, self.noise_rms,
                           self.info.samplerate_hz)


def gap_guard_s(samplerate_hz: float, template: Template | Periodic | GridLearned | None = None) -> float:
    """How near a recording gap (s) an edge's location may see the gap's jump: ``GAP_GUARD_SAMPLES``, or
    twice the half-support of a ``template`` learned on a longer one."""
    half = template.half_samples if isinstance(template, Template) else 0.0
    return max(GAP_GUARD_SAMPLES, 2.0 * half) / samplerate_hz


# what a learning pass gives: template, train fit, noise per channel, the windows the other methods are
# checked on (positions, signs, simple and template windows), and why a train found was refused
Learning = tuple[Template | Periodic, train.TrainFit | None, tuple[float, ...], list, str | None]


def learn_capture(info: WavInfo, cuts_s: np.ndarray | None = None,
                  highpass: tuple[Highpass, ...] | None = None, smallest_step: float = 1.0,
                  span: tuple[int, int] | None = None, det: BlockDetector | None = None) -> Learning:
    """Learning pass on the recording with its AC coupling ``highpass`` undone (default: learned here):
    template, train fit, noise per channel, the train's windows, and why a train found was refused (its fit
    leaves far more than the noise: its edges are too close at this sample rate) and the template learned
    blind instead. ``cuts_s``: (start, end) rows, ascending, where the data shows audio lost or inserted
    (:func:`pintime.lost_audio.cut_spans`): treated as the sidecar's gaps are. ``smallest_step``: as
    :func:`locate_capture`'s (a ladder's smaller steps are edges, not noise, to the noise measurement).
    ``span``: the frames learned from (default: :func:`learn_span`); ``det``: the detector learned with
    (default: a new one), which holds the first edges' strength."""
    start, stop = learn_span(info, smallest_step)[:2] if span is None else span
    if highpass is None:
        highpass = learn_highpass(info, BLOCK_FRAMES, PAD_FRAMES, start, stop)
    det = BlockDetector(len(info.columns), smallest_step, MARGIN, PAD_FRAMES) if det is None else det
    read = _read_learning(info, highpass, det, start, stop)
    noise, located_noise, floor = _learned_noise(info, highpass, read)
    pos = np.concatenate(read.pos) if read.pos else np.zeros(0, np.int64)  # an empty span reads no block
    if pos.size == 0:
        raise _no_edges(info, start, read.others)
    y_wide = np.concatenate(read.wins)
    y = np.ascontiguousarray(train.cut(y_wide, train.TEMPLATE_HALF_SAMPLES, 0))  # learning may need more
    w = _Windows(pos, np.concatenate(read.sign), y, np.concatenate(read.simple), y_wide)
    if detect.dense_periodic(w.pos, w.sign):  # no edge alone: the whole period is learned instead
        return _learn_periodic(info, start, stop, cuts_s, w, located_noise)
    spans = _gap_spans(info, cuts_s)
    w, stretch = _away_from_gaps(w, spans, info.samplerate_hz)
    seeds = seed_phases(w.y_simple, noise[0]) + w.pos
    idx = _longest_train(w.pos, w.sign, stretch)
    if idx is not None:
        idx = train.clear_ends(w.pos, idx)
    fit, refused = (None, None) if idx is None else traincheck.checked_fit(
        w.y_wide[idx], w.pos[idx], seeds[idx], w.sign[idx] < 0, noise[0], f"{info.path}", info.samplerate_hz,
        rounding_errors(1.0 - info.clip_level, noise[0]),
        train.outside(w.pos, idx, spans.ravel() * info.samplerate_hz), train_name(w.pos, w.sign, info))
    if fit is not None:
        if located_noise[0] == floor and fit.residual_rms > floor:  # the quiet all one code: see the train's
            located_noise = (fit.residual_rms, *located_noise[1:])
        return fit.template, fit, located_noise, w.checked(idx), None
    span_s = (stop - start) / info.samplerate_hz
    return _learn_without_train(info, w, seeds, span_s, noise[0], located_noise, refused, read.swings,
                                smallest_step)


@dataclass
class _LearningRead:
    """What the learning pass read, block by block: the measurement channel's edges (positions, signs, their
    template and simple windows), each block's swings, each channel's quiet noise (restored, as recorded,
    and as an edge's fit sees it: pooled by :func:`_pool`), and whether another channel has steps."""

    noise: list[list[tuple[float, int]]]
    recorded: list[list[tuple[float, int]]]  # the same, before restoring
    fit: list[list[tuple[float, int]]]  # as an edge's fit sees it (crlb)
    pos: list[np.ndarray] = field(default_factory=list)
    sign: list[np.ndarray] = field(default_factory=list)
    wins: list[np.ndarray] = field(default_factory=list)
    simple: list[np.ndarray] = field(default_factory=list)
    swings: list[np.ndarray] = field(default_factory=list)
    others: bool = False  # steps elsewhere


def _read_learning(info: WavInfo, highpass: tuple[Highpass, ...], det: BlockDetector, start: int,
                   stop: int) -> _LearningRead:
    """The learning span's blocks read, restored, until LEARN_EDGES measurement-channel edges."""
    columns = range(len(info.columns))
    read = _LearningRead([[] for _ in columns], [[] for _ in columns], [[] for _ in columns])
    for recorded in iter_blocks(info, BLOCK_FRAMES, PAD_FRAMES, start, stop):
        block = restore_block(recorded, highpass)
        found = [det.steps(block, ch) for ch in columns]
        # the file's ends count as edges: one within a few samples of them is not detected, and its ringing
        # in a quiet chunk would raise the noise (docs/design.md §13); so does every channel's: crosstalk
        # makes its steps on the others too (highpass.learn_highpass)
        near = np.concatenate([p for p, *_ in found] + [[0, info.frames]]) - block.own_lo
        read.others = read.others or any(len(p) for p, *_ in found[1:])
        lo, hi = block.own_lo - block.first, block.own_hi - block.first
        for ch in columns:
            read.noise[ch].append(quiet_noise_rms(block.data[lo:hi, ch], near, MARGIN))
            read.fit[ch].append(quiet_noise_rms(block.data[lo:hi, ch], near, MARGIN, FIT_DEGREE))
            read.recorded[ch].append(quiet_noise_rms(recorded.data[lo:hi, ch], near, MARGIN))
            if ch == 0:
                _read_measurement(read, block, found[0][:2], info)
        if sum(len(p) for p in read.pos) >= LEARN_EDGES:
            break
    return read


def _read_measurement(read: _LearningRead, block: Block, found: tuple[np.ndarray, np.ndarray],
                      info: WavInfo) -> None:
    """A block's measurement-channel edges it owns, their swings and windows, added to ``read``: those
    whose template window lies within the block's data."""
    pos, sign = found
    own = (pos >= block.own_lo) & (pos < block.own_hi)
    lo, hi = block.own_lo - block.first, block.own_hi - block.first
    pos, sign = pos[own], sign[own]
    read.swings.append(chunk_swings(block.data[lo:hi, 0], pos - block.own_lo))
    fits = (pos + train.WIDE_WINDOW[0] >= block.first) & \
           (pos + train.WIDE_WINDOW[-1] < block.first + len(block.data))
    pos, sign = pos[fits], sign[fits]
    read.pos.append(pos)
    read.sign.append(sign)
    read.wins.append(windows(block, 0, pos, train.WIDE_WINDOW, info))
    read.simple.append(windows(block, 0, pos, np.arange(-SIMPLE_HALF, SIMPLE_HALF + 1), info))


def _learned_noise(info: WavInfo, highpass: tuple[Highpass, ...],
                   read: _LearningRead) -> tuple[tuple[float, ...], tuple[float, ...], float]:
    """Each channel's noise about a line (the train's checks take it), and as the edges' fits see it (their
    σ and bounds take it), never below the format's quantization noise LSB/√12, which is returned too;
    each channel's coupling checked against its noise restored and as recorded."""
    # never below the format's quantization noise (LSB/√12): a 16-bit card's quiet may be all one code.
    # There, an analog noise below one LSB does not show, yet the edges carry it: where the measurement
    # channel's noise is the floor, the train's fit residual (its samples' quantization and that noise) is
    # taken when larger (learn_capture; docs/design.md §13)
    floor = (1.0 - info.clip_level) / np.sqrt(12.0)
    for ch in range(len(info.columns)):
        check_restored(highpass[ch], _pool(read.noise[ch]), max(_pool(read.recorded[ch]), floor),
                       f"{info.path}", info.channel_name(ch))
    noise = tuple(p if not p < floor else floor for p in map(_pool, read.noise))
    located_noise = tuple(p if not p < floor else floor for p in map(_pool, read.fit))
    return noise, located_noise, floor


def _no_edges(info: WavInfo, start: int, others: bool) -> PintimeError:
    """The error of a learning span without measurement-channel edges, naming another channel's if any."""
    return PintimeError(f"{info.path}: no edges on the measurement ({info.channel_name(0)}) channel"
                        + (f" from {start / info.samplerate_hz:.1f} s" if start else "")
                        + ": silence, not a pintime capture, or edges so close together that the card's "
                          "ringing hides the noise they are told from (faster than fs/8, or not periodic)"
                        + (f"; the {info.channel_name(1)} channel has edges (--channel {info.columns[1]} "
                           "--reference none reads them)" if others else ""))


class _Windows(NamedTuple):
    """The learning span's measurement-channel edges: positions, signs, template windows (``y``: the
    template's support, ``y_wide``: the widest a learning may need) and the simple methods' windows."""

    pos: np.ndarray
    sign: np.ndarray
    y: np.ndarray
    y_simple: np.ndarray
    y_wide: np.ndarray

    def checked(self, sel: np.ndarray | None) -> list:
        """The edges ``sel`` that the other methods are checked on: positions, signs, simple windows, y."""
        return [self.pos[sel], self.sign[sel], self.y_simple[sel], self.y[sel]]


def _learn_periodic(info: WavInfo, start: int, stop: int, cuts_s: np.ndarray | None, w: _Windows,
                    located_noise: tuple[float, ...]) -> Learning:
    """A dense periodic signal's whole period learned (no edge alone), its run of evenly spaced edges the
    other methods' check, and each channel's noise its period's residual."""
    periodic = learn_from_capture(info, *_longest_uncut(start, stop, cuts_s, info.samplerate_hz),
                                  BLOCK_FRAMES, PAD_FRAMES)
    run = detect.find_periodic(w.pos, w.sign)  # evenly spaced as a train is: the other methods' check
    noise = tuple(n if own is None else own.residual_rms for n, own in zip(
        located_noise, (periodic, *periodic.others), strict=True))
    return periodic, None, noise, w.checked(run), None


def _gap_spans(info: WavInfo, cuts_s: np.ndarray | None) -> np.ndarray:
    """(start, end) rows in s, by their end: the sidecar's recording gaps and the ``cuts_s`` of lost audio."""
    gaps = read_gaps(info.path, info.frames)
    spans = np.zeros((0, 2)) if gaps is None else np.column_stack([gaps.times_s, gaps.times_s])
    if cuts_s is not None:
        spans = np.concatenate([spans, cuts_s])
        spans = spans[np.argsort(spans[:, 1])]
    return spans


def _away_from_gaps(w: _Windows, spans: np.ndarray, samplerate_hz: float) -> tuple[_Windows, np.ndarray]:
    """The edges whose windows see no gap's jump (no edge's shape; a train's line stops at one), and the
    stretch between gaps each lies in."""
    if not len(spans):
        return w, np.zeros(len(w.pos), np.int64)
    t, guard_s = w.pos / samplerate_hz, gap_guard_s(samplerate_hz)
    usable = ~np.any((t[:, None] >= spans[None, :, 0] - guard_s)
                     & (t[:, None] <= spans[None, :, 1] + guard_s), axis=1)
    w = _Windows(*(a[usable] for a in w))
    return w, np.searchsorted(spans[:, 1], w.pos / samplerate_hz)


def holds_frames(pos: np.ndarray, sign: np.ndarray, info: WavInfo) -> bool:
    """Whether the edges at ``pos`` (samples) hold pintime frames: a QUIET and a SYNC
    (:func:`detect.capture_inverted`)."""
    return detect.capture_inverted(pos / info.samplerate_hz, sign) is not None


def train_name(pos: np.ndarray, sign: np.ndarray, info: WavInfo) -> str:
    """What a run of evenly spaced edges is called: the calibration train in a capture whose edges hold
    pintime frames (:func:`holds_frames`), else a square wave."""
    return "calibration train" if holds_frames(pos, sign, info) else "square wave"


def _learn_without_train(info: WavInfo, w: _Windows, seeds: np.ndarray, span_s: float, noise: float,
                         located_noise: tuple[float, ...], refused: str | None, swings: list[np.ndarray],
                         smallest_step: float) -> Learning:
    """The template learned blind, from the isolated edges (also what checks the other methods), where no
    train was learned from: refused where the steps are noise, their gain changes, or learning fails."""
    alone = isolated_edges(w.pos)  # what checks the other methods, against the template's fit
    heights = step_heights(w.y[alone])
    height = float(np.median(np.abs(heights))) if len(heights) else np.inf
    if height < MIN_STEP_NOISE * noise:
        raise PintimeError(f"{info.path}: the steps found on the measurement ({info.channel_name(0)}) "
                           f"channel stand {height / noise:.2g}× its noise "
                           f"({noise:.2g} FS RMS): noise, not a pin's edges, which are too small to be "
                           "found, if there are any: raise the recording level (docs/hardware.md, wiring)")
    traincheck.check_gain(heights, w.sign[alone] < 0, f"{info.path}", span_s, "the edges' step height")
    try:
        frames = holds_frames(w.pos, w.sign, info)
        return (learn_blind(w.pos, w.sign, w.y, seeds, span_s, noise, frames), None, located_noise,
                w.checked(alone), refused)
    except PintimeError as err:  # name the capture, and the likely cause when the data shows it
        raise _blind_refused(info, err, w.pos, refused, swings, smallest_step) from None


def _blind_refused(info: WavInfo, err: PintimeError, pos: np.ndarray, refused: str | None,
                   swings: list[np.ndarray], smallest_step: float) -> PintimeError:
    """Why blind learning failed with ``err``: the channels swapped where the measurement channel holds the
    reference's signal, else ``err``, the train's refusal and automatic gain control where the swing shows
    it."""
    if is_reference(pos / info.samplerate_hz):
        pin = info.columns[0]
        fix = (f"--channel {info.columns[1]} --reference {pin}" if len(info.columns) > 1
               else "--channel with the pin's channel")
        return PintimeError(f"{info.path}: the measurement channel ({info.channel_name(0)}) holds a 1 s "
                            f"square wave, the clock reference's signal: the channels look swapped (try "
                            f"{fix})")
    swing = np.concatenate(swings)  # the swing's change, where it is not the pin's: AGC the likely cause
    change = train.gain_change(swing, np.zeros(len(swing), bool)) if smallest_step == 1.0 else 0.0
    agc = change > traincheck.GAIN_TOLERANCE
    why = [str(err)] + ([] if refused is None else [refused]) + (
        [traincheck.agc_reason("the signal's swing", "along the recording")] if agc else [])
    return PintimeError(f"{info.path}: " + "; ".join(why))


def _longest_train(pos: np.ndarray, sign: np.ndarray, stretch: np.ndarray) -> np.ndarray | None:
    """:func:`pintime.locate.shape.train.find_train` within each stretch between recording gaps: the longest
    train."""
    found = [np.flatnonzero(stretch == s) for s in np.unique(stretch)]
    found = [sel[idx] for sel in found if (idx := train.find_train(pos[sel], sign[sel])) is not None]
    return max(found, key=len, default=None)


def _pool(parts: list[tuple[float, int]]) -> float:
    """Pooled noise standard deviation from per-block estimates weighted by their chunk counts."""
    var = sum(s * s * n for s, n in parts if n)
    n = sum(n for _, n in parts if n)
    return float(np.sqrt(var / n)) if n else float("nan")


def _locate_block(method: str, table: TemplateTable | Periodic, det: BlockDetector, block: Block,
                  info: WavInfo, noise: tuple[float, ...]) -> list[np.ndarray]:
    """Located edges owned by one block: position (samples), sigma, amplitude, channel, signal sign.

    Template method: edges with a neighbour within reach are fitted together with all their neighbours,
    those in the block's padding included (an owned edge's neighbours are always in the block's data);
    only the owned edges are kept, the others are owned, and fitted again, by the next or previous block.
    """
    simple_off = np.arange(-SIMPLE_HALF, SIMPLE_HALF + 1)
    fit_off = np.arange(-FIT_HALF_SAMPLES, FIT_HALF_SAMPLES + 1)
    noise = tuple(n * scale for n, scale in zip(noise, det.noise_scale, strict=True))  # the level followed
    out = []
    for ch in range(len(info.columns)):
        pos, sign, kept = det.steps(block, ch)
        own = (pos >= block.own_lo) & (pos < block.own_hi) & kept
        if method != "template" or isinstance(table, Periodic):
            pos, sign = pos[own], sign[own]
        if not own.any():
            continue
        if isinstance(table, Periodic) and method == "template":  # against the signal's whole period
            out.append(periodic_rows(table, block, ch, pos, sign, info, noise[ch]))
            continue
        y_simple = windows(block, ch, pos, simple_off, info)
        if method == "template" and isinstance(table, TemplateTable):  # (a Periodic's went above)
            reach = table.reach_samples
            gap = np.diff(pos)
            alone = np.concatenate([[True], gap >= reach]) & np.concatenate([gap >= reach, [True]])
            phase, sigma, amp = np.empty(len(pos)), np.empty(len(pos)), np.empty(len(pos))
            y_fit = y_simple[:, SIMPLE_HALF + fit_off]
            seeds = seed_phases(y_simple, noise[ch])
            fit = fit_isolated(table, y_fit[alone], seeds[alone], noise[ch])
            phase[alone], sigma[alone], amp[alone] = fit.phase, fit.sigma, fit.amp
            if (~alone).any():
                x = block.data[:, ch]
                fit = fit_groups(table, x, pos[~alone] - block.first, seeds[~alone], noise[ch])
                phase[~alone], sigma[~alone], amp[~alone] = fit.phase, fit.sigma, fit.amp
            pos, sign, phase, sigma, amp = pos[own], sign[own], phase[own], sigma[own], amp[own]
        else:
            phase, sigma, amp = locate_single(method, table, noise[ch], y_simple, y_simple)
        out.append(np.stack([pos + phase, sigma, amp, np.full(len(pos), ch), sign]))
    return out


@dataclass(frozen=True)
class _Run:
    """What every pass over one capture shares: the file, the method and options, and where the learning
    span starts (its first block with an edge, and the first edge found before a later train)."""

    path: str | Path
    info: WavInfo
    method: str
    progress: bool
    cuts_s: np.ndarray | None
    smallest_step: float
    steps: bool
    start: int
    first_edge: int


@dataclass(frozen=True)
class _Learned:
    """What a learning pass over the frames ``span`` found (:func:`learn_capture`), the coupling it undid
    and the detector it learned with."""

    template: Template | Periodic
    train_fit: train.TrainFit | None
    noise: tuple[float, ...]
    train_data: list
    refused: str | None
    highpass: tuple[Highpass, ...]
    learning: BlockDetector
    span: tuple[int, int]


def locate_capture(path: str | Path, method: str | None = None, progress: bool = False,
                   measurement_channel: int = 0,
                   reference_channel: int | None | Literal["default"] = DEFAULT_REFERENCE,
                   cuts_s: np.ndarray | None = None, smallest_step: float = 1.0,
                   steps: bool = True, learn_before_s: float | None = None) -> CaptureEdges:
    """Locate every edge of the WAV capture ``path`` with ``method`` (default: template).

    ``measurement_channel`` and ``reference_channel`` are the file's channels (0-based) of the measurement
    pin and of the clock reference (None: none), as :func:`pintime.capture.wav.open_wav` takes them; the
    located edges are on :data:`pintime.edges.MEASUREMENT_CHANNEL` and
    :data:`pintime.edges.REFERENCE_CHANNEL` whichever file channels those are. ``cuts_s``: where the data
    shows lost or inserted audio the sidecar does not list, kept out of learning (:func:`learn_capture`).
    ``smallest_step`` below 1 (a resistor ladder, :mod:`pintime.ladder`) detects steps down to that
    fraction of the measurement channel's typical edge on every channel. ``steps``: keep each edge's
    step (``amp``; without it, 4 bytes an edge fewer, and no ``crlb_s``). ``learn_before_s``: the edge
    shape, the noise and the coupling are learned before this, and never again (learned across a change of
    the level, they hold neither level: docs/design.md §13).

    Passes: a learning pass over the learning span, then a locating pass over the whole capture. A
    learning across a change of the recording's level cannot hold either level, so the two are made once
    more, learned before the first change inside the learning span (never more than once): where the
    locating pass finds the change (:attr:`BlockDetector.level_changes`) before the span's end, or where
    the learning failed and the span shows a jump of the level (:func:`level_jump`, not for a ladder),
    and then only if the second learning holds a calibration train that ends JUMP_CLEAR_PERIODS of its
    periods before the jump (docs/design.md, "The level followed").

    Raises
    ------
    PintimeError
        Bad file (see :func:`pintime.capture.wav.open_wav`), silence, clipped edges, unknown method.
    """
    method = method or "template"
    if method not in METHODS:
        raise PintimeError(f"unknown edge method '{method}' (valid: {', '.join(METHODS)})")
    info = open_wav(path, measurement_channel, reference_channel)
    start, stop, first_edge = learn_span(info, smallest_step)
    grid_learned = _grid_first(info, method, smallest_step, learn_before_s, cuts_s, start, stop)
    if grid_learned is not None:
        return _grid_capture(info, grid_learned, start, first_edge)
    run = _Run(path, info, method, progress, cuts_s, smallest_step, steps, start, first_edge)
    if learn_before_s is not None:
        return _learn_then_locate(run, stop, learn_before_s)
    span = _learning_span(run, stop, None)
    try:
        learned = _learn(run, span)
    except PintimeError as err:  # learned across a jump of the level? Again before it, else say it
        jump = level_jump(info, *span) if smallest_step == 1.0 else None
        if jump is None:
            raise
        return _learned_before_jump(run, stop, jump, err)
    located = _locate(run, learned, relearned=False)
    if isinstance(located, CaptureEdges):
        return located
    return _learn_then_locate(run, stop, located)  # the level changed in the span: learned before it


def _grid_first(info: WavInfo, method: str, smallest_step: float, learn_before_s: float | None,
                cuts_s: np.ndarray | None, start: int, stop: int) -> GridLearned | None:
    """The response learned from edges on a grid without a calibration train, which the template method
    tries first on a pin's capture learned once (no ladder, no learning before a time, no cuts); None:
    the edges lie on no grid, or another learning is asked for."""
    if method == "template" and smallest_step == 1.0 and learn_before_s is None and cuts_s is None:
        return learn_grid(info, start, stop)
    return None


def growing_pass(path: str | Path, info: WavInfo, method: str) -> LocatingPass | str | None:
    """The locating pass of ``locate_capture(path, method, False, *channels, steps=False)`` begun, learned
    and nothing located yet, on a recording still written, of which ``info`` (the channels' too) describes
    the frames written so far: learned as on the whole file once these decide it (the scan for the learning
    span stopped in a block they hold with its padding, and they hold the span, its padding and the noise's
    margin: :func:`learn_span_decided`), None before. Why not, where the whole file is located in another
    way than one learning's pass (edges on a grid; a learning that fails, after which :func:`locate_capture`
    looks for a jump of the level) or the method cannot be checked."""
    (start, stop, first_edge), decided = learn_span_decided(info)
    if decided is None or decided + PAD_FRAMES > info.frames or stop + PAD_FRAMES + MARGIN > info.frames:
        return None
    run = _Run(path, info, method, False, None, 1.0, False, start, first_edge)
    try:
        if _grid_first(info, method, 1.0, None, None, start, stop) is not None:
            return "its edges lie on a grid (learned without a calibration train)"
        return LocatingPass.start(run, _learn(run, _learning_span(run, stop, None)), relearned=False)
    except PintimeError as err:
        return f"learning from its first seconds failed ({err})"


def _learn_then_locate(run: _Run, stop: int, before_s: float) -> CaptureEdges:
    """The second passes: learned before ``before_s`` (a change of the level), then located, once."""
    located = _locate(run, _learn(run, _learning_span(run, stop, before_s)), relearned=True)
    assert isinstance(located, CaptureEdges)  # a pass learned again never stops at a change
    return located


def _learning_span(run: _Run, stop: int, before_s: float | None) -> tuple[int, int]:
    """The frames a learning pass reads: the learning span, up to ``before_s`` (a change of the level)."""
    info = run.info
    span = (run.start, stop if before_s is None else min(stop, int(before_s * info.samplerate_hz)))
    if span[1] <= span[0]:  # a level change found before the first edge: nothing before it to learn from
        raise PintimeError(f"{run.path}: the recording's level changed at {span[1] / info.samplerate_hz:.2f} "
                           f"s, before the first edges ({run.start / info.samplerate_hz:.2f} s): nothing "
                           "before it to learn the card's response from; set the input gain before the run "
                           "starts, and leave it (docs/hardware.md, step 4)")
    return span


def _learn(run: _Run, span: tuple[int, int]) -> _Learned:
    """A learning pass over the frames ``span``: the coupling, then the edge shape and the noise."""
    learning = BlockDetector(len(run.info.columns), run.smallest_step, MARGIN, PAD_FRAMES)
    highpass = learn_highpass(run.info, BLOCK_FRAMES, PAD_FRAMES, *span)
    template, train_fit, noise, train_data, refused = learn_capture(run.info, run.cuts_s, highpass,
                                                                    run.smallest_step, span, learning)
    return _Learned(template, train_fit, noise, train_data, refused, highpass, learning, span)


def _learned_before_jump(run: _Run, stop: int, jump: tuple[float, float], err: PintimeError) -> CaptureEdges:
    """The capture learned before the level's ``jump`` (s, ratio) after a learning across it failed with
    ``err``: kept only where it holds a whole calibration train clear of the jump, else refused with both."""
    why = (f"{err}; the recording's level changed {jump[1]:.2g}× at {jump[0]:.2f} s, within the first "
           "seconds the card's response is learned from: set the input gain before the run starts, and "
           "leave it (docs/hardware.md, step 4)")
    try:
        before = _learn_then_locate(run, stop, jump[0])
    except PintimeError:
        raise PintimeError(why) from None
    fit = before.train  # learned from a whole calibration train, not one the jump cut short
    if fit is None or fit.first_samples + (fit.edges + JUMP_CLEAR_PERIODS) * fit.period_samples > \
            jump[0] * run.info.samplerate_hz:
        raise PintimeError(why) from None
    return before


def _locate(run: _Run, learned: _Learned, relearned: bool) -> CaptureEdges | float:
    """The locating pass with what ``learned`` holds, or, where the level changed inside the learning span
    and the pass is not ``relearned`` already, the time (s) of that change, to learn before."""
    located = LocatingPass.start(run, learned, relearned)
    change = _scan(located)
    if change is not None:
        return change / run.info.samplerate_hz
    return located.result()


def _method_error(run: _Run, learned: _Learned,
                  table: TemplateTable | Periodic) -> tuple[float | None, float]:
    """The method's error on the train (known before locating), so that each block's edges are final at
    once; a dense periodic signal's run is one too, for the methods other than its own fit; without either,
    the isolated edges blind learning used, about the template's fit."""
    train_fit, train_data, method = learned.train_fit, learned.train_data, run.method
    if method != "template" and train_fit is None and not len(train_data[0]):  # learned from dense edges
        raise PintimeError(f"{run.path}: no edge stands alone and there is no calibration train, so the "
                           f"{method} method's error cannot be measured: use --method template")
    knot_every = (train_fit.knot_edges if train_fit is not None else
                  train.knot_edges((train_data[0][-1] - train_data[0][0]) / (len(train_data[0]) - 1))
                  if isinstance(learned.template, Periodic) else 0)
    return (method_error(method, table, learned.noise[0], train_data, knot_every)
            if train_data and (train_fit is not None or method != "template") else (None, 0.0))


def _scan(located: LocatingPass) -> float | None:
    """Every block from the learning span's start located and kept; or, where the pass stops at a change of
    the level inside the learning span (:meth:`LocatingPass.feed`), the frame of that change."""
    run = located.run
    reader = located.blocks(run.info)
    blocks = reader
    if run.progress:
        from tqdm import tqdm  # only for long runs on a terminal

        blocks = tqdm(blocks, total=-(-(run.info.frames - located.next_frame) // BLOCK_FRAMES), unit="block",
                      desc="edges")
    for block in blocks:
        change = located.feed(block)
        if change is not None:
            reader.close()
            return change
    return None


@dataclass
class LocatingPass:
    """The locating pass of one learning, block by block: what it locates with (``learned``, its template's
    ``table``, the coupling it undoes), the detector that follows the level, the edges kept so far, the last
    block (not final: a fall of the level in the next one locates it again) and the next block's first
    owned frame. Fed the capture's blocks in order from the learning span's start, by :func:`_scan` over a
    whole file or, while a recording is written, as its blocks are complete
    (:mod:`pintime.locate.stream.growing`): the same blocks give the same edges."""

    run: _Run
    learned: _Learned
    table: TemplateTable | Periodic
    highpass: tuple[Highpass, ...]
    det: BlockDetector
    results: EdgeStore
    bend: BendSums | None
    rms: float | None  # the method's error on the train (samples), None: not measured
    relearned: bool
    previous: Located | None = None  # the last block fed, its edges, the count at the file's ends before it
    next_frame: int = 0

    @classmethod
    def start(cls, run: _Run, learned: _Learned, relearned: bool) -> LocatingPass:
        """A pass with nothing located yet: the method's error, the detector and the store set up."""
        template, info = learned.template, run.info
        table: TemplateTable | Periodic
        highpass = learned.highpass
        if isinstance(template, Periodic):  # located as recorded (periodic.learn_from_capture)
            table, highpass = template, tuple(Highpass((), 0.0, h.samplerate_hz) for h in highpass)
        else:
            table = TemplateTable.build(template)
        rms, own_sigma = _method_error(run, learned, table)
        det = BlockDetector(len(info.columns), run.smallest_step, MARGIN, PAD_FRAMES)
        if relearned and not isinstance(template, Periodic):  # the level before its change
            # (a first block that holds a rise would take half its peak)
            det.swing = list(learned.learning.swing)
        if isinstance(table, TemplateTable):  # the reach of a neighbour's response into an edge's window
            det.reach = neighbour_reach(table, run.method == "template")
        det.steps_fitted = run.method == "template"
        # the count method's sigma is its quantization model's (locate/locators/count.py), never raised by
        # the train's
        results = EdgeStore(learned.noise, None if run.method == "count" else rms, own_sigma,
                            info.samplerate_hz, run.steps,
                            template.sigma_scale if isinstance(template, Template) else 1.0)
        bend = BendSums(info.samplerate_hz, table) if isinstance(table, TemplateTable) and \
            run.method == "template" else None
        # nothing before the learning span: its start is the first block with an edge
        return cls(run, learned, table, highpass, det, results, bend, rms, relearned,
                   next_frame=learned.span[0])

    def blocks(self, info: WavInfo, stop_frame: int | None = None) -> Generator[Block, None, None]:
        """The blocks of ``info`` from the next one to ``stop_frame`` (default: the file's end), their
        coupling undone, read ahead in a second thread."""
        return ahead(iter_blocks(info, BLOCK_FRAMES, PAD_FRAMES, self.next_frame, stop_frame),
                     lambda b: restore_block(b, self.highpass))

    def feed(self, block: Block) -> float | None:
        """The next block located (the one before it kept, final); where not ``relearned`` and the level
        changed inside the learning span, the frame of that change: the pass must stop there (the changes
        come in time order: no later block finds an earlier one)."""
        current, previous = _block_edges(self.run, self.table, self.det, block, self.learned.noise,
                                         self.previous)
        if previous is not None:
            _keep(self.results, self.bend, previous)
        self.previous, self.next_frame = current, block.own_hi
        early = [at for at, *_ in self.det.level_changes if at < self.learned.span[1]]
        if early and not self.relearned:  # learned across a change of level: all again, learned before it
            return early[0]
        return None

    def again_before(self, before_s: float) -> LocatingPass:
        """The pass that follows one stopped at a change of the level (:meth:`feed`): learned again before
        ``before_s``, nothing located yet (as :func:`locate_capture` makes it)."""
        run = self.run
        return LocatingPass.start(run, _learn(run, _learning_span(run, self.learned.span[1], before_s)),
                                  relearned=True)

    def copy(self) -> LocatingPass:
        """A pass that goes on from where this one is, apart from it (what is learned is shared: no pass
        changes it)."""
        return replace(self, det=deepcopy(self.det), results=deepcopy(self.results), bend=deepcopy(self.bend))

    def reopened(self, info: WavInfo) -> None:
        """Go on in the file ``info`` describes: the same recording, further written (its edges'
        facts, such as the file's end, are this file's)."""
        self.run = replace(self.run, info=info)

    def result(self) -> CaptureEdges:
        """The located edges of the capture once every block is fed (this pass is spent)."""
        if self.previous is not None:
            _keep(self.results, self.bend, self.previous)
        return _capture_edges(self.run, self.learned, self.highpass, self.det, self.results, self.bend,
                              self.rms)


# a block, its located edges, and the count of edges at the file's ends before it
Located = tuple[Block, list[np.ndarray], int]


def _block_edges(run: _Run, table: TemplateTable | Periodic, det: BlockDetector, block: Block,
                 noise: tuple[float, ...], previous: Located | None) -> tuple[Located, Located | None]:
    """A block's located edges, and the block before located again where the recording's level fell in
    this one: where it moved, this block is located again at the new level."""
    method, info = run.method, run.info
    counted = det.at_file_ends
    located = _locate_block(method, table, det, block, info, noise)
    moved, fell = det.track(located)
    if moved:  # the recording's level moved: this block again, and the one before after a fall
        det.at_file_ends = counted
        if fell and previous is not None:
            det.at_file_ends = previous[2]
            again = _locate_block(method, table, det, previous[0], info, noise)
            previous = (previous[0], det.pin_steps(again), previous[2])
            counted = det.at_file_ends
        located = det.pin_steps(_locate_block(method, table, det, block, info, noise))
        det.settle(located)
    return (block, located, counted), previous


def _capture_edges(run: _Run, learned: _Learned, highpass: tuple[Highpass, ...], det: BlockDetector,
                   results: EdgeStore, bend: BendSums | None, rms: float | None) -> CaptureEdges:
    """The located edges of the capture, with what was learned, checked for a bent input and for a periodic
    signal's steady gain."""
    path, info, span, rate = run.path, run.info, learned.span, run.info.samplerate_hz
    time_s, channel, sign, sigma_s, amp = results.arrays()
    pin = sigma_s[:np.searchsorted(channel, 1)]  # (channel-major) a median of at most 2¹⁶: no copy of all
    pin_sigma_s = float(np.median(pin[::max(1, len(pin) >> 16)])) if len(pin) else np.nan
    bent = None if bend is None or det.level_changes else bend.result(pin_sigma_s)
    refuse_bent(bent, str(path))
    release_free_memory()
    if isinstance(learned.template, Periodic) and len(amp):  # each edge's gain against the period's: steady
        in_span = (channel == 0) & (time_s < span[1] / rate)
        traincheck.check_gain(np.abs(amp[in_span]), sign[in_span] < 0, f"{path}",
                              (span[1] - span[0]) / rate, "the periodic signal's step height")
    edges = Edges(time_s, channel, sign, sigma_s, 1.0, str(path))
    on0 = edges.on(0)  # channel-major: views
    inverted = detect.capture_inverted(on0.time, on0.polarity)
    if inverted:
        np.negative(sign, out=sign)  # now the pin's polarity
    method_rms = None if rms is None else rms / rate
    skipped = None if run.first_edge == span[0] else (run.first_edge / rate, span[0] / rate)
    changes = tuple((frame / rate, ch, gain) for frame, ch, gain in det.level_changes)
    return CaptureEdges(edges, run.method, inverted, learned.noise, learned.template, learned.train_fit,
                        method_rms, info, learned.refused, highpass, amp, (span[0] / rate, span[1] / rate),
                        skipped, results.unplaced, det.at_file_ends, changes, bent)


def _longest_uncut(start: int, stop: int, cuts_s: np.ndarray | None, samplerate_hz: float) -> tuple[int, int]:
    """The longest stretch of frames ``start … stop`` that no cut (rows of start, end in s) crosses: a
    periodic signal's period folded across a jump in its phase is no period's shape."""
    if cuts_s is None or not len(cuts_s):
        return start, stop
    bounds = np.clip(np.rint(np.asarray(cuts_s) * samplerate_hz).astype(np.int64), start, stop)
    lo = np.concatenate([[start], bounds[:, 1]])
    hi = np.concatenate([bounds[:, 0], [stop]])
    k = int(np.argmax(hi - lo))
    return int(lo[k]), int(hi[k])


def _grid_capture(info: WavInfo, learned: GridLearned, start: int, first_edge: int) -> CaptureEdges:
    """The capture located against the response learned from its grid
    (:mod:`pintime.locate.stream.gridcapture`)."""
    edges, amp, dropped, at_ends = locate_grid(info, learned, start)
    rate = info.samplerate_hz
    last = min(learned.edges, len(edges.time))  # the span learned from ends at its last edge
    span_s = (start / rate, float(edges.time[last - 1]) if last else start / rate)
    return CaptureEdges(edges, "template", None, (learned.shape.noise_rms,), learned, None, None, info, None,
                        (), amp, span_s, None if first_edge == start else (first_edge / rate, start / rate),
                        dropped, at_ends)


def _keep(results: EdgeStore, bend: BendSums | None, block: tuple[Block, list[np.ndarray], int]) -> None:
    """A block's located edges, final: kept, and their shape against the recorded level summed (bend.py)."""
    results.add(block[1])
    if bend is not None:
        bend.add(block[0], block[1])
