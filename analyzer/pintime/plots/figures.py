"""Every figure of one analysed capture: the paper's Table 1 or Table 2 figures, or the kernel's, and Fig. 6
for a WAV."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pintime.errors import PintimeError
from pintime.pipeline import Analysis
from pintime.plots.edge import fig6_edge
from pintime.plots.kernel import write_kernel_plots
from pintime.plots.paper import write_plots
from pintime.plots.table2 import write_table2_plots


def write_figures(a: Analysis, directory: Path) -> list[Path]:
    """The paper's figures for this capture (Table 1 or Table 2), or the kernel's; the paths written."""
    if a.program.name not in FIGURES:
        raise PintimeError(f"--plots: no figures for {a.program.name} programs yet")
    try:
        plots = FIGURES[a.program.name](a, directory)
        if a.method != "exact":  # a WAV: one captured edge with the time each method gives it (Fig. 6)
            plots.append(fig6_edge(a.path, directory))
    except OSError as err:
        raise PintimeError(f"{directory}: cannot write the figures ({err.strerror or err})") from None
    return plots


def _no_figures(a: Analysis, directory: Path) -> list[Path]:
    """None of the program's own (the directory made, for Fig. 6)."""
    directory.mkdir(parents=True, exist_ok=True)
    return []


# each program's figures, by its name (pintime.programs)
FIGURES: dict[str, Callable[[Analysis, Path], list[Path]]] = {
    "table1": write_plots, "table2": lambda a, directory: write_table2_plots(a.result, directory),
    "kernel": write_kernel_plots, "micro": _no_figures}
