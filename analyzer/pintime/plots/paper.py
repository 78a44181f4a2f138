"""The paper's figures from our own data: Fig. 2 (line fit), Fig. 3 (outlier rejection), Fig. 7 (ε/N)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from pintime.estimate.estimators import OUTLIER_FACTOR, OUTLIER_FLOOR_US  # noqa: E402

if TYPE_CHECKING:
    from pintime.pipeline import Analysis


def fig2_line_fit(a: Analysis, out: Path) -> Path:
    """Fig. 2: the pulse widths T_k of one repetition against k, and the fitted line (eq. 4–5)."""
    m = max(a.result.line_fits)
    fit, points = a.result.line_fits[m], a.result.line_points[m]
    rep = fit.reps[0]
    k = np.arange(1, m + 1)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(k, points[0], "o", label="measured $T_k$")
    ax.plot(k, rep.slope_us * k + rep.intercept_us, "-",
            label=f"$y = {rep.slope_us:.3f}x {rep.intercept_us:+.3f}$")
    ax.set(xlabel="executions $N_k = k$", ylabel="pulse width $T_k$ (µs)",
           title=f"Straight-line fit (Fig. 2)\nline 1×–{m}×, repetition 1 of {len(fit.reps)}")
    ax.legend()
    return _save(fig, out / "fig2_line_fit.png")


def fig3_outlier(a: Analysis, out: Path) -> Path:
    """Fig. 3: a repetition with an outlier rejected (§4.1) or, if none, the rule's threshold band."""
    found = [(m, i) for m, fit in sorted(a.result.line_fits.items()) for i, r in enumerate(fit.reps)
             if not r.kept.all()]
    m, i = found[0] if found else (max(a.result.line_fits), 0)
    fit, y = a.result.line_fits[m], a.result.line_points[m][i]
    rep = fit.reps[i]
    k = np.arange(1, m + 1)
    all_a, all_b = rep.all_points_us
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6, 6), sharex=True)
    top.plot(k[rep.kept], y[rep.kept], "o", label="kept")
    if found:
        top.plot(k[~rep.kept], y[~rep.kept], "x", ms=10, color="red", label="rejected outlier")
        top.plot(k, all_a * k + all_b, "--", label=f"all points: slope {all_a:.3f}")
    top.plot(k, rep.slope_us * k + rep.intercept_us, "-", label=f"final fit: slope {rep.slope_us:.3f}")
    top.set(ylabel="pulse width $T_k$ (µs)")
    top.legend()
    unit, scale = ("µs", 1.0) if max(rep.threshold_us, rep.deviation_us.max()) >= 1 else ("ns", 1e3)
    bottom.plot(k, rep.deviation_us * scale, "o")
    bottom.axhspan(0, rep.threshold_us * scale, alpha=0.2,
                   label=f"kept below {rep.threshold_us * scale:.3g} {unit}\n"
                         f"({OUTLIER_FACTOR:g}× median |deviation|, at least {OUTLIER_FLOOR_US * 1e6:g} ps)")
    bottom.set(xlabel="executions $N_k = k$", ylabel=f"|deviation| from Theil–Sen line ({unit})")
    bottom.legend()
    title = (f"Outlier rejected: line 1×–{m}×, repetition {i + 1}" if found else
             f"no outlier in {sum(len(f.reps) for f in a.result.line_fits.values())} line fits; "
             f"repetition 1 of 1×–{m}× shown")
    top.set_title("Robustness of the line fit (Fig. 3)\n" + title, fontsize=10)
    return _save(fig, out / "fig3_outlier.png")


def fig7_executing_error(a: Analysis, out: Path) -> Path:
    """Fig. 7: |Executing N× − T_e| against N on log-log axes, with ε/N (ε = line-fit intercept)."""
    m = max(a.result.line_fits)
    fit = a.result.line_fits[m]
    t_e, eps = fit.slope.mean_us, fit.intercept.mean_us
    te_half = (fit.slope.ci95_us[1] - fit.slope.ci95_us[0]) / 2
    rows = [r for r in a.result.rows if r.technique in ("direct", "executing")]
    n = np.array([r.n for r in rows], dtype=float)
    err = np.array([abs(r.estimate.mean_us - t_e) for r in rows])
    fig, ax = plt.subplots(figsize=(6, 4))
    half = np.array([(r.estimate.ci95_us[1] - r.estimate.ci95_us[0]) / 2 for r in rows])
    shown = err > 0
    ax.errorbar(n[shown], err[shown], yerr=np.nan_to_num(half[shown]), fmt="o", capsize=3,
                label="|Executing N× − $T_e$| (ours, 95 % CI)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    grid = np.geomspace(1, max(n.max(), 2), 50)
    ax.loglog(grid, abs(eps) / grid, "-", label=f"ε/N, ε = {eps:.3f} µs")
    ax.set(xlabel="N (executions per pulse)", ylabel="error (µs)",
           title=f"Error of Executing N× against ε/N (Fig. 7)\n$T_e$ = {t_e:.3f} µs "
                 f"(95 % CI ±{te_half:.2g}) from line fit 1×–{m}×")
    ax.legend()
    return _save(fig, out / "fig7_executing_error.png")


def _save(fig: plt.Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_plots(a: Analysis, out: Path) -> list[Path]:
    """Write every figure this capture supports into ``out``; the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    if not a.result.line_fits:
        return []
    return [fig2_line_fit(a, out), fig3_outlier(a, out), fig7_executing_error(a, out)]
