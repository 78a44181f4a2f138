"""Program table1 (firmware/table1/): the paper's Table 1 and the §5 overdetermined system
(:mod:`pintime.estimate.table1`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pintime.estimate.slowclock import SlowClock, design, table1_models
from pintime.estimate.table1 import (
    Table1,
    build_table1,
    format_table1,
    overdetermined_design,
    table1_details,
    table1_json,
)
from pintime.frames import Frame
from pintime.programs.base import Inputs, LinearEstimate, Program
from pintime.programs.truth import Check, Compared, compared, estimate_lines

REF100_CYCLES = 100  # FORMAT.md §5: ref100 with its CALL and RET


@dataclass(frozen=True)
class Table1Row:
    """A Table 1 technique's estimate of the reference routine beside its truth."""

    label: str  # the technique as Table 1 names it ("Differential 55×")
    estimate: Compared


@dataclass(frozen=True)
class Overdetermined:
    """The overdetermined system's three unknowns beside their truth."""

    t_e: Compared  # the routine's execution time
    t_i: Compared  # the instrumentation's
    epsilon: Compared  # the pin's ε


@dataclass(frozen=True)
class Table1Check(Check):
    """Table 1 and the §5 system beside the same estimators on the exact edges, and the routine's cost."""

    routine_us: float  # the reference routine's true cost (ref100, 100 cycles), µs
    rows: tuple[Table1Row, ...] = ()
    overdetermined: Overdetermined | None = None  # None unless both the capture and the exact edges have it

    def annotate(self, out: dict[str, Any]) -> None:
        for row, t1 in zip(out["table1"], self.rows, strict=True):
            row.update(t1.estimate.to_json(), routine_us=self.routine_us)
        if (o := self.overdetermined) is not None:
            for name, estimate in (("t_e", o.t_e), ("t_i", o.t_i), ("epsilon", o.epsilon)):
                out["overdetermined"][name].update(estimate.to_json())

    def lines(self) -> list[str]:
        rows = [(row.label, row.estimate) for row in self.rows]
        if (o := self.overdetermined) is not None:
            rows += [("Overdet. T_e", o.t_e), ("Overdet. T_i", o.t_i), ("Overdet. ε", o.epsilon)]
        lines = estimate_lines("Technique", rows) if rows else []
        if self.rows:
            lines.append(f"(routine ref100 = {REF100_CYCLES} cycles = {self.routine_us:g} µs)")
        return lines


class Table1Program(Program):
    """The reference routine timed by every technique of Table 1."""

    name = "table1"

    def estimate(self, inputs: Inputs, time: np.ndarray, frames: list[Frame]) -> Table1:
        return build_table1(frames, time, inputs.us_per_unit)

    def to_json(self, result: Table1) -> dict[str, Any]:
        return table1_json(result)

    def format(self, result: Table1) -> str:
        return format_table1(result)

    def details(self, result: Table1) -> list[str]:
        return table1_details(result)

    def check(self, result: Table1, out: dict[str, Any], exact_out: dict[str, Any],
              f_cpu_hz: int) -> Table1Check:
        truth_rows = {(r["technique"], r["n"]): r["mean_us"] for r in exact_out["table1"]}
        rows = tuple(Table1Row(r["label"], compared(r, truth_rows.get((r["technique"], r["n"])), r["count"]))
                     for r in out["table1"])
        overdetermined = None
        if "overdetermined" in out and "overdetermined" in exact_out:
            o, t = out["overdetermined"], exact_out["overdetermined"]
            t_e, t_i, epsilon = (compared(o[name], t[name]["mean_us"], o[name]["count"])
                                 for name in ("t_e", "t_i", "epsilon"))
            overdetermined = Overdetermined(t_e, t_i, epsilon)
        return Table1Check(REF100_CYCLES * 1e6 / f_cpu_hz, rows, overdetermined)

    def with_slow_clock(self, slow: SlowClock, result: Table1) -> SlowClock:
        rows, over = table1_models(result, slow.tick_us)
        return replace(slow, table1=rows, overdetermined=over)

    def linear_estimates(self, result: Table1) -> list[LinearEstimate]:
        out: list[LinearEstimate] = [
            (row.label, row.technique, (row.technique, row.n), design(row.technique, row.n),
             result.pulse_edges_us((row.technique, row.n)), row.estimate) for row in result.rows]
        m, o = result.overdetermined_m, result.overdetermined
        if m is not None and o is not None:
            out.append(("§5 system T_e", "overdetermined", ("overdet", m), overdetermined_design(m),
                        result.pulse_edges_us(("overdet", m)), o.t_e))
        return out
