"""A blind shape's error periodic in the sub-sample phase, measured where the learning edges repeat with a
period, and the σ that holds it (docs/design.md §11, "A shape that changes with the phase").

Blind learning cannot see a shape that changes with where an edge falls between samples (a nonlinearity
after the card's filter, as a soft clipper; a converter): the alternation of fit and refit takes the
change for a move of the edge, periodic in its phase, and the fits leave only noise
(:mod:`pintime.locate.shape.blind`). Edges that repeat with a period show it: each polarity's times about
a smooth line (the two clocks' drift) follow their sub-sample phase. What a Fourier series in the phase
explains of them beyond chance is an error no σ from the noise holds: every σ is raised, in quadrature,
by its largest (the PHASE_QUANTILE of the learning edges').
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from pintime.locate.detect.detect import find_periodic

HARMONICS = 4  # of the sub-sample phase: a shape's error is smooth in it
LINE_DEGREE = 2  # each polarity's times: a quadratic in the period's index (the clocks' drift)
CHANCE_P = 1e-4  # the series explains more than noise would, with this probability at most: an error
PHASE_QUANTILE = 0.99  # of the learning edges' phase errors: the one every σ must hold
WHY = ("the edges' times about their period's line follow where they fall between samples that much (a "
       "shape that changes with it: a nonlinear input after the card's filter, as a soft clipper, or a "
       "converter)")


def phase_sigma_scale(pos_samples: np.ndarray, sign: np.ndarray, sigma_samples: np.ndarray) -> float:
    """The factor every σ (``sigma_samples``, of edges at ``pos_samples`` with polarity ``sign``) is raised
    by to hold the error periodic in the phase that their longest periodic run shows
    (:func:`find_periodic`): √(1 + (D / σ)²), D the larger polarity's :func:`_phase_error`, σ the run's
    median; 1 without a run, or where the phase explains nothing beyond chance."""
    run = find_periodic(np.rint(pos_samples).astype(np.int64), sign)
    if run is None:
        return 1.0
    error = max(_phase_error(pos_samples[run[k::2]]) for k in (0, 1))
    if error == 0.0:  # nothing beyond chance: every σ as its fit's (an unknown noise's too)
        return 1.0
    return float(np.sqrt(1.0 + (error / np.median(sigma_samples[run])) ** 2))


def _phase_error(t_samples: np.ndarray) -> float:
    """The PHASE_QUANTILE of what the phase explains of one polarity's times ``t_samples`` (one a period)
    beyond their line: the fitted line and series less the line alone, 0 where the series' F statistic
    stands within chance (CHANCE_P)."""
    index = np.linspace(-1.0, 1.0, len(t_samples))
    line = np.vander(index, LINE_DEGREE + 1)
    turn = 2.0 * np.pi * np.outer(np.mod(t_samples, 1.0), np.arange(1, HARMONICS + 1))
    both = np.column_stack([line, np.cos(turn), np.sin(turn)])
    fitted_line = line @ np.linalg.lstsq(line, t_samples, rcond=None)[0]
    fitted_both = both @ np.linalg.lstsq(both, t_samples, rcond=None)[0]
    extra = fitted_both - fitted_line
    free = len(t_samples) - both.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):  # a noise-free line: inf, or NaN where nothing
        f = (np.sum(extra * extra) / (2 * HARMONICS)) / (np.sum((t_samples - fitted_both) ** 2) / free)
    if free <= 0 or not f > stats.f.isf(CHANCE_P, 2 * HARMONICS, free):
        return 0.0
    return float(np.quantile(np.abs(extra), PHASE_QUANTILE))
