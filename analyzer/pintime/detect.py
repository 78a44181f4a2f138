"""Edge detection in one channel of a capture: where the steps are, their sign, and which are too close.

Line inputs are AC-coupled, so every pin edge is a step of ±(pin swing) on a drooping baseline with DC
offset and hum. The step strength ``x[n+h] − x[n−h]`` ignores offset, droop and hum (they change little
in 2h samples) and peaks at every edge with nearly the same height, so an edge is a peak of the strength
above half the swing. Ringing of the anti-alias filter stays well below that.
"""

from __future__ import annotations

import numpy as np

from pintime.frames import QUIET_MIN_US, SYNC_HIGH_US, SYNC_LOW_US

STEP_HALF_SAMPLES = 3  # h: the strength spans 2h = 6 samples, a band-limited step is ~1-4 samples wide
NOISE_FLOOR = 30.0  # an edge must be this many noise standard deviations of the strength high


def step_strength(x: np.ndarray) -> np.ndarray:
    """``x[n+h] − x[n−h]`` for each sample ``n`` (0 within ``h`` of either end)."""
    h = STEP_HALF_SAMPLES
    s = np.zeros_like(x)
    s[h:-h] = x[2 * h:] - x[:-2 * h]
    return s


def strength_noise(s: np.ndarray) -> float:
    """Robust standard deviation of the strength (median absolute deviation; edges are rare outliers)."""
    return float(1.4826 * np.median(np.abs(s - np.median(s))))


def find_steps(x: np.ndarray, s: np.ndarray, threshold: float) -> np.ndarray:
    """Sample index of each edge: one per run of ``|s| > threshold`` of one sign, where the central
    difference peaks.

    The strength is flat-topped over a sharp step, so the steepest sample is taken from ``x[n+1] − x[n−1]``.
    A pulse shorter than the strength's span (2h samples) makes one run of ``|s|`` whose sign flips
    between its two edges: a run ends where the sign changes.
    """
    above = np.flatnonzero(np.abs(s) > threshold)
    if above.size == 0:
        return above
    new_run = (np.diff(above, prepend=-2) > 1) | (np.sign(s[above]) != np.sign(s[np.maximum(above - 1, 0)]))
    starts = np.flatnonzero(new_run)
    steep = np.abs(x[np.minimum(above + 1, len(x) - 1)] - x[np.maximum(above - 1, 0)])
    run = np.cumsum(new_run) - 1
    is_max = np.flatnonzero(steep == np.maximum.reduceat(steep, starts)[run])
    first = np.diff(run[is_max], prepend=-1) > 0  # the first steepest sample of each run (runs ascend)
    return above[is_max[first]]


def edge_threshold(s: np.ndarray, swing: float | None) -> float | None:
    """Strength threshold for one block, or None when the block holds no edge.

    With a known ``swing`` (typical edge strength so far) the threshold is half of it; otherwise half the
    block's largest strength, provided that stands out of the noise.
    """
    if swing is not None:
        return 0.5 * swing
    peak = float(np.max(np.abs(s)))
    if peak == 0.0 or peak <= NOISE_FLOOR * strength_noise(s):
        return None
    return 0.5 * peak


def capture_inverted(time_s: np.ndarray, signal_polarity: np.ndarray) -> bool | None:
    """Whether the capture is inverted, from the measurement channel's edges (times sorted).

    The measurement pin idles low and every frame starts with a QUIET (low for >= 2.5 ms) and a SYNC (high
    ~1000 us, low ~500 us; FORMAT.md), so the edge that ends a quiet interval followed by a SYNC is a rising
    pin edge. A long interval alone says nothing: a measured pulse may be high for longer than a QUIET
    (Table 2's adpcm_coder calls at 1 MHz). The reference square wave is symmetric and says nothing; both
    channels share one ADC, so the answer holds for both. Returns None when no QUIET + SYNC exists.
    """
    gap_us = np.diff(time_s) * 1e6
    first, high, low = gap_us[:-2], gap_us[1:-1], gap_us[2:]
    sync = (first >= QUIET_MIN_US) & _inside(high, SYNC_HIGH_US) & _inside(low, SYNC_LOW_US)
    after_quiet = signal_polarity[1:-2][sync]
    if after_quiet.size == 0:
        return None
    return bool(np.sum(after_quiet < 0) > np.sum(after_quiet > 0))


def _inside(value_us: np.ndarray, bounds_us: tuple[float, float]) -> np.ndarray:
    return (value_us >= bounds_us[0]) & (value_us <= bounds_us[1])
