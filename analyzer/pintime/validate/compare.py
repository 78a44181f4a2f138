"""``pintime validate CAPTURE --truth build/sim/<program>.json``: a capture's estimates against simavr truth.

The truth of a Table 1 row is the same estimator applied to the exact simavr edges (the edge list next to
the truth JSON, ``<prefix>.edges.csv``); the routine's true cost (``ref100`` = 100 cycles, FORMAT.md §5) is
given beside it. Per-edge errors of WAV captures come from the edge-location module (``EDGE_CHECK``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from pintime.capture.sniff import sniff
from pintime.errors import PintimeError
from pintime.estimate import estimators as est
from pintime.files import read_json
from pintime.frames import PROGRAMS
from pintime.pipeline import Analysis, summary_json
from pintime.table2.blocksystem import EPSILON
from pintime.validate import edgecheck

REF100_CYCLES = 100  # FORMAT.md §5: ref100 with its CALL and RET
INIT_CYCLES = 37  # FORMAT.md §5: init with its CALL and RET
FLOAT_US = 1e-9  # float rounding of an exact fit: a resolved exit this close to its truth is within any CI
IN_CI = {None: "—", True: "yes", False: "NO"}  # a yes/no column; — where the question does not apply (ε)


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
    program (firmware/user/pintime.h)."""
    return truth["program"] if truth["program"] in ("table1", "table2") else "user"


def check_same_run(a: Analysis, truth: dict[str, Any], truth_path: Path) -> None:
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
    for key in ("table2", "table2_exits"):  # truth: the CFG's exact costs (+ ε), in µs (pintime.table2.table)
        for row in out.get(key, []):
            row["truth_us"] = row["truth_cycles"] * a.table2.us_per_cycle if a.table2 else None
            row["error_us"] = row["mean_us"] - row["truth_us"]
            row["within_ci95"] = (None if EPSILON in row["blocks"]  # ε: the capture's own pin error too
                                  else abs(row["error_us"]) <= row["ci95_half_us"] + FLOAT_US)
    for row in out.get("table2_resolved", {}).get("columns", []):  # pintime.table2.cuts: truth in cycles
        if "mean_us" in row and a.table2:
            row["error_us"] = row["mean_us"] - row["truth_cycles"] * a.table2.us_per_cycle
            truth_us = row["truth_cycles"] * a.table2.us_per_cycle
            # ε, ε_cut: the capture's own pin error adds to simavr's (pintime.table2.table.capture_epsilon)
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
    if sniff(capture) != "wav":
        return {}
    return edgecheck.edge_errors(capture, exact.edges)


