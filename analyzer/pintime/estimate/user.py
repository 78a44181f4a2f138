"""Your own functions' execution times by straight-line fitting (paper §4) from USER frames.

A user program (``firmware/user/pintime.h``, ``firmware/FORMAT.md`` §8) sends, per repetition and per
registered function, a USER frame of M pulses, pulse k around k back-to-back calls of the function: its width
is ``k · T + ε``. The slope of each repetition's line fit (eq. 4–5, with the §4.1 outlier rule) is that
repetition's T, the execution time per call with the CALL and RET; the intercept is ε.

With the ELF, each function also gets what its listing expects (:mod:`pintime.avr.expect`), and a flag when
the time per call's 95 % CI lies wholly outside that.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pintime.avr.expect import Expectation, expect_call, range_text
from pintime.avr.symbols import function_names
from pintime.errors import PintimeError
from pintime.estimate import estimators as est
from pintime.estimate.table1 import pulse_edges_us
from pintime.frames import Frame
from pintime.printed import fixed, ns


@dataclass(frozen=True)
class UserRow:
    """One registered function: its line fit over the repetitions, in µs, and the MCU clock."""

    function: int  # index in PINTIME_FUNCTIONS
    name: str
    m: int  # pulses per frame: 1 … m calls
    fit: est.LineFit
    f_cpu_hz: int
    pulse_edges_us: np.ndarray  # (repetitions, 2 m): each repetition's edges from its first, µs
    expected: Expectation | None = None  # from the listing (needs the ELF), cycles per call

    def cycles(self, us: float) -> float:
        """A duration in MCU cycles."""
        return us * self.f_cpu_hz / 1e6

    def ci_cycles(self) -> tuple[float, float]:
        """The time per call's 95 % CI in cycles (the mean twice when one repetition gives no CI)."""
        s = self.fit.slope
        low, high = (s.mean_us, s.mean_us) if np.isnan(s.ci95_us[0]) else s.ci95_us
        return self.cycles(low), self.cycles(high)

    def outside(self) -> bool | None:
        """Whether the time per call's 95 % CI misses the expected range; None without an expectation."""
        return None if self.expected is None else self.expected.outside(*self.ci_cycles())


def build_user(frames: list[Frame], time: np.ndarray, us_per_unit: float, f_cpu_hz: int,
               elf: str | Path | None = None) -> list[UserRow]:
    """One line fit per registered function (and frame size m), from the valid USER frames.

    ``time`` are the measurement-channel edge times (source time base) the frames' groups index into,
    ``us_per_unit`` converts them to MCU µs; ``elf``, the firmware that made them, names the functions
    (else "function i") and gives each the cycles its listing expects.
    """
    names = {} if elf is None else function_names(elf)
    edges: dict[tuple[int, int], list[np.ndarray]] = defaultdict(list)
    for frame in frames:
        if frame.kind == "user":
            key = (frame.fields["function"], frame.fields["m"])
            edges[key].append(pulse_edges_us(time, frame.group, us_per_unit))
    rows = []
    for function, m in sorted(edges):
        if m < 2:
            raise PintimeError(f"USER frames of function {function} have m = {m}: a line needs 2 points")
        name = names.get(function, f"function {function}")
        expected = expect_call(elf, name) if elf is not None and function in names else None
        e = np.array(edges[(function, m)])
        rows.append(UserRow(function, name, m, est.line_fit(e[:, 1::2] - e[:, 0::2]), f_cpu_hz, e, expected))
    return rows


def _estimate(e: est.Estimate, scale: float, unit: str) -> dict[str, Any]:
    def num(x: float) -> float | None:
        return None if np.isnan(x) else float(x * scale)
    return {f"mean_{unit}": num(e.mean_us), f"std_{unit}": num(e.std_us),
            f"ci95_{unit}": [num(x) for x in e.ci95_us],
            f"template_sigma_{unit}": e.template_sigma_us * scale,
            f"quantization_sigma_{unit}": e.quantization_sigma_us * scale}


def _expected_json(r: UserRow) -> dict[str, Any]:
    """``expected_cycles`` (exact), ``expected_min_cycles``, ``expected_max_cycles``, ``expected_how`` and
    ``outside_expectation``; all None without the ELF."""
    if r.expected is None:
        return dict.fromkeys(("expected_cycles", "expected_min_cycles", "expected_max_cycles", "expected_how",
                              "outside_expectation"))
    return r.expected.to_json(*r.ci_cycles())


def user_json(rows: list[UserRow]) -> dict[str, Any]:
    """The ``user`` rows: per function the slope (time per call) and intercept ε, in µs and cycles, and
    what the listing expects of the time per call."""
    out = []
    for r in rows:
        f = r.fit
        cycles_per_us = r.f_cpu_hz / 1e6
        out.append({"function": r.function, "name": r.name, "m": r.m, "reps": f.slope.count,
                    "time": _estimate(f.slope, 1.0, "us") | _estimate(f.slope, cycles_per_us, "cycles"),
                    "intercept": (_estimate(f.intercept, 1.0, "us")
                                  | _estimate(f.intercept, cycles_per_us, "cycles")),
                    "r2_mean": float(np.mean([x.r2 for x in f.reps])),
                    "residual_rms_us_mean": float(np.mean([x.residual_rms_us for x in f.reps])),
                    "outliers": f.outliers, "outlier_factor": est.OUTLIER_FACTOR} | _expected_json(r))
    return {"user": out}


def format_user(rows: list[UserRow]) -> str:
    """Per function: time per call (slope) in µs, its std over repetitions in ns, 95 % CI, cycles."""
    if not rows:
        return "no USER frame decoded"
    head = (f"{'Function':<20} {'Time per call (µs)':>18} {'std (ns)':>10} {'95 % CI (µs)':>23} "
            f"{'cycles':>10} {'std':>9} {'reps':>5} {'expected':>10}")
    lines = ["Line fitting 1×–M× (paper §4), time per call with its CALL and RET; expected: cycles from the "
             "listing (--elf)", head, "-" * len(head)]
    for r in rows:
        s = r.fit.slope
        lo, hi = s.ci95_us
        expected = "—" if r.expected is None else range_text(r.expected.min_cycles, r.expected.max_cycles)
        flag = "  ✗ OUTSIDE the expectation" if r.outside() else ""
        lines.append(f"{r.name:<20} {s.mean_us:>18.4f} {ns(s.std_us):>10} {f'[{lo:.4f}, {hi:.4f}]':>23} "
                     f"{r.cycles(s.mean_us):>10.3f} {fixed(r.cycles(s.std_us)):>9} {s.count:>5} "
                     f"{expected:>10}{flag}")
    lines += [f"  expected: {r.expected.how}" for r in rows if r.expected is not None]
    return "\n".join(lines)


def user_details(rows: list[UserRow]) -> list[str]:
    """Each function's line fit (``analyze -v``): intercept, R², residuals, outliers."""
    lines = []
    for r in rows:
        i = r.fit.intercept
        lines.append(f"  {r.name} (1×–{r.m}×): intercept ε {i.mean_us:.4f} µs ± {ns(i.std_us)} ns "
                     f"({r.cycles(i.mean_us):.3f} cycles), "
                     f"mean R² {np.mean([x.r2 for x in r.fit.reps]):.9f}, "
                     f"mean residual RMS {ns(float(np.mean([x.residual_rms_us for x in r.fit.reps])))} ns, "
                     f"{r.fit.outliers} outlier(s) rejected (> {est.OUTLIER_FACTOR:g}× median deviation)")
    return lines
