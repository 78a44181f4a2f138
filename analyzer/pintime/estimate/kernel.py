"""The kernel's figures (``firmware/kernel/KERNEL.md``) from its KERNEL frames and four signals.

A KERNEL frame runs the kernel with N threads for T ticks. Its GROUP on the measurement pin is one high
with a low in it per tick: the tick interrupt (context save, scheduler, context restore). Three more pins
carry a pulse per run-queue insertion (PA1), per context switch a thread asks for (PA2) and per stretch of
thread 0's work (PA3, drawn in the figures, not measured); their pulses between the frame's first and last
group edge belong to the frame.

Per frame (one repetition of one configuration) the means of its pulse widths; per repetition the line
fit of tick time against N (fixed part + per-thread part, :func:`pintime.estimate.estimators.fit_line`);
over the repetitions their mean, std and Student-t 95 % CI, as every estimate of pintime.

A tick is a *low* of the measurement pin, so its measured width carries the pin's fall-minus-rise
asymmetry (driver, sound card, edge locator: a few ns on a card, none on simavr's edges). The measurement
pin's calibration train measures that offset (:func:`pintime.clock.train_fall_minus_rise_us`); it is added
to every tick, and its uncertainty widens every CI it enters (1.96 σ in quadrature). The per-thread part,
a slope, does not depend on it. The other pins have no train: their pulses (highs) are corrected by the same
offset, subtracted, on the stated assumption that pins of one port (PA0 … PA3) share their drivers'
asymmetry; a difference between them would remain in those rows (it is not measured).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from pintime.edges import Edges
from pintime.errors import PintimeError
from pintime.estimate import estimators as est
from pintime.frames import Frame
from pintime.printed import fixed, ns

INSERT_CHANNEL, SWITCH_CHANNEL, THREAD0_CHANNEL = 2, 3, 4  # PA1, PA2, PA3 (KERNEL.md §2; PA3 for figures)


@dataclass(frozen=True)
class KernelRow:
    """One figure of the kernel over the repetitions, µs of the MCU clock (``percent``: overhead rows)."""

    name: str  # "scheduler fixed part", "scheduler per thread", "scheduler N=4", "insertion", …
    estimate: est.Estimate
    threads: int | None = None  # the configuration's N; None for figures pooled over configurations
    percent: tuple[float, float | None] | None = None  # overhead rows: mean % of the tick period, 95 % CI ±


@dataclass(frozen=True)
class FrameFigures:
    """One KERNEL frame's means, µs, and its pulse counts."""

    threads: int
    rep: int
    ticks: int
    tick_us: float  # mean tick-interrupt time (PA0 low)
    period_us: float  # mean tick period (PA0 falling to falling)
    insert_us: np.ndarray  # every insertion pulse's width
    switch_us: np.ndarray  # every context-switch pulse's width

    @property
    def overhead_us(self) -> float:
        """Kernel time per tick: the tick interrupt and the context switches the threads asked for."""
        return self.tick_us + float(np.sum(self.switch_us)) / self.ticks


@dataclass(frozen=True)
class Kernel:
    """Every kernel figure, and the per-frame data behind them (for the figures)."""

    rows: list[KernelRow]
    fit: est.LineFit  # tick time against N, one fit per complete repetition
    frames: list[FrameFigures]
    f_cpu_hz: int
    fall_minus_rise_us: tuple[float, float] | None  # the measurement pin's, ±1σ, added to every tick

    def cycles(self, us: float) -> float:
        """A duration in MCU cycles."""
        return us * self.f_cpu_hz / 1e6


def _pulses(edges: Edges, channel: int, span: tuple[float, float], us_per_unit: float,
            unattributed: np.ndarray) -> np.ndarray:
    """Widths (µs) of one signal pin's pulses (rising to the next falling edge) inside ``span``; a pulse
    with an edge no pin could be given (``unattributed``, sorted, the edges' time base) inside it is left
    out: that edge may be the pin's own, and the pulse two of its pulses."""
    s = edges.on(channel)
    inside = (s.time >= span[0]) & (s.time <= span[1])
    t, p = s.time[inside], s.polarity[inside]
    rise = np.flatnonzero((p[:-1] > 0) & (p[1:] < 0))
    clean = np.searchsorted(unattributed, t[rise]) == np.searchsorted(unattributed, t[rise + 1])
    rise = rise[clean]
    return (t[rise + 1] - t[rise]) * us_per_unit


def frame_figures(frame: Frame, time: np.ndarray, edges: Edges, us_per_unit: float,
                  fall_minus_rise_us: float = 0.0, unattributed: np.ndarray | None = None) -> FrameFigures:
    """One KERNEL frame's figures. ``time``: the measurement channel's edge times (source time base) that
    ``frame.group`` indexes; ``edges``: every edge of the capture, the other signal pins among them;
    ``fall_minus_rise_us``: the measurement pin's asymmetry, added to each tick (a low) and subtracted from
    each insertion and switch pulse (a high); ``unattributed``: a ladder's edges no pin could be given
    (:func:`_pulses`)."""
    g = frame.group
    t = time[g]
    falls, rises = t[1:-1:2], t[2:-1:2]  # group: rise, T × (fall, rise), fall
    ticks = frame.fields["ticks"]
    if len(falls) != ticks or ticks < 2:
        raise PintimeError(f"KERNEL frame of {frame.fields['threads']} threads: {len(falls)} ticks in its "
                           f"group, {ticks} announced (at least 2 needed)")
    span = (float(t[0]), float(t[-1]))
    none = np.zeros(0) if unattributed is None else unattributed
    return FrameFigures(frame.fields["threads"], frame.fields["rep"], ticks,
                        float(np.mean(rises - falls)) * us_per_unit + fall_minus_rise_us,
                        float(falls[-1] - falls[0]) / (ticks - 1) * us_per_unit,
                        _pulses(edges, INSERT_CHANNEL, span, us_per_unit, none) - fall_minus_rise_us,
                        _pulses(edges, SWITCH_CHANNEL, span, us_per_unit, none) - fall_minus_rise_us)


def _widened(e: est.Estimate, sigma_us: float) -> est.Estimate:
    """``e`` with its 95 % CI widened in quadrature by 1.96 σ of an offset added to it."""
    return e.widened(1.96 * sigma_us)


def build_kernel(frames: list[Frame], time: np.ndarray, edges: Edges, us_per_unit: float,
                 f_cpu_hz: int, fall_minus_rise_us: tuple[float, float] | None = None,
                 unattributed: np.ndarray | None = None) -> Kernel:
    """The kernel's figures from its valid KERNEL frames (PintimeError without two repetitions of at
    least two configurations). A capture without the insertion and switch pins (the measurement pin
    alone, as on a stereo card with the clock reference) gives the scheduler's figures only.
    ``unattributed``: a ladder capture's edges no pin could be given; pulses around them are left out."""
    offset_us, offset_sigma_us = (0.0, 0.0) if fall_minus_rise_us is None else fall_minus_rise_us
    figures = [frame_figures(f, time, edges, us_per_unit, offset_us, unattributed)
               for f in frames if f.kind == "kernel"]
    by_rep: dict[int, dict[int, FrameFigures]] = defaultdict(dict)
    for f in figures:
        by_rep[f.rep][f.threads] = f
    configs = sorted({f.threads for f in figures})
    complete = [by_rep[r] for r in sorted(by_rep) if sorted(by_rep[r]) == configs]
    if len(configs) < 2 or len(complete) < 2:
        raise PintimeError(f"kernel: {len(complete)} complete repetition(s) of {len(configs)} "
                           "configuration(s) decoded: the line fit needs 2 or more of each")
    n = np.array(configs, dtype=np.float64)
    fit_reps = [est.fit_line(n, np.array([rep[c].tick_us for c in configs])) for rep in complete]
    fit = est.LineFit(slope=est.summarize(np.array([r.slope_us for r in fit_reps])),
                      intercept=est.summarize(np.array([r.intercept_us for r in fit_reps])), reps=fit_reps)
    rows = [KernelRow("scheduler fixed part", _widened(fit.intercept, offset_sigma_us)),
            KernelRow("scheduler per thread", fit.slope)]
    for c in configs:
        ticks = est.summarize(np.array([rep[c].tick_us for rep in complete]))
        rows.append(KernelRow(f"scheduler N={c}", _widened(ticks, offset_sigma_us), c))
    if not all(len(f.insert_us) and len(f.switch_us) for f in figures):  # no insertion or switch pin
        return Kernel(rows, fit, figures, f_cpu_hz, fall_minus_rise_us)
    pooled = (("insertion", "insert_us"), ("context switch", "switch_us"))
    for name, key in pooled:  # every pulse of a repetition, all configurations together
        per_rep = [np.mean(np.concatenate([getattr(f, key) for f in rep.values()])) for rep in complete]
        rows.append(KernelRow(name, _widened(est.summarize(np.array(per_rep)), offset_sigma_us)))
    for c in configs:
        overhead = np.array([rep[c].overhead_us for rep in complete])
        period_us = float(np.mean([rep[c].period_us for rep in complete]))
        percent = _widened(est.summarize(100 * overhead / np.array([rep[c].period_us for rep in complete])),
                           100 * offset_sigma_us / period_us)
        rows.append(KernelRow(f"overhead N={c}", _widened(est.summarize(overhead), offset_sigma_us), c,
                              (percent.mean_us, _half(percent))))
    return Kernel(rows, fit, figures, f_cpu_hz, fall_minus_rise_us)


def _half(e: est.Estimate) -> float | None:
    """Half-width of an estimate's 95 % CI (None for one repetition)."""
    half = (e.ci95_us[1] - e.ci95_us[0]) / 2
    return None if np.isnan(half) else float(half)


def kernel_json(k: Kernel) -> dict[str, Any]:
    """The ``kernel`` rows: each figure's mean, std and 95 % CI half-width in µs and cycles (overhead rows
    also in % of the tick period), and the per-repetition line fit's outliers."""
    rows = []
    for r in k.rows:
        e = r.estimate
        half = _half(e)
        row: dict[str, Any] = {
            "name": r.name, "threads": r.threads, "mean_us": e.mean_us,
            "std_us": None if np.isnan(e.std_us) else e.std_us, "ci95_half_us": half, "count": e.count,
            "template_sigma_us": e.template_sigma_us, "quantization_sigma_us": e.quantization_sigma_us,
            "mean_cycles": k.cycles(e.mean_us), "ci95_half_cycles": None if half is None else k.cycles(half)}
        if r.percent is not None:
            row |= {"percent": r.percent[0], "percent_ci95_half": r.percent[1]}
        rows.append(row)
    asym = k.fall_minus_rise_us
    return {"kernel": rows, "kernel_fit": {"threads": sorted({f.threads for f in k.frames}),
                                           "repetitions": len(k.fit.reps), "outliers": k.fit.outliers,
                                           "outlier_factor": est.OUTLIER_FACTOR,
                                           "fall_minus_rise_us": None if asym is None else asym[0],
                                           "fall_minus_rise_sigma_us": None if asym is None else asym[1]}}


def format_kernel(k: Kernel) -> str:
    """The kernel's figures: mean ± 95 % CI in µs and cycles, overheads also in %."""
    head = (f"{'Kernel':<20} {'mean (µs)':>12} {'± 95 % CI (ns)':>15} {'cycles':>10} {'± 95 % CI':>10} "
            f"{'reps':>5}")
    configs = ", ".join(str(n) for n in sorted({f.threads for f in k.frames}))
    lines = [f"Kernel: scheduler (the tick interrupt) against threads N = {configs} (a line fit per "
             "repetition), run-queue insertion, context switch, kernel overhead per tick:",
             head, "-" * len(head)]
    for r in k.rows:
        e = r.estimate
        half = _half(e)
        ci_cycles = fixed(None if half is None else k.cycles(half))
        pct = ("" if r.percent is None
               else f"  = {r.percent[0]:.4f} ± {fixed(r.percent[1] or 0)} % of the tick")
        lines.append(f"{r.name:<20} {e.mean_us:>12.4f} {ns(half):>15} {k.cycles(e.mean_us):>10.3f} "
                     f"{ci_cycles:>10} {e.count:>5}{pct}")
    lines.append(f"({k.fit.outliers} outlier(s) rejected in the line fits, > {est.OUTLIER_FACTOR:g}× median "
                 "deviation)")
    asym = k.fall_minus_rise_us
    offset = "none found" if asym is None else f"{asym[0] * 1e3:+.4f} ± {ns(asym[1])} ns"
    pins = any(r.name == "insertion" for r in k.rows)
    lines.append("(ticks" + (", insertions and switches" if pins else "") + " corrected by the measurement "
                 f"pin's fall-minus-rise offset from its calibration train: {offset}"
                 + ("; PA1 and PA2 assumed to share it (one port)" if pins else "") + ")")
    if not pins:
        lines.append("(no insertion (PA1) or switch (PA2) pulses in this capture: the scheduler's figures "
                     "only)")
    return "\n".join(lines)
