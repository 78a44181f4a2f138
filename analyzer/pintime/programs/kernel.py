"""Program kernel (firmware/kernel/KERNEL.md): the kernel's figures from its KERNEL frames and signal pins
(:mod:`pintime.estimate.kernel`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pintime import clock as clk
from pintime.estimate import estimators as est
from pintime.estimate.kernel import Kernel, build_kernel, format_kernel, kernel_json
from pintime.frames import Frame
from pintime.programs.base import Inputs, Program
from pintime.programs.truth import IN_CI, Check, CyclesCompared, shared_sigma_us


@dataclass(frozen=True)
class KernelFigure:
    """A kernel figure (pintime.estimate.kernel) beside the same figure on the exact edges."""

    name: str  # "scheduler per thread", "context switch", "overhead N=4", …
    estimate: CyclesCompared
    truth_percent: float | None = None  # overhead rows: the exact edges' overhead in % of the tick
    percent: float | None = None  # overhead rows: the capture's

    def to_json(self) -> dict[str, Any]:
        """The keys added to the figure's ``analyze`` JSON row."""
        extra = {} if self.truth_percent is None else {"truth_percent": self.truth_percent}
        return {**self.estimate.to_json(), **extra}


@dataclass(frozen=True)
class KernelCheck(Check):
    """Every kernel figure beside its truth, and how many miss it against chance."""

    figures: tuple[KernelFigure, ...] = ()

    @property
    def coverage(self) -> est.Coverage:
        """The figures whose truth lies outside their 95 % CI, against chance (those with a CI)."""
        inside = [k.estimate.within_ci95 for k in self.figures if k.estimate.within_ci95 is not None]
        return est.coverage(np.array(inside, dtype=bool))

    def annotate(self, out: dict[str, Any]) -> None:
        for row, figure in zip(out["kernel"], self.figures, strict=True):
            row.update(figure.to_json())
        if self.figures:
            out["kernel_coverage"] = asdict(self.coverage)

    def late_lines(self) -> list[str]:
        """The kernel's figures, each in µs and cycles beside its truth."""
        if not self.figures:
            return []
        lines = [f"{'Kernel':<22} {'ours (µs)':>12} {'± 95 % CI':>10} {'truth (µs)':>12} {'ours (cyc)':>11} "
                 f"{'truth (cyc)':>11} {'error (µs)':>11} in CI"]
        for k in self.figures:
            c = k.estimate
            half = "—" if c.ci95_half_us is None else f"{c.ci95_half_us:.2e}"
            truth = "—" if c.truth_us is None else f"{c.truth_us:.4f}"
            truth_cycles = "—" if c.truth_cycles is None else f"{c.truth_cycles:.3f}"
            error = "—" if c.error_us is None else f"{c.error_us:+.2e}"
            lines.append(f"{k.name:<22} {c.mean_us:>12.4f} {half:>10} {truth:>12} {c.mean_cycles:>11.3f} "
                         f"{truth_cycles:>11} {error:>11} {IN_CI[c.within_ci95]:>5}")
        lines += [f"({k.name}: {k.percent:.4f} % of the tick, truth "
                  + ("—" if k.truth_percent is None else f"{k.truth_percent:.4f} %") + ")"
                  for k in self.figures if k.percent is not None]
        cover = self.coverage
        lines.append(f"Kernel coverage: {cover.outside} of {cover.total} figures outside their 95 % CI; "
                     f"chance predicts {cover.expected:.1f} ± {cover.expected_sd:.1f} (binomial; the figures "
                     "share data, so their count spreads more)")
        return lines


class KernelProgram(Program):
    """The scheduler's, insertion's and context switch's costs, and the overhead per configuration."""

    name = "kernel"

    def estimate(self, inputs: Inputs, time: np.ndarray, frames: list[Frame]) -> Kernel:
        return build_kernel(frames, time, inputs.edges, inputs.us_per_unit, inputs.f_cpu_hz,
                            pin_asymmetry(inputs), inputs.unattributed_s)

    def to_json(self, result: Kernel) -> dict[str, Any]:
        return kernel_json(result)

    def format(self, result: Kernel) -> str:
        return format_kernel(result)

    def check(self, result: Kernel, out: dict[str, Any], exact_out: dict[str, Any],
              f_cpu_hz: int) -> KernelCheck:
        """The ``kernel`` rows beside the same rows of the exact edges' (by name)."""
        truth = {r["name"]: r for r in exact_out["kernel"]}
        figures = []
        for row in out["kernel"]:
            t = truth.get(row["name"])
            compared = CyclesCompared(row["mean_us"], row["std_us"], row["count"],
                                      None if t is None else t["mean_us"], shared_sigma_us(row),
                                      row["ci95_half_us"], mean_cycles=row["mean_cycles"],
                                      truth_cycles=None if t is None else t["mean_cycles"])
            figures.append(KernelFigure(row["name"], compared, None if t is None else t.get("percent"),
                                        row.get("percent")))
        return KernelCheck(tuple(figures))


def pin_asymmetry(inputs: Inputs) -> tuple[float, float] | None:
    """The measurement pin's fall-minus-rise offset from its first calibration train (µs, ±1σ), None
    without a train."""
    train = inputs.decode.calibration_train()
    return None if train is None else clk.train_fall_minus_rise_us(inputs.time_us[train.group],
                                                                     inputs.polarity[train.group])
