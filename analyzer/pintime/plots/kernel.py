"""The kernel's figures (firmware/kernel/KERNEL.md), like KernelPerf's scope pictures but measured: the four
signals over one tick, and the scheduler's time against the number of threads with its line fit."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from pintime.edges import MEASUREMENT_CHANNEL  # noqa: E402
from pintime.estimate.kernel import INSERT_CHANNEL, SWITCH_CHANNEL, THREAD0_CHANNEL, Kernel  # noqa: E402

if TYPE_CHECKING:
    from pintime.pipeline import Analysis

SIGNALS = ((MEASUREMENT_CHANNEL, "PA0: tick interrupt (low)"), (INSERT_CHANNEL, "PA1: run-queue insertion"),
           (SWITCH_CHANNEL, "PA2: context switch"), (THREAD0_CHANNEL, "PA3: thread 0 works"))
TICK_THREADS = 4  # the configuration shown over one tick
TICK_INDEX = 1  # its second tick (the first follows the kernel's start)


def fig_kernel_tick(a: Analysis, out: Path) -> Path:
    """The four signals from one tick's start to the next, N = TICK_THREADS (or the fewest threads)."""
    frames = a.decode.of_kind("kernel")
    frame = next((f for f in frames if f.fields["threads"] == TICK_THREADS), frames[0])
    meas = a.edges.on(MEASUREMENT_CHANNEL)
    g = frame.group
    start, stop = meas.time[g[1 + 2 * TICK_INDEX]], meas.time[g[3 + 2 * TICK_INDEX]]
    to_us = a.clock.us_per_unit
    fig, ax = plt.subplots(figsize=(9, 4))
    for row, (channel, label) in enumerate(SIGNALS):
        s = a.edges.on(channel)
        inside = (s.time >= start) & (s.time < stop)
        if channel == MEASUREMENT_CHANNEL or np.any(inside):
            level_before = 1 if channel == MEASUREMENT_CHANNEL else 0
            t = np.r_[start, s.time[inside], stop]
            lv = np.r_[level_before, (s.polarity[inside] > 0).astype(int)]
            base = 1.5 * (len(SIGNALS) - 1 - row)
            ax.step((t - start) * to_us, base + np.r_[lv, lv[-1]], where="post", label=label)
    busy = [t for c, _ in SIGNALS[1:] if len(t := a.edges.on(c).time[(a.edges.on(c).time >= start)
                                                                     & (a.edges.on(c).time < stop)])]
    if busy:  # up to the tick's last switch, not the idle rest of the tick
        ax.set_xlim(-50, (max(t[-1] for t in busy) - start) * to_us * 1.1)
    ax.set(xlabel=f"µs from the tick's start (N = {frame.fields['threads']}, repetition "
                  f"{frame.fields['rep'] + 1}, tick {TICK_INDEX + 1})", yticks=[],
           title="Kernel signals over one tick")
    ax.legend(loc="upper right", fontsize="small")
    return _save(fig, out / "kernel_tick.png")


def fig_kernel_fit(a: Analysis, out: Path) -> Path:
    """Each repetition's scheduler time per configuration against N, and the mean line fit."""
    k: Kernel = a.result
    n = np.array([f.threads for f in k.frames])
    tick = np.array([f.tick_us for f in k.frames])
    slope, intercept = k.fit.slope, k.fit.intercept
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(n, tick, "o", alpha=0.4, label="one repetition's mean tick")
    x = np.array([0, n.max()])
    ax.plot(x, intercept.mean_us + slope.mean_us * x, "-",
            label=f"fit: {k.cycles(intercept.mean_us):.3f} + {k.cycles(slope.mean_us):.4f} N cycles")
    ax.set(xlabel="threads N", ylabel="scheduler (tick interrupt) time (µs)",
           title=f"Scheduler time against threads\n{len(k.fit.reps)} repetitions, line fit per repetition")
    ax.legend()
    return _save(fig, out / "kernel_fit.png")


def write_kernel_plots(a: Analysis, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    return [fig_kernel_tick(a, out), fig_kernel_fit(a, out)]


def _save(fig: plt.Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
