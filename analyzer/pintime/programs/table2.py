"""Program table2 (firmware/table2/): the paper's Table 2, ADPCM's basic blocks from the TABLE2 frames joined
with simavr's per-pulse visits (:mod:`pintime.table2.table`). Its modules (block systems, cuts, CFGs) are
imported for table2 captures only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pintime.errors import PintimeError
from pintime.estimate import estimators as est
from pintime.estimate.estimators import Estimate
from pintime.estimate.slowclock import SlowClock
from pintime.frames import Frame
from pintime.programs.base import Inputs, Program
from pintime.programs.truth import FLOAT_US, IN_CI, Check, expected_text, within

if TYPE_CHECKING:
    from pintime.table2.table import Table2

CAPTURE_EPSILONS = ("ε", "ε_cut")  # resolved columns holding the capture's own pin error: no CI verdict


@dataclass(frozen=True)
class Table2Unknown:
    """An unknown of Table 2 (block, CFG edge or resolved exit) beside its exact cost from the CFG."""

    label: str  # the unknown's label, or the resolved exit's name
    mean_us: float  # the mean over the measurements
    mean_cycles: float  # ``mean_us`` in cycles of the MCU clock
    ci95_half_us: float  # half-width of its 95 % CI
    count: int  # measurements
    truth_us: float  # its exact cost from the CFG (+ ε), in µs of the capture's MCU clock
    judged: bool  # False where it holds ε: the capture's own pin error adds to simavr's, no CI verdict
    expected: str = "—"  # the cycles its listing expects (:func:`pintime.programs.truth.expected_text`)

    @property
    def error_us(self) -> float:
        """The estimate less its truth."""
        return self.mean_us - self.truth_us

    @property
    def within_ci95(self) -> bool | None:
        """Whether the truth lies within the 95 % CI (float rounding of an exact fit counts as within);
        None where not judged."""
        return within(self.error_us, self.ci95_half_us) if self.judged else None

    def to_json(self) -> dict[str, Any]:
        """The keys added to the unknown's ``analyze`` JSON."""
        return {"truth_us": self.truth_us, "error_us": self.error_us, "within_ci95": self.within_ci95}


@dataclass(frozen=True)
class ResolvedExit:
    """A CFG exit (or ε, ε_cut) as the cut measurements resolve it (pintime.table2.cuts), beside its truth."""

    name: str  # "BB1→BB3", "ε", "ε_cut"
    how: str  # measured, or the constraint that gives it, or why it is unresolved
    truth_cycles: int  # its exact cost from the CFG
    estimate: Table2Unknown | None  # None: unresolved

    @property
    def rounds_to_truth(self) -> bool | None:
        """Whether the estimate rounds to the truth's whole cycles (None: unresolved)."""
        return None if self.estimate is None else round(self.estimate.mean_cycles) == self.truth_cycles

    def to_json(self) -> dict[str, Any]:
        """The keys added to the column's ``analyze`` JSON (none when unresolved)."""
        e = self.estimate
        return {} if e is None else {"error_us": e.error_us, "within_ci95": e.within_ci95,
                                     "rounds_to_truth": self.rounds_to_truth}


@dataclass(frozen=True)
class JointCoverage:
    """The judged estimates against their joint 95 % CIs (each widened by the Bonferroni factor)."""

    outside: int  # estimates outside their widened CI
    total: int  # estimates judged
    factor: float  # the widest Bonferroni factor applied (1 without estimates)


@dataclass(frozen=True)
class Table2Coverage:
    """Table 2's estimates outside their 95 % CI, against the count chance predicts."""

    block: est.Coverage  # the block model's ε-free unknowns
    resolved: est.Coverage  # the exits resolved by the cut measurements
    combined: est.Coverage  # both together
    joint: JointCoverage  # both together, against their joint CIs

    def to_json(self) -> dict[str, Any]:
        """``table2_coverage``."""
        return {"table2": asdict(self.block), "table2_resolved": asdict(self.resolved),
                "all": asdict(self.combined), "joint": asdict(self.joint)}


@dataclass(frozen=True)
class Table2Check(Check):
    """Table 2's block and exit models and its resolved exits beside their exact costs from the CFG."""

    block: tuple[Table2Unknown, ...] = ()  # the block model
    exits: tuple[Table2Unknown, ...] = ()  # the exit model
    resolved: tuple[ResolvedExit, ...] = ()  # every column of the cut measurements' system
    coverage: Table2Coverage | None = None

    def annotate(self, out: dict[str, Any]) -> None:
        for key, unknowns in (("table2", self.block), ("table2_exits", self.exits)):
            for row, u in zip(out[key], unknowns, strict=True):
                row.update(u.to_json())
        for row, c in zip(out["table2_resolved"].get("columns", []), self.resolved, strict=True):
            row.update(c.to_json())
        if self.coverage is not None:
            out["table2_coverage"] = self.coverage.to_json()

    def lines(self) -> list[str]:
        lines = []
        for unknowns, title in ((self.block, "Basic Block"), (self.exits, "CFG edge")):
            lines.append(f"{title:<22} {'ours (µs)':>14} {'± 95 % CI':>10} {'truth (µs)':>14} "
                         f"{'error (µs)':>12} in CI {'expected (cycles)':>17}")
            lines += [f"{u.label:<22} {u.mean_us:>14.6f} {u.ci95_half_us:>10.2e} "
                      f"{u.truth_us:>14.6f} {u.error_us:>+12.2e} {IN_CI[u.within_ci95]:>5} "
                      f"{u.expected:>17}" for u in unknowns]
        return lines

    def late_lines(self) -> list[str]:
        coverage = [] if self.coverage is None else [coverage_line(self.coverage)]
        return resolved_lines(self.resolved) + coverage


def resolved_lines(columns: tuple[ResolvedExit, ...]) -> list[str]:
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


def coverage_line(coverage: Table2Coverage) -> str:
    """Table 2's estimates outside their 95 % CIs, each alone and jointly, against chance."""
    block, cut, both, joint = coverage.block, coverage.resolved, coverage.combined, coverage.joint
    return (f"Table 2 coverage: {block.outside} of {block.total} ε-free unknowns "
            f"and {cut.outside} of {cut.total} resolved exits "
            f"outside their 95 % CI: {both.outside} of {both.total}; chance predicts "
            f"{both.expected:.1f} ± {both.expected_sd:.1f} (binomial); "
            f"{joint.outside} of {joint.total} outside their joint 95 % CI "
            f"(half-widths ×{joint.factor:.2f}, Bonferroni: all inside in ≥ 95 % "
            "of captures)")


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


def unknown(row: dict[str, Any], label: str, us_per_cycle: float, judged: bool) -> Table2Unknown:
    """A Table 2 row (or resolved column) of the ``analyze`` JSON beside its truth from the CFG."""
    return Table2Unknown(label, row["mean_us"], row["mean_cycles"], row["ci95_half_us"], row["count"],
                         row["truth_cycles"] * us_per_cycle, judged, expected_text(row))


class Table2Program(Program):
    """ADPCM's blocks, CFG edges and resolved exits."""

    name = "table2"
    reads_visits = True

    def estimate(self, inputs: Inputs, time: np.ndarray, frames: list[Frame]) -> Table2:
        from pintime.table2.table import table2_from_capture

        return table2_from_capture(inputs.path, inputs.visits, inputs.run, frames, time, inputs.us_per_unit,
                                   inputs.cache)

    def to_json(self, result: Table2) -> dict[str, Any]:
        from pintime.table2.table import table2_json

        return table2_json(result)

    def format(self, result: Table2) -> str:
        from pintime.table2.table import format_table2

        return format_table2(result)

    def details(self, result: Table2) -> list[str]:
        from pintime.table2.table import table2_details

        return table2_details(result)

    def check(self, result: Table2, out: dict[str, Any], exact_out: dict[str, Any],
              f_cpu_hz: int) -> Table2Check:
        """Every unknown beside its exact cost from the CFG (+ ε; :mod:`pintime.table2.table`), every
        resolved exit beside its own (:mod:`pintime.table2.cuts`)."""
        from pintime.table2.blocksystem import EPSILON

        us_per_cycle = result.us_per_cycle
        block, exits = (tuple(unknown(r, r["label"], us_per_cycle, EPSILON not in r["blocks"])
                              for r in out[key]) for key in ("table2", "table2_exits"))
        resolved = tuple(ResolvedExit(c["name"], c["how"], c["truth_cycles"],
                                      unknown(c, c["name"], us_per_cycle, c["name"] not in CAPTURE_EPSILONS)
                                      if "mean_us" in c else None)
                         for c in out["table2_resolved"].get("columns", []))
        return Table2Check(block, exits, resolved, table2_coverage(block, resolved))

    def with_slow_clock(self, slow: SlowClock, result: Table2) -> SlowClock:
        from pintime.table2.countmodel import table2_models

        return replace(slow, table2=table2_models(result, slow.tick_us))

    def released(self, result: Table2) -> Table2:
        """Without its rounds: they serve the count method's model only (docs/design.md §11)."""
        return replace(result, fitted=None)

    def spread_estimates(self, result: Table2, frames: list[Frame], time_us: np.ndarray
                         ) -> tuple[float, list[tuple[str, str, Estimate]]]:
        """The block model's unknowns; a repetition is one measurement, its MCU time the TABLE2 frames'
        span over the measurements."""
        table2 = [f for f in frames if f.kind == "table2"]
        span = float(time_us[table2[-1].group[-1]] - time_us[table2[0].start])
        rep_us = span / max(1, len({f.fields["measurement"] for f in table2}))
        return rep_us, [(f"Table 2 {u.label}", "table2", u.estimate) for u in result.block.unknowns]


def table2_inputs(capture: str | Path, visits: str | Path | None) -> list[Path]:
    """The files a table2 analysis of ``capture`` reads besides it (none when there are no visits)."""
    from pintime.table2.visits import locate, run_files

    try:
        found = locate(Path(capture), visits)
        return [found, *run_files(found)]
    except PintimeError:  # a table1 capture, or the analysis will say what is missing
        return []
