"""Table 2 figures: every unknown's estimate against its simavr truth, and the fits' residuals."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from pintime.plots import save_figure  # noqa: E402
from pintime.table2.table import Model, Table2  # noqa: E402


def _errors(ax: plt.Axes, model: Model, us_per_cycle: float, title: str) -> None:
    """Estimate − truth in cycles with the 95 % CI, one point per unknown."""
    mean = np.array([u.estimate.mean_us for u in model.unknowns]) / us_per_cycle
    lo = np.array([u.estimate.ci95_us[0] for u in model.unknowns]) / us_per_cycle
    hi = np.array([u.estimate.ci95_us[1] for u in model.unknowns]) / us_per_cycle
    truth = np.array([u.truth_cycles for u in model.unknowns])
    y = np.arange(len(mean))
    ax.errorbar(mean - truth, y, xerr=[mean - lo, hi - mean], fmt="o", capsize=3, label="estimate ± 95 % CI")
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(y, [u.label for u in model.unknowns], fontsize=7)
    ax.invert_yaxis()
    ax.set(xlabel="estimate − simavr truth (cycles)", title=title)
    ax.legend(fontsize=7)


def estimates_vs_truth(t: Table2, out: Path) -> Path:
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5.5))
    _errors(left, t.block, t.us_per_cycle, "Block model (paper §5.1)")
    _errors(right, t.exit, t.us_per_cycle, "Exit model (CFG edges)")
    fig.suptitle(f"Table 2: {t.function}, {t.rounds} rounds, {len(t.block.measurements)} measurements")
    return _save(fig, out / "table2_estimates.png")


def residuals(t: Table2, out: Path) -> Path:
    """Per-measurement residual RMS of both models."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for model, marker in ((t.block, "o"), (t.exit, "x")):  # equal when both models span the same columns
        ax.plot(model.measurements, model.residual_rms_us * 1e3, marker, ms=4, label=f"{model.kind} model")
    ax.set(xlabel="measurement", ylabel="residual RMS per pulse (ns)",
           title="Least-squares residual of each measurement (eq. 10)")
    ax.legend()
    return _save(fig, out / "table2_residuals.png")


def _save(fig: plt.Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    save_figure(fig, path, 120)
    plt.close(fig)
    return path


def write_table2_plots(t: Table2, out: Path) -> list[Path]:
    """Write the Table 2 figures into ``out``; returns their paths."""
    return [estimates_vs_truth(t, out), residuals(t, out)]
