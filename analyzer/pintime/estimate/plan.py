"""Planning a measurement: how many repetitions each technique needs for a wanted 95 % CI, and how long the
MCU runs for them (Beilner 1988 §3 planned his loop counts the same way, from the variance of one
repetition).

Every technique's estimate is the mean over R repetitions of a per-repetition estimate of standard deviation
σ, so its 95 % CI half-width is t(R − 1) · σ / √R (:func:`pintime.estimate.estimators.summarize`); the plan
is the smallest R that brings it to the target. σ per method:

- ``template``: the edges' own 1-sigma σₑ, independent from edge to edge, through the technique's linear
  estimator: σ = σₑ · √(Σ coef²), two edges per pulse (:func:`edge_std_us`);
- ``count``: the slow-clock model (:mod:`pintime.estimate.slowclock`): with the edges' offsets within a
  repetition measured (a capture), the shared-phase model, which reproduces the repetitions' spread; with
  only the widths known (a card profile), Beilner's independent widths.

Other estimates (Table 2's unknowns, per measurement) come with σ measured as their spread over
repetitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.special

from pintime.errors import PintimeError
from pintime.estimate.estimators import CI_LEVEL
from pintime.estimate.slowclock import beilner_std_us, shared_phase_std_us

METHODS = ("template", "count")
MAX_REPETITIONS = 10 ** 15  # beyond this a plan is no plan (a zero-noise card, a nonsense target)


@dataclass(frozen=True)
class Technique:
    """One estimate to plan: a linear per-repetition estimator, or a measured per-repetition spread."""

    label: str
    technique: str  # direct, executing, differential, line_fit, overdetermined, user, table2
    rep_us: float  # MCU time one repetition takes (µs): its frame, or its pulses alone (``rep_is_pulses``)
    design: np.ndarray | None = None  # pulses × parameters (pintime.estimate.slowclock.design); None: std_us
    pulse_edges_us: np.ndarray | None = None  # (repetitions, 2 · pulses), each from its first edge
    offsets_measured: bool = True  # the offsets between pulses are measured (else only the widths are known)
    std_us: dict[str, float] | None = None  # per method, the measured per-repetition std (no design)
    rep_is_pulses: bool = False  # rep_us counts the pulses only (a profile's plan: frames unknown)


@dataclass(frozen=True)
class Card:
    """What a method's uncertainty depends on: the template locator's per-edge σ and the sample tick."""

    edge_sigma_us: float  # MCU µs, 1-sigma of one edge located by the template method
    tick_us: float  # one sample in MCU µs
    source: str


@dataclass(frozen=True)
class PlanRow:
    label: str
    technique: str
    method: str
    std_us: float  # per repetition
    repetitions: int
    ci95_half_us: float  # with that many repetitions
    mcu_s: float
    mcu_is_pulses: bool


def t95(dof: np.ndarray | int) -> np.ndarray:
    """Two-sided Student-t quantile of the CI level."""
    return np.asarray(scipy.special.stdtrit(dof, (1 + CI_LEVEL) / 2))


def repetitions(std_us: float, target_half_us: float) -> int:
    """The fewest repetitions (at least 2) whose Student-t 95 % CI of the mean is no wider than ±target."""
    if not target_half_us > 0:
        raise PintimeError(f"the target CI half-width must be positive, got {target_half_us:g} µs")
    if std_us == 0:
        return 2
    z = float(scipy.special.ndtri((1 + CI_LEVEL) / 2))
    r = max(2, int(np.ceil((z * std_us / target_half_us) ** 2)))
    if r > MAX_REPETITIONS:
        raise PintimeError(f"a ±{target_half_us * 1e3:.3g} ns CI needs more than {MAX_REPETITIONS:.0e} "
                           "repetitions: no plan")
    while float(t95(r - 1)) * std_us / np.sqrt(r) > target_half_us:  # t > z: a few more at small R
        r += 1
    return r


def half_width_us(std_us: float, r: int) -> float:
    """The Student-t 95 % CI half-width of a mean of ``r`` repetitions of spread ``std_us``."""
    return float(t95(r - 1)) * std_us / np.sqrt(r)


def edge_std_us(design: np.ndarray, edge_sigma_us: float) -> np.ndarray:
    """Per-repetition std of each parameter from independent edges of 1-sigma ``edge_sigma_us``."""
    p = np.linalg.pinv(design)
    return edge_sigma_us * np.sqrt(2.0 * np.sum(p ** 2, axis=1))


def technique_std_us(t: Technique, method: str, card: Card) -> float:
    """Per-repetition std of the technique's estimate (its first parameter) with ``method``."""
    if t.design is None or t.pulse_edges_us is None:
        if t.std_us is None or method not in t.std_us:
            raise PintimeError(f"{t.label}: no spread measured for the {method} method")
        return t.std_us[method]
    if method == "template":
        return float(edge_std_us(t.design, card.edge_sigma_us)[0])
    model = shared_phase_std_us if t.offsets_measured else beilner_std_us
    return float(model(t.design, t.pulse_edges_us, card.tick_us)[0])


def plan(techniques: list[Technique], card: Card, target_half_us: float) -> list[PlanRow]:
    """A row per technique and method: repetitions for ±``target_half_us`` and the MCU time they take."""
    rows = []
    for t in techniques:
        for method in METHODS:
            std = technique_std_us(t, method, card)
            r = repetitions(std, target_half_us)
            rows.append(PlanRow(t.label, t.technique, method, std, r, half_width_us(std, r),
                                r * t.rep_us * 1e-6, t.rep_is_pulses))
    return rows


def plan_json(rows: list[PlanRow], card: Card, target_half_us: float, f_cpu_hz: float) -> dict[str, Any]:
    """The ``pintime plan --json`` object (docs/design.md §6)."""
    cycles_per_us = f_cpu_hz / 1e6
    return {"source": card.source, "f_cpu_hz": f_cpu_hz, "tick_us": card.tick_us,
            "edge_sigma_us": card.edge_sigma_us, "target_ci95_half_us": target_half_us,
            "target_ci95_half_cycles": target_half_us * cycles_per_us,
            "rows": [{"label": r.label, "technique": r.technique, "method": r.method,
                      "std_us": r.std_us, "std_cycles": r.std_us * cycles_per_us,
                      "repetitions": r.repetitions, "ci95_half_us": r.ci95_half_us,
                      "ci95_half_cycles": r.ci95_half_us * cycles_per_us, "mcu_s": r.mcu_s,
                      "mcu_s_pulses_only": r.mcu_is_pulses} for r in rows]}


def _duration(s: float) -> str:
    for unit, size in (("y", 365.25 * 86400), ("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s / size:.3g} {unit}"
    return f"{s:.3g} s"


def format_plan(rows: list[PlanRow], card: Card, target_half_us: float, f_cpu_hz: float) -> str:
    """The plan as a table: per technique and method, σ per repetition, repetitions, CI, MCU time."""
    lines = [f"Plan for a 95 % CI of ±{target_half_us * 1e3:.4g} ns (±{target_half_us * f_cpu_hz / 1e6:.4g} "
             f"cycles at {f_cpu_hz:g} Hz) from {card.source}: template edge σ {card.edge_sigma_us * 1e3:.4g} "
             f"ns, tick {card.tick_us:.4f} µs (count edge σ {card.tick_us / np.sqrt(12) * 1e3:.4g} ns)"]
    head = (f"{'Technique':<26} {'method':<9} {'σ/rep (ns)':>12} {'repetitions':>14} {'95 % CI (ns)':>13} "
            f"{'MCU time':>11}")
    lines += [head, "-" * len(head)]
    for r in rows:
        mark = "*" if r.mcu_is_pulses else ""
        lines.append(f"{r.label:<26} {r.method:<9} {r.std_us * 1e3:>12.4g} {r.repetitions:>14,} "
                     f"{'±' + format(r.ci95_half_us * 1e3, '.4g'):>13} {_duration(r.mcu_s) + mark:>11}")
    if any(r.mcu_is_pulses for r in rows):
        lines.append("  * the pulses' own time only: a profile does not know the frames around them")
    return "\n".join(lines)
