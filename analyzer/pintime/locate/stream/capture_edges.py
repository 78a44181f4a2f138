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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

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
# whose median stands below this many times the noise are noise (at 0.001 FS on `laptop-48k`, 23× its
# noise, the steps found stood 1.6× it, and were refused as automatic gain control)
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


def learn_capture(info: WavInfo, cuts_s: np.ndarray | None = None,
                  highpass: tuple[Highpass, ...] | None = None, smallest_step: float = 1.0,
                  span: tuple[int, int] | None = None, det: BlockDetector | None = None) -> tuple[
        Template | Periodic, train.TrainFit | None, tuple[float, ...], list, str | None]:
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
    columns = range(len(info.columns))
    det = BlockDetector(len(columns), smallest_step, MARGIN, PAD_FRAMES) if det is None else det
    pos_all, sign_all, wins, simple, swings, others = [], [], [], [], [], False  # others: steps elsewhere
    noise_parts: list[list[tuple[float, int]]] = [[] for _ in columns]
    recorded_parts: list[list[tuple[float, int]]] = [[] for _ in columns]  # the same, before restoring
    fit_parts: list[list[tuple[float, int]]] = [[] for _ in columns]  # as an edge's fit sees it (crlb)
    for recorded in iter_blocks(info, BLOCK_FRAMES, PAD_FRAMES, start, stop):
        block = restore_block(recorded, highpass)
        found = [det.steps(block, ch) for ch in columns]
        # the file's ends count as edges: one within a few samples of them is not detected, and its ringing
        # in a quiet chunk had made the noise 5× too large (a capture cut 10 samples after one); so does
        # every channel's: crosstalk makes its steps on the others too (highpass.learn_highpass)
        near = np.concatenate([p for p, *_ in found] + [[0, info.frames]]) - block.own_lo
        others = others or any(len(p) for p, *_ in found[1:])
        for ch in columns:
            pos, sign, _ = found[ch]
            own = (pos >= block.own_lo) & (pos < block.own_hi)
            lo, hi = block.own_lo - block.first, block.own_hi - block.first
            noise_parts[ch].append(quiet_noise_rms(block.data[lo:hi, ch], near, MARGIN))
            fit_parts[ch].append(quiet_noise_rms(block.data[lo:hi, ch], near, MARGIN, FIT_DEGREE))
            recorded_parts[ch].append(quiet_noise_rms(recorded.data[lo:hi, ch], near, MARGIN))
            if ch == 0:
                pos, sign = pos[own], sign[own]
                swings.append(chunk_swings(block.data[lo:hi, 0], pos - block.own_lo))
                fits = (pos + train.WIDE_WINDOW[0] >= block.first) & \
                       (pos + train.WIDE_WINDOW[-1] < block.first + len(block.data))
                pos, sign = pos[fits], sign[fits]
                pos_all.append(pos)
                sign_all.append(sign)
                wins.append(windows(block, 0, pos, train.WIDE_WINDOW, info))
                simple.append(windows(block, 0, pos, np.arange(-SIMPLE_HALF, SIMPLE_HALF + 1), info))
        if sum(len(p) for p in pos_all) >= LEARN_EDGES:
            break
    # never below the format's quantization noise (LSB/√12): a 16-bit card's quiet may be all one code.
    # There, an analog noise below one LSB does not show, yet the edges carry it: where the measurement
    # channel's noise is the floor, the train's fit residual (its samples' quantization and that noise) is
    # taken when larger (`usb-96k` at 48 kHz 16-bit: 1.16× the floor, its edges 1.56× their bound before)
    floor = (1.0 - info.clip_level) / np.sqrt(12.0)
    for ch in columns:
        check_restored(highpass[ch], _pool(noise_parts[ch]), max(_pool(recorded_parts[ch]), floor),
                       f"{info.path}", info.channel_name(ch))
    noise = tuple(p if not p < floor else floor for p in map(_pool, noise_parts))
    # the edges' σ and bounds take the noise their fits see; the train's checks the noise about a line
    located_noise = tuple(p if not p < floor else floor for p in map(_pool, fit_parts))
    pos = np.concatenate(pos_all) if pos_all else np.zeros(0, np.int64)  # an empty span reads no block
    if pos.size == 0:
        raise PintimeError(f"{info.path}: no edges on the measurement ({info.channel_name(0)}) channel"
                           + (f" from {start / info.samplerate_hz:.1f} s" if start else "")
                           + ": silence, not a pintime capture, or edges so close together that the card's "
                             "ringing hides the noise they are told from (faster than fs/8, or not periodic)"
                           + (f"; the {info.channel_name(1)} channel has edges (--channel {info.columns[1]} "
                              "--reference none reads them)" if others else ""))
    sign, y_wide, y_simple = np.concatenate(sign_all), np.concatenate(wins), np.concatenate(simple)
    y = np.ascontiguousarray(train.cut(y_wide, train.TEMPLATE_HALF_SAMPLES, 0))  # learning may need more
    span_s = (stop - start) / info.samplerate_hz
    if detect.dense_periodic(pos, sign):  # no edge alone: the whole period is learned instead
        periodic = learn_from_capture(info, *_longest_uncut(start, stop, cuts_s, info.samplerate_hz),
                                      BLOCK_FRAMES, PAD_FRAMES)
        run = detect.find_periodic(pos, sign)  # evenly spaced as a train is: the other methods' check
        noise = tuple(n if own is None else own.residual_rms for n, own in zip(
            located_noise, (periodic, *periodic.others), strict=True))
        return periodic, None, noise, [pos[run], sign[run], y_simple[run], y[run]], None
    gaps = read_gaps(info.path)
    stretch = np.zeros(len(pos), np.int64)
    spans = np.zeros((0, 2)) if gaps is None else np.column_stack([gaps.times_s, gaps.times_s])
    if cuts_s is not None:
        spans = np.concatenate([spans, cuts_s])
        spans = spans[np.argsort(spans[:, 1])]
    if len(spans):  # a window that sees a gap's jump is no edge's shape; a train's line stops at one
        t, guard_s = pos / info.samplerate_hz, gap_guard_s(info.samplerate_hz)
        usable = ~np.any((t[:, None] >= spans[None, :, 0] - guard_s)
                         & (t[:, None] <= spans[None, :, 1] + guard_s), axis=1)
        pos, sign, y, y_simple = pos[usable], sign[usable], y[usable], y_simple[usable]
        y_wide = y_wide[usable]
        stretch = np.searchsorted(spans[:, 1], pos / info.samplerate_hz)
    seeds = seed_phases(y_simple, noise[0]) + pos
    idx = _longest_train(pos, sign, stretch)
    if idx is not None:
        idx = train.clear_ends(pos, idx)
    fit, refused = (None, None) if idx is None else traincheck.checked_fit(
        y_wide[idx], pos[idx], seeds[idx], sign[idx] < 0, noise[0], f"{info.path}", info.samplerate_hz,
        rounding_errors(1.0 - info.clip_level, noise[0]),
        train.outside(pos, idx, spans.ravel() * info.samplerate_hz))
    if fit is not None:
        if located_noise[0] == floor and fit.residual_rms > floor:  # the quiet all one code: see the train's
            located_noise = (fit.residual_rms, *located_noise[1:])
        return fit.template, fit, located_noise, [pos[idx], sign[idx], y_simple[idx], y[idx]], None
    alone = isolated_edges(pos)  # what checks the other methods, against the template's fit
    heights = step_heights(y[alone])
    height = float(np.median(np.abs(heights))) if len(heights) else np.inf
    if height < MIN_STEP_NOISE * noise[0]:
        raise PintimeError(f"{info.path}: the steps found on the measurement ({info.channel_name(0)}) "
                           f"channel stand {height / noise[0]:.2g}× its noise "
                           f"({noise[0]:.2g} FS RMS): noise, not a pin's edges, which are too small to be "
                           "found, if there are any: raise the recording level (docs/hardware.md, wiring)")
    traincheck.check_gain(heights, sign[alone] < 0, f"{info.path}", span_s, "the edges' step height")
    try:
        frames = detect.capture_inverted(pos / info.samplerate_hz, sign) is not None  # QUIET + SYNC seen
        return (learn_blind(pos, sign, y, seeds, span_s, noise[0], frames), None, located_noise,
                [pos[alone], sign[alone], y_simple[alone], y[alone]], refused)
    except PintimeError as err:  # name the capture, and the likely cause when the data shows it
        if is_reference(pos / info.samplerate_hz):
            pin = info.columns[0]
            fix = (f"--channel {info.columns[1]} --reference {pin}" if len(info.columns) > 1
                   else "--channel with the pin's channel")
            raise PintimeError(f"{info.path}: the measurement channel ({info.channel_name(0)}) holds a 1 s "
                               f"square wave, the clock reference's signal: the channels look swapped (try "
                               f"{fix})") from None
        swing = np.concatenate(swings)  # the swing's change, where it is not the pin's: AGC the likely cause
        change = train.gain_change(swing, np.zeros(len(swing), bool)) if smallest_step == 1.0 else 0.0
        agc = change > traincheck.GAIN_TOLERANCE
        why = [str(err)] + ([] if refused is None else [refused]) + (
            [traincheck.agc_reason("the signal's swing", "along the recording")] if agc else [])
        raise PintimeError(f"{info.path}: " + "; ".join(why)) from None


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
    shape, the noise and the coupling are learned before this (where the recording's level changed inside
    the learning span, which is then located again: learned across a change at 3.5-7 s of a 48 kHz
    capture, 0.4× or 2×, they were refused for misleading reasons or read Differential 1000× 6 ns off).

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
    if method == "template" and smallest_step == 1.0 and learn_before_s is None and cuts_s is None:
        learned = learn_grid(info, start, stop)  # edges on a grid, without a calibration train
        if learned is not None:
            return _grid_capture(info, learned, start, first_edge)
    span = (start, stop if learn_before_s is None else min(stop, int(learn_before_s * info.samplerate_hz)))
    if span[1] <= span[0]:  # a level change found before the first edge: nothing before it to learn from
        raise PintimeError(f"{path}: the recording's level changed at {span[1] / info.samplerate_hz:.2f} s, "
                           f"before the first edges ({start / info.samplerate_hz:.2f} s): nothing before "
                           "it to learn the card's response from; set the input gain before the run "
                           "starts, and leave it (docs/hardware.md, step 4)")
    learning = BlockDetector(len(info.columns), smallest_step, MARGIN, PAD_FRAMES)
    try:
        highpass = learn_highpass(info, BLOCK_FRAMES, PAD_FRAMES, *span)
        template, train_fit, noise, train_data, refused = learn_capture(info, cuts_s, highpass, smallest_step,
                                                                        span, learning)
    except PintimeError as err:  # learned across a jump of the level? Again before it, else say it
        jump = level_jump(info, *span) if learn_before_s is None and smallest_step == 1.0 else None
        if jump is None:
            raise
        why = (f"{err}; the recording's level changed {jump[1]:.2g}× at {jump[0]:.2f} s, within the first "
               "seconds the card's response is learned from: set the input gain before the run starts, and "
               "leave it (docs/hardware.md, step 4)")
        try:
            before = locate_capture(path, method, progress, measurement_channel, reference_channel, cuts_s,
                                    smallest_step, steps, jump[0])
        except PintimeError:
            raise PintimeError(why) from None
        fit = before.train  # learned from a whole calibration train, not one the jump cut short
        if fit is None or fit.first_samples + (fit.edges + JUMP_CLEAR_PERIODS) * fit.period_samples > \
                jump[0] * info.samplerate_hz:
            raise PintimeError(why) from None
        return before
    table: TemplateTable | Periodic
    if isinstance(template, Periodic):  # located as recorded (periodic.learn_from_capture)
        table, highpass = template, tuple(Highpass((), 0.0, h.samplerate_hz) for h in highpass)
    else:
        table = TemplateTable.build(template)
    # the method's error on the train (known before locating), so that each block's edges are final at once;
    # a dense periodic signal's run is one too, for the methods other than its own fit; without either, the
    # isolated edges blind learning used, about the template's fit
    if method != "template" and train_fit is None and not len(train_data[0]):  # learned from dense edges
        raise PintimeError(f"{path}: no edge stands alone and there is no calibration train, so the {method} "
                           "method's error cannot be measured: use --method template")
    knot_every = (train_fit.knot_edges if train_fit is not None else
                  train.knot_edges((train_data[0][-1] - train_data[0][0]) / (len(train_data[0]) - 1))
                  if isinstance(template, Periodic) else 0)
    rms, own_sigma = (method_error(method, table, noise[0], train_data, knot_every)
                      if train_data and (train_fit is not None or method != "template") else (None, 0.0))
    det = BlockDetector(len(info.columns), smallest_step, MARGIN, PAD_FRAMES)
    if learn_before_s is not None and not isinstance(template, Periodic):  # the level before its change
        det.swing = list(learning.swing)  # (a first block that holds a rise would take half its peak)
    if isinstance(table, TemplateTable):  # the reach of a neighbour's response into an edge's window
        det.reach = neighbour_reach(table, method == "template")
    det.steps_fitted = method == "template"
    # the count method's sigma is its quantization model's (locate/locators/count.py), never raised by the
    # train's
    results = EdgeStore(noise, None if method == "count" else rms, own_sigma, info.samplerate_hz, steps,
                        template.sigma_scale if isinstance(template, Template) else 1.0)
    # nothing before the learning span: its start is the first block with an edge
    reader = ahead(iter_blocks(info, BLOCK_FRAMES, PAD_FRAMES, span[0]), lambda b: restore_block(b, highpass))
    blocks = reader
    if progress:
        from tqdm import tqdm  # only for long runs on a terminal

        blocks = tqdm(blocks, total=-(-(info.frames - span[0]) // BLOCK_FRAMES), unit="block", desc="edges")
    bend = BendSums(info.samplerate_hz, table) if isinstance(table, TemplateTable) and method == "template" \
        else None
    previous = None  # the last block, its edges and the count of edges at the file's ends before it
    for block in blocks:
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
        if previous is not None:
            _keep(results, bend, previous)
        previous = (block, located, counted)
        early = [at for at, *_ in det.level_changes if at < span[1]]
        if early and learn_before_s is None:  # learned across a change of level: all again, learned before it
            reader.close()  # (the changes come in time order: no later block finds an earlier one)
            return locate_capture(path, method, progress, measurement_channel, reference_channel, cuts_s,
                                  smallest_step, steps, early[0] / info.samplerate_hz)
    if previous is not None:
        _keep(results, bend, previous)
    time_s, channel, sign, sigma_s, amp = results.arrays()
    pin = sigma_s[:np.searchsorted(channel, 1)]  # (channel-major) a median of at most 2¹⁶: no copy of all
    pin_sigma_s = float(np.median(pin[::max(1, len(pin) >> 16)])) if len(pin) else np.nan
    bent = None if bend is None or det.level_changes else bend.result(pin_sigma_s)
    refuse_bent(bent, str(path))
    release_free_memory()
    if isinstance(template, Periodic) and len(amp):  # each edge's gain against the period's: steady
        learned = (channel == 0) & (time_s < span[1] / info.samplerate_hz)
        traincheck.check_gain(np.abs(amp[learned]), sign[learned] < 0, f"{path}",
                              (span[1] - span[0]) / info.samplerate_hz, "the periodic signal's step height")
    edges = Edges(time_s, channel, sign, sigma_s, 1.0, str(path))
    on0 = edges.on(0)  # channel-major: views
    inverted = detect.capture_inverted(on0.time, on0.polarity)
    if inverted:
        np.negative(sign, out=sign)  # now the pin's polarity
    method_rms = None if rms is None else rms / info.samplerate_hz
    return CaptureEdges(edges, method, inverted, noise, template, train_fit, method_rms, info, refused,
                        highpass, amp, (span[0] / info.samplerate_hz, span[1] / info.samplerate_hz),
                        None if first_edge == span[0] else (first_edge / info.samplerate_hz,
                                                            span[0] / info.samplerate_hz), results.unplaced,
                        det.at_file_ends, tuple((frame / info.samplerate_hz, channel, gain)
                                                for frame, channel, gain in det.level_changes), bent)


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
