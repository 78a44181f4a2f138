"""Every figure of one analysed capture: the paper's Table 1 or Table 2 figures, or the kernel's, and Fig. 6
for a WAV."""

from __future__ import annotations

from pathlib import Path

from pintime.errors import PintimeError
from pintime.pipeline import Analysis
from pintime.plots.edge import fig6_edge
from pintime.plots.kernel import write_kernel_plots
from pintime.plots.paper import write_plots
from pintime.plots.table2 import write_table2_plots


def write_figures(a: Analysis, directory: Path) -> list[Path]:
    """The paper's figures for this capture (Table 1 or Table 2), or the kernel's; the paths written."""
    if a.user is not None:
        raise PintimeError("--plots: no figures for user programs yet")
    try:
        if a.kernel is not None:
            plots = write_kernel_plots(a, directory)
        else:
            plots = write_plots(a, directory) if a.table2 is None else write_table2_plots(a.table2, directory)
        if a.method != "exact":  # a WAV: one captured edge with the time each method gives it (Fig. 6)
            plots.append(fig6_edge(a.path, directory))
    except OSError as err:
        raise PintimeError(f"{directory}: cannot write the figures ({err.strerror or err})") from None
    return plots
