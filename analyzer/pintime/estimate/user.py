"""Your own functions' execution times by straight-line fitting (paper §4) from USER frames.

A user program (``firmware/user/pintime.h``, ``firmware/FORMAT.md`` §8) sends, per repetition and per
registered function, a USER frame of M pulses, pulse k around k back-to-back calls of the function: its width
is ``k · T + ε``. The slope of each repetition's line fit (eq. 4–5, with the §4.1 outlier rule) is that
repetition's T, the execution time per call with the CALL and RET; the intercept is ε.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from pintime.errors import PintimeError
from pintime.estimate import estimators as est
from pintime.estimate.table1 import pulse_edges_us
from pintime.frames import Frame


@dataclass(frozen=True)
class UserRow:
    """One registered function: its line fit over the repetitions, in µs, and the MCU clock."""

    function: int  # index in PINTIME_FUNCTIONS
    name: str
    m: int  # pulses per frame: 1 … m calls
    fit: est.LineFit
    f_cpu_hz: int
    pulse_edges_us: np.ndarray  # (repetitions, 2 m): each repetition's edges from its first, µs

    def cycles(self, us: float) -> float:
        """A duration in MCU cycles."""
        return us * self.f_cpu_hz / 1e6


def build_user(frames: list[Frame], time: np.ndarray, us_per_unit: float, f_cpu_hz: int,
               names: dict[int, str] | None = None) -> list[UserRow]:
    """One line fit per registered function (and frame size m), from the valid USER frames.

    ``time`` are the measurement-channel edge times (source time base) the frames' groups index into,
    ``us_per_unit`` converts them to MCU µs; ``names`` maps function indices to names (else "function i").
    """
    edges: dict[tuple[int, int], list[np.ndarray]] = defaultdict(list)
    for frame in frames:
        if frame.kind == "user":
            key = (frame.fields["function"], frame.fields["m"])
            edges[key].append(pulse_edges_us(time, frame.group, us_per_unit))
    rows = []
    for function, m in sorted(edges):
        if m < 2:
            raise PintimeError(f"USER frames of function {function} have m = {m}: a line needs 2 points")
        name = (names or {}).get(function, f"function {function}")
        e = np.array(edges[(function, m)])
        rows.append(UserRow(function, name, m, est.line_fit(e[:, 1::2] - e[:, 0::2]), f_cpu_hz, e))
    return rows


def _estimate(e: est.Estimate, scale: float, unit: str) -> dict[str, Any]:
    def num(x: float) -> float | None:
        return None if np.isnan(x) else float(x * scale)
    return {f"mean_{unit}": num(e.mean_us), f"std_{unit}": num(e.std_us),
            f"ci95_{unit}": [num(x) for x in e.ci95_us]}


def user_json(rows: list[UserRow]) -> dict[str, Any]:
    """The ``user`` rows: per function the slope (time per call) and intercept ε, in µs and cycles."""
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
                    "outliers": f.outliers, "outlier_factor": est.OUTLIER_FACTOR})
    return {"user": out}


def format_user(rows: list[UserRow]) -> str:
    """Per function: time per call (slope) ± std over repetitions, 95 % CI, cycles; ε, R², residuals."""
    if not rows:
        return "no USER frame decoded"
    head = (f"{'Function':<20} {'Time per call (µs)':>18} {'std (µs)':>10} {'95 % CI (µs)':>23} "
            f"{'cycles':>10} {'std':>9} {'reps':>5}")
    lines = ["Line fitting 1×–M× (paper §4), time per call with its CALL and RET:", head, "-" * len(head)]
    for r in rows:
        s = r.fit.slope
        lo, hi = s.ci95_us
        lines.append(f"{r.name:<20} {s.mean_us:>18.4f} {s.std_us:>10.2g} {f'[{lo:.4f}, {hi:.4f}]':>23} "
                     f"{r.cycles(s.mean_us):>10.3f} {r.cycles(s.std_us):>9.2g} {s.count:>5}")
    for r in rows:
        i = r.fit.intercept
        lines.append(f"  {r.name} (1×–{r.m}×): intercept ε {i.mean_us:.4f} ± {i.std_us:.2g} µs "
                     f"({r.cycles(i.mean_us):.3f} cycles), "
                     f"mean R² {np.mean([x.r2 for x in r.fit.reps]):.9f}, "
                     f"mean residual RMS {np.mean([x.residual_rms_us for x in r.fit.reps]):.3g} µs, "
                     f"{r.fit.outliers} outlier(s) rejected (> {est.OUTLIER_FACTOR:g}× median deviation)")
    return "\n".join(lines)
