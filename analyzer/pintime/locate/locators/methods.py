"""The edge-location methods other than the template's fit of a whole capture, one edge a window of
±SIMPLE_HALF samples: the paper's inflection point, the threshold crossing and the whole-sample count (and
the template's fit of one edge, for comparison), and each method's error measured on the calibration
train (isolated edges: what a neighbour within a window does to these methods is not in it).
"""

from __future__ import annotations

import numpy as np

from pintime.edges import Edges
from pintime.locate.locators.count import locate_count
from pintime.locate.locators.fit import FIT_HALF_SAMPLES, TemplateTable, fit_isolated
from pintime.locate.locators.inflection import locate_inflection
from pintime.locate.locators.threshold import locate_threshold
from pintime.locate.shape import train
from pintime.locate.shape.periodic import Periodic

METHODS = ("template", "inflection", "threshold", "count")
SIMPLE_HALF = 16  # window half-width of the threshold and inflection methods (and of the seeds)
STEP_SAMPLES = 8  # a window's step height: the mean of its last samples less that of its first
SWING_CHUNK_SAMPLES = 4096  # a signal's swing is compared chunk by chunk (≥ 16 periods of a dense one)


def step_heights(y: np.ndarray) -> np.ndarray:
    """Each window's step height (rows of ``y``): the mean of its last STEP_SAMPLES less its first's."""
    return np.mean(y[:, -STEP_SAMPLES:], axis=1) - np.mean(y[:, :STEP_SAMPLES], axis=1)


def chunk_swings(x: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The swing (1st to 99th percentile) of each whole SWING_CHUNK_SAMPLES chunk of ``x`` that holds two
    or more of the edges at ``pos`` (indices into ``x``): where the pin moved, its swing times the gain."""
    n = len(x) // SWING_CHUNK_SAMPLES
    inside = pos[(pos >= 0) & (pos < n * SWING_CHUNK_SAMPLES)]
    moved = np.bincount(inside // SWING_CHUNK_SAMPLES, minlength=n) >= 2
    if not moved.any():
        return np.zeros(0)
    lo, hi = np.percentile(x[:n * SWING_CHUNK_SAMPLES].reshape(n, -1)[moved], [1, 99], axis=1)
    return hi - lo


def seed_phases(y_simple: np.ndarray, noise: float) -> np.ndarray:
    """Sub-sample seeds relative to the window centre (threshold method)."""
    pos, _ = locate_threshold(y_simple, noise)
    # no crossing near the detection (a window the threshold method cannot read): seeded at its centre
    return np.where(np.isfinite(pos), pos - SIMPLE_HALF, 0.0)


def method_error(method: str, table: TemplateTable | Periodic, noise: float, train_data: list,
                knot_every: int) -> tuple[float, float]:
    """RMS error of a method on the calibration train's edges about their line, and the RMS of the
    uncertainties the method itself gave them (both in samples).

    The line is piecewise linear in the edge index, knots ``knot_every`` edges apart as in the train's fit
    (:func:`pintime.locate.shape.train.knot_edges`), so that the sample clock's wander over the train
    (nanoseconds in a second, docs/design.md §10) is not charged to the method, while a method's
    sub-sample bias, which turns with each polarity's phase at least twice between knots, is. Without a
    train (``knot_every`` 0: a blind template's isolated edges) the error is taken about the template
    method's own fit of the same edges, less each polarity's mean and that fit's variance.
    """
    pos, sign, y_simple, y = train_data
    y_fit = y[:, train.FIT_COLUMNS]
    phase, sigma, _ = locate_single(method, table, noise, y_simple, y_fit)
    placed = np.isfinite(phase)  # the edges the method could place (the line's knots stay by edge index)
    if knot_every:
        v = train.line_basis(sign < 0, knot_every)[placed]
        est = (pos + phase)[placed]
        resid = est - v @ np.linalg.lstsq(v, est, rcond=None)[0]
        variance = np.sum(resid ** 2) / max(1, len(resid) - v.shape[1])
    else:
        fit, fit_sigma, _ = locate_single("template", table, noise, y_simple, y_fit)
        v = np.column_stack([sign < 0, sign > 0]).astype(np.float64)[placed]
        d = (phase - fit)[placed]
        resid = d - v @ np.linalg.lstsq(v, d, rcond=None)[0]
        variance = max(0.0, np.sum(resid ** 2) / max(1, len(resid) - 2) - np.mean(fit_sigma[placed] ** 2))
    return float(np.sqrt(variance)), float(np.sqrt(np.mean(sigma[placed] ** 2)))


def locate_single(method: str, table: TemplateTable | Periodic, noise: float, y_simple: np.ndarray,
                  y_fit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Phase from the window centre, 1-sigma and amplitude of single edges by ``method`` (the template
    method's with a TemplateTable: a Periodic's edges are located by :func:`periodic_rows`)."""
    amp = step_heights(y_simple)
    if method == "threshold":
        phase, sigma = locate_threshold(y_simple, noise)
        return phase - SIMPLE_HALF, sigma, amp
    if method == "inflection":
        phase, sigma = locate_inflection(y_simple, noise)
        return phase - SIMPLE_HALF, sigma, amp
    if method == "count":
        phase, sigma = locate_count(y_simple, noise)
        return phase - SIMPLE_HALF, sigma, amp
    assert isinstance(table, TemplateTable)
    fit = fit_isolated(table, y_fit, seed_phases(y_simple, noise), noise)
    return fit.phase, fit.sigma, fit.amp


def neighbour_reach(table: TemplateTable, template: bool) -> float:
    """How far (samples, centre to centre) a neighbour's response reaches into an edge's window: the
    template method's fit window, or the other methods' ±SIMPLE_HALF."""
    return table.reach_samples + (0 if template else SIMPLE_HALF - FIT_HALF_SAMPLES)


def near_neighbours(table: TemplateTable, edges: Edges, rate_hz: float) -> tuple[int, float]:
    """How many edges have a neighbour on their channel whose response reaches their ±SIMPLE_HALF window
    (the template's ringing beyond it: ``table``'s reach less its own fit window), and that reach
    (samples). The other methods read such an edge with the neighbour's pull in it, which their σ (from
    the train's isolated edges) leaves out; the template method fits them together."""
    reach = neighbour_reach(table, template=False)
    count = 0
    for ch in np.unique(edges.channel).tolist():
        close = np.diff(edges.on(ch).time) * rate_hz < reach
        count += int(np.count_nonzero(np.concatenate([[False], close]) | np.concatenate([close, [False]])))
    return count, reach
