"""``pintime validate CAPTURE --truth build/sim/<program>.json``: a capture's estimates against simavr truth.

The truth of a Table 1 row is the same estimator applied to the exact simavr edges (the edge list next to
the truth JSON, ``<prefix>.edges.csv``); the routine's true cost (``ref100`` = 100 cycles, FORMAT.md §5) is
given beside it. Per-edge errors of WAV captures come from :mod:`pintime.validate.edgecheck`; the result
is a :class:`pintime.validate.validation.Validation`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from pintime.capture.sniff import sniff
from pintime.capture.wav import DEFAULT_CHANNELS, Channels
from pintime.errors import PintimeError
from pintime.estimate import estimators as est
from pintime.files import read_json
from pintime.frames import PROGRAMS
from pintime.lost_audio import cut_spans
from pintime.pipeline import Analysis, summary_json
from pintime.table2.blocksystem import EPSILON
from pintime.validate import edgecheck
from pintime.validate.edgecheck import EdgeErrors
from pintime.validate.validation import (
    FLOAT_US,
    Compared,
    CyclesCompared,
    JointCoverage,
    KernelFigure,
    MicroBenchmark,
    Overdetermined,
    ResolvedExit,
    Table1Row,
    Table2Coverage,
    Table2Unknown,
    UserFunction,
    Validation,
)

REF100_CYCLES = 100  # FORMAT.md §5: ref100 with its CALL and RET
INIT_CYCLES = 37  # FORMAT.md §5: init with its CALL and RET
CAPTURE_EPSILONS = ("ε", "ε_cut")  # resolved columns holding the capture's own pin error: no CI verdict
IN_CI = {None: "—", True: "yes", False: "NO"}
# Micro-benchmarks (estimate/micro.py) by kind where simavr 1.6 is known to differ from the chip
# (docs/design.md §9): it charges no cycles for the interrupt response and runs two instructions after SEI
# before a pending interrupt. Every other kind's instructions it times as the datasheet does. The truth
# column is simavr's in every row.
_SIMAVR_IRQ = "simavr 1.6 charges 0 cycles for the interrupt response (chip 5)"
SIMAVR_DIFFERS = {
    "round_trip": _SIMAVR_IRQ,
    "entry": _SIMAVR_IRQ + " and runs both NOPs after SEI first (chip one)",
    "return": "simavr 1.6 ran both NOPs after SEI before entering, so none is left after RETI (chip one)",
}  # a yes/no column; — where the question does not apply (ε)


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


def truth_elf(truth: dict[str, Any], path: Path) -> str | None:
    """The ELF a user or micro program's truth names, a relative name found from the truth's folder
    upwards (the harness names it from where it ran, the repository root for `make sim`), not from the
    current directory; None for another program's."""
    elf = truth.get("elf") if truth_kind(truth) in ("user", "micro") else None
    if not isinstance(elf, str) or Path(elf).is_absolute():
        return elf
    folder = path.resolve().parent
    found = next((d / elf for d in (folder, *folder.parents) if (d / elf).is_file()), None)
    return elf if found is None else str(found)


def truth_kind(truth: dict[str, Any]) -> str:
    """The RUN frame program (``frames.PROGRAMS``) of a truth: the harness names a run by its ELF, so
    ``table1``, ``table2``, ``micro`` and ``kernel`` are themselves and any other name (``user``,
    ``user_example``…) is a user program (firmware/user/pintime.h)."""
    return truth["program"] if truth["program"] in ("table1", "table2", "micro", "kernel") else "user"


def check_same_run(a: Analysis, truth: dict[str, Any], truth_path: Path) -> None:
    if a.run["revision"] != truth["revision"]:
        raise PintimeError(f"{a.path}: firmware revision {a.run['revision']:08x} differs from the truth's "
                           f"{int(truth['revision']):08x} ({truth_path})")
    if a.run["f_cpu_hz"] != truth["f_cpu_hz"] or PROGRAMS[a.run["program"]] != truth_kind(truth):
        raise PintimeError(f"{a.path}: program {PROGRAMS[a.run['program']]} at {a.run['f_cpu_hz']} Hz "
                           f"differs from the truth's {truth['program']} at {truth['f_cpu_hz']} Hz "
                           f"({truth_path})")


def compare(a: Analysis, exact: Analysis, truth: Path, edges: Mapping[str, EdgeErrors | str]) -> Validation:
    """The estimates of ``a`` beside their truth: those of ``exact`` (the same analysis of the exact edges)
    for Table 1, the overdetermined system and user functions; the CFG's exact costs (+ ε) for Table 2
    (pintime.table2.table) and its resolved exits (pintime.table2.cuts). ``truth``: the truth JSON;
    ``edges``: the per-edge errors by locator (:func:`edge_errors`)."""
    out, exact_out = summary_json(a), summary_json(exact)
    truth_rows = {(r["technique"], r["n"]): r["mean_us"] for r in exact_out["table1"]}
    table1 = tuple(Table1Row(r["label"], _compared(r, truth_rows.get((r["technique"], r["n"])), r["count"]))
                   for r in out["table1"])
    overdetermined = None
    if "overdetermined" in out and "overdetermined" in exact_out:
        o, t = out["overdetermined"], exact_out["overdetermined"]
        t_e, t_i, epsilon = (_compared(o[name], t[name]["mean_us"], o[name]["count"])
                             for name in ("t_e", "t_i", "epsilon"))
        overdetermined = Overdetermined(t_e, t_i, epsilon)
    truth_user = {(r["function"], r["m"]): r for r in exact_out.get("user", [])}
    user = tuple(_user_function(row, truth_user.get((row["function"], row["m"])))
                 for row in out.get("user", []))
    truth_micro = {r["index"]: r for r in exact_out.get("micro", [])}
    micro = tuple(_micro(row, truth_micro[row["index"]]) for row in out.get("micro", [])
                  if row["index"] in truth_micro)
    micro_coverage = (est.coverage(np.array([m.within_ci95 for m in micro], dtype=bool))
                      if "micro" in out else None)
    if a.table2 is None:
        return Validation(out, str(truth), _routine_us(a), table1, overdetermined, user, edges=edges,
                          kernel=_kernel_figures(out, exact_out), micro=micro, micro_coverage=micro_coverage)
    us_per_cycle = a.table2.us_per_cycle
    block, exits = (tuple(_unknown(r, r["label"], us_per_cycle, EPSILON not in r["blocks"]) for r in out[key])
                    for key in ("table2", "table2_exits"))
    resolved = tuple(ResolvedExit(c["name"], c["how"], c["truth_cycles"],
                                  _unknown(c, c["name"], us_per_cycle, c["name"] not in CAPTURE_EPSILONS)
                                  if "mean_us" in c else None)
                     for c in out["table2_resolved"].get("columns", []))
    return Validation(out, str(truth), _routine_us(a), table1, overdetermined, user, block, exits, resolved,
                      table2_coverage(block, resolved), edges)


def table2_coverage(block: Sequence[Table2Unknown], resolved: Sequence[ResolvedExit]) -> Table2Coverage:
    """Table 2's estimates outside their 95 % CI against the count chance predicts (``estimators.coverage``):
    the block model's ε-free unknowns and the exits resolved by the cut measurements. The exit model is not
    counted again: where it spans the block model's columns its unknowns are the same fit.

    ``joint``: the same estimates against their joint 95 % CIs (each widened by
    ``estimators.bonferroni_factor`` for the whole family), the claim "every unknown is within its CI" at
    once: honest CIs leave one or more outside in at most 5 % of captures."""
    exits = tuple(c.estimate for c in resolved if c.estimate is not None)
    parts = (tuple(block), exits, (*block, *exits))
    block_c, exits_c, all_c = (est.coverage(np.array([u.within_ci95 for u in part if u.judged], dtype=bool))
                               for part in parts)
    judged = [u for u in parts[2] if u.judged]
    factors = [est.bonferroni_factor(u.count, len(judged)) for u in judged]
    joint = JointCoverage(sum(abs(u.error_us) > u.ci95_half_us * f + FLOAT_US
                              for u, f in zip(judged, factors, strict=True)),
                          len(judged), max(factors, default=1.0))
    return Table2Coverage(block_c, exits_c, all_c, joint)


def _routine_us(a: Analysis) -> float:
    """The reference routine's true cost in µs of the capture's MCU clock."""
    return REF100_CYCLES * 1e6 / a.run["f_cpu_hz"]


def shared_sigma_us(estimate: dict[str, Any]) -> float:
    """The 1σ of the errors an estimate of the ``analyze`` JSON shares with every repetition: the learned
    template's and rounding's (:mod:`pintime.estimate.shared`), in quadrature."""
    return float(np.hypot(estimate.get("template_sigma_us", 0.0),
                          estimate.get("quantization_sigma_us", 0.0)))


def _compared(estimate: dict[str, Any], truth_us: float | None, count: int) -> Compared:
    """An estimate of the ``analyze`` JSON beside its truth; ``count``: its repetitions."""
    return Compared(estimate["mean_us"], estimate["std_us"], count, truth_us, shared_sigma_us(estimate),
                    _ci95_half_us(estimate))


def _ci95_half_us(estimate: dict[str, Any]) -> float | None:
    """The half-width of an ``analyze`` JSON estimate's 95 % CI (symmetric about its mean), None without."""
    ci = estimate.get("ci95_us")
    half = None if ci is None or ci[0] is None else (ci[1] - ci[0]) / 2
    return None if half is None or np.isnan(half) else float(half)


def _user_function(row: dict[str, Any], truth: dict[str, Any] | None) -> UserFunction:
    """A ``user`` row of the ``analyze`` JSON beside the same row of the exact edges' (``truth``; None:
    the exact edges have no such function)."""
    time, intercept = (CyclesCompared(row[part]["mean_us"], row[part]["std_us"], row["reps"],
                                      None if truth is None else truth[part]["mean_us"],
                                      shared_sigma_us(row[part]), _ci95_half_us(row[part]),
                                      mean_cycles=row[part]["mean_cycles"],
                                      truth_cycles=None if truth is None else truth[part]["mean_cycles"])
                       for part in ("time", "intercept"))
    return UserFunction(row["name"], time, intercept)


def _kernel_figures(out: dict[str, Any], exact_out: dict[str, Any]) -> tuple[KernelFigure, ...]:
    """The ``kernel`` rows of the ``analyze`` JSON beside the same rows of the exact edges' (by name)."""
    truth = {r["name"]: r for r in exact_out.get("kernel", [])}
    figures = []
    for row in out.get("kernel", []):
        t = truth.get(row["name"])
        compared = CyclesCompared(row["mean_us"], row["std_us"], row["count"],
                                  None if t is None else t["mean_us"], shared_sigma_us(row),
                                  row["ci95_half_us"], mean_cycles=row["mean_cycles"],
                                  truth_cycles=None if t is None else t["mean_cycles"])
        figures.append(KernelFigure(row["name"], compared, None if t is None else t.get("percent")))
    return tuple(figures)


def _micro(row: dict[str, Any], truth: dict[str, Any]) -> MicroBenchmark:
    """A ``micro`` row of the ``analyze`` JSON beside the same row of the exact edges'."""
    return MicroBenchmark(row["name"], row["mean_us"], row["mean_cycles"], row["ci95_half_us"] or 0.0,
                          row["ci95_half_cycles"] or 0.0, row["count"], truth["mean_us"],
                          truth["mean_cycles"], row["datasheet_cycles"], SIMAVR_DIFFERS.get(row["kind"]))


def _unknown(row: dict[str, Any], label: str, us_per_cycle: float, judged: bool) -> Table2Unknown:
    """A Table 2 row (or resolved column) of the ``analyze`` JSON beside its truth from the CFG."""
    return Table2Unknown(label, row["mean_us"], row["mean_cycles"], row["ci95_half_us"], row["count"],
                         row["truth_cycles"] * us_per_cycle, judged)


def edge_errors(a: Analysis, exact: Analysis,
                channels: Channels = DEFAULT_CHANNELS) -> dict[str, EdgeErrors | str]:
    """Per-edge errors by method (:func:`edgecheck.edge_errors`) when the capture's edges were located (WAV),
    stretch by stretch between the gaps its analysis ``a`` knows (listed or found in the data); none for
    exact edges."""
    if sniff(a.path) != "wav":
        return {}
    cuts_s = cut_spans(np.zeros(0) if a.gaps is None else a.gaps.times_s, a.lost_audio)
    truth = exact.edges
    if truth.unit_s is None:  # an edge list counts cycles: their length is the RUN frame's (a mono capture
        truth = replace(truth, unit_s=1.0 / exact.run["f_cpu_hz"])  # has no reference to scale them by)
    return edgecheck.edge_errors(a.path, truth, channels, cuts_s)
