"""``pintime edges CAPTURE``: every edge of a capture with its time, channel, polarity and uncertainty."""

from __future__ import annotations

import argparse
import io
import sys

import numpy as np

from pintime.capture.gaps import RecordingGaps, read_gaps
from pintime.capture.vcd import vcd_text
from pintime.cli.analyze import (
    SHOWN_GAPS,
    at_file_ends_text,
    bend_text,
    gap_text,
    gaps_text,
    level_changes_text,
    skipped_text,
    spans_text,
    unplaced_text,
)
from pintime.cli.args import add_channel_arguments, channels
from pintime.edges import Edges
from pintime.errors import PintimeError
from pintime.files import refuse_overwrite, version, write_text
from pintime.frame_timing import DetectedGap
from pintime.ladder import PIN_NAMES, format_attribution
from pintime.locate.locators.fit import TemplateTable
from pintime.locate.locators.methods import METHODS, near_neighbours
from pintime.locate.shape.periodic import Periodic
from pintime.locate.shape.template import Template
from pintime.locate.stream.capture_edges import CaptureEdges
from pintime.locate.stream.gridcapture import GridLearned
from pintime.lost_audio import LostAudio, periodic_jumps
from pintime.pipeline import ladder_edges, load_edges, located_without_lost_audio, sniff

HEADER = "time_s,channel,polarity,sigma_s"
LADDER_HEADER = HEADER + ",pin"  # --ladder: the pin each edge was attributed to (PA0 … PA3)
# what a blind template's σ leaves out (pintime.locate.shape.blind)
BLIND = ": σ leaves out the ADC modulator's ripple, up to ~1 ns on some cards"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("capture", help="WAV recording (or a simavr VCD / edge-list CSV: exact edges)")
    parser.add_argument("--method", choices=METHODS, default="template",
                        help="edge locator for WAV captures (default: template)")
    parser.add_argument("--csv", metavar="FILE", help="write the edges here instead of standard output")
    parser.add_argument("--vcd", metavar="FILE",
                        help="also (or, without --csv, instead) write them as a VCD for a logic viewer")
    parser.add_argument("--ladder", action="store_true",
                        help="a WAV of four pins through a resistor ladder (docs/ladder.md): each edge "
                        "attributed to its pin (a pin column; channels 0, 2, 3, 4 = PA0 … PA3); edges no "
                        "pin's step fits are counted and left out")
    add_channel_arguments(parser)


def run(args: argparse.Namespace) -> int:
    refuse_overwrite([args.csv, args.vcd], [args.capture])
    if args.ladder:
        edges = _ladder(args)
    elif sniff(args.capture) == "wav":
        edges = _located(args)
    else:
        edges = _exact(args)
    _write(args, edges)
    return 0


def _ladder(args: argparse.Namespace) -> Edges:
    """A resistor ladder's edges, each attributed to its pin; the attribution reported on stderr."""
    attribution = ladder_edges(args.capture, args.method, sys.stderr.isatty(), channels(args))
    print(format_attribution(attribution), file=sys.stderr)
    return attribution.edges


def _exact(args: argparse.Namespace) -> Edges:
    """A VCD's or edge list's exact edges; refused when their times have no unit in seconds."""
    edges = load_edges(args.capture)
    if edges.unit_s is None:
        raise PintimeError(f"{args.capture}: edge list times are MCU cycles with no known F_CPU; "
                           "they are already exact edges")
    return edges


def _located(args: argparse.Namespace) -> Edges:
    """A WAV's edges located, those beside lost audio left out; what was found reported on stderr."""
    result, kept, gaps, lost = located_without_lost_audio(args.capture, args.method, sys.stderr.isatty(),
                                                          channels(args), read_gaps(args.capture))
    # a pintime capture: its frames (and reference) were checked, the edges beside lost audio dropped
    edges = kept if lost.frames_checked_fraction > 0 else result.edges
    print(_summary_text(result, edges, lost), file=sys.stderr)
    for line in _findings(result, edges):
        print(line, file=sys.stderr)
    if gaps is not None:
        print(_listed_gaps_text(gaps), file=sys.stderr)
    print(_lost_audio_text(result, edges, lost), file=sys.stderr)
    return edges


def _summary_text(result: CaptureEdges, edges: Edges, lost: LostAudio) -> str:
    """The located edges' first line: count, method, polarity, template, noise and median CRLB."""
    inverted = {None: "undetermined (no quiet interval)", True: "inverted (undone)", False: "normal"}
    noise = "/".join(f"{rms:.3g}" for rms in result.noise_rms)
    return (f"{len(edges.time)} edges, method {result.method}, polarity {inverted[result.inverted]}, "
            f"template {_learned_text(result, lost)}, noise {noise} FS, "
            f"median CRLB {np.median(result.crlb_s) * 1e9:.3g} ns")


def _learned_text(result: CaptureEdges, lost: LostAudio) -> str:
    """What the edges were located against: the train, a periodic signal's period, a grid, or the edges."""
    rate_hz = result.info.samplerate_hz
    if result.train is not None and result.inverted is None and lost.frames_checked_fraction == 0:
        learned = "the square wave's evenly spaced edges, their line giving each its place"
    elif result.train is not None:
        learned = "calibration train"
    elif isinstance(result.template, Periodic):
        learned = _periodic_text(result.template, rate_hz)
    elif isinstance(result.template, GridLearned):
        learned = _grid_text(result.template, rate_hz)
    elif result.train_refused is None and lost.frames_checked_fraction > 0:
        learned = f"blind, from the edges themselves (no calibration train{BLIND})"
    elif result.train_refused is None:
        learned = f"blind, from the edges themselves ({BLIND.removeprefix(': ')})"
    else:
        learned = f"blind, from the edges themselves ({result.train_refused}{BLIND})"
    if isinstance(result.template, Template) and result.template.sigma_scale != 1.0:
        learned += f", every σ {result.template.sigma_scale:.2g}× its fit's: {result.template.sigma_why}"
    return learned


def _findings(result: CaptureEdges, edges: Edges) -> list[str]:
    """One line per thing the locator skipped, dropped or found (a bend, a level change, close edges)."""
    lines = []
    if result.skipped_s is not None:
        lines.append(skipped_text(result.skipped_s))
    if result.unplaced and isinstance(result.template, GridLearned):
        lines.append(f"{result.unplaced} steps dropped: their samples fit no edge of the shape learned "
                     "(a spike, a glitch)")
    elif result.unplaced:
        lines.append(unplaced_text(result.unplaced, result.method))
    if result.at_file_ends:
        lines.append(at_file_ends_text(result.at_file_ends))
    if result.level_changes:
        lines.append(level_changes_text(result.level_changes))
    if result.bend is not None and result.bend.significant:
        lines.append(bend_text(result.bend))
    if result.method != "template" and isinstance(result.template, Template):
        lines += _near_text(result.template, edges, result.method, result.info.samplerate_hz)
    return lines


def _near_text(template: Template, edges: Edges, method: str, rate_hz: int) -> list[str]:
    """A one-edge-a-window method's edges with a neighbour inside their window (none: no line)."""
    near, reach = near_neighbours(TemplateTable.build(template), edges, rate_hz)
    if not near:
        return []
    return [f"{near} of {len(edges.time)} edges have a neighbour within {reach:.0f} samples, whose "
            f"response reaches into the {method} method's window: their σ leaves out its "
            "pull (the template method fits such edges together)"]


def _listed_gaps_text(gaps: RecordingGaps) -> str:
    """The recording gaps the sidecar lists, and the edges dropped beside them."""
    return (f"{len(gaps.gaps)} recording gap(s) listed in {gaps.sidecar} at "
            f"{', '.join(f'{t:.6f}' for t in gaps.times_s)} s: {gaps.edges_dropped} edges beside them "
            "dropped; times after a gap are file times, short of the audio it lost")


def _lost_audio_text(result: CaptureEdges, edges: Edges, lost: LostAudio) -> str:
    """Whether lost or inserted audio was looked for, how, and what was found."""
    if lost.frames_checked_fraction > 0:
        return _found(lost)
    if isinstance(result.template, Periodic):
        return _jumps_text(periodic_jumps(edges, result.info.samplerate_hz))
    if isinstance(result.template, GridLearned):
        return ("lost or inserted audio not checked: on a grid that restarts (a timer re-phased, a code's "
                "frames) a loss shows only as one more restart")
    return ("no pintime frame decoded: lost or inserted audio not checked (only a pintime capture's "
            "frames and 1 s reference show it); times after a gap nobody listed would be short of the "
            "audio it lost")


def _write(args: argparse.Namespace, edges: Edges) -> None:
    """The edges in time order across channels, as CSV (a file, or standard output) and/or VCD."""
    text = _csv_text(edges, args.ladder)
    if args.vcd:
        write_text(args.vcd, vcd_text(edges, f"pintime {version()} edges of {args.capture}; "
                                             "times rounded to 1 ps, per-edge sigma in the CSV only"))
    if args.csv:
        write_text(args.csv, text)
    elif not args.vcd:
        sys.stdout.write(text)


def _csv_text(edges: Edges, ladder: bool) -> str:
    """The edges' CSV: rows in time order across channels, with each edge's pin for a ladder."""
    scale, order = edges.unit_s, edges.time_order()
    rows = np.column_stack([edges.time[order] * scale, edges.channel[order], edges.polarity[order],
                            edges.sigma[order] * scale])
    text = io.StringIO()
    if ladder:
        pins = np.array([PIN_NAMES[c] for c in edges.channel[order].tolist()], dtype=object)
        np.savetxt(text, np.column_stack([rows.astype(object), pins]),
                   fmt=["%.12f", "%d", "%d", "%.3e", "%s"], delimiter=",", header=LADDER_HEADER, comments="")
    else:
        np.savetxt(text, rows, fmt=["%.12f", "%d", "%d", "%.3e"], delimiter=",", header=HEADER, comments="")
    return text.getvalue()


def _periodic_text(periodic: Periodic, samplerate_hz: int) -> str:
    """What a dense periodic signal's edges rest on (:mod:`pintime.locate.shape.periodic`)."""
    ns = 1e9 / samplerate_hz
    return (f"one period of a periodic signal ({periodic.period_samples / samplerate_hz * 1e6:.6g} µs), "
            f"folded from {periodic.periods} periods: each edge located against it, its neighbours where "
            "the period puts them; a periodic signal does not show where in its waveform an edge lies, so "
            "the falling edges' offset from the rising ones is a convention, "
            f"±{periodic.offset_sigma_samples * ns:.2g} ns"
            + (f"; the ADC modulator's ripple ({periodic.carrier_per_sample} fs) learned from the edges' "
               "line and taken out" if periodic.carrier_per_sample else "")
            + (f"; {sum(o is not None for o in periodic.others)} other channel(s) with their own"
               if any(o is not None for o in periodic.others) else ""))


def _grid_text(learned: GridLearned, samplerate_hz: int) -> str:
    """What edges on a grid were located against (:mod:`pintime.locate.stream.gridcapture`)."""
    shape = learned.shape
    return (f"learned from the edges' grid (cell {shape.cell_samples / samplerate_hz * 1e6:.6g} µs, "
            f"{learned.on_grid:.0%} of the first {learned.edges} edges on it, their grid's line giving each "
            f"its place), one shape per polarity (they differ by {shape.shapes_differ:.2g} of their peak), "
            f"noise from the fit's residual; every σ {learned.sigma_scale:.3g}× its fit's, so that all but "
            f"1 % of those edges lie within 4σ of the grid's line (the source's own jitter cannot be told "
            "from an error); the fall − rise offset is a convention")


def _jumps_text(jumps: list[DetectedGap]) -> str:
    """What a periodic signal's phase says of lost or inserted audio (:func:`periodic_jumps`)."""
    if not jumps:
        return ("the periodic signal's phase checked for lost or inserted audio: none found (a loss of "
                "whole periods would not show)")
    return (f"the periodic signal's phase jumps {len(jumps)} time(s), modulo its period: "
            + ", ".join(gap_text(g, False) for g in jumps[:SHOWN_GAPS])
            + (f", and {len(jumps) - SHOWN_GAPS} more" if len(jumps) > SHOWN_GAPS else "")
            + ": lost or inserted audio, or a glitch in the signal; times after a jump are file times, off "
              "by it and an unknown number of whole periods")


def _found(lost: LostAudio) -> str:
    """What the data says of lost audio, for the edges' report."""
    checked = (("the 1 s reference's phase and " if lost.reference_checked else "no reference channel; ")
               + f"the frames' timing over {lost.checked_fraction:.1%} of the capture"
               + ("" if not len(lost.unchecked_s) else f"; not checked: {spans_text(lost.unchecked_s)}"))
    if not lost.detected:
        return f"no lost or inserted audio found ({checked})"
    return (f"lost or inserted audio found in the data ({checked}): "
            + gaps_text(lost)
            + f"; {lost.edges_dropped} edges in or beside the unlisted ones dropped")
