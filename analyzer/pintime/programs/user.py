"""Program user (firmware/user/pintime.h): your own functions, each timed by line fitting
(:mod:`pintime.estimate.user`); the ELF names them and gives what their listing expects."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pintime.estimate.slowclock import SlowClock, design, user_models
from pintime.estimate.user import UserRow, build_user, format_user, user_details, user_json
from pintime.frames import Frame
from pintime.programs.base import Inputs, LinearEstimate, Program
from pintime.programs.truth import (
    Check,
    CyclesCompared,
    ci95_half_us,
    estimate_lines,
    expected_text,
    shared_sigma_us,
)


@dataclass(frozen=True)
class UserFunction:
    """A user function's line fit (firmware/pintime.h) beside the same fit on the exact edges."""

    name: str  # the function's name (from the ELF), or its number
    time: CyclesCompared  # time per call: the slope
    intercept: CyclesCompared  # the intercept ε
    expected: str = "—"  # the cycles its listing expects (:func:`pintime.programs.truth.expected_text`)


@dataclass(frozen=True)
class UserCheck(Check):
    """Every function's time per call and ε beside the exact edges'."""

    functions: tuple[UserFunction, ...] = ()

    def annotate(self, out: dict[str, Any]) -> None:
        for row, fn in zip(out["user"], self.functions, strict=True):
            row["time"].update(fn.time.to_json())
            row["intercept"].update(fn.intercept.to_json())

    def lines(self) -> list[str]:
        if not self.functions:
            return []
        lines = estimate_lines("Function (1×–M×)", [
            (f"{fn.name} {label}", part) for fn in self.functions
            for part, label in ((fn.time, "per call"), (fn.intercept, "ε"))])
        return lines + [f"({fn.name}: {fn.time.mean_cycles:.6f} cycles per call, truth "
                        + ("—" if fn.time.truth_cycles is None else f"{fn.time.truth_cycles:.6f}")
                        + f", expected {fn.expected})" for fn in self.functions]


def user_function(row: dict[str, Any], truth: dict[str, Any] | None) -> UserFunction:
    """A ``user`` row of the ``analyze`` JSON beside the same row of the exact edges' (``truth``; None:
    the exact edges have no such function)."""
    time, intercept = (CyclesCompared(row[part]["mean_us"], row[part]["std_us"], row["reps"],
                                      None if truth is None else truth[part]["mean_us"],
                                      shared_sigma_us(row[part]), ci95_half_us(row[part]),
                                      mean_cycles=row[part]["mean_cycles"],
                                      truth_cycles=None if truth is None else truth[part]["mean_cycles"])
                       for part in ("time", "intercept"))
    return UserFunction(row["name"], time, intercept, expected_text(row))


class UserProgram(Program):
    """Each registered function's time per call."""

    name = "user"
    elf_use = "names the measured functions"

    def estimate(self, inputs: Inputs, time: np.ndarray, frames: list[Frame]) -> list[UserRow]:
        return build_user(frames, time, inputs.us_per_unit, inputs.f_cpu_hz, inputs.elf)

    def to_json(self, result: list[UserRow]) -> dict[str, Any]:
        return user_json(result)

    def format(self, result: list[UserRow]) -> str:
        return format_user(result)

    def details(self, result: list[UserRow]) -> list[str]:
        return user_details(result)

    def check(self, result: list[UserRow], out: dict[str, Any], exact_out: dict[str, Any],
              f_cpu_hz: int) -> UserCheck:
        truth = {(r["function"], r["m"]): r for r in exact_out["user"]}
        return UserCheck(tuple(user_function(row, truth.get((row["function"], row["m"])))
                               for row in out["user"]))

    def with_slow_clock(self, slow: SlowClock, result: list[UserRow]) -> SlowClock:
        return replace(slow, user=user_models(result, slow.tick_us))

    def linear_estimates(self, result: list[UserRow]) -> list[LinearEstimate]:
        return [(f"{u.name} per call", "user", ("user", u.function), design("line_fit", u.m),
                 u.pulse_edges_us, u.fit.slope) for u in result]
