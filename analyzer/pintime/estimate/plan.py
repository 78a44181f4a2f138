"""Planning a measurement: how many repetitions each technique needs for a wanted 95 % CI, and how long the
MCU runs for them (Beilner 1988 §3 planned his loop counts the same way, from the variance of one
repetition).

Every technique's estimate is the mean over R repetitions of a per-repetition estimate of standard deviation
σ, so its 95 % CI half-width is t(R − 1) · σ / √R (:func:`pintime.estimate.estimators.summarize`); the plan
is the smallest R that brings it to the target. σ per method:

- ``template``: from a capture, each technique's own spread over its repetitions. From a profile, a model:
  each edge has an error of its own, σₑ, and the card's clock wanders against the MCU's, a random walk of
  the time map that adds q · t to the variance of two edges t apart (white frequency noise: q = σ_y(1 s)² ·
  1 s); through the technique's linear estimator, σ² = σₑ² Σ cᵢ² + q Σ cᵢ cₖ min(tᵢ, tₖ) over its edges
  (:func:`template_terms`). A capture's σₑ and q are fitted to its techniques' spreads
  (:func:`measure_template_noise`) and reported, but the model does not predict each technique within
  ±25 %: an edge's error depends on its neighbours (a Direct pulse's two edges are 19 samples apart) and
  on the phase pattern of the schedule (docs/results.md).
- ``count``: the slow-clock model (:mod:`pintime.estimate.slowclock`): with the edges' offsets within a
  repetition measured (a capture), the shared-phase model, which reproduces the repetitions' spread; with
  only the widths known (a card profile), Beilner's independent widths.

Table 2's unknowns (per measurement) come with both methods' spreads measured.

A capture's template estimates also carry the learned edge shape's error, which every repetition shares
(:mod:`pintime.estimate.shared`): no number of repetitions takes it away, so it is a floor under the CI,
``hypot(t(R − 1) · σ / √R, shared)``; a target below the floor is no plan (the row says so).
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
    std_us: dict[str, float] | None = None  # per method, the measured per-repetition std (before any model)
    rep_is_pulses: bool = False  # rep_us counts the pulses only (a profile's plan: frames unknown)
    # per method, the CI half-width (µs) of the errors every repetition shares (the learned template's and
    # rounding's, measured in a capture): a floor no number of repetitions lowers
    shared_half_us: dict[str, float] | None = None


@dataclass(frozen=True)
class Card:
    """What a method's uncertainty depends on: the template locator's per-edge σ and the sample tick."""

    edge_sigma_us: float  # MCU µs, 1-sigma of one edge located by the template method, its own error
    wander_us2_per_us: float  # q: variance the clock's wander adds to two edges per µs between them
    tick_us: float  # one sample in MCU µs
    source: str


@dataclass(frozen=True)
class PlanRow:
    label: str
    technique: str
    method: str
    std_us: float  # per repetition
    repetitions: int | None  # None: the target is below the shared error's floor, no number reaches it
    ci95_half_us: float  # with that many repetitions (None: the floor)
    mcu_s: float  # NaN without a plan
    mcu_is_pulses: bool
    shared_half_us: float = 0.0  # the floor (Technique.shared_half_us)


def t95(dof: np.ndarray | int) -> np.ndarray:
    """Two-sided Student-t quantile of the CI level."""
    return np.asarray(scipy.special.stdtrit(dof, (1 + CI_LEVEL) / 2))


def repetitions(std_us: float, target_half_us: float, shared_half_us: float = 0.0) -> int | None:
    """The fewest repetitions (at least 2) whose Student-t 95 % CI of the mean, with a shared error's
    half-width ``shared_half_us`` beside it in quadrature, is no wider than ±target; None when the shared
    error alone is as wide."""
    if not target_half_us > 0:
        raise PintimeError(f"the target CI half-width must be positive, got {target_half_us:g} µs")
    if shared_half_us >= target_half_us:
        return None
    target_half_us = float(np.sqrt(target_half_us ** 2 - shared_half_us ** 2))
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


def half_width_us(std_us: float, r: int, shared_half_us: float = 0.0) -> float:
    """The Student-t 95 % CI half-width of a mean of ``r`` repetitions of spread ``std_us`` (and a shared
    error's half-width beside it in quadrature)."""
    return float(np.hypot(float(t95(r - 1)) * std_us / np.sqrt(r), shared_half_us))


def template_terms(design: np.ndarray, pulse_edges_us: np.ndarray) -> tuple[float, float]:
    """(Σ cᵢ², Σ cᵢ cₖ min(tᵢ, tₖ) in µs) of the first parameter's estimator over one repetition's edges at
    their mean offsets tᵢ: its variance is σₑ² times the first plus q times the second."""
    p = np.linalg.pinv(design)[0]
    coef = np.zeros(2 * len(p))
    coef[0::2], coef[1::2] = -p, p
    t = np.mean(np.atleast_2d(pulse_edges_us), axis=0)
    return float(np.sum(coef ** 2)), float(coef @ np.minimum(t[:, None], t[None, :]) @ coef)


def measure_template_noise(terms: list[tuple[float, float]], std_us: list[float],
                           counts: list[int]) -> tuple[float, float]:
    """σₑ (µs) and q (µs²/µs) fitted to per-repetition spreads ``std_us`` of techniques with
    :func:`template_terms` ``terms`` (non-negative least squares, each variance weighted by its relative
    error √(2/(R − 1)))."""
    import scipy.optimize  # only here: slow to import for every command

    a = np.array(terms, dtype=np.float64)
    y = np.array(std_us, dtype=np.float64) ** 2
    keep = (y > 0) & (np.array(counts) >= 2)
    if not keep.any():
        raise PintimeError("no technique with 2 repetitions or more to measure the template's noise from")
    w = np.sqrt((np.array(counts)[keep] - 1) / 2.0) / y[keep]
    scale = np.max(a[keep], axis=0)
    scale[scale == 0] = 1.0
    x = scipy.optimize.nnls(a[keep] / scale * w[:, None], y[keep] * w)[0] / scale
    return float(np.sqrt(x[0])), float(x[1])


def technique_std_us(t: Technique, method: str, card: Card) -> float:
    """Per-repetition std of the technique's estimate (its first parameter) with ``method``."""
    if t.std_us is not None and method in t.std_us:
        return t.std_us[method]
    if t.design is None or t.pulse_edges_us is None:
        raise PintimeError(f"{t.label}: no spread measured for the {method} method")
    if method == "template":
        white, wander = template_terms(t.design, t.pulse_edges_us)
        return float(np.sqrt(card.edge_sigma_us ** 2 * white + card.wander_us2_per_us * wander))
    if t.offsets_measured:
        return float(shared_phase_std_us(t.design, t.pulse_edges_us, card.tick_us)[0])
    return float(beilner_std_us(t.design, t.pulse_edges_us, card.tick_us, exact_widths=True)[0])


def plan(techniques: list[Technique], card: Card, target_half_us: float) -> list[PlanRow]:
    """A row per technique and method: repetitions for ±``target_half_us`` and the MCU time they take."""
    rows = []
    for t in techniques:
        for method in METHODS:
            std = technique_std_us(t, method, card)
            shared = (t.shared_half_us or {}).get(method, 0.0)
            r = repetitions(std, target_half_us, shared)
            rows.append(PlanRow(t.label, t.technique, method, std, r,
                                shared if r is None else half_width_us(std, r, shared),
                                float("nan") if r is None else r * t.rep_us * 1e-6, t.rep_is_pulses, shared))
    return rows


def plan_json(rows: list[PlanRow], card: Card, target_half_us: float, f_cpu_hz: float) -> dict[str, Any]:
    """The ``pintime plan --json`` object (docs/design.md §6)."""
    cycles_per_us = f_cpu_hz / 1e6
    return {"source": card.source, "f_cpu_hz": f_cpu_hz, "tick_us": card.tick_us,
            "edge_sigma_us": _num(card.edge_sigma_us), "wander_us2_per_us": _num(card.wander_us2_per_us),
            "target_ci95_half_us": target_half_us,
            "target_ci95_half_cycles": target_half_us * cycles_per_us,
            "rows": [{"label": r.label, "technique": r.technique, "method": r.method,
                      "std_us": r.std_us, "std_cycles": r.std_us * cycles_per_us,
                      "repetitions": r.repetitions, "ci95_half_us": r.ci95_half_us,
                      "ci95_half_cycles": r.ci95_half_us * cycles_per_us, "mcu_s": _num(r.mcu_s),
                      "shared_ci95_half_us": r.shared_half_us,
                      "mcu_s_pulses_only": r.mcu_is_pulses} for r in rows]}


def _num(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def _duration(s: float) -> str:
    for unit, size in (("y", 365.25 * 86400), ("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s / size:.3g} {unit}"
    return f"{s:.3g} s"


def format_plan(rows: list[PlanRow], card: Card, target_half_us: float, f_cpu_hz: float) -> str:
    """The plan as a table: per technique and method, σ per repetition, repetitions, CI, MCU time."""
    lines = [f"Plan for a 95 % CI of ±{target_half_us * 1e3:.4g} ns (±{target_half_us * f_cpu_hz / 1e6:.4g} "
             f"cycles at {f_cpu_hz:g} Hz) from {card.source}: template edge σ {card.edge_sigma_us * 1e3:.4g} "
             f"ns and clock wander {np.sqrt(card.wander_us2_per_us * 1e4) * 1e3:.3g} ns over 10 ms; tick "
             f"{card.tick_us:.4f} µs (count edge σ {card.tick_us / np.sqrt(12) * 1e3:.4g} ns)"]
    head = (f"{'Technique':<26} {'method':<9} {'σ/rep (ns)':>12} {'repetitions':>14} {'95 % CI (ns)':>13} "
            f"{'MCU time':>11}")
    lines += [head, "-" * len(head)]
    for r in rows:
        mark = "*" if r.mcu_is_pulses else ""
        if r.repetitions is None:
            lines.append(f"{r.label:<26} {r.method:<9} {r.std_us * 1e3:>12.4g} {'unreachable†':>14} "
                         f"{'±' + format(r.ci95_half_us * 1e3, '.4g'):>13} {'—':>11}")
            continue
        lines.append(f"{r.label:<26} {r.method:<9} {r.std_us * 1e3:>12.4g} {r.repetitions:>14,} "
                     f"{'±' + format(r.ci95_half_us * 1e3, '.4g'):>13} {_duration(r.mcu_s) + mark:>11}")
    if any(r.mcu_is_pulses for r in rows):
        lines.append("  * the pulses' own time only: a profile does not know the frames around them")
    if any(r.repetitions is None for r in rows):
        lines.append("  † the learned edge shape's error, shared by every repetition, alone is this wide: no "
                     "number of repetitions reaches the target (a higher level, a faster card)")
    return "\n".join(lines)
