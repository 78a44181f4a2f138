"""Program micro (firmware/micro/): the classic micro-benchmarks (:mod:`pintime.estimate.micro`); the ELF
gives the compiled ones' datasheet cycles."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pintime.estimate import estimators as est
from pintime.estimate.micro import MicroRow, build_micro, datasheet_cycles, format_micro, micro_json
from pintime.frames import Frame
from pintime.programs.base import Inputs, Program
from pintime.programs.truth import IN_CI, Check, within

# Micro-benchmarks (estimate/micro.py) by kind where simavr 1.6 is known to differ from the chip
# (docs/design.md §9): it charges no cycles for the interrupt response and runs two instructions after SEI
# before a pending interrupt. Every other kind's instructions it times as the datasheet does. The truth
# column is simavr's in every row.
_SIMAVR_IRQ = "simavr 1.6 charges 0 cycles for the interrupt response (chip 5)"
SIMAVR_DIFFERS = {
    "round_trip": _SIMAVR_IRQ,
    "entry": _SIMAVR_IRQ + " and runs both NOPs after SEI first (chip one)",
    "return": "simavr 1.6 ran both NOPs after SEI before entering, so none is left after RETI (chip one)",
}


@dataclass(frozen=True)
class MicroBenchmark:
    """A micro-benchmark (program micro) beside the same estimate on the exact edges: simavr's truth."""

    name: str
    mean_us: float  # the mean over the repetitions
    mean_cycles: float  # ``mean_us`` in cycles of the MCU clock
    ci95_half_us: float  # half-width of its 95 % CI (0 on exact edges)
    ci95_half_cycles: float  # the same in cycles
    count: int  # repetitions
    truth_us: float  # simavr's: the same estimate on the exact edges
    truth_cycles: float
    datasheet_cycles: int | None  # the chip's expectation (None: compiled code, no ELF)
    simavr_differs: str | None  # why simavr is known to differ from the datasheet here (None: it does not)

    @property
    def error_us(self) -> float:
        """The estimate less its truth."""
        return self.mean_us - self.truth_us

    @property
    def within_ci95(self) -> bool:
        """Whether the truth lies within the 95 % CI (float rounding of an exact fit counts as within)."""
        return within(self.error_us, self.ci95_half_us)

    def to_json(self) -> dict[str, Any]:
        """The keys added to the row's ``analyze`` JSON: the truth is simavr's in every row."""
        return {"truth_us": self.truth_us, "truth_cycles": self.truth_cycles, "error_us": self.error_us,
                "within_ci95": self.within_ci95, "truth_source": "simavr",
                "simavr_differs_from_datasheet": self.simavr_differs}


@dataclass(frozen=True)
class MicroCheck(Check):
    """Each benchmark beside simavr's truth, and how many miss it against chance."""

    benchmarks: tuple[MicroBenchmark, ...]
    coverage: est.Coverage

    def annotate(self, out: dict[str, Any]) -> None:
        for row, m in zip(out["micro"], self.benchmarks, strict=True):
            row.update(m.to_json())
        out["micro_coverage"] = asdict(self.coverage)

    def lines(self) -> list[str]:
        """The micro-benchmarks in cycles beside the datasheet and simavr (the truth), and their coverage."""
        lines = [f"{'Micro-benchmark':<22} {'cycles':>10} {'± 95 % CI':>10} {'datasheet':>9} {'simavr':>10} "
                 f"{'error (µs)':>12} in CI"]
        for m in self.benchmarks:
            ds = "—" if m.datasheet_cycles is None else str(m.datasheet_cycles)
            lines.append(f"{m.name:<22} {m.mean_cycles:>10.3f} {m.ci95_half_cycles:>10.3f} "
                         f"{ds:>9} {m.truth_cycles:>10.3f} {m.error_us:>+12.2e} {IN_CI[m.within_ci95]:>5}"
                         + ("" if m.simavr_differs is None else f"  (truth simavr's: {m.simavr_differs})"))
        c = self.coverage
        lines.append(f"micro coverage: {c.outside} of {c.total} outside their 95 % CI; chance predicts "
                     f"{c.expected:.1f} ± {c.expected_sd:.1f} (binomial)")
        return lines


def micro_benchmark(row: dict[str, Any], truth: dict[str, Any]) -> MicroBenchmark:
    """A ``micro`` row of the ``analyze`` JSON beside the same row of the exact edges'."""
    return MicroBenchmark(row["name"], row["mean_us"], row["mean_cycles"], row["ci95_half_us"] or 0.0,
                          row["ci95_half_cycles"] or 0.0, row["count"], truth["mean_us"],
                          truth["mean_cycles"], row["datasheet_cycles"], SIMAVR_DIFFERS.get(row["kind"]))


class MicroProgram(Program):
    """Each benchmark's cost of one unit (call, loop turn, interrupt)."""

    name = "micro"
    elf_use = "gives the compiled benchmarks' datasheet cycles"

    def estimate(self, inputs: Inputs, time: np.ndarray, frames: list[Frame]) -> list[MicroRow]:
        return build_micro(frames, time, inputs.us_per_unit, inputs.f_cpu_hz,
                           None if inputs.elf is None else datasheet_cycles(inputs.elf))

    def to_json(self, result: list[MicroRow]) -> dict[str, Any]:
        return micro_json(result)

    def format(self, result: list[MicroRow]) -> str:
        return format_micro(result)

    def check(self, result: list[MicroRow], out: dict[str, Any], exact_out: dict[str, Any],
              f_cpu_hz: int) -> MicroCheck:
        truth = {r["index"]: r for r in exact_out["micro"]}
        benchmarks = tuple(micro_benchmark(row, truth[row["index"]]) for row in out["micro"]
                           if row["index"] in truth)
        return MicroCheck(benchmarks, est.coverage(np.array([m.within_ci95 for m in benchmarks], dtype=bool)))
