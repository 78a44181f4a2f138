"""``pintime validate CAPTURE --truth build/sim/<program>.json``: a capture's estimates against simavr truth.

The truth of a Table 1 row is the same estimator applied to the exact simavr edges (the edge list next to
the truth JSON, ``<prefix>.edges.csv``); the routine's true cost (``ref100`` = 100 cycles, FORMAT.md §5) is
given beside it. Per-edge errors of WAV captures come from the edge-location module (``EDGE_CHECK``).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np

from pintime import estimators as est
from pintime.analyze_cli import (
    METHODS,
    Analysis,
    analyze,
    refuse_unused_elf,
    summary_json,
    table2_inputs,
    write_figures,
)
from pintime.blocksystem import EPSILON
from pintime.errors import PintimeError
from pintime.frames import PROGRAMS
from pintime.sources import sniff
from pintime.userfiles import read_json, refuse_overwrite, write_text

REF100_CYCLES = 100  # FORMAT.md §5: ref100 with its CALL and RET
INIT_CYCLES = 37  # FORMAT.md §5: init with its CALL and RET
FLOAT_US = 1e-9  # float rounding of an exact fit: a resolved exit this close to its truth is within any CI
IN_CI = {None: "—", True: "yes", False: "NO"}  # a yes/no column; — where the question does not apply (ε)
# Per-edge errors against the exact edges: provided by the WAV edge-location module as
# ``edge_errors(capture: Path, truth: Edges) -> {method: {rms_ns, locator_rms_ns, locator_rms_se_ns,
# phase_bias_rms_ns, bias_rise_ns, bias_fall_ns, max_ns, crlb_ns, clock_adev_1s, beside_gaps}}`` (a time
# map per stretch between the capture's recording gaps); exact sources (VCD, edge list) have none to report.
EDGE_CHECK = "pintime.edgecheck"


def read_truth(path: Path) -> tuple[dict[str, Any], Path]:
    """The simavr truth JSON and the exact edge list beside it."""
    truth = read_json(path, "simavr truth JSON")
    if not {"f_cpu_hz", "revision", "program"} <= truth.keys():
        raise PintimeError(f"{path}: not a simavr truth JSON (needs f_cpu_hz, revision, program)")
    if not all(type(truth[k]) is int and truth[k] >= 0 for k in ("f_cpu_hz", "revision")) \
            or truth["f_cpu_hz"] == 0 or not isinstance(truth["program"], str) or not truth["program"]:
        raise PintimeError(f"{path}: truth needs a positive integer f_cpu_hz, an integer revision and a "
                           "program name")
    edges = path.with_name(path.name.removesuffix(".json") + ".edges.csv")
    if not edges.exists():
        raise PintimeError(f"{path}: exact edge list {edges} not found (run `make sim`)")
    return truth, edges


def truth_kind(truth: dict[str, Any]) -> str:
    """The RUN frame program (``frames.PROGRAMS``) of a truth: the harness names a run by its ELF, so
    ``table1`` and ``table2`` are themselves and any other name (``user``, ``user_example``…) is a user
    program (firmware/pintime.h)."""
    return truth["program"] if truth["program"] in ("table1", "table2") else "user"


def _check_same_run(a: Analysis, truth: dict[str, Any], truth_path: Path) -> None:
    if a.run["revision"] != truth["revision"]:
        raise PintimeError(f"{a.path}: firmware revision {a.run['revision']:08x} differs from the truth's "
                           f"{int(truth['revision']):08x} ({truth_path})")
    if a.run["f_cpu_hz"] != truth["f_cpu_hz"] or PROGRAMS[a.run["program"]] != truth_kind(truth):
        raise PintimeError(f"{a.path}: program {PROGRAMS[a.run['program']]} at {a.run['f_cpu_hz']} Hz "
                           f"differs from the truth's {truth['program']} at {truth['f_cpu_hz']} Hz "
                           f"({truth_path})")


def compare(a: Analysis, exact: Analysis) -> dict[str, Any]:
    """The ``analyze`` JSON of ``a`` with ``truth_us`` and ``error_us`` added to every estimate."""
    out = summary_json(a)
    exact_out = summary_json(exact)
    truth_rows = {(r["technique"], r["n"]): r for r in exact_out["table1"]}
    routine_us = REF100_CYCLES * 1e6 / a.run["f_cpu_hz"]
    for row in out["table1"]:
        t = truth_rows.get((row["technique"], row["n"]))
        _add_truth(row, None if t is None else t["mean_us"], row["count"])
        row["routine_us"] = routine_us
    truth_user = {(r["function"], r["m"]): r for r in exact_out.get("user", [])}
    for row in out.get("user", []):  # truth: the same line fit on the exact edges (whole cycles)
        t = truth_user.get((row["function"], row["m"]))
        for part in ("time", "intercept"):
            _add_truth(row[part], None if t is None else t[part]["mean_us"], row["reps"])
            row[part]["truth_cycles"] = None if t is None else t[part]["mean_cycles"]
    for key in ("table2", "table2_exits"):  # truth: the CFG's exact costs (+ ε), in µs (pintime.table2)
        for row in out.get(key, []):
            row["truth_us"] = row["truth_cycles"] * a.table2.us_per_cycle if a.table2 else None
            row["error_us"] = row["mean_us"] - row["truth_us"]
            row["within_ci95"] = (None if EPSILON in row["blocks"]  # ε: the capture's own pin error too
                                  else abs(row["error_us"]) <= row["ci95_half_us"] + FLOAT_US)
    for row in out.get("table2_resolved", {}).get("columns", []):  # pintime.table2cut: truth in cycles
        if "mean_us" in row and a.table2:
            row["error_us"] = row["mean_us"] - row["truth_cycles"] * a.table2.us_per_cycle
            truth_us = row["truth_cycles"] * a.table2.us_per_cycle
            # ε, ε_cut: the capture's own pin error adds to simavr's (pintime.table2.capture_epsilon)
            row["within_ci95"] = (None if row["name"] in ("ε", "ε_cut")
                                  else abs(row["mean_us"] - truth_us) <= row["ci95_half_us"] + FLOAT_US)
            row["rounds_to_truth"] = round(row["mean_cycles"]) == row["truth_cycles"]
    if a.table2:
        out["table2_coverage"] = table2_coverage(out)
    if "overdetermined" in out and "overdetermined" in exact_out:
        truth_od = exact_out["overdetermined"]
        for name in ("t_e", "t_i", "epsilon"):
            estimate = out["overdetermined"][name]
            _add_truth(estimate, truth_od[name]["mean_us"], estimate["count"])
    return out


def table2_coverage(out: dict[str, Any]) -> dict[str, Any]:
    """Table 2's estimates outside their 95 % CI against the count chance predicts (``estimators.coverage``):
    the block model's ε-free unknowns and the exits resolved by the cut measurements. The exit model is not
    counted again: where it spans the block model's columns its unknowns are the same fit.

    ``joint``: the same estimates against their joint 95 % CIs (each widened by
    ``estimators.bonferroni_factor`` for the whole family), the claim "every unknown is within its CI" at
    once: honest CIs leave one or more outside in at most 5 % of captures."""
    columns = out.get("table2_resolved", {}).get("columns", [])
    rows = {"table2": out["table2"], "table2_resolved": columns}
    rows["all"] = rows["table2"] + rows["table2_resolved"]
    result: dict[str, Any] = {}
    for key, part in rows.items():
        c = est.coverage(np.array([r["within_ci95"] for r in part if r.get("within_ci95") is not None],
                                  dtype=bool))
        result[key] = {"outside": c.outside, "total": c.total, "expected": c.expected,
                       "expected_sd": c.expected_sd}
    judged = [r for r in rows["all"] if r.get("within_ci95") is not None]
    factors = [est.bonferroni_factor(r["count"], len(judged)) for r in judged]
    result["joint"] = {"outside": sum(abs(r["error_us"]) > r["ci95_half_us"] * f + FLOAT_US
                                      for r, f in zip(judged, factors, strict=True)),
                       "total": len(judged), "factor": max(factors, default=1.0)}
    return result


def _add_truth(estimate: dict[str, Any], truth_us: float | None, count: int) -> None:
    """Add ``truth_us``, ``error_us`` and ``error_se`` (the error in standard errors of the mean of
    ``count`` repetitions)."""
    estimate["truth_us"] = truth_us
    estimate["error_us"] = None if truth_us is None else estimate["mean_us"] - truth_us
    std = estimate["std_us"]
    se = None if std is None or count < 2 else std / count ** 0.5
    estimate["error_se"] = None if estimate["error_us"] is None or not se else estimate["error_us"] / se


def edge_errors(capture: Path, exact: Analysis) -> dict[str, Any]:
    """Per-edge errors by method, from ``EDGE_CHECK`` when the capture's edges were located (WAV)."""
    if sniff(capture) != "wav" or importlib.util.find_spec(EDGE_CHECK) is None:
        return {}
    return importlib.import_module(EDGE_CHECK).edge_errors(capture, exact.edges)


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
    """Table 2's exits resolved by the cut measurements (pintime.table2cut), each against its truth."""
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
    _check_same_run(a, truth, truth_path)
    refuse_unused_elf(a, elf)
    exact = analyze(exact_edges, visits=visits, elf=elf)
    out = compare(a, exact)
    out["truth"] = str(truth_path)
    out["edges"] = edge_errors(Path(args.capture), exact)
    if args.json:
        write_text(args.json, json.dumps(out, indent=2) + "\n")
    print(format_validation(out))
    if args.plots:
        write_figures(a, Path(args.plots))
    return 0
