"""``pintime validate CAPTURE --truth build/sim/<program>.json``: a capture's estimates beside simavr
truth."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pintime.cli.analyze import print_figures
from pintime.errors import PintimeError
from pintime.files import refuse_overwrite, write_text
from pintime.locate.capture_edges import METHODS
from pintime.pipeline import analyze, refuse_unused_elf, table2_inputs
from pintime.validate.compare import (
    IN_CI,
    REF100_CYCLES,
    check_same_run,
    compare,
    edge_errors,
    read_truth,
    truth_kind,
)


def format_validation(out: dict[str, Any]) -> str:
    """The comparison as text: only the sections that have rows (Table 1, Table 2, user functions)."""
    lines = []
    rows = [(row["label"], row) for row in out["table1"]]
    if "overdetermined" in out:
        parts = (("t_e", "Overdet. T_e"), ("t_i", "Overdet. T_i"), ("epsilon", "Overdet. ε"))
        rows += [(label, out["overdetermined"][name]) for name, label in parts]
    if rows:
        lines += _estimate_lines("Technique", rows)
    if out["table1"]:
        lines.append(f"(routine ref100 = {REF100_CYCLES} cycles = {out['table1'][0]['routine_us']:g} µs)")
    for key, title in (("table2", "Basic Block"), ("table2_exits", "CFG edge")):
        if key in out:
            lines.append(f"{title:<22} {'ours (µs)':>14} {'± 95 % CI':>10} {'truth (µs)':>14} "
                         f"{'error (µs)':>12} in CI")
            lines += [f"{r['label']:<22} {r['mean_us']:>14.6f} {r['ci95_half_us']:>10.2e} "
                      f"{r['truth_us']:>14.6f} {r['error_us']:>+12.2e} {IN_CI[r.get('within_ci95')]:>5}"
                      for r in out[key]]
    user = out.get("user", [])
    if user:
        lines += _estimate_lines("Function (1×–M×)", [
            (f"{r['name']} {label}", r[part]) for r in user
            for part, label in (("time", "per call"), ("intercept", "ε"))])
        lines += [f"({r['name']}: {r['time']['mean_cycles']:.6f} cycles per call, truth "
                  + ("—" if r["time"]["truth_cycles"] is None else f"{r['time']['truth_cycles']:.6f}")
                  + ")" for r in user]
    gaps = out.get("recording_gaps")
    if gaps is not None:
        beside = "/".join(sorted({str(e["beside_gaps"]) for e in out["edges"].values()}))
        per_edge = f"; per-edge errors stretch by stretch, {beside} located edges beside the gaps left out"
        lines.append(f"recording gaps: {gaps['count']}, {gaps['frames_cut']} frame(s) cut by them, not "
                     f"decoded{per_edge if beside else ''}")
    lines += _resolved_lines(out.get("table2_resolved", {}).get("columns", []))
    if "table2_coverage" in out:
        c = out["table2_coverage"]
        block, cut = c["table2"], c["table2_resolved"]
        lines.append(f"Table 2 coverage: {block['outside']} of {block['total']} ε-free unknowns "
                     f"and {cut['outside']} of {cut['total']} resolved exits "
                     f"outside their 95 % CI: {c['all']['outside']} of {c['all']['total']}; chance predicts "
                     f"{c['all']['expected']:.1f} ± {c['all']['expected_sd']:.1f} (binomial); "
                     f"{c['joint']['outside']} of {c['joint']['total']} outside their joint 95 % CI "
                     f"(half-widths ×{c['joint']['factor']:.2f}, Bonferroni: all inside in ≥ 95 % "
                     "of captures)")
    for method, e in out["edges"].items():
        adev = "—" if e["clock_adev_1s"] is None else f"{e['clock_adev_1s']:.2g}"
        own = "—" if e["locator_rms_ns"] is None else \
            (f"{e['locator_rms_ns']:.3g} ± {e['locator_rms_se_ns']:.2g} ns (phase bias "
             f"{e['phase_bias_rms_ns']:.2g} ns; / CRLB {e['locator_rms_ns'] / e['crlb_ns']:.2f})")
        lines.append(f"edges [{method}]: RMS {e['rms_ns']:.3g} ns about the time map (clock wander in it), "
                     f"locator alone {own}, CRLB {e['crlb_ns']:.3g} ns; bias rise {e['bias_rise_ns']:+.3g} "
                     f"ns, fall {e['bias_fall_ns']:+.3g} ns, max {e['max_ns']:.3g} ns; "
                     f"card clock Allan deviation at 1 s {adev}")
    return "\n".join(lines)


def _estimate_lines(title: str, rows: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """A header and one line per (label, estimate with truth_us, error_us, std_us, error_se)."""
    lines = [f"{title:<22} {'ours (µs)':>14} {'truth (µs)':>14} {'error (µs)':>12} {'std (µs)':>10} "
             f"{'error/SE':>9}"]
    for label, row in rows:
        err = "—" if row["error_us"] is None else f"{row['error_us']:+.2e}"
        truth = "—" if row["truth_us"] is None else f"{row['truth_us']:.6f}"
        std = "—" if row["std_us"] is None else f"{row['std_us']:.2e}"
        z = "—" if row["error_se"] is None else f"{row['error_se']:+.1f}"
        lines.append(f"{label:<22} {row['mean_us']:>14.6f} {truth:>14} {err:>12} {std:>10} {z:>9}")
    return lines


def _resolved_lines(columns: list[dict[str, Any]]) -> list[str]:
    """Table 2's exits resolved by the cut measurements (pintime.table2.cuts), each against its truth."""
    if not columns:
        return []
    lines = [f"{'Resolved exit':<22} {'cycles':>10} {'± 95 % CI (µs)':>15} {'truth':>6} {'error (µs)':>12} "
             "in CI  rounds  how"]
    for r in columns:
        if "mean_us" not in r:
            lines.append(f"{r['name']:<22} {'—':>10} {'':>15} {r['truth_cycles']:>6} {'':>26}  {r['how']}")
            continue
        ok = [IN_CI[r[key]] for key in ("within_ci95", "rounds_to_truth")]
        lines.append(f"{r['name']:<22} {r['mean_cycles']:>10.3f} {r['ci95_half_us']:>15.2e} "
                     f"{r['truth_cycles']:>6} {r['error_us']:>+12.2e} {ok[0]:>5}  {ok[1]:>6}  {r['how']}")
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
                        help="user programs: the ELF naming the functions (default: the truth's elf)")


def run(args: argparse.Namespace) -> int:
    truth_path = Path(args.truth)
    truth, exact_edges = read_truth(truth_path)
    visits = args.visits or (exact_edges.with_name(truth_path.name.removesuffix(".json") + ".visits.csv")
                             if truth["program"] == "table2" else None)
    elf = args.elf or (truth.get("elf") if truth_kind(truth) == "user" else None)
    if elf is not None and not (isinstance(elf, str) and Path(elf).is_file()):
        raise PintimeError(f"{elf}: the ELF naming the functions is not found (give --elf FILE)")
    refuse_overwrite([args.json, args.plots],
                     [args.capture, truth_path, exact_edges, elf, *table2_inputs(args.capture, visits)])
    a = analyze(args.capture, args.method, visits, elf)
    check_same_run(a, truth, truth_path)
    refuse_unused_elf(a, elf)
    exact = analyze(exact_edges, visits=visits, elf=elf)
    out = compare(a, exact)
    out["truth"] = str(truth_path)
    out["edges"] = edge_errors(Path(args.capture), exact)
    if args.json:
        write_text(args.json, json.dumps(out, indent=2) + "\n")
    print(format_validation(out))
    print_figures(a, args.plots)
    return 0
