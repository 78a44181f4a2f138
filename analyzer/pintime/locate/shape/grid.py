"""Edges on a grid: a digital signal whose every edge lies a whole number of constant cells from the one
before (docs/design.md §10, "Edges on a grid"), found from the recording alone.

A biphase-mark code (LTC) puts every edge on its half-bit grid, a UART on its bit grid, a timer's square
wave or PWM each polarity on its period; a timer that restarts (a square wave re-phased every second) is
such a grid in pieces. Within a stretch the edges' times are ``t = a_run + c·k + drift(t)``, ``k`` a whole
number, one ``a_run`` per piece and polarity (the fall − rise offset is the falling pieces' own), and a
smooth drift (the source's clock against the card's). Fitted to hundreds of edges, that line knows each
edge's phase to a fraction of what one edge's location does: the line serves learning the chain's
response as a calibration train's line does (:mod:`pintime.locate.shape.gridshape`).

Edges are first found on whichever of the recorded signal and its first difference shows them as
alternating peaks: a pin's edges alternate in sign (rise, fall, rise ...), so through a chain that keeps
steps the difference's peaks alternate, and through one that differentiates them (each edge a short
pulse, a heavily high-passed input) the signal's own do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import maximum_filter1d

from pintime.locate.detect.detect import strength_noise

ALTERNATING = 0.9  # of consecutive detected peaks this share alternate in sign: a pin's edges
# a peak stands above this fraction of its polarity's typical peak (a slow fall, as through a pull-up's RC,
# peaks lower in the difference than the rise: one threshold for both left the falls undetected) …
PEAK_FRACTION = 0.5
TYPICAL_PERCENTILE = 75.0  # … this percentile of that polarity's peaks above MIN_PEAK_NOISE
MIN_PEAK_NOISE = 8.0  # ... and this many times the noise of the difference
# each edge's seed: the centroid of the difference (or, through a differentiating chain, the signal) in a
# Gaussian window of this σ, over ±SEED_HALF_SAMPLES: without the parabola's bias periodic in the sub-sample
# phase (0.1 sample), which a line through the seeds would keep (locate/locators/centroid.py); a neighbour a
# cell of 12.5 samples away weighs 3e-9
SEED_SIGMA_SAMPLES = 2.0
SEED_HALF_SAMPLES = 10
SEED_ITERATIONS = 20
MIN_EDGES = 200  # fewer edges on the grid do not pin its line down finely enough to learn from
GRID_SHARE = 0.9  # of each polarity's spacings this share must be whole cells (within GRID_TOLERANCE)
GRID_TOLERANCE = 0.12  # of a cell: a spacing this far from whole cells breaks the grid (a restart)
MAX_CELLS = 64  # a spacing of more cells is a pause: the grid goes on in a new piece
MAX_DIVISOR = 4  # the cell is the smallest rising spacing over 1 … MAX_DIVISOR (LTC: 2 cells, a UART …)
MIN_CELL_SAMPLES = 2.5  # a cell shorter than this leaves no edge a sample of its own to be told by
MIN_PIECE_EDGES = 20  # pieces shorter than this are left out of the line (a UART's byte between pauses)
DRIFT_KNOT_S = 0.1  # the line's stretches: a source's grid wanders by µs over half a second
# a piece's edges jump off its line (the source re-phased its grid) by more than this fraction of a cell
# and this many of the jump's noise, in medians of JUMP_EDGES residuals either side
JUMP_CELLS = 0.02
JUMP_SIGMAS = 6.0
JUMP_EDGES = 8
JUMP_SEED_CELL = 4.0
LINE_CLIP = 5.0  # edges further than this many robust deviations from the line are left out of its fit


@dataclass(frozen=True)
class Peaks:
    """Edges found in a stretch of samples: sub-sample seeds (samples), signs, heights, and which signal
    showed them (``differentiated``: the signal itself, each edge a pulse; else its first difference)."""

    pos: np.ndarray
    sign: np.ndarray
    height: np.ndarray
    peak: np.ndarray  # where each peak's parabola puts it (samples): coarser, little moved by neighbours
    differentiated: bool
    threshold: np.ndarray  # (rising, falling): a peak of that sign stands above it


@dataclass(frozen=True)
class Grid:
    """The cell (samples), each edge's piece (−1: on no piece long enough) and whole-cell index in it."""

    cell_samples: float
    piece: np.ndarray
    index: np.ndarray

    @property
    def on_grid(self) -> np.ndarray:
        return self.piece >= 0


def detection_signal(x: np.ndarray, differentiated: bool) -> np.ndarray:
    """What edges are peaks of: the central difference of ``x``, or ``x`` less its median (a chain that
    differentiates)."""
    x = np.asarray(x, dtype=np.float64)
    if differentiated:
        return x - np.median(x)
    d = np.zeros_like(x)
    d[1:-1] = (x[2:] - x[:-2]) / 2.0
    return d


def find_peaks(d: np.ndarray, threshold: float | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One peak per run of ``|d| > threshold`` of one sign (``threshold``: one for both signs, or one for
    positive ``d`` and one for negative): its sub-sample position (a parabola through the largest sample
    and its neighbours), sign and height."""
    a = np.abs(d)
    up, down = np.broadcast_to(np.asarray(threshold, dtype=np.float64), (2,))
    at = np.flatnonzero(a > np.where(d >= 0, up, down))
    if not len(at):
        return np.zeros(0), np.zeros(0), np.zeros(0)
    sign = np.sign(d)
    # runs of above-threshold samples, split where the sign changes inside one
    run = np.cumsum(np.concatenate([[True], (np.diff(at) > 1) | (sign[at[1:]] != sign[at[:-1]])]))
    order = np.lexsort((-a[at], run))  # each run's largest sample first
    first = np.concatenate([[True], run[order][1:] != run[order][:-1]])
    top = at[order][first]
    left, mid, right = a[np.maximum(top - 1, 0)], a[top], a[np.minimum(top + 1, len(d) - 1)]
    curve = left - 2 * mid + right
    with np.errstate(invalid="ignore", divide="ignore"):
        shift = np.where(curve < 0, 0.5 * (left - right) / curve, 0.0)
    return top + np.clip(shift, -0.5, 0.5), sign[top], mid


def detect_peaks(x: np.ndarray) -> Peaks | None:
    """The edges of a stretch ``x``: on its first difference, or on itself where the difference's peaks
    do not alternate in sign and the signal's do; None when neither shows alternating peaks well above
    the noise."""
    noise = strength_noise(np.asarray(x, dtype=np.float64)) / np.sqrt(2.0)  # of one sample
    best = None
    for differentiated in (False, True):
        d = detection_signal(x, differentiated)
        floor = MIN_PEAK_NOISE * noise
        threshold = np.maximum(floor, PEAK_FRACTION * _typical_peaks(d, floor))
        found = find_peaks(d, threshold)
        pos, sign, height = found
        if len(pos) < 3:
            continue
        alternate = float(np.mean(sign[1:] != sign[:-1]))
        if alternate >= ALTERNATING and (best is None or alternate > best[0] + 0.05):
            best = (alternate, Peaks(seeds(x, pos, differentiated), sign, height, pos, differentiated,
                                     threshold))
    return None if best is None else best[1]


def seeds(x: np.ndarray, pos: np.ndarray, differentiated: bool) -> np.ndarray:
    """Each peak's centroid (samples; SEED_SIGMA_SAMPLES), from its peak ``pos``: of the first difference
    of ``x`` (placed half-way between its samples), or of ``x`` less its window's median through a
    differentiating chain. A peak whose window leaves ``x`` keeps ``pos``."""
    m = np.arange(-SEED_HALF_SAMPLES, SEED_HALF_SAMPLES + 1)
    centre = np.rint(pos).astype(np.int64)
    inside = (centre + m[0] - 1 >= 0) & (centre + m[-1] < len(x))
    y = np.asarray(x, dtype=np.float64)[np.clip(centre[:, None] + m[None, :], 0, len(x) - 1)]
    d = y - np.median(y, axis=1, keepdims=True) if differentiated else np.diff(y, axis=1)
    at = m.astype(np.float64) if differentiated else m[1:] - 0.5
    c = pos - centre
    with np.errstate(invalid="ignore", divide="ignore"):
        for _ in range(SEED_ITERATIONS):
            w = np.exp(-0.5 * ((at[None, :] - c[:, None]) / SEED_SIGMA_SAMPLES) ** 2) * d
            c = np.sum(w * at[None, :], axis=1) / np.sum(w, axis=1)
    ok = inside & np.isfinite(c) & (np.abs(c) < SEED_HALF_SAMPLES / 2)
    return np.where(ok, centre + np.where(ok, c, 0.0), pos)


def _typical_peaks(d: np.ndarray, floor: float) -> np.ndarray:
    """The height of ``|d|``'s typical edge peak of each sign (positive, negative): the TYPICAL_PERCENTILE of
    its peaks above ``floor`` (a pin's edges of one polarity stand alike; a spike or two, far higher, and the
    noise's peaks below them do not move it)."""
    _, sign, height = find_peaks(d, floor)
    return np.array([float(np.percentile(height[sign == s], TYPICAL_PERCENTILE)) if np.any(sign == s) else 0.0
                     for s in (1, -1)])


def find_grid(peaks: Peaks) -> Grid | None:
    """The grid the edges ``peaks`` lie on, or None: the cell is the smallest rising spacing over 1 …
    MAX_DIVISOR, the largest whose cells hold GRID_SHARE of both polarities' spacings, refined by least
    squares; from the peaks' parabolas, which close neighbours barely move. Its jumps are looked for in the
    seeds, which have no bias periodic in the phase, where the cell is JUMP_SEED_CELL seed windows wide or
    more (the parabolas' bias follows the pattern of neighbours, and split the grid where it changed)."""
    pos, sign = peaks.peak, peaks.sign
    rising = pos[sign > 0]
    if len(rising) < MIN_EDGES // 4:
        return None
    gaps = np.diff(rising)
    smallest = float(np.percentile(gaps, 5))
    for divisor in range(1, MAX_DIVISOR + 1):
        cell = smallest / divisor
        if cell < MIN_CELL_SAMPLES:
            return None
        if all(_share(np.diff(pos[sign == s]), cell) >= GRID_SHARE for s in (1, -1)):
            cell = _refined(pos, sign, cell)
            return _pieces(pos, peaks.pos if cell >= JUMP_SEED_CELL * SEED_SIGMA_SAMPLES else pos, sign, cell)
    return None


def _share(gaps: np.ndarray, cell: float) -> float:
    """The share of ``gaps`` that are whole cells (up to MAX_CELLS) within GRID_TOLERANCE."""
    k = np.rint(gaps / cell)
    return float(np.mean((np.abs(gaps / cell - k) < GRID_TOLERANCE) & (k >= 1) & (k <= MAX_CELLS)))


def _refined(pos: np.ndarray, sign: np.ndarray, cell: float) -> float:
    """``cell`` refined by least squares on every spacing of either polarity that is whole cells."""
    num = den = 0.0
    for s in (1, -1):
        gaps = np.diff(pos[sign == s])
        k = np.rint(gaps / cell)
        ok = (np.abs(gaps / cell - k) < GRID_TOLERANCE) & (k >= 1) & (k <= MAX_CELLS)
        num += float(np.sum(gaps[ok] * k[ok]))
        den += float(np.sum(k[ok] ** 2))
    return num / den if den else cell


def _pieces(pos: np.ndarray, seeds: np.ndarray, sign: np.ndarray, cell: float) -> Grid:
    """Each edge's piece and whole-cell index: a polarity's edges are one piece as long as each is whole
    cells after the one before (within GRID_TOLERANCE and MAX_CELLS) and the grid does not jump by a
    fraction of a cell where ``seeds`` show it (:func:`_jumps`: a source that re-phases its grid, as one
    LTC generator does every frame); pieces of fewer than MIN_PIECE_EDGES edges are none."""
    piece = np.full(len(pos), -1, np.int64)
    index = np.zeros(len(pos), np.int64)
    count = 0
    for s in (1, -1):
        idx = np.flatnonzero(sign == s)
        gaps = np.diff(pos[idx])
        k = np.rint(gaps / cell)
        breaks = ~((np.abs(gaps / cell - k) < GRID_TOLERANCE) & (k >= 1) & (k <= MAX_CELLS))
        steps = np.concatenate([[0], np.where(breaks, 0, k)]).astype(np.int64)
        label = np.concatenate([[0], np.cumsum(breaks)])
        for lab in np.unique(label):
            members = np.flatnonzero(label == lab)
            cells = np.cumsum(steps[members]) - steps[members][0]
            cut = _jumps(seeds[idx[members]], cells, cell)
            for part_lo, part_hi in zip(cut[:-1], cut[1:], strict=True):
                part = members[part_lo:part_hi]
                if len(part) < MIN_PIECE_EDGES:
                    continue
                piece[idx[part]] = count
                index[idx[part]] = cells[part_lo:part_hi] - cells[part_lo]
                count += 1
    return Grid(cell, piece, index)


def _jumps(pos: np.ndarray, cells: np.ndarray, cell: float) -> np.ndarray:
    """Where one polarity's run of edges at ``pos`` (whole ``cells`` apart) jumps off its line: the
    bounds of its parts (first index of each, then the end). A jump is the median of the JUMP_EDGES
    residuals after an edge less that of as many before, beyond JUMP_CELLS of a cell and JUMP_SIGMAS of
    its own noise, at its largest."""
    n = len(pos)
    if n < 2 * JUMP_EDGES + 1:
        return np.array([0, n])
    r = pos - np.polyval(np.polyfit(cells, pos, 1), cells)
    windows = np.lib.stride_tricks.sliding_window_view(r, JUMP_EDGES)
    medians = np.median(windows, axis=1)  # medians[i]: of r[i … i + JUMP_EDGES − 1]
    jump = np.zeros(n)
    jump[JUMP_EDGES:n - JUMP_EDGES + 1] = medians[JUMP_EDGES:] - medians[:n - 2 * JUMP_EDGES + 1]
    spread = 1.4826 * float(np.median(np.abs(np.diff(r)))) / np.sqrt(2.0)
    threshold = max(JUMP_CELLS * cell, JUMP_SIGMAS * spread * np.sqrt(2.0 * np.pi / (2 * JUMP_EDGES)))
    big = np.abs(jump) > threshold
    peak = big & (np.abs(jump) >= maximum_filter1d(np.abs(jump), 2 * JUMP_EDGES + 1))
    return np.concatenate([[0], np.flatnonzero(peak), [n]])


def grid_line(pos: np.ndarray, grid: Grid, knot_samples: float, keep: np.ndarray | None = None
              ) -> np.ndarray:
    """Where the grid puts each edge on a piece (samples; NaN off the grid): a least-squares line
    ``a + c·k`` per piece and stretch of ``knot_samples`` (a source's grid drifts: each piece is cut into
    stretches, straight lines that need not meet), through ``pos``; edges beyond LINE_CLIP robust
    deviations are left out of the fit and it is fitted again. ``keep``: edges allowed in the fit
    (default: all on the grid)."""
    on = grid.on_grid if keep is None else grid.on_grid & keep
    label = np.full(len(pos), -1, np.int64)
    if grid.on_grid.any():
        start = float(np.min(pos[grid.on_grid]))
        part = np.floor((pos - start) / knot_samples).astype(np.int64)
        stretches = int(part[grid.on_grid].max()) + 1
        label[grid.on_grid] = grid.piece[grid.on_grid] * stretches + part[grid.on_grid]
        label[grid.on_grid] = np.unique(label[grid.on_grid], return_inverse=True)[1]
    line = np.full(len(pos), np.nan)
    cells = grid.index * grid.cell_samples
    use = on.copy()
    for _ in range(2):
        line = _piece_lines(pos, cells, label, use)
        resid = pos - line
        ok = use & np.isfinite(resid)
        if ok.sum() < MIN_EDGES // 2:
            break
        spread = 1.4826 * float(np.median(np.abs(resid[ok] - np.median(resid[ok]))))
        use = on & (np.abs(resid) <= LINE_CLIP * max(spread, 1e-9))
    return line


def _piece_lines(pos: np.ndarray, cells: np.ndarray, label: np.ndarray, use: np.ndarray) -> np.ndarray:
    """Each labelled edge's place on its label's least-squares line through the edges ``use`` (NaN where
    its label has fewer than two of them, or none)."""
    n = int(label.max()) + 1 if (label >= 0).any() else 0
    line = np.full(len(pos), np.nan)
    if not n:
        return line
    fit = use & (label >= 0)
    lab = label[fit]

    def sums(v: np.ndarray) -> np.ndarray:
        return np.bincount(lab, v, minlength=n)

    count = sums(np.ones(len(lab)))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_c, mean_p = sums(cells[fit]) / count, sums(pos[fit]) / count
        dc = cells[fit] - mean_c[lab]
        slope = sums(dc * (pos[fit] - mean_p[lab])) / sums(dc * dc)
    on = label >= 0
    line[on] = mean_p[label[on]] + slope[label[on]] * (cells[on] - mean_c[label[on]])
    return line
