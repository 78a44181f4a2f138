"""``pintime analyze CAPTURE``: the pipeline's results printed, and as JSON and figures on request."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from pintime.cli.args import add_channel_arguments, channels
from pintime.crosscheck import check_text, compare_estimates
from pintime.estimate.shared import largest_sigma
from pintime.estimate.slowclock import format_slow_clock
from pintime.files import refuse_overwrite, write_text
from pintime.frame_timing import DetectedGap
from pintime.ladder import attribution_text
from pintime.locate.locators.methods import METHODS, SIMPLE_HALF
from pintime.locate.shape.bend import Bend
from pintime.locate.stream.capture_edges import CaptureEdges
from pintime.lost_audio import LostAudio
from pintime.pipeline import Analysis, analyze, refuse_unused_elf, summary_json
from pintime.printed import ns
from pintime.programs.table2 import table2_inputs

# a warning: its short line (the default's) and its whole explanation (-v's)
WarningText = tuple[str, str]


def format_summary(a: Analysis, detail: str = "default") -> str:
    """The header block (one ``label: value`` row each, a warning a row), then the program's table and
    the slow-clock model's. ``detail`` (docs/design.md §6): ``quiet`` (-q) the tables only, ``verbose`` (-v)
    the long warnings and the program's diagnostics too."""
    tables = [a.program.format(a.result)]
    tables += [] if detail != "verbose" else a.program.details(a.result)
    tables += [] if a.slow_clock is None else ["", format_slow_clock(a.slow_clock)]
    if detail == "quiet":
        return "\n".join(tables)
    rows = header_rows(a)
    rows += [("warning", long if detail == "verbose" else short) for short, long in warnings(a)]
    return "\n".join([*aligned(rows), "", *tables])


def aligned(rows: list[tuple[str, str]]) -> list[str]:
    """``label: value`` lines, the values in one column."""
    width = max(len(label) for label, _ in rows) + 1
    return [f"{label + ':':<{width}} {value}" for label, value in rows]


def header_rows(a: Analysis) -> list[tuple[str, str]]:
    """What was analysed and how well: capture, program, clock, calibration train, frames, ladder, the
    errors every repetition shares that the CIs hold."""
    c = a.clock
    rate = "(unknown unit)" if c.rate_ppm is None else f"{c.rate_ppm:+.4f} ± {c.rate_ppm_sigma:.4f} ppm"
    why = "" if a.reference_ignored is None else f": {a.reference_ignored}"
    source = f"{c.fit.n_edges} {c.source} edges" + ("" if c.source == "reference" else
                                                     f" (no reference channel{why})")
    rows = [("capture", str(a.path)),
            ("program", f"{a.program.name}, F_CPU {a.run['f_cpu_hz']} Hz, "
                        f"firmware {a.run['revision']:08x}"),
            ("clock", f"capture clock vs MCU {rate} from {source}, "
                      f"residual RMS {ns(c.residual_rms_us, 2)} ns")]
    if a.cal_ppm is not None:
        rows.append(("calibration", f"train after calibration {a.cal_ppm[0]:+.4f} ± {a.cal_ppm[1]:.4f} ppm "
                                    f"(its halves differ by {a.cal_ppm[2]:+.4f} ppm)"))
    rows.append(("frames", frames_text(a)))
    if a.ladder is not None:
        rows.append(("ladder", attribution_text(a.ladder)))
    return rows + shared_error_rows(a)


def frames_text(a: Analysis) -> str:
    """The frames decoded, rejected (and why), incomplete, missing, and cut by listed recording gaps."""
    d = a.decode
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(d.reasons.items()))
    return (f"{len(d.frames)} decoded, {d.rejected} rejected" + (f" ({reasons})" if reasons else "")
            + f", {d.incomplete} incomplete" + ("" if a.missing is None else f", {a.missing} missing")
            + ("" if a.gaps is None else f", {a.lost_to_gaps} cut by {len(a.gaps.gaps)} recording gap(s) "
               f"listed in {a.gaps.sidecar} ({a.gaps.edges_dropped} edges beside them dropped)"))


def shared_error_rows(a: Analysis) -> list[tuple[str, str]]:
    """The errors every repetition shares (no std. deviation shows them) that the CIs hold: the learned
    edge shape's and a recording's rounding."""
    if a.method != "template" or not a.template_draws:
        return []
    where, sigma = largest_sigma(a.result)
    rows = [("edge shape", f"its error is in every CI: σ up to {ns(sigma)} ns ({where}), from "
                           f"{a.template_draws} draws of it")]
    if a.rounding_lsb is not None:
        where, sigma = largest_sigma(a.result, "quantization_sigma_us")
        step_lsb, noise_lsb = a.rounding_lsb
        rows.append(("rounding", f"quieter than one LSB ({noise_lsb:.2f} LSB of noise beneath steps of "
                                 f"{step_lsb:.0f} LSB), in every CI: σ up to {ns(sigma)} ns ({where}); "
                                 "record at 24 bits, or with dither, to lose it"))
    return rows


def warnings(a: Analysis) -> list[WarningText]:
    """Every warning of the analysis, short and long, in the order of the pipeline's steps."""
    found: list[WarningText] = [*lost_audio_warnings(a)]
    if a.decode.inverted:
        found.append(("measurement polarity was inverted (undone)",) * 2)
    if a.skipped_s is not None:
        found.append((f"the edges of {a.skipped_s[0]:.3f}-{a.skipped_s[1]:.3f} s left out: they come before "
                      "the calibration train of a run that begins later", skipped_text(a.skipped_s)))
    if a.unplaced:
        found.append((f"{a.unplaced} edge(s) the {a.method} method could not place left out (frames holding "
                      "them not decoded)", unplaced_text(a.unplaced, a.method)))
    if a.at_file_ends:
        found.append((f"{a.at_file_ends} edge(s) at the file's start or end left out",
                      at_file_ends_text(a.at_file_ends)))
    if a.level_changes:
        found.append((f"the recording's level changed {len(a.level_changes)} time(s), first at the "
                      f"{level_change_text(*a.level_changes[0])}: edge detection followed it",
                      level_changes_text(a.level_changes)))
    if a.bend is not None and a.bend.significant:
        found.append((f"The CIs do NOT hold this: {a.bend.text()}", bend_text(a.bend)))
    if a.method == "template" and not a.template_draws:
        why = "a resistor ladder's edges" if a.ladder is not None else "learned without a calibration train"
        short = f"The learned edge shape's error is NOT in these CIs ({why}: no draws of it)"
        found.append((short, short + "; it is shared by every repetition, so no spread shows it"))
    return found


def bend_text(bend: Bend) -> str:
    """The sentence on an input that bends, too slightly to be refused (:mod:`pintime.locate.shape.bend`)."""
    return (f"The CIs do NOT hold this: {bend.text()}; estimates that subtract pulses of other lengths may "
            "be off by as much (record at a lower level to lose it)")


def skipped_text(skipped_s: tuple[float, float]) -> str:
    """The sentence reporting a stretch left out before a later calibration train
    (:func:`pintime.locate.stream.learnspan.learn_span`)."""
    return (f"the edges of {skipped_s[0]:.3f}-{skipped_s[1]:.3f} s left out: they come before the "
            "calibration train of a run that begins later (the end of an earlier run, before the board was "
            "reset?)")


def unplaced_text(count: int, method: str) -> str:
    """The sentence reporting edges the method could not place
    (:class:`pintime.locate.stream.store.EdgeStore`)."""
    return (f"{count} edge(s) detected that the {method} method could not place (no crossing of the middle "
            "near the detection) left out: frames holding them are not decoded")


def at_file_ends_text(count: int) -> str:
    """The sentence reporting edges left out at the file's ends (:class:`pintime.locate.stream.capture_edges.
    CaptureEdges`)."""
    return (f"{count} edge(s) at the file's start or end left out: detected within {SIMPLE_HALF} samples of "
            "it, too near to be located, or near such an edge, whose response their locations would take for "
            "theirs")


def level_changes_text(changes: tuple[tuple[float, int, float], ...], shown: int = 3) -> str:
    """The sentence reporting where the recording's level changed (:class:`pintime.locate.detect.blockdetect.
    BlockDetector`): the first ``shown`` changes, and how many more."""
    listed = ", ".join(level_change_text(*change) for change in changes[:shown])
    more = f" and {len(changes) - shown} more" if len(changes) > shown else ""
    return (f"the recording's level changed ({listed}{more}; the input's gain was moved, or the card applies "
            "automatic gain control): edge detection followed it")


def level_change_text(time_s: float, channel: int, level: float) -> str:
    """One change of the recording's level: where, and to what."""
    return (f"{('measurement', 'reference')[channel]} channel at {time_s:.2f} s: {level:.3g}× its first "
            "edges' step")


def lost_audio_warnings(a: Analysis) -> list[WarningText]:
    """What the data says of lost audio (pintime.lost_audio): discontinuities of the reference's phase and
    the frames' timing, listed or not, how the two checks agree, listed gaps with none around, and the
    frames' groups no check sees."""
    lost = a.lost_audio
    if lost is None:
        return []
    found: list[WarningText] = []
    if lost.detected:
        cut = "" if a.gaps is not None else f", {a.lost_to_gaps} frame(s) cut by them"
        unlisted = sum(g in lost.unlisted for g in lost.detected[1:])
        more = ("" if len(lost.detected) == 1 else f" and {len(lost.detected) - 1} more"
                + (f" ({unlisted} not listed: the edges between dropped)" if unlisted else ""))
        checked = (("the reference's phase and " if lost.reference_checked else "")
                   + f"the frames' timing ({lost.checked_fraction:.1%} of the capture checked)")
        agree = lost.agreement()
        both = (f"; found by both {agree['both']}, reference only {agree['reference_only']}, frames only "
                f"{agree['frames_only']}" if lost.reference_checked else "")
        first = gap_text(lost.detected[0], lost.detected[0] in lost.unlisted)
        found.append((f"lost audio found in the data: {first}{more}{cut}",
                      f"lost audio found in the data: {gaps_text(lost)}{cut} (checked: {checked}{both})"))
    if lost.unseen_s:
        listed = ("listed gap(s) at " + ", ".join(f"{t:.4f}" for t in lost.unseen_s)
                  + " s show no discontinuity")
        found.append((listed, listed + " (lost a whole number of half seconds in a stretch the frames do "
                      "not check, or not this recording's list)"))
    if len(lost.unchecked_in_frames_s):
        spans = lost.unchecked_in_frames_s
        found.append((f"lost audio not checked in {len(spans)} stretch(es) of frames' groups: a cut there "
                      "would not show", f"lost audio not checked in frames' groups at {spans_text(spans)} "
                      "(no reference edge on either side, no other repetition): a cut there would not show"))
    return found


def spans_text(spans_s) -> str:
    """Stretches of a capture (rows of start, end in s), the first ``SHOWN_GAPS`` spelled out."""
    shown = ", ".join(f"{a:.6f}–{b:.6f} s" for a, b in spans_s[:SHOWN_GAPS])
    return shown + (f" and {len(spans_s) - SHOWN_GAPS} more" if len(spans_s) > SHOWN_GAPS else "")


SHOWN_GAPS = 10  # discontinuities listed in a report line; every one is in the JSON


def gaps_text(lost: LostAudio) -> str:
    """The discontinuities found, the first ``SHOWN_GAPS`` of them spelled out (a capture that is not
    what the options say, e.g. a ladder's right channel taken for the 1 s reference, finds thousands)."""
    shown = ", ".join(gap_text(g, g in lost.unlisted) for g in lost.detected[:SHOWN_GAPS])
    more = len(lost.detected) - SHOWN_GAPS
    return shown + (f", and {more} more (all in --json)" if more > 0 else "")


def gap_text(g: DetectedGap, unlisted: bool) -> str:
    """One discontinuity: how much, where, found by what."""
    size = ("lost or inserted (size unknown: frames lost with it)" if g.jump_s is None
            else f"{g.jump_s * 1e6:+.2f} µs" + (" (this or its twin in another repetition)" if g.ambiguous
                                               else ""))
    return (f"{size} between {g.start_s:.6f} and {g.end_s:.6f} s [{'+'.join(g.found_by)}]"
            + (" (not listed: the edges between dropped)" if unlisted else ""))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("capture", help="WAV recording, simavr VCD or edge-list CSV")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--plots", metavar="DIR", help="write the paper's figures from this capture")
    parser.add_argument("--method", choices=METHODS, default=None,
                        help="edge locator for WAV captures (default: template; count: whole samples only, "
                             "the slow-clock model of Beilner 1988); another than template is checked "
                             "against the template method's estimates, which doubles the time")
    parser.add_argument("--visits", metavar="FILE", default=None,
                        help="table2: simavr per-pulse visits (default: PREFIX.visits.csv beside the edges)")
    parser.add_argument("--elf", metavar="FILE", default=None,
                        help="user programs: the firmware ELF, to name the measured functions; "
                        "micro: to read the compiled benchmarks' datasheet cycles")
    add_channel_arguments(parser)
    loud = parser.add_mutually_exclusive_group()
    loud.add_argument("-q", "--quiet", dest="detail", action="store_const", const="quiet", default="default",
                      help="print the tables only: no header block, no warnings, no diagnostics")
    loud.add_argument("-v", "--verbose", dest="detail", action="store_const", const="verbose",
                      help="also print each warning's whole explanation and the techniques' diagnostics "
                           "(intercepts, R², residuals, outliers)")
    parser.add_argument("--ladder", action="store_true",
                        help="a WAV of four pins through a resistor ladder (docs/ladder.md): PA0+PA2 left, "
                             "PA1+PA3 right; edges attributed to pins by step size")


def run(args: argparse.Namespace, located: CaptureEdges | None = None) -> int:
    """The command; ``located``: the capture's location where it is known already (``pintime measure``'s,
    :func:`pintime.pipeline.analyze`)."""
    refuse_overwrite([args.json, args.plots],
                     [args.capture, args.elf, *table2_inputs(args.capture, args.visits)])
    a = analyze(args.capture, args.method, args.visits, args.elf, channels(args), args.ladder,
                located=located)
    refuse_unused_elf(a, args.elf)
    summary, check = summary_json(a), None
    if summary["method"] in METHODS and summary["method"] != "template":  # a WAV by another method
        template = analyze(args.capture, "template", args.visits, args.elf, channels(args), args.ladder)
        compared, found = compare_estimates(summary, summary_json(template))
        summary["template_check"] = {"compared": compared, "disagree": [asdict(d) for d in found]}
        check = check_text(summary["method"], compared, found, args.detail == "verbose")
    if args.json:
        write_text(args.json, json.dumps(summary, indent=2) + "\n")
    print(format_summary(a, args.detail))
    if check is not None:
        print(f"\n{check}")
    print_figures(a, args.plots)
    return 0


def print_figures(a: Analysis, directory: str | None) -> None:
    """Write the capture's figures when ``--plots DIR`` asks for them (matplotlib loaded only then)."""
    if directory is None:
        return
    from pintime.plots.figures import write_figures
    for p in write_figures(a, Path(directory)):
        print(f"wrote {p}")
