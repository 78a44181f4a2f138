"""The paper's execution-time estimators (Moreno & Fischmeister, §3–§5), on pulse widths in MCU µs.

Every estimator works per repetition (one frame of the firmware = one repetition) and summarizes the
per-repetition estimates as in the paper's Table 1: mean, standard deviation over the R repetitions, and a
Student-t 95 % confidence interval of the mean.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.linalg
import scipy.special

TRIM_FRACTION = 0.1  # trimmed mean of the differential technique: drop 10 % at each end (paper §4.1)
# Line fit (§4.1): a point is an outlier when its |deviation| from the screening line exceeds 10 × the median
# |deviation|. On Gaussian noise alone this rejects a point in 1.6 % (1×–10×) / 0.6 % (1×–20×) of fits
# (costing a little precision, no bias); a point 15 σ off is rejected in ≥ 98 % of fits (simulated).
OUTLIER_FACTOR = 10.0
OUTLIER_FLOOR_US = 1e-6  # …and beyond 1 ps, far above float rounding, so exact data never has outliers
# "one (or a small number)" of points (§4.1): at most 10 % of a fit's points (at least one) are rejected; when
# more lie beyond the threshold the spread is not sporadic (e.g. the bimodal error of the inflection method)
# and none is.
OUTLIER_MAX_FRACTION = 0.1
CI_LEVEL = 0.95  # confidence level of every interval ``summarize`` gives


@dataclass(frozen=True)
class Estimate:
    """Mean of per-repetition estimates, their std over repetitions, and the 95 % CI of the mean (with
    the learned edge template's shared error in it, when there is one: :mod:`pintime.estimate.shared`)."""

    mean_us: float
    std_us: float  # sample standard deviation (ddof = 1) over repetitions; nan for one repetition
    ci95_us: tuple[float, float]
    count: int  # repetitions
    template_sigma_us: float = 0.0  # 1σ of the error all repetitions share through the learned template
    quantization_sigma_us: float = 0.0  # … and through rounding with under an LSB of noise (quantization.py)

    def widened(self, extra_half_us: float) -> Estimate:
        """This estimate with its 95 % CI widened in quadrature by ``extra_half_us`` (the half-width an
        error added to it would have alone)."""
        half = float(np.hypot((self.ci95_us[1] - self.ci95_us[0]) / 2, extra_half_us))
        return replace(self, ci95_us=(self.mean_us - half, self.mean_us + half))


def summarize(per_rep_us: np.ndarray) -> Estimate:
    """Summarize per-repetition estimates: mean, std (ddof = 1), Student-t 95 % CI of the mean."""
    x = np.asarray(per_rep_us, dtype=np.float64)
    if x.size == 0:
        raise ValueError("no repetitions to summarize")
    mean = float(np.mean(x))
    if x.size == 1:
        return Estimate(mean, float("nan"), (float("nan"), float("nan")), 1)
    std = float(np.std(x, ddof=1))
    half = float(scipy.special.stdtrit(x.size - 1, (1 + CI_LEVEL) / 2)) * std / np.sqrt(x.size)  # Student t
    return Estimate(mean, std, (float(mean - half), float(mean + half)), int(x.size))


@dataclass(frozen=True)
class Coverage:
    """How many estimates miss their truth by more than their CI, against what chance alone gives."""

    outside: int
    total: int
    expected: float  # total · (1 − level): the misses honest CIs make by chance
    expected_sd: float  # binomial standard deviation of that count (independent estimates)


def coverage(inside: np.ndarray, level: float = CI_LEVEL) -> Coverage:
    """Count the estimates whose truth lies outside their CI (``inside`` False, one flag per estimate).

    Honest CIs at ``level`` miss in a fraction ``1 − level`` of estimates, so the count of misses is
    binomial: ``n (1 − level) ± sqrt(n level (1 − level))`` for independent estimates. Estimates from the
    same data (e.g. unknowns of one system) are correlated: their count spreads more than that.
    """
    flags = np.asarray(inside, dtype=bool)
    n = int(flags.size)
    spread = float(np.sqrt(n * level * (1 - level)))
    return Coverage(int(np.count_nonzero(~flags)), n, n * (1 - level), spread)


def bonferroni_factor(count: int, family: int, level: float = CI_LEVEL) -> float:
    """Factor that widens a Student-t CI of the mean of ``count`` repetitions into a joint one: with every
    one of ``family`` CIs widened so, all of them contain their truth at once with probability ≥ ``level``
    (Bonferroni: each at level ``1 − (1 − level)/family``; no assumption on their correlation)."""
    alpha = 1 - level
    single = scipy.special.stdtrit(count - 1, 1 - alpha / 2)
    return float(scipy.special.stdtrit(count - 1, 1 - alpha / (2 * family)) / single)


def direct(width_us: np.ndarray) -> Estimate:
    """Direct measurement: one pulse around one execution, ``T = T_e + ε`` (eq. 2 with N = 1).

    ``width_us`` has one pulse width per repetition.
    """
    return summarize(width_us)


def executing(width_us: np.ndarray, n: int) -> Estimate:
    """Executing N×: one pulse around N back-to-back executions, ``T/N = T_e + ε/N`` (eq. 2).

    ``width_us`` has one pulse width per repetition; each is divided by ``n``.
    """
    return summarize(np.asarray(width_us, dtype=np.float64) / n)


@dataclass(frozen=True)
class Differential:
    """Differential technique (§3.1): per repetition the mean, median and trimmed mean of w2 − w1."""

    mean: Estimate
    median: Estimate
    trimmed_mean: Estimate


def differential(w1_us: np.ndarray, w2_us: np.ndarray) -> Differential:
    """Differential measurements (§3.1, eq. 3 with N1 = 1, N2 = 2): ``T_e = T2 − T1``, ε cancels.

    Parameters
    ----------
    w1_us, w2_us : arrays of shape (R, N)
        Widths of the 1-call and 2-call pulses of the N pairs of each of R repetitions.

    Per repetition the N differences are averaged (the paper's ``total / N``); the median and the
    ``TRIM_FRACTION`` trimmed mean the paper suggests for robustness (§4.1) are computed alongside.
    """
    d = np.asarray(w2_us, dtype=np.float64) - np.asarray(w1_us, dtype=np.float64)
    return Differential(mean=summarize(np.mean(d, axis=1)),
                        median=summarize(np.median(d, axis=1)),
                        trimmed_mean=summarize(_trimmed_mean(d)))


def _trimmed_mean(d: np.ndarray) -> np.ndarray:
    """Per row, the mean without its ``TRIM_FRACTION`` smallest and largest values: scipy.stats.trim_mean's
    partition, bitwise equal, without importing scipy.stats (~0.6 s CPU of every command's start-up)."""
    n = d.shape[1]
    cut = int(TRIM_FRACTION * n)
    return np.mean(np.partition(d, (cut, n - cut - 1), axis=1)[:, cut:n - cut], axis=1)


@dataclass(frozen=True)
class LineFitRep:
    """Straight-line fit of one repetition, after outlier rejection."""

    slope_us: float
    intercept_us: float
    r2: float
    residual_rms_us: float
    kept: np.ndarray  # bool per point; False = rejected as an outlier
    deviation_us: np.ndarray  # |deviation| of every point from the screening line
    threshold_us: float  # rejection threshold on ``deviation_us``
    all_points_us: tuple[float, float]  # (slope, intercept) of the least-squares line of all points


def fit_line(x: np.ndarray, y_us: np.ndarray) -> LineFitRep:
    """Fit ``y = a·x + b`` by least squares (eq. 4–5) after rejecting outliers (§4.1).

    Outlier rule (§4.1): a point whose |deviation from the line| exceeds ``OUTLIER_FACTOR`` times the
    median |deviation| (and ``OUTLIER_FLOOR_US``) is discarded; the least-squares line is fitted to the
    rest. The deviations are measured from a Theil–Sen line (median of the pairwise slopes), which the
    outliers cannot pull: the least-squares line of all points leans toward an outlier so much that, at
    either end of a 1×–10× line, no single outlier, however large, ever exceeds 4.8 × the median
    deviation from it. When more than ``OUTLIER_MAX_FRACTION`` of the points (and more than one) lie
    beyond the threshold, none is rejected. R² and the residual RMS are those of the final fit.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y_us, dtype=np.float64)
    slope_ts = _theil_sen_slope(x, y)
    deviation = np.abs(y - slope_ts * x - float(np.median(y - slope_ts * x)))
    threshold = max(OUTLIER_FACTOR * float(np.median(deviation)), OUTLIER_FLOOR_US)
    kept = deviation <= threshold
    if np.count_nonzero(~kept) > max(1, int(OUTLIER_MAX_FRACTION * len(x))):
        kept[:] = True
    design = np.column_stack([x, np.ones_like(x)])
    # least squares for [a, b] minimizing Σ (a x_k + b − y_k)², the solution eq. 4–5 write in closed form
    everything = np.linalg.lstsq(design, y, rcond=None)[0]
    (a, b) = everything if kept.all() else np.linalg.lstsq(design[kept], y[kept], rcond=None)[0]
    residual = y[kept] - (a * x[kept] + b)
    ss_tot = float(np.sum((y[kept] - np.mean(y[kept])) ** 2))
    r2 = 1.0 - float(np.sum(residual ** 2)) / ss_tot if ss_tot > 0 else float("nan")
    return LineFitRep(float(a), float(b), r2, float(np.sqrt(np.mean(residual ** 2))), kept, deviation,
                      threshold, (float(everything[0]), float(everything[1])))


def _theil_sen_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Theil–Sen slope: the median of the slopes between every two points with different ``x``."""
    dx = x[None, :] - x[:, None]
    up = dx > 0
    return float(np.median((y[None, :] - y[:, None])[up] / dx[up]))


@dataclass(frozen=True)
class LineFit:
    """Straight-line fitting (§4) over repetitions: slope = T_e, intercept = ε."""

    slope: Estimate
    intercept: Estimate
    reps: list[LineFitRep]

    @property
    def outliers(self) -> int:
        """Points rejected over all repetitions."""
        return int(sum(np.count_nonzero(~r.kept) for r in self.reps))


def line_fit(width_us: np.ndarray) -> LineFit:
    """Straight-line fitting (§4, eq. 4–5): pulse k of a repetition holds k executions (k = 1 … M).

    ``width_us`` has shape (R, M). The slope of each repetition's fit of (k, T_k) is its T_e estimate.
    """
    w = np.asarray(width_us, dtype=np.float64)
    k = np.arange(1, w.shape[1] + 1)
    reps = [fit_line(k, row) for row in w]
    return LineFit(slope=summarize(np.array([r.slope_us for r in reps])),
                   intercept=summarize(np.array([r.intercept_us for r in reps])), reps=reps)


@dataclass(frozen=True)
class Overdetermined:
    """Overdetermined system with an initialization term (§5): T_e, T_i, ε over repetitions."""

    t_e: Estimate
    t_i: Estimate
    epsilon: Estimate
    condition: float  # 2-norm condition number of the K × 3 matrix A of eq. 7


def overdetermined(width_us: np.ndarray, n_calls: np.ndarray, m_calls: np.ndarray) -> Overdetermined:
    """Solve ``T_k = N_k T_e + M_k T_i + ε`` (eq. 6) for every repetition in the least-squares sense.

    The K × 3 system ``A [T_e, T_i, ε]ᵀ = b`` of eq. 7 is solved with an SVD-based least-squares routine
    (``scipy.linalg.lstsq``) instead of the normal equations of eq. 8, which square the condition number.

    Parameters
    ----------
    width_us : array of shape (R, K)
        Pulse widths; pulse k of each repetition holds ``n_calls[k]`` executions and ``m_calls[k]``
        initializations.
    """
    a = np.column_stack([n_calls, m_calls, np.ones(len(n_calls))]).astype(np.float64)
    condition = float(np.linalg.cond(a))
    if not np.isfinite(condition) or condition > 1e10:
        raise ValueError(f"overdetermined system is singular (condition number {condition:.3g})")
    # one right-hand side per repetition: columns of b
    solution = scipy.linalg.lstsq(a, np.asarray(width_us, dtype=np.float64).T)[0]
    return Overdetermined(t_e=summarize(solution[0]), t_i=summarize(solution[1]),
                          epsilon=summarize(solution[2]), condition=condition)
