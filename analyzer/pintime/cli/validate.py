"""``pintime validate CAPTURE --truth build/sim/<program>.json``: a capture's estimates beside simavr
truth."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from pintime.cli.analyze import print_figures
from pintime.cli.args import add_channel_arguments, channels
from pintime.errors import PintimeError
from pintime.files import refuse_overwrite, write_text
from pintime.locate.locators.methods import METHODS
from pintime.locate.stream.store import release_free_memory
from pintime.pipeline import analyze, refuse_unused_elf
from pintime.programs.registry import program_of_truth
from pintime.programs.table2 import table2_inputs
from pintime.validate.compare import check_same_run, compare, edge_errors, read_truth, truth_elf
from pintime.validate.edgecheck import EdgeErrors
from pintime.validate.laddercheck import format_ladder_check, ladder_check
from pintime.validate.validation import Validation


def _optional(value: float | None) -> str:
    """A figure that too few edges may leave undetermined (None)."""
    return "—" if value is None else f"{value:.2g}"


def format_validation(v: Validation) -> str:
    """The comparison as text: the program's sections that have rows, the recording gaps, the ladder's pins
    and the per-edge errors."""
    lines = v.check.lines()
    gaps = v.summary.get("recording_gaps")
    if gaps is not None:
        beside = "/".join(sorted({str(e.beside_gaps) for e in v.edges.values() if not isinstance(e, str)}))
        per_edge = f"; per-edge errors stretch by stretch, {beside} located edges beside the gaps left out"
        lines.append(f"recording gaps: {gaps['count']} listed, {len(gaps['found_in_data'])} found in the "
                     f"data, {gaps['frames_cut']} frame(s) cut by them, not decoded"
                     + (per_edge if beside else ""))
    lines += v.check.late_lines()
    if v.ladder:
        lines.append(format_ladder_check(v.ladder))
    lines += [_edge_line(method, e) for method, e in v.edges.items()]
    return "\n".join(lines)


def _edge_line(method: str, e: EdgeErrors | str) -> str:
    """One locator's per-edge errors against the exact edges, or why they were not compared."""
    if isinstance(e, str):
        return f"edges [{method}]: not compared: {e}"
    adev = "—" if e.clock_adev_1s is None else f"{e.clock_adev_1s:.2g}"
    own = "—" if e.locator_rms_ns is None else \
        (f"{e.locator_rms_ns:.3g} ± {_optional(e.locator_rms_se_ns)} ns (phase bias "
         f"{_optional(e.phase_bias_rms_ns)} ns; / CRLB {e.locator_rms_ns / e.crlb_ns:.2f})")
    return (f"edges [{method}]: RMS {e.rms_ns:.3g} ns about the time map (clock wander in it), "
            f"locator alone {own}, CRLB {e.crlb_ns:.3g} ns; bias rise {e.bias_rise_ns:+.3g} "
            f"ns, fall {e.bias_fall_ns:+.3g} ns, max {e.max_ns:.3g} ns; "
            f"card clock Allan deviation at 1 s {adev}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("capture", help="WAV recording, simavr VCD or edge-list CSV")
    parser.add_argument("--truth", required=True, metavar="JSON",
                        help="simavr truth: build/sim/<program>.json")
    parser.add_argument("--json", metavar="FILE", help="also write the comparison as JSON")
    parser.add_argument("--method", choices=METHODS, default=None, help="edge locator for WAV captures")
    parser.add_argument("--visits", metavar="FILE", default=None,
                        help="table2: simavr per-pulse visits (default: PREFIX.visits.csv beside the truth)")
    parser.add_argument("--plots", metavar="DIR", help="also write the paper's figures from this capture")
    parser.add_argument("--elf", metavar="FILE", default=None,
                        help="user programs: the ELF naming the functions; micro: the ELF whose "
                        "benchmarks' datasheet cycles to read (default: the truth's elf)")
    parser.add_argument("--ladder", action="store_true",
                        help="a WAV of four pins through a resistor ladder (docs/ladder.md): each pin's "
                        "edges are checked against simavr's (instead of per-edge errors by locator)")
    add_channel_arguments(parser)


def run(args: argparse.Namespace) -> int:
    truth_path = Path(args.truth)
    truth, exact_edges = read_truth(truth_path)
    program = program_of_truth(truth["program"])
    visits = args.visits or (exact_edges.with_name(truth_path.name.removesuffix(".json") + ".visits.csv")
                             if program.reads_visits else None)
    elf = args.elf or (truth_elf(truth, truth_path) if program.elf_use is not None else None)
    if elf is not None and not (isinstance(elf, str) and Path(elf).is_file()):
        raise PintimeError(f"{elf}: the ELF naming the functions is not found (give --elf FILE)")
    refuse_overwrite([args.json, args.plots],
                     [args.capture, truth_path, exact_edges, elf, *table2_inputs(args.capture, visits)])
    a = analyze(args.capture, args.method, visits, elf, channels(args), args.ladder)
    check_same_run(a, truth, truth_path)
    refuse_unused_elf(a, elf)
    release_free_memory()  # what the capture's analysis left free, before the second (docs/design.md §11)
    exact = analyze(exact_edges, visits=visits, elf=elf)
    if a.ladder is None:
        validation = compare(a, exact, truth_path, edge_errors(a, exact, channels(args)))
    else:
        truth_edges = exact.edges if exact.edges.unit_s is not None else replace(
            exact.edges, unit_s=1.0 / exact.run["f_cpu_hz"])
        validation = replace(compare(a, exact, truth_path, {}),
                             ladder=ladder_check(a.ladder, a.clock, truth_edges))
    if args.json:
        write_text(args.json, json.dumps(validation.to_json(), indent=2) + "\n")
    print(format_validation(validation))
    print_figures(a, args.plots)
    return 0
