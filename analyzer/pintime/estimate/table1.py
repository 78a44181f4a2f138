"""The paper's Table 1 (and the §5 overdetermined system) from decoded frames and calibrated edge times."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pintime.estimate import estimators as est
from pintime.frames import Frame
from pintime.printed import fixed, ns

# Moreno & Fischmeister, Table 1, in the paper's order: (technique, n, label, mean µs, std µs)
PAPER_TABLE1: list[tuple[str, int, str, float, float]] = [
    ("line_fit", 10, "Line fitting 1×–10×", 99.986, 0.125),
    ("line_fit", 20, "Line fitting 1×–20×", 100.001, 0.044),
    ("differential", 55, "Differential 55×", 99.834, 0.237),
    ("differential", 210, "Differential 210×", 100.009, 0.121),
    ("differential", 1000, "Differential 1000×", 100.003, 0.05),
    ("direct", 1, "Direct (1×)", 108.521, 1.119),
    ("executing", 10, "Executing 10×", 100.808, 0.135),
    ("executing", 20, "Executing 20×", 100.412, 0.068),
    ("executing", 55, "Executing 55×", 100.154, 0.024),
    ("executing", 100, "Executing 100×", 100.087, 0.012),
    ("executing", 210, "Executing 210×", 100.004, 0.004),
]
_ORDER = ["line_fit", "differential", "direct", "executing"]


@dataclass(frozen=True)
class Row:
    """One Table 1 row: our estimate of the 100-cycle routine's time, and the paper's beside it."""

    technique: str  # "direct", "executing", "differential" or "line_fit"
    n: int  # executions (direct 1, executing N, differential pairs N, line fit up to M)
    label: str
    estimate: est.Estimate
    paper_mean_us: float | None
    paper_std_us: float | None
    details: dict[str, Any] = field(default_factory=dict)  # technique-specific extras (JSON-ready)


@dataclass(frozen=True)
class Table1:
    """Table 1 rows in the paper's order, the per-repetition line fits behind them, and the §5 system."""

    rows: list[Row]
    line_fits: dict[int, est.LineFit]  # by M, for the figures
    line_points: dict[int, np.ndarray]  # by M: pulse widths (R, M) the line fits were made from, µs
    overdetermined: est.Overdetermined | None
    overdetermined_m: int | None
    frames: list[Frame]  # the valid frames, and the measurement channel's edge times they index
    time: np.ndarray  # (source time base, a view: no copy), for :meth:`pulse_edges_us`
    us_per_unit: float

    def pulse_edges_us(self, key: tuple[str, int]) -> np.ndarray:
        """Each repetition's edges from its first, (R, 2 · pulses), µs, of ``key``: (technique, n) or
        ("overdet", m). Made on each use: a long capture's would be another array per edge."""
        return np.array([pulse_edges_us(self.time, f.group, self.us_per_unit) for f in self.frames
                         if _key(f) == key])


def pulse_widths_us(time: np.ndarray, group: np.ndarray, us_per_unit: float) -> np.ndarray:
    """Widths of a group's pulses, each rising edge to the falling edge after it (FORMAT.md §1), in µs.

    The difference is taken in the source time base first, so large absolute times add no rounding.
    """
    return (time[group[1::2]] - time[group[0::2]]) * us_per_unit


def overdetermined_design(m: int) -> np.ndarray:
    """The §5 system's matrix A (eq. 7) for K = m pulses: columns N_k = k, M_k (FORMAT.md §4: M_1 = 1,
    M_k = k + 1) and ε's ones."""
    k = np.arange(1, m + 1)
    return np.column_stack([k, np.where(k == 1, 1, k + 1), np.ones(m)]).astype(np.float64)


def pulse_edges_us(time: np.ndarray, group: np.ndarray, us_per_unit: float) -> np.ndarray:
    """A group's edge times from its first edge, in µs (differences in the source time base first)."""
    return (time[group] - time[group[0]]) * us_per_unit


def _label(technique: str, n: int) -> str:
    return {"line_fit": f"Line fitting 1×–{n}×", "differential": f"Differential {n}×",
            "direct": "Direct (1×)", "executing": f"Executing {n}×"}[technique]


def _rows_of(technique: str, n: int,
             widths: np.ndarray) -> tuple[est.Estimate, dict[str, Any], est.LineFit | None]:
    """Apply one technique's estimator to its repetitions' pulse widths (repetitions, pulses)."""
    if technique == "direct":
        return est.direct(widths[:, 0].copy()), {}, None
    if technique == "executing":
        return est.executing(widths[:, 0].copy(), n), {}, None
    if technique == "differential":
        pairs = widths.reshape(len(widths), n, 2)  # pulse widths alternate 1 call, 2 calls
        d = est.differential(pairs[:, :, 0], pairs[:, :, 1])
        return d.mean, {"median": _estimate_json(d.median), "trimmed_mean": _estimate_json(d.trimmed_mean),
                        "trim_fraction": est.TRIM_FRACTION}, None
    fit = est.line_fit(widths)
    details = {"intercept": _estimate_json(fit.intercept),
               "r2_mean": float(np.mean([r.r2 for r in fit.reps])),
               "residual_rms_us_mean": float(np.mean([r.residual_rms_us for r in fit.reps])),
               "outliers": fit.outliers, "outlier_factor": est.OUTLIER_FACTOR}
    return fit.slope, details, fit


def build_table1(frames: list[Frame], time: np.ndarray, us_per_unit: float) -> Table1:
    """Table 1 rows (paper order, then any other sizes) and the overdetermined system, from valid frames.

    ``time`` are the measurement-channel edge times (source time base) the frames' groups index into;
    ``us_per_unit`` converts them to MCU µs (from the clock calibration).
    """
    of_key: dict[tuple[str, int], list[Frame]] = defaultdict(list)
    for frame in frames:
        if (key := _key(frame)) is not None:
            of_key[key].append(frame)

    def widths(key: tuple[str, int]) -> np.ndarray:
        """(repetitions, pulses) µs of one technique and size: made one at a time, so that a long capture's
        are never all held at once."""
        first = of_key[key][0]
        out = np.empty((len(of_key[key]), first.pulses))
        for r, frame in enumerate(of_key[key]):
            out[r] = pulse_widths_us(time, frame.group, us_per_unit)
        return out

    paper = {(t, n): (mean, std) for t, n, _, mean, std in PAPER_TABLE1}
    paper_keys = [(t, n) for t, n, *_ in PAPER_TABLE1]
    keys = [k for k in of_key if k[0] != "overdet"]
    keys.sort(key=lambda k: (paper_keys.index(k), 0) if k in paper else (len(paper_keys) + _ORDER.index(k[0]),
                                                                              k[1]))
    rows: list[Row] = []
    line_fits: dict[int, est.LineFit] = {}
    line_points: dict[int, np.ndarray] = {}
    for technique, n in keys:
        points = widths((technique, n))
        estimate, details, fit = _rows_of(technique, n, points)
        if fit is not None:
            line_fits[n] = fit
            line_points[n] = points
        mean, std = paper.get((technique, n), (None, None))
        rows.append(Row(technique, n, _label(technique, n), estimate, mean, std, details))
    overdet = None
    overdet_m = max((n for t, n in of_key if t == "overdet"), default=None)
    if overdet_m is not None:
        a = overdetermined_design(overdet_m)
        overdet = est.overdetermined(widths(("overdet", overdet_m)), a[:, 0], a[:, 1])
    return Table1(rows, line_fits, line_points, overdet, overdet_m, frames, time, us_per_unit)


TECHNIQUE_OF = {"direct": "direct", "executing": "executing", "differential": "differential",
                "line": "line_fit", "overdet": "overdet"}  # Table 1's frame kinds


def _key(frame: Frame) -> tuple[str, int] | None:
    """A Table 1 frame's (technique, n), None for another frame."""
    if frame.kind not in TECHNIQUE_OF:
        return None
    return TECHNIQUE_OF[frame.kind], frame.fields.get("n", frame.fields.get("m", 1))


def _estimate_json(e: est.Estimate) -> dict[str, Any]:
    return {"mean_us": e.mean_us, "std_us": _num(e.std_us), "ci95_us": [_num(x) for x in e.ci95_us],
            "count": e.count, "template_sigma_us": e.template_sigma_us,
            "quantization_sigma_us": e.quantization_sigma_us}


def _num(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def table1_json(table: Table1) -> dict[str, Any]:
    """The ``table1`` rows and the ``overdetermined`` result as in docs/design.md §6."""
    rows = []
    for row in table.rows:
        rows.append({"technique": row.technique, "n": row.n, "label": row.label,
                     **_estimate_json(row.estimate),
                     "paper_mean_us": row.paper_mean_us, "paper_std_us": row.paper_std_us, **row.details})
    out: dict[str, Any] = {"table1": rows}
    if table.overdetermined is not None:
        o = table.overdetermined
        out["overdetermined"] = {"m": table.overdetermined_m, "t_e": _estimate_json(o.t_e),
                                 "t_i": _estimate_json(o.t_i), "epsilon": _estimate_json(o.epsilon),
                                 "condition": o.condition}
    return out


def format_table1(table: Table1) -> str:
    """Table 1 in the paper's layout, with the paper's values beside ours, then the overdetermined system;
    means in µs, spreads in ns (:mod:`pintime.printed`)."""
    head = (f"{'Technique':<22} {'Execution time (µs)':>20} {'Std. deviation (ns)':>20} "
            f"{'95 % CI ± (ns)':>15}   {'paper (µs)':>10} {'paper std (µs)':>14} {'reps':>5}")
    lines = [head, "-" * len(head)]
    for row in table.rows:
        e = row.estimate
        paper = (f"{row.paper_mean_us:>10.3f} {row.paper_std_us:>14.3f}" if row.paper_mean_us is not None
                 else f"{'':>10} {'':>14}")
        half = (e.ci95_us[1] - e.ci95_us[0]) / 2
        ours = f"{fixed(e.mean_us, 4):>20} {ns(e.std_us):>20} {ns(half):>15}"
        lines.append(f"{row.label:<22} {ours}   {paper} {e.count:>5}")
    if table.overdetermined is not None:
        o = table.overdetermined
        lines.append(f"Overdetermined system (eq. 6–8), K = {table.overdetermined_m}, {o.t_e.count} reps: "
                     f"T_e = {o.t_e.mean_us:.4f} µs ± {ns(o.t_e.std_us)} ns, "
                     f"T_i = {o.t_i.mean_us:.4f} µs ± {ns(o.t_i.std_us)} ns, "
                     f"ε = {o.epsilon.mean_us:.4f} µs ± {ns(o.epsilon.std_us)} ns "
                     f"(condition number {o.condition:.1f})")
    return "\n".join(lines)


def table1_details(table: Table1) -> list[str]:
    """The techniques' diagnostics (``analyze -v``): a differential's median and trimmed mean, a line
    fit's intercept, R², residuals and outliers."""
    lines = []
    for row in table.rows:
        if row.technique == "differential":
            med, trim = row.details["median"], row.details["trimmed_mean"]
            lines.append(f"  {row.label}: median {med['mean_us']:.4f} µs, "
                         f"{est.TRIM_FRACTION:.0%}-trimmed mean {trim['mean_us']:.4f} µs")
        if row.technique == "line_fit":
            d = row.details
            lines.append(f"  {row.label}: intercept (ε) {d['intercept']['mean_us']:.4f} µs, "
                         f"mean R² {d['r2_mean']:.9f}, "
                         f"mean residual RMS {ns(d['residual_rms_us_mean'])} ns, "
                         f"{d['outliers']} outlier(s) rejected (> {est.OUTLIER_FACTOR:g}× median deviation)")
    return lines
