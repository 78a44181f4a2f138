"""Edge detection in one channel of a capture: where the steps are, their sign, and which are too close.

Line inputs are AC-coupled, so every pin edge is a step of ±(pin swing) on a drooping baseline with DC
offset and hum. The step strength ``x[n+h] − x[n−h]`` ignores offset, droop and hum (they change little
in 2h samples) and peaks at every edge with nearly the same height, so an edge is a peak of the strength
above half the swing. Ringing of the anti-alias filter stays well below that.
"""

from __future__ import annotations

import numpy as np

from pintime.compiled import kernel
from pintime.frames import QUIET_MIN_US, SYNC_HIGH_US, SYNC_LOW_US
from pintime.locate.shape.train import NEIGHBOUR_FREE_SPACING_SAMPLES

STEP_HALF_SAMPLES = 3  # h: the strength spans 2h = 6 samples, a band-limited step is ~1-4 samples wide
NOISE_FLOOR = 30.0  # an edge must be this many noise standard deviations of the strength high
MIN_PERIODS = 100  # fewer periods in a run are no periodic signal (find_periodic)
SPACING_TOLERANCE_SAMPLES = 2.0  # coarse positions are whole samples: a period wobbles by ±1
DUTY_PARTS = 8  # a periodic run's pulse width is compared in this many stretches (steady_duty) …
DUTY_PART_PULSES = 8  # … of this many pulses at least
PERIODIC_SHARE = 0.9  # a block whose steps are this much one periodic signal's holds edges, however dense
# ... as does one whose steps, at least MIN_DENSE_STEPS, stand DENSE_FLOOR of that noise high, this share of
# them alternating in sign and the 10th percentile of their heights this fraction of the 90th (a 9600-baud
# UART without pause: all alternate, 0.89–0.92; steps above half the largest of white noise, whose largest
# stands ~5 high: 0.42–0.47 alternate, 0.76–0.78)
MIN_DENSE_STEPS = 100
DENSE_FLOOR = 10.0
DENSE_ALTERNATING = 0.95
DENSE_HEIGHTS = 0.8
GAUSS_ABS_DECILE = 0.12566135  # P(|z| < 0.1257) = 1/10 for a standard normal z
VOTE_CHUNK_EDGES = 1 << 20  # capture_inverted looks at this many edges at a time


def step_strength(x: np.ndarray) -> np.ndarray:
    """``x[n+h] − x[n−h]`` for each sample ``n`` (0 within ``h`` of either end)."""
    h = STEP_HALF_SAMPLES
    s = np.zeros_like(x)
    s[h:-h] = x[2 * h:] - x[:-2 * h]
    return s


def strength_noise(x: np.ndarray) -> float:
    """Robust standard deviation of the strength's noise: from the third difference of ``x``, which
    cancels offset, droop and their curvature (an AC-coupled card's baseline between edges) where the
    strength itself keeps the droop's slope (docs/design.md §13). For white noise of deviation σ the third
    difference has deviation √20·σ and the strength √2·σ.

    The robust spread is the lowest decile of the absolute deviation from the median, scaled as for
    Gaussian noise (the decile of |z| is 0.1257σ): the edges' samples are outliers, but not rare at low
    rates (at 44.1 kHz the table1 run's close pulses fill three quarters of the samples), which would make
    the median absolute deviation theirs. A decile stays the noise's until they fill nine tenths.
    """
    d3 = np.diff(np.asarray(x, dtype=np.float64), 3)
    if d3.size == 0:
        return 0.0
    sigma = np.percentile(np.abs(d3 - np.median(d3)), 10) / GAUSS_ABS_DECILE / np.sqrt(20.0)
    return float(sigma * np.sqrt(2.0))


def find_steps(x: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Sample index and strength of each edge: one per run of ``|s| > threshold`` of one sign (``s``: the
    strength, :func:`step_strength`), where the central difference peaks.

    The strength is flat-topped over a sharp step, so the steepest sample is taken from ``x[n+1] − x[n−1]``.
    A pulse shorter than the strength's span (2h samples) makes one run of ``|s|`` whose sign flips
    between its two edges: a run ends where the sign changes.
    """
    pos = np.empty(len(x), dtype=np.int64)  # room for the worst case (a run per sample), never touched
    strength = np.empty(len(x), dtype=x.dtype)
    found = _find_steps_kernel(x, x.dtype.type(threshold), pos, strength)  # compared in x's precision
    return pos[:found], strength[:found]


@kernel
def _find_steps_kernel(x, threshold, pos, strength):  # pragma: no cover (compiled)
    """:func:`find_steps` in one pass over ``x``: writes the edges into ``pos`` and their strengths into
    ``strength``, returns how many there are (the strength is computed, not stored, for every sample).

    A first pass lists the samples above the threshold without a branch (the store is unconditional, the
    count only moves on above it; int32 halves the memory traffic of int64); the second walks that short
    list run by run.
    """
    h = STEP_HALF_SAMPLES
    last = len(x) - 1
    above = np.empty(len(x), dtype=np.int32)
    n_above = 0
    for n in range(h, len(x) - h):
        above[n_above] = n
        n_above += abs(x[n + h] - x[n - h]) > threshold
    found, best, best_steep, best_s, run_sign, previous = 0, -1, 0.0, 0.0, 0, -2
    for n in above[:n_above]:
        s = x[n + h] - x[n - h]
        sign = 1 if s > 0 else -1
        if (n != previous + 1 or sign != run_sign) and best >= 0:  # the run ended: its steepest sample
            pos[found], strength[found] = best, best_s
            found += 1
            best = -1
        run_sign, previous = sign, n
        steep = abs(x[min(n + 1, last)] - x[max(n - 1, 0)])
        if best < 0 or steep > best_steep:  # the first steepest sample of the run
            best, best_steep, best_s = n, steep, s
    if best >= 0:
        pos[found], strength[found] = best, best_s
        found += 1
    return found


def edge_threshold(x: np.ndarray, swing: float | None) -> float | None:
    """Strength threshold for a block of samples ``x``, or None when the block holds no edge.

    With a known ``swing`` (typical edge strength so far) the threshold is half of it; otherwise half the
    block's largest strength, provided that stands out of the noise.
    """
    if swing is not None:
        return 0.5 * swing
    s = step_strength(x)
    peak = float(np.max(np.abs(s)))
    noise = strength_noise(x)
    if peak == 0.0 or peak <= NOISE_FLOOR * noise and not _dense(x, peak, noise):
        return None
    return 0.5 * peak


def _dense(x: np.ndarray, peak: float, noise: float) -> bool:
    """Whether the steps of ``x`` above half its ``peak`` strength are a digital signal's edges so dense
    that its ringing fills every sample, and the third difference measures that instead of the noise
    (docs/design.md §13): a periodic signal's (:func:`dense_periodic`), or steps of one height that alternate
    in sign, as one pin's do and noise's do not, standing well out of even that measure."""
    pos, strength = find_steps(x, 0.5 * peak)
    sign = np.sign(strength)
    if dense_periodic(pos.astype(np.float64), sign):
        return True
    height = np.abs(strength)
    return (len(pos) >= MIN_DENSE_STEPS and peak > DENSE_FLOOR * noise
            and np.mean(sign[1:] != sign[:-1]) >= DENSE_ALTERNATING
            and np.percentile(height, 10) >= DENSE_HEIGHTS * np.percentile(height, 90))


def dense_periodic(pos: np.ndarray, sign: np.ndarray) -> bool:
    """Whether the edges at ``pos`` (samples) with signs ``sign`` are nearly all a periodic signal's, in
    runs (:func:`periodic_runs`: lost audio breaks one), closer than a calibration train's edges may be:
    too close for an edge's shape to be learned alone."""
    runs = periodic_runs(pos, sign)
    return (bool(runs) and len(np.unique(np.concatenate(runs))) >= PERIODIC_SHARE * len(pos)
            and spacing_samples(pos[runs[0]]) <= NEIGHBOUR_FREE_SPACING_SAMPLES
            and steady_duty(pos[runs[0]], sign[runs[0]]))


def steady_duty(pos: np.ndarray, sign: np.ndarray) -> bool:
    """Whether a periodic run's pulse width (an edge of sign −1 less the one before it) holds within
    SPACING_TOLERANCE_SAMPLES along it, in medians of DUTY_PARTS stretches: a servo's pulse sweeping from 1
    to 2 ms in a second moves by a sample a period, within the run's tolerance, so its edges are periodic
    one by one but the period's waveform is not one (its edges are learned as a dense signal's)."""
    fall = np.flatnonzero((sign[1:] < 0) & (sign[:-1] > 0)) + 1
    width = (pos[fall] - pos[fall - 1]).astype(np.float64)
    parts = min(DUTY_PARTS, len(width) // DUTY_PART_PULSES)
    if parts < 2:
        return True
    medians = [float(np.median(part)) for part in np.array_split(width, parts)]
    return max(medians) - min(medians) <= SPACING_TOLERANCE_SAMPLES


def find_periodic(pos: np.ndarray, sign: np.ndarray) -> np.ndarray | None:
    """The longest of :func:`periodic_runs` (None: none)."""
    runs = periodic_runs(pos, sign)
    return runs[0] if runs else None


def periodic_runs(pos: np.ndarray, sign: np.ndarray) -> list[np.ndarray]:
    """Indices of every run of alternating edges whose every edge is one period (within
    SPACING_TOLERANCE_SAMPLES) after the one two before it, any duty cycle, of MIN_PERIODS periods or more:
    longest first."""
    if pos.size < 2 * MIN_PERIODS + 2:
        return []
    period = (pos[2:] - pos[:-2]).astype(np.float64)
    ok = np.concatenate([[False], np.abs(np.diff(period)) <= SPACING_TOLERANCE_SAMPLES])
    ok &= (sign[2:] == sign[:-2]) & (sign[1:-1] == -sign[:-2])
    bounds = np.flatnonzero(np.diff(np.concatenate([[0], ok.astype(np.int8), [0]])))
    # periods k … cover edges k … k + 2
    runs = [np.arange(max(lo - 1, 0), hi + 2) for lo, hi in zip(bounds[::2], bounds[1::2], strict=True)]
    return sorted((r for r in runs if len(r) >= 2 * MIN_PERIODS), key=len, reverse=True)


def spacing_samples(pos: np.ndarray) -> float:
    """The smallest typical spacing between neighbouring edges of a periodic run (samples)."""
    gap = np.diff(pos)
    return float(min(np.median(gap[::2]), np.median(gap[1::2])))


def capture_inverted(time_s: np.ndarray, signal_polarity: np.ndarray) -> bool | None:
    """Whether the capture is inverted, from the measurement channel's edges (times sorted).

    The measurement pin idles low and every frame starts with a QUIET (low for >= 2.5 ms) and a SYNC (high
    ~1000 us, low ~500 us; FORMAT.md), so the edge that ends a quiet interval followed by a SYNC is a rising
    pin edge. A long interval alone says nothing: a measured pulse may be high for longer than a QUIET
    (Table 2's adpcm_coder calls at 1 MHz). The reference square wave is symmetric and says nothing; both
    channels share one ADC, so the answer holds for both. Returns None when no QUIET + SYNC exists.
    """
    falling = rising = 0
    for lo in range(0, max(len(time_s) - 3, 0), VOTE_CHUNK_EDGES):  # in slices: bounded temporaries
        hi = lo + VOTE_CHUNK_EDGES + 3  # the quiet + SYNC patterns starting at edges lo … lo + chunk − 1
        gap_us = np.diff(time_s[lo:hi]) * 1e6
        first, high, low = gap_us[:-2], gap_us[1:-1], gap_us[2:]
        sync = (first >= QUIET_MIN_US) & _inside(high, SYNC_HIGH_US) & _inside(low, SYNC_LOW_US)
        after_quiet = signal_polarity[lo:hi][1:-2][sync]
        falling += int(np.sum(after_quiet < 0))
        rising += int(np.sum(after_quiet > 0))
    if falling + rising == 0:
        return None
    return falling > rising


def _inside(value_us: np.ndarray, bounds_us: tuple[float, float]) -> np.ndarray:
    return (value_us >= bounds_us[0]) & (value_us <= bounds_us[1])
