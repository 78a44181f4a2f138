"""A program's estimates beside their simavr truth (``pintime validate``): what every program's check
(:meth:`pintime.programs.base.Program.check`) is made of.

The truth of an estimate is the same estimator on simavr's exact edges, unless the program knows it
otherwise (Table 2's costs from the CFG). A check adds its keys to the capture's ``analyze`` JSON
(:meth:`Check.annotate`) and gives the lines ``pintime validate`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pintime.avr.expect import range_text

FLOAT_US = 1e-9  # float rounding of an exact fit: a resolved exit this close to its truth is within any CI
IN_CI = {None: "—", True: "yes", False: "NO"}  # a yes/no column; — where the question does not apply (ε)
FEW_REPETITIONS = 3  # up to this many, Student's t's 95 % quantile is ≥ 3.2: error/SE is no z-score


def within(error_us: float, ci95_half_us: float) -> bool:
    """Whether an estimate ``error_us`` from its truth lies within its 95 % CI (float rounding of an exact
    fit counts as within)."""
    return abs(error_us) <= ci95_half_us + FLOAT_US


@dataclass(frozen=True)
class Compared:
    """An estimate over repetitions beside its truth: the same estimator on the exact edges."""

    mean_us: float  # the capture's estimate: the mean over its repetitions
    std_us: float | None  # their standard deviation; None for a single repetition
    count: int  # repetitions
    truth_us: float | None  # the same estimate on the exact edges; None where they have no such estimate
    shared_sigma_us: float = 0.0  # 1σ of the errors its repetitions share (learned template, rounding)
    ci95_half_us: float | None = None  # half-width of its 95 % CI (None: no CI, as for one repetition)

    @property
    def error_us(self) -> float | None:
        """The estimate less its truth (None without a truth)."""
        return None if self.truth_us is None else self.mean_us - self.truth_us

    @property
    def error_se(self) -> float | None:
        """The error in standard errors: of the mean of ``count`` repetitions, and of the learned template's
        shared error beside it (None without a truth or a standard error)."""
        if self.std_us is None or self.count < 2:
            return None
        se = float(np.hypot(self.std_us / self.count ** 0.5, self.shared_sigma_us))
        error = self.error_us
        return None if error is None or not se else error / se

    @property
    def within_ci95(self) -> bool | None:
        """Whether the truth lies within the 95 % CI, whose Student's t knows how few repetitions there are
        (``error_se`` does not: with two, −6 may be inside); float rounding counts as within; None without
        a truth or a CI."""
        error = self.error_us
        if error is None or self.ci95_half_us is None:
            return None
        return within(error, self.ci95_half_us)

    def to_json(self) -> dict[str, Any]:
        """The keys added to the estimate's ``analyze`` JSON."""
        return {"truth_us": self.truth_us, "error_us": self.error_us, "error_se": self.error_se,
                "within_ci95": self.within_ci95}


@dataclass(frozen=True, kw_only=True)
class CyclesCompared(Compared):
    """An estimate beside its truth, in MCU cycles too."""

    mean_cycles: float  # ``mean_us`` in cycles of the MCU clock
    truth_cycles: float | None  # ``truth_us`` in cycles

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "truth_cycles": self.truth_cycles}


class Check:
    """A program's estimates beside their truth."""

    def annotate(self, out: dict[str, Any]) -> None:
        """Add the comparison's keys to ``out``, a copy of the capture's ``analyze`` JSON."""

    def lines(self) -> list[str]:
        """What ``pintime validate`` prints first."""
        return []

    def late_lines(self) -> list[str]:
        """What it prints after the recording gaps, before the ladder and the edges."""
        return []


def shared_sigma_us(estimate: dict[str, Any]) -> float:
    """The 1σ of the errors an estimate of the ``analyze`` JSON shares with every repetition: the learned
    template's and rounding's (:mod:`pintime.estimate.shared`), in quadrature."""
    return float(np.hypot(estimate.get("template_sigma_us", 0.0),
                          estimate.get("quantization_sigma_us", 0.0)))


def compared(estimate: dict[str, Any], truth_us: float | None, count: int) -> Compared:
    """An estimate of the ``analyze`` JSON beside its truth; ``count``: its repetitions."""
    return Compared(estimate["mean_us"], estimate["std_us"], count, truth_us, shared_sigma_us(estimate),
                    ci95_half_us(estimate))


def ci95_half_us(estimate: dict[str, Any]) -> float | None:
    """The half-width of an ``analyze`` JSON estimate's 95 % CI (symmetric about its mean), None without."""
    ci = estimate.get("ci95_us")
    half = None if ci is None or ci[0] is None else (ci[1] - ci[0]) / 2
    return None if half is None or np.isnan(half) else float(half)


def expected_text(row: dict) -> str:
    """The listing's expected cycles of an ``analyze`` JSON row, flagged when its 95 % CI misses them."""
    text = range_text(row.get("expected_min_cycles"), row.get("expected_max_cycles"))
    return text + (" ✗ OUTSIDE" if row.get("outside_expectation") else "")


def estimate_lines(title: str, rows: list[tuple[str, Compared]]) -> list[str]:
    """A header and one line per (label, estimate beside its truth)."""
    lines = [f"{title:<22} {'ours (µs)':>14} {'truth (µs)':>14} {'error (µs)':>12} {'std (µs)':>10} "
             f"{'error/SE':>9} in CI"]
    for label, c in rows:
        error_us, error_se = c.error_us, c.error_se
        err = "—" if error_us is None else f"{error_us:+.2e}"
        truth = "—" if c.truth_us is None else f"{c.truth_us:.6f}"
        std = "—" if c.std_us is None else f"{c.std_us:.2e}"
        z = "—" if error_se is None else f"{error_se:+.1f}"
        lines.append(f"{label:<22} {c.mean_us:>14.6f} {truth:>14} {err:>12} {std:>10} {z:>9} "
                     f"{IN_CI[c.within_ci95]:>5}")
    fewest = min((c.count for _, c in rows if c.error_se is not None), default=0)
    if 2 <= fewest <= FEW_REPETITIONS:
        lines.append(f"(error/SE divides by a spread measured from as few as {fewest} repetitions, "
                     f"{fewest - 1} degree(s) of freedom: it is no z-score; in CI uses Student's t)")
    return lines
