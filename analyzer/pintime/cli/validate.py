"""``pintime validate CAPTURE --truth build/sim/<program>.json``: a capture's estimates beside simavr
truth."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from pintime.avr.expect import range_text
from pintime.cli.analyze import print_figures
from pintime.cli.args import add_channel_arguments, channels
from pintime.errors import PintimeError
from pintime.files import refuse_overwrite, write_text
from pintime.locate.methods import METHODS
from pintime.locate.store import release_free_memory
from pintime.pipeline import analyze, refuse_unused_elf, table2_inputs
from pintime.validate.compare import (
    IN_CI,
    REF100_CYCLES,
    check_same_run,
    compare,
    edge_errors,
    read_truth,
    truth_elf,
)
from pintime.validate.laddercheck import format_ladder_check, ladder_check
from pintime.validate.validation import Compared, ResolvedExit, Validation

FEW_REPETITIONS = 3  # up to this many, Student's t's 95 % quantile is ≥ 3.2: error/SE is no z-score


def _optional(value: float | None) -> str:
    """A figure that too few edges may leave undetermined (None)."""
    return "—" if value is None else f"{value:.2g}"


def _expected(row: dict) -> str:
    """The listing's expected cycles of an ``analyze`` JSON row, flagged when its 95 % CI misses them."""
    text = range_text(row.get("expected_min_cycles"), row.get("expected_max_cycles"))
    return text + (" ✗ OUTSIDE" if row.get("outside_expectation") else "")


def format_validation(v: Validation) -> str:
    """The comparison as text: only the sections that have rows (Table 1, Table 2, user functions)."""
    lines = []
    rows = [(row.label, row.estimate) for row in v.table1]
    if v.overdetermined is not None:
        o = v.overdetermined
        rows += [("Overdet. T_e", o.t_e), ("Overdet. T_i", o.t_i), ("Overdet. ε", o.epsilon)]
    if rows:
        lines += _estimate_lines("Technique", rows)
    if v.table1:
        lines.append(f"(routine ref100 = {REF100_CYCLES} cycles = {v.routine_us:g} µs)")
    for unknowns, title, key in ((v.table2, "Basic Block", "table2"),
                                 (v.table2_exits, "CFG edge", "table2_exits")):
        if unknowns is not None:
            lines.append(f"{title:<22} {'ours (µs)':>14} {'± 95 % CI':>10} {'truth (µs)':>14} "
                         f"{'error (µs)':>12} in CI {'expected (cycles)':>17}")
            lines += [f"{u.label:<22} {u.mean_us:>14.6f} {u.ci95_half_us:>10.2e} "
                      f"{u.truth_us:>14.6f} {u.error_us:>+12.2e} {IN_CI[u.within_ci95]:>5} "
                      f"{_expected(row):>17}"
                      for u, row in zip(unknowns, v.summary.get(key) or [{}] * len(unknowns), strict=True)]
    if v.user:
        lines += _estimate_lines("Function (1×–M×)", [
            (f"{fn.name} {label}", part) for fn in v.user
            for part, label in ((fn.time, "per call"), (fn.intercept, "ε"))])
        lines += [f"({fn.name}: {fn.time.mean_cycles:.6f} cycles per call, truth "
                  + ("—" if fn.time.truth_cycles is None else f"{fn.time.truth_cycles:.6f}")
                  + f", expected {_expected(row)})"
                  for fn, row in zip(v.user, v.summary.get("user") or [{}] * len(v.user), strict=True)]
    lines += _micro_lines(v)
    gaps = v.summary.get("recording_gaps")
    if gaps is not None:
        beside = "/".join(sorted({str(e.beside_gaps) for e in v.edges.values() if not isinstance(e, str)}))
        per_edge = f"; per-edge errors stretch by stretch, {beside} located edges beside the gaps left out"
        lines.append(f"recording gaps: {gaps['count']} listed, {len(gaps['found_in_data'])} found in the "
                     f"data, {gaps['frames_cut']} frame(s) cut by them, not decoded"
                     + (per_edge if beside else ""))
    lines += _kernel_lines(v)
    if v.ladder:
        lines.append(format_ladder_check(v.ladder))
    lines += _resolved_lines(v.resolved)
    if v.coverage is not None:
        block, cut, both, joint = v.coverage.block, v.coverage.resolved, v.coverage.combined, v.coverage.joint
        lines.append(f"Table 2 coverage: {block.outside} of {block.total} ε-free unknowns "
                     f"and {cut.outside} of {cut.total} resolved exits "
                     f"outside their 95 % CI: {both.outside} of {both.total}; chance predicts "
                     f"{both.expected:.1f} ± {both.expected_sd:.1f} (binomial); "
                     f"{joint.outside} of {joint.total} outside their joint 95 % CI "
                     f"(half-widths ×{joint.factor:.2f}, Bonferroni: all inside in ≥ 95 % "
                     "of captures)")
    for method, e in v.edges.items():
        if isinstance(e, str):
            lines.append(f"edges [{method}]: not compared: {e}")
            continue
        adev = "—" if e.clock_adev_1s is None else f"{e.clock_adev_1s:.2g}"
        own = "—" if e.locator_rms_ns is None else \
            (f"{e.locator_rms_ns:.3g} ± {_optional(e.locator_rms_se_ns)} ns (phase bias "
             f"{_optional(e.phase_bias_rms_ns)} ns; / CRLB {e.locator_rms_ns / e.crlb_ns:.2f})")
        lines.append(f"edges [{method}]: RMS {e.rms_ns:.3g} ns about the time map (clock wander in it), "
                     f"locator alone {own}, CRLB {e.crlb_ns:.3g} ns; bias rise {e.bias_rise_ns:+.3g} "
                     f"ns, fall {e.bias_fall_ns:+.3g} ns, max {e.max_ns:.3g} ns; "
                     f"card clock Allan deviation at 1 s {adev}")
    return "\n".join(lines)


def _estimate_lines(title: str, rows: list[tuple[str, Compared]]) -> list[str]:
    """A header and one line per (label, estimate beside its truth)."""
    lines = [f"{title:<22} {'ours (µs)':>14} {'truth (µs)':>14} {'error (µs)':>12} {'std (µs)':>10} "
             f"{'error/SE':>9} in CI"]
    for label, c in rows:
        error_us, error_se = c.error_us, c.error_se
        err = "—" if error_us is None else f"{error_us:+.2e}"
        truth = "—" if c.truth_us is None else f"{c.truth_us:.6f}"
        std = "—" if c.std_us is None else f"{c.std_us:.2e}"
        z = "—" if error_se is None else f"{error_se:+.1f}"
        lines.append(f"{label:<22} {c.mean_us:>14.6f} {truth:>14} {err:>12} {std:>10} {z:>9} "
                     f"{IN_CI[c.within_ci95]:>5}")
    fewest = min((c.count for _, c in rows if c.error_se is not None), default=0)
    if 2 <= fewest <= FEW_REPETITIONS:
        lines.append(f"(error/SE divides by a spread measured from as few as {fewest} repetitions, "
                     f"{fewest - 1} degree(s) of freedom: it is no z-score; in CI uses Student's t)")
    return lines


def _kernel_lines(v: Validation) -> list[str]:
    """The kernel's figures (pintime.estimate.kernel), each in µs and cycles beside its truth."""
    if not v.kernel:
        return []
    lines = [f"{'Kernel':<22} {'ours (µs)':>12} {'± 95 % CI':>10} {'truth (µs)':>12} {'ours (cyc)':>11} "
             f"{'truth (cyc)':>11} {'error (µs)':>11} in CI"]
    for k in v.kernel:
        c = k.estimate
        half = "—" if c.ci95_half_us is None else f"{c.ci95_half_us:.2e}"
        truth = "—" if c.truth_us is None else f"{c.truth_us:.4f}"
        truth_cycles = "—" if c.truth_cycles is None else f"{c.truth_cycles:.3f}"
        error = "—" if c.error_us is None else f"{c.error_us:+.2e}"
        lines.append(f"{k.name:<22} {c.mean_us:>12.4f} {half:>10} {truth:>12} {c.mean_cycles:>11.3f} "
                     f"{truth_cycles:>11} {error:>11} {IN_CI[c.within_ci95]:>5}")
    rows = zip(v.kernel, v.summary["kernel"], strict=True)
    overheads = [(k.name, row["percent"], k.truth_percent) for k, row in rows if "percent" in row]
    lines += [f"({name}: {pct:.4f} % of the tick, truth "
              + ("—" if truth is None else f"{truth:.4f} %") + ")" for name, pct, truth in overheads]
    cover = v.kernel_coverage
    lines.append(f"Kernel coverage: {cover.outside} of {cover.total} figures outside their 95 % CI; chance "
                 f"predicts {cover.expected:.1f} ± {cover.expected_sd:.1f} (binomial; the figures share "
                 "data, so their count spreads more)")
    return lines


def _micro_lines(v: Validation) -> list[str]:
    """The micro-benchmarks in cycles beside the datasheet and simavr (the truth), and their coverage."""
    if v.micro_coverage is None:
        return []
    lines = [f"{'Micro-benchmark':<22} {'cycles':>10} {'± 95 % CI':>10} {'datasheet':>9} {'simavr':>10} "
             f"{'error (µs)':>12} in CI"]
    for m in v.micro:
        ds = "—" if m.datasheet_cycles is None else str(m.datasheet_cycles)
        lines.append(f"{m.name:<22} {m.mean_cycles:>10.3f} {m.ci95_half_cycles:>10.3f} "
                     f"{ds:>9} {m.truth_cycles:>10.3f} {m.error_us:>+12.2e} {IN_CI[m.within_ci95]:>5}"
                     + ("" if m.simavr_differs is None else f"  (truth simavr's: {m.simavr_differs})"))
    c = v.micro_coverage
    lines.append(f"micro coverage: {c.outside} of {c.total} outside their 95 % CI; chance predicts "
                 f"{c.expected:.1f} ± {c.expected_sd:.1f} (binomial)")
    return lines


def _resolved_lines(columns: tuple[ResolvedExit, ...]) -> list[str]:
    """Table 2's exits resolved by the cut measurements (pintime.table2.cuts), each against its truth."""
    if not columns:
        return []
    lines = [f"{'Resolved exit':<22} {'cycles':>10} {'± 95 % CI (µs)':>15} {'truth':>6} {'error (µs)':>12} "
             "in CI  rounds  how"]
    for c in columns:
        u = c.estimate
        if u is None:
            lines.append(f"{c.name:<22} {'—':>10} {'':>15} {c.truth_cycles:>6} {'':>26}  {c.how}")
            continue
        ok = [IN_CI[u.within_ci95], IN_CI[c.rounds_to_truth]]
        lines.append(f"{c.name:<22} {u.mean_cycles:>10.3f} {u.ci95_half_us:>15.2e} "
                     f"{c.truth_cycles:>6} {u.error_us:>+12.2e} {ok[0]:>5}  {ok[1]:>6}  {c.how}")
    return lines


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
                        help="a WAV of four pins through a resistor ladder (README): each pin's edges are "
                        "checked against simavr's (instead of per-edge errors by locator)")
    add_channel_arguments(parser)


def run(args: argparse.Namespace) -> int:
    truth_path = Path(args.truth)
    truth, exact_edges = read_truth(truth_path)
    visits = args.visits or (exact_edges.with_name(truth_path.name.removesuffix(".json") + ".visits.csv")
                             if truth["program"] == "table2" else None)
    elf = args.elf or truth_elf(truth, truth_path)
    if elf is not None and not (isinstance(elf, str) and Path(elf).is_file()):
        raise PintimeError(f"{elf}: the ELF naming the functions is not found (give --elf FILE)")
    refuse_overwrite([args.json, args.plots],
                     [args.capture, truth_path, exact_edges, elf, *table2_inputs(args.capture, visits)])
    a = analyze(args.capture, args.method, visits, elf, channels(args), args.ladder)
    check_same_run(a, truth, truth_path)
    refuse_unused_elf(a, elf)
    release_free_memory()  # what the capture's analysis left free, before the second (issue 13: ≤ 500 MB)
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
