"""The analysis pipeline: capture → edges → clock calibration → frames → the capture's program's estimates
(:mod:`pintime.programs`: Table 1, Table 2, user functions, micro-benchmarks, the kernel). ``pintime
analyze``, ``pintime validate`` and the benchmarks all call :func:`analyze`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pintime import clock as clk
from pintime.capture.edgelist import read_edge_list
from pintime.capture.gaps import RecordingGaps, drop_near_gaps, read_gaps
from pintime.capture.sniff import sniff
from pintime.capture.vcd import read_vcd
from pintime.capture.wav import DEFAULT_CHANNELS, DEFAULT_REFERENCE, Channels, open_wav
from pintime.edges import MEASUREMENT_CHANNEL, REFERENCE_CHANNEL, Edges
from pintime.errors import PintimeError
from pintime.estimate.shared import estimate_means, with_shared_error
from pintime.estimate.slowclock import SlowClock, slow_clock, slow_clock_json
from pintime.frames import FORMAT_VERSION, Frame, FrameDecode, ScaledTimes, decode_between_gaps
from pintime.ladder import LADDER, Attribution, attribute
from pintime.locate.locators.fit import TemplateTable
from pintime.locate.locators.methods import METHODS
from pintime.locate.shape.bend import Bend
from pintime.locate.shape.periodic import Periodic
from pintime.locate.shape.quantization import DRAWS as ROUNDING_DRAWS
from pintime.locate.shape.quantization import QuantizationModel, analog_noise_lsb, offsets_lsb, shared
from pintime.locate.shape.template_error import DrawModel
from pintime.locate.shape.train import TrainFit
from pintime.locate.stream.capture_edges import CaptureEdges, gap_guard_s, locate_capture
from pintime.locate.stream.store import release_free_memory
from pintime.lost_audio import LostAudio, cut_spans, periodic_jumps, reconcile
from pintime.programs.base import Inputs, Program, same_firmware
from pintime.programs.registry import program_of

# The learned template's error is worked out on a capture's first this many edges, or more until their
# frames give every estimate: the error is the same in every repetition, and time and memory stay bounded
# (docs/design.md §11 has the figures that chose it).
DRAW_EDGES = 1 << 16
SCHEMA_VERSION = 2  # of the analyze JSON (docs/design.md §6): 2 gives a program's keys alone


@dataclass(frozen=True, kw_only=True)
class Analysis:
    """Everything ``analyze`` found in one capture: its facts, and its program's result."""

    path: Path
    method: str  # edge locator used ("template", "inflection", "threshold"), or "exact" for VCD/edge lists
    edges: Edges
    clock: clk.Clock
    decode: FrameDecode
    run: dict[str, int]  # the RUN frames' fields (all equal)
    program: Program  # the RUN frames' program (pintime.programs)
    result: Any  # what the program estimated (Program.estimate): Table 1, Table 2, user functions, …
    missing: int | None  # frames the END frame counts that were neither decoded nor rejected
    # calibration-train period error after calibration, ppm ± 1σ, and its halves' difference (the wander)
    cal_ppm: tuple[float, float, float] | None
    gaps: RecordingGaps | None = None  # a recording's gaps (its sidecar), None without any
    lost_to_gaps: int = 0  # frames cut by a recording gap (listed or found): counted, never decoded
    lost_audio: LostAudio | None = None  # WAVs: lost audio found from the data, against the listed gaps
    slow_clock: SlowClock | None = None  # --method count: the slow-clock model beside every estimate
    ladder: Attribution | None = None  # a resistor-ladder capture (pintime.ladder): its edges' attribution
    skipped_s: tuple[float, float] | None = None  # WAVs: edges left out before a later run's train
    unplaced: int = 0  # WAVs: edges detected that the method could not place (left out)
    template_draws: int = 0  # draws of the learned template's error in every CI (0: none, not assessed)
    # the pin's step and the analog noise (LSB) of a recording whose rounding is in every CI (quieter than
    # one LSB: locate/shape/quantization.py), None where it is not (noise enough, float samples, no train)
    rounding_lsb: tuple[float, float] | None = None
    at_file_ends: int = 0  # WAVs: edges too near the file's start or end to be located, and their chains
    # WAVs: where the recording's level changed (CaptureEdges.level_changes): time (s), channel, level
    level_changes: tuple[tuple[float, int, float], ...] = ()
    # WAVs: why the channel taken for the 1 s clock reference by default is none (then read without it)
    reference_ignored: str | None = None
    bend: Bend | None = None  # WAVs, template method: the input's bend (CaptureEdges.bend)

    @property
    def time_us(self) -> np.ndarray:
        """The calibrated measurement-channel edge times, MCU µs from the capture start (made on each use:
        a long capture's would be another array per edge)."""
        return self.clock.to_us(self.edges.on(MEASUREMENT_CHANNEL).time)


def load_edges(path: str | Path, method: str | None = None, progress: bool = False,
               channels: Channels = DEFAULT_CHANNELS) -> Edges:
    """Every edge of a capture, whatever its kind; ``method`` picks the WAV edge locator.

    VCDs and edge lists hold exact edges, so ``method`` and ``channels`` (a WAV's measurement and reference
    channels) do not apply to them. ``progress`` shows a progress bar while a WAV is being located (the
    long step of an analysis).
    """
    kind = sniff(path)
    if kind == "vcd":
        return read_vcd(path)
    if kind == "edges":
        return read_edge_list(path)
    return locate_capture(path, method, progress, *channels, steps=False).edges


def ladder_edges(path: str | Path, method: str | None = None, progress: bool = False,
                 channels: Channels = DEFAULT_CHANNELS) -> Attribution:
    """The pin edges of a resistor-ladder WAV (:mod:`pintime.ladder`; ``channels``: its left and right
    channel), detected down to the smallest step and attributed to their pins."""
    if sniff(path) != "wav":
        raise PintimeError(f"{path}: a resistor ladder is a sound-card recording (WAV); this capture has "
                           "exact edges per pin already")
    channels_in_file = open_wav(path, channels[0], None).channels
    if channels_in_file < 2:
        raise PintimeError(f"{path}: a resistor ladder is read from both channels of a stereo card; this "
                           f"file has {channels_in_file}")
    smallest = min(w for pair in LADDER for _, w in pair) / LADDER[0][0][1]  # the measurement pin's step = 1
    located = locate_capture(path, method, progress, *channels, smallest_step=smallest)
    e = located.edges
    return attribute(e.time, e.sigma, located.amp, e.polarity, e.channel, str(path))


def _run_fields(path: Path, decode: FrameDecode) -> tuple[dict[str, int], Program]:
    """The (single) RUN header of a capture and its program; PintimeError on another format, program or
    mixed runs."""
    if not decode.frames:
        versions = sorted(r for r in decode.reasons if r.startswith("version"))
        if versions:
            raise PintimeError(f"{path}: capture uses frame format {', '.join(versions)}; "
                               f"this pintime reads version {FORMAT_VERSION} only")
        raise PintimeError(f"{path}: no valid frame found ({decode.rejected} rejected, "
                           f"{decode.incomplete} incomplete): not a pintime capture?")
    runs = {tuple(sorted(f.fields.items())) for f in decode.of_kind("run")}
    if not runs:
        raise PintimeError(f"{path}: no RUN frame decoded: MCU clock and program unknown (a pintime "
                           "recording must start before the run, which opens with it; or --channel names "
                           "another channel than the measurement pin's)")
    if len(runs) > 1:
        raise PintimeError(f"{path}: RUN frames disagree (firmware changed during the capture?)")
    run = dict(next(iter(runs)))
    program = program_of(run["program"])
    if program is None:
        raise PintimeError(f"{path}: unknown program {run['program']} in RUN frame")
    if run["f_cpu_hz"] <= 0:
        raise PintimeError(f"{path}: RUN frame gives no MCU clock frequency")
    return run, program


def _calibration_check(decode: FrameDecode, time_us: ScaledTimes, polarity: np.ndarray,
                       f_cpu_hz: int) -> tuple[float, float, float] | None:
    train = decode.calibration_train()
    if train is None:
        return None
    g = train.group
    return clk.calibration_train_ppm(time_us[g], polarity[g], train.fields["period_cycles"], f_cpu_hz)


def without_lost_audio(raw: Edges, gaps: RecordingGaps | None, rate_hz: float,
                       guard_s: float) -> tuple[Edges, RecordingGaps | None, LostAudio]:
    """A WAV's edges without those beside its listed ``gaps`` and beside lost audio found in the data
    (``guard_s``: how near a gap an edge's location may see it, :func:`gap_guard_s`)."""
    edges = raw
    if gaps is not None:
        edges, gaps = drop_near_gaps(raw, gaps, guard_s)
    listed_s = np.zeros(0) if gaps is None else gaps.times_s
    edges, lost = reconcile(edges, listed_s, rate_hz, guard_s, raw)
    return edges, gaps, lost


def located_without_lost_audio(path: str | Path, method: str | None, progress: bool, channels: Channels,
                               gaps: RecordingGaps | None, steps: bool = True,
                               located: CaptureEdges | None = None
                               ) -> tuple[CaptureEdges, Edges, RecordingGaps | None, LostAudio]:
    """A WAV's edges located (:func:`locate_capture`; ``steps`` as it takes them; ``located``: what it
    gives, where that is known already), and those of them kept away from its listed ``gaps`` and from
    lost audio found in the data (:func:`without_lost_audio`). Where the data finds lost audio nobody listed
    in the span the edge shape is learned from, the shape learned across it is no edge's: the capture is
    located again, learning without it; so is a periodic signal whose phase jumps where its period was
    learned (:func:`pintime.lost_audio.periodic_jumps`)."""
    if located is None:
        located = locate_capture(path, method, progress, *channels, steps=steps)
    rate_hz = located.info.samplerate_hz
    edges, kept_gaps, lost = without_lost_audio(located.edges, gaps, rate_hz,
                                                gap_guard_s(rate_hz, located.template))
    learn_lo_s, learn_hi_s = located.learn_span_s
    cuts = cut_spans(np.zeros(0), lost)
    if isinstance(located.template, Periodic):  # a periodic signal's phase shows its jumps (no frames)
        cuts = np.array([(g.start_s, g.end_s) for g in periodic_jumps(edges, rate_hz)]).reshape(-1, 2)
    if np.any((cuts[:, 0] < learn_hi_s) & (cuts[:, 1] >= learn_lo_s)):
        located = locate_capture(path, method, False, *channels, cuts, steps=steps)
        edges, kept_gaps, lost = without_lost_audio(located.edges, gaps, rate_hz,
                                                    gap_guard_s(rate_hz, located.template))
    return located, edges, kept_gaps, lost


def _with_shared_errors(results: Any, estimates: Callable[[np.ndarray, list[Frame]], Any],
                        located: CaptureEdges, fit: TrainFit, meas_time: np.ndarray,
                        meas_polarity: np.ndarray, frames: list[Frame]
                        ) -> tuple[Any, QuantizationModel | None]:
    """``results`` (a program's) with the errors every repetition shares in every estimate
    (:mod:`pintime.estimate.shared`):
    the learned template's (``fit``: the train fit that learned it, with its draws;
    :mod:`pintime.locate.shape.template_error`), and rounding's where the recording is quieter than one LSB
    (:mod:`pintime.locate.shape.quantization`; its model is returned, None where there is none), each from the
    estimates again on each draw's edge times.

    Of a long capture only its first DRAW_EDGES edges (more, until their frames give every estimate): the
    error is the same in every repetition, and time and memory stay bounded (an hour's capture would
    need another array per edge a draw, and 8 more analyses of it)."""
    table = TemplateTable.build(fit.template)
    fs = located.info.samplerate_hz
    main = estimate_means(results)
    count = min(DRAW_EDGES, len(meas_time))
    while True:
        part = frames if count == len(meas_time) else [f for f in frames if f.group_hi <= count]
        try:
            base = main if count == len(meas_time) else estimate_means(estimates(meas_time[:count], part))
        except PintimeError:  # too few of the capture's frames for its program's system: more of them
            base = {}
        if count == len(meas_time) or set(main) <= set(base):
            break
        count = min(2 * count, len(meas_time))
    time_s, sign = meas_time[:count], meas_polarity[:count]
    moved = [estimate_means(estimates(DrawModel.build(table, d).moved_times_s(time_s, sign, fs), part))
             for d in fit.draws]  # one draw at a time
    results = with_shared_error(results, base, moved)
    lsb = 1.0 - located.info.clip_level  # 0: float samples
    noise_lsb = analog_noise_lsb(located.noise_rms[0], lsb) if lsb else np.inf
    if not shared(noise_lsb) or not fit.rounding_draws:
        return results, None
    rounding = QuantizationModel.build(table, fit.step / lsb, noise_lsb)
    moved = [estimate_means(estimates(  # the data's rounding, and the template's that the train's taught it
        rounding.moved_times_s(time_s, sign, fs, offset)
        + DrawModel.build(table, learned).moved_times_s(time_s, sign, fs) - time_s, part))
        for offset, learned in zip(offsets_lsb(), fit.rounding_draws, strict=True)]
    return with_shared_error(results, base, moved, "quantization_sigma_us"), rounding


@dataclass(frozen=True)
class _Source:
    """A capture's edges as the analysis takes them, and what reading them found."""

    edges: Edges  # those kept: away from recording gaps and lost audio
    raw: Edges  # every edge located (a calibration train's clock reads these)
    gaps: RecordingGaps | None  # the sidecar's listed gaps
    lost: LostAudio | None  # lost audio found in the data (WAVs)
    rate_hz: float = 0.0  # a WAV's sample rate
    guard_s: float = 0.0  # how near a gap an edge's location may see it (gap_guard_s)
    attribution: Attribution | None = None  # a ladder capture's
    located: CaptureEdges | None = None  # a WAV's (not a ladder's) location
    reference_ignored: str | None = None  # why a WAV's channel 1, the reference by default, was not one


def _ladder_source(path: Path, method: str | None, channels: Channels, gaps: RecordingGaps | None,
                   progress: bool) -> _Source:
    """A resistor-ladder WAV's pin edges, attributed, without those beside gaps or lost audio."""
    attribution = ladder_edges(path, method, progress, channels)
    raw, rate_hz = attribution.edges, open_wav(path, *channels).samplerate_hz
    guard_s = gap_guard_s(rate_hz)
    edges, gaps, lost = without_lost_audio(raw, gaps, rate_hz, guard_s)
    return _Source(edges, raw, gaps, lost, rate_hz, guard_s, attribution=attribution)


def _wav_source(path: Path, method: str | None, channels: Channels, gaps: RecordingGaps | None,
                progress: bool, located: CaptureEdges | None) -> _Source:
    """A WAV's located edges (``located``: where they are known already) without those beside gaps or lost
    audio; read as a mono capture when the channel taken for the reference by default is none."""
    located, edges, kept, lost = located_without_lost_audio(path, method, progress, channels, gaps,
                                                            steps=False, located=located)
    by_default = channels[1] == DEFAULT_REFERENCE and located.info.reference_channel is not None
    reference_ignored = clk.not_a_reference(edges, located.info.channel_name(1)) if by_default else None
    if reference_ignored is not None:
        located, edges, kept, lost = located_without_lost_audio(path, method, False, (channels[0], None),
                                                                gaps, steps=False)
    rate_hz = located.info.samplerate_hz
    return _Source(edges, located.edges, kept, lost, rate_hz, gap_guard_s(rate_hz, located.template),
                   located=located, reference_ignored=reference_ignored)


def _source(path: Path, is_wav: bool, method: str | None, channels: Channels, ladder: bool,
            progress: bool, located: CaptureEdges | None) -> _Source:
    """The capture's edges, whatever its kind (exact sources lose none); a WAV's are the only long step
    (``located``: a pin's WAV's location, where it is known already)."""
    if not is_wav:
        edges = load_edges(path)
        return _Source(edges, edges, None, None)
    gaps = read_gaps(path, None if located is None else located.info.frames)  # (a recording still written)
    if ladder:
        return _ladder_source(path, method, channels, gaps, progress)
    return _wav_source(path, method, channels, gaps, progress, located)


def _estimated(program: Program, inputs: Inputs, source: _Source, meas_time: np.ndarray,
               meas_polarity: np.ndarray) -> tuple[Any, QuantizationModel | None]:
    """The program's result, with the errors every repetition shares where a template-located WAV has
    draws of them (:func:`_with_shared_errors`), and the rounding model (None without one)."""
    def estimates(time: np.ndarray, frames: list[Frame]) -> Any:
        return program.estimate(inputs, time, frames)

    result = estimates(meas_time, inputs.decode.frames)
    located = source.located
    if located is None or located.method != "template" or located.train is None or not located.train.draws:
        return result, None
    return _with_shared_errors(result, estimates, located, located.train, meas_time, meas_polarity,
                               inputs.decode.frames)


def _missing(decode: FrameDecode, lost_to_gaps: int) -> int | None:
    """Frames the END frame counts that were neither decoded nor rejected (None without an END frame)."""
    ends = decode.of_kind("end")
    seen = (sum(1 for f in decode.frames if f.kind != "end") + decode.rejected + decode.incomplete
            + lost_to_gaps)
    return max(ends[-1].fields["frames"] - seen, 0) if ends else None


def analyze(path: str | Path, method: str | None = None, visits: str | Path | None = None,
            elf: str | Path | None = None, channels: Channels = DEFAULT_CHANNELS,
            ladder: bool = False, progress: bool | None = None,
            located: CaptureEdges | None = None) -> Analysis:
    """Run the whole pipeline on one capture (WAV, VCD or edge list); ``ladder``: a WAV of four pins
    through a resistor ladder (:mod:`pintime.ladder`); ``progress``: bars on stderr (None: if a terminal).
    ``located``: a pin's WAV's edges as ``locate_capture(path, method, False, *channels, steps=False)``
    finds them, where they are known already (``pintime measure`` locates them while it records:
    :mod:`pintime.locate.stream.growing`); the rest of the pipeline is the same."""
    path = Path(path)
    progress = sys.stderr.isatty() if progress is None else progress
    is_wav = sniff(path) == "wav"
    source = _source(path, is_wav, method, channels, ladder, progress, located)
    edges, lost = source.edges, source.lost
    release_free_memory()  # what checking a long capture's frames left free (docs/design.md §11)
    listed_s = np.zeros(0) if source.gaps is None else source.gaps.times_s  # WAV edges: seconds of the file
    gaps_s = listed_s if lost is None else np.sort(np.concatenate([listed_s, lost.boundaries_s]))
    has_reference = len(edges.on(REFERENCE_CHANNEL).time) > 0
    clock = (clk.calibrate(edges, gaps_s) if has_reference
             else clk.calibrate_from_train(source.raw, cut_spans(listed_s, lost), source.guard_s))
    meas = edges.on(MEASUREMENT_CHANNEL)  # views
    meas_time, meas_polarity = meas.time, meas.polarity
    time_us = ScaledTimes(meas_time, clock.us_per_unit)  # clock.to_us, product by product
    decode, lost_to_gaps = decode_between_gaps(time_us, meas_polarity, clock.to_us(gaps_s))
    run, program = _run_fields(path, decode)
    if clock.unit_s is None:  # a cycle time base: now the MCU clock is known
        clock = clock.with_unit(1.0 / run["f_cpu_hz"])
    clk.check_rate(clock, run["f_cpu_hz"], str(path))
    polarity = -meas_polarity if decode.inverted else meas_polarity
    # the train checks a clock it did not give (it would agree with itself by construction)
    cal = _calibration_check(decode, time_us, polarity, run["f_cpu_hz"]) if has_reference else None
    clk.check_train_agrees(cal, str(path))
    same_elf = (None if elf is None or program.elf_use is None
                else same_firmware(elf, run, path, decode.frames))
    inputs = Inputs(path, run, clock.us_per_unit, edges, decode, time_us, polarity, visits, same_elf,
                    None if source.attribution is None else source.attribution.unattributed_s)
    result, rounding = _estimated(program, inputs, source, meas_time, meas_polarity)
    used = (method or METHODS[0]) if is_wav else "exact"
    slow = (program.with_slow_clock(slow_clock(edges, clock, decode, gaps_s, source.rate_hz), result)
            if used == "count" else None)  # count: a WAV's method
    located = source.located
    draws_from = located if located is not None and located.method == "template" else None
    draws = 0 if draws_from is None or draws_from.train is None else len(draws_from.train.draws)
    return Analysis(
        path=path, method=used, edges=edges, clock=clock, decode=decode, run=run, program=program,
        result=program.released(result), missing=_missing(decode, lost_to_gaps), cal_ppm=cal,
        gaps=source.gaps, lost_to_gaps=lost_to_gaps, lost_audio=lost, slow_clock=slow,
        ladder=source.attribution, template_draws=draws,
        rounding_lsb=None if rounding is None else (rounding.step_lsb, rounding.noise_lsb),
        reference_ignored=source.reference_ignored, **({} if located is None else _located_facts(located)),
        bend=None if draws_from is None else draws_from.bend)


def _located_facts(located: CaptureEdges) -> dict[str, Any]:
    """The Analysis fields a WAV's location gives."""
    return {"skipped_s": located.skipped_s, "unplaced": located.unplaced,
            "at_file_ends": located.at_file_ends,
            "level_changes": located.level_changes}


def _gaps_json(a: Analysis) -> dict[str, Any] | None:
    """Recording gaps listed in the sidecar and found in the data; None when there are neither."""
    lost = a.lost_audio
    if a.gaps is None and (lost is None or not lost.detected):
        return None
    return {"sidecar": None if a.gaps is None else str(a.gaps.sidecar),
            "count": 0 if a.gaps is None else len(a.gaps.gaps),
            "times_s": [] if a.gaps is None else a.gaps.times_s.tolist(),
            "edges_dropped": (0 if a.gaps is None else a.gaps.edges_dropped)
            + (0 if lost is None else lost.edges_dropped),
            "frames_cut": a.lost_to_gaps,
            "found_in_data": [] if lost is None else [
                {"start_s": g.start_s, "end_s": g.end_s,
                 "lost_us": None if g.jump_s is None else g.jump_s * 1e6, "z": g.z,
                 "found_by": list(g.found_by), "ambiguous": g.ambiguous, "listed": g not in lost.unlisted}
                for g in lost.detected],
            "listed_not_seen_s": [] if lost is None else lost.unseen_s,
            "checked": None if lost is None else {
                "reference": lost.reference_checked, "frames_fraction": lost.frames_checked_fraction,
                "fraction": lost.checked_fraction, "unchecked_s": lost.unchecked_s.tolist(),
                "unchecked_in_frames_s": lost.unchecked_in_frames_s.tolist(),
                **lost.agreement()}}


def summary_json(a: Analysis) -> dict[str, Any]:
    """The JSON of docs/design.md §6: the capture's facts (``run``, ``clock``, ``frames``, …), then its
    program's result (:meth:`pintime.programs.base.Program.to_json`)."""
    c = a.clock
    return {
        "schema_version": SCHEMA_VERSION,
        "capture": str(a.path),
        "method": a.method,
        "run": {"f_cpu_hz": a.run["f_cpu_hz"], "revision": f"{a.run['revision']:08x}",
                "program": a.program.name},
        "clock": {"ppm": c.rate_ppm, "ppm_sigma": c.rate_ppm_sigma,
                  "source": c.source, "reference_ignored": a.reference_ignored,
                  "reference_edges": c.fit.n_edges if c.source == "reference" else 0,
                  "fitted_edges": c.fit.n_edges, "residual_rms_us": c.residual_rms_us,
                  "fall_minus_rise_us": c.fit.fall_offset * c.us_per_unit,
                  "fall_minus_rise_sigma_us": c.fit.fall_offset_sigma * c.us_per_unit,
                  "calibration_train_ppm": None if a.cal_ppm is None else a.cal_ppm[0],
                  "calibration_train_ppm_sigma": None if a.cal_ppm is None else a.cal_ppm[1],
                  "calibration_train_halves_ppm": None if a.cal_ppm is None else a.cal_ppm[2]},
        "frames": {"decoded": len(a.decode.frames), "rejected": a.decode.rejected,
                   "incomplete": a.decode.incomplete, "missing": a.missing,
                   "reasons": a.decode.reasons, "polarity_inverted": a.decode.inverted},
        "recording_gaps": _gaps_json(a),
        "skipped_before_train_s": None if a.skipped_s is None else list(a.skipped_s),
        "edges_unplaced": a.unplaced,
        "edges_at_file_ends": a.at_file_ends,
        "level_changes": [{"time_s": t, "channel": ("measurement", "reference")[c], "level": level}
                          for t, c, level in a.level_changes],
        "template_error_draws": a.template_draws if a.method == "template" else None,
        "input_bend": None if a.bend is None else a.bend.to_json(),
        "rounding_in_ci": None if a.rounding_lsb is None else {
            "step_lsb": a.rounding_lsb[0], "analog_noise_lsb": a.rounding_lsb[1], "draws": ROUNDING_DRAWS},
        **({} if a.ladder is None else {"ladder": ladder_json(a.ladder)}),
        **a.program.to_json(a.result),
        **({} if a.slow_clock is None else {"slow_clock": slow_clock_json(a.slow_clock)}),
    }


def ladder_json(att: Attribution) -> dict[str, Any]:
    """What the attribution of a ladder capture's edges found (docs/design.md §6)."""
    return {"located": att.located, "pin_edges": len(att.edges.time), "unattributed": att.unattributed,
            "unattributed_s": att.unattributed_s.tolist(), "simultaneous": att.simultaneous,
            "step_fs": [list(pair) for pair in att.step_fs], "tolerance_fs": list(att.tolerance_fs)}


def refuse_unused_elf(a: Analysis, elf: str | Path | None) -> None:
    """PintimeError when an ELF was given for a capture that is not of a user or micro program: never
    ignored."""
    if elf is not None and a.program.elf_use is None:
        raise PintimeError(f"{a.path}: --elf names the functions of a user program (firmware/user/pintime.h)"
                           f" or the micro benchmarks' code; this capture is of program {a.program.name}")
