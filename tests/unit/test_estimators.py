"""The paper's estimators against slow, obviously-correct implementations and inputs where they are exact."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from pintime.estimate import estimators as est

RNG = np.random.default_rng(20240611)


def slow_line(x: list[float], y: list[float]) -> tuple[float, float]:
    """Eq. 4–5 of the paper, term by term."""
    m = len(x)
    sx, sy = sum(x), sum(y)
    sxx = sum(v * v for v in x)
    sxy = sum(a * b for a, b in zip(x, y, strict=True))
    d = m * sxx - sx * sx
    return (m * sxy - sx * sy) / d, (sxx * sy - sx * sxy) / d


def test_summarize_matches_definitions():
    x = RNG.normal(5.0, 2.0, 12)
    e = est.summarize(x)
    mean = sum(x) / len(x)
    std = math.sqrt(sum((v - mean) ** 2 for v in x) / (len(x) - 1))
    half = 2.2009851601 * std / math.sqrt(len(x))  # Student t, 0.975 quantile, 11 degrees of freedom
    assert e.mean_us == pytest.approx(mean, rel=1e-14)
    assert e.std_us == pytest.approx(std, rel=1e-12)
    assert e.ci95_us == pytest.approx((mean - half, mean + half), rel=1e-10)
    assert e.count == 12


def test_summarize_single_repetition_has_no_spread():
    e = est.summarize(np.array([101.0]))
    assert e.mean_us == 101.0 and math.isnan(e.std_us) and e.count == 1


def test_direct_and_executing_exact():
    widths = np.full(7, 100 * 55 + 1.0)  # FORMAT.md §5: C + 1 cycles
    assert est.direct(np.full(7, 101.0)).mean_us == 101.0
    e = est.executing(widths, 55)
    assert e.mean_us == pytest.approx(100 + 1 / 55, abs=1e-12) and e.std_us == pytest.approx(0, abs=1e-12)


def test_executing_std_is_over_repetitions():
    widths = RNG.normal(1001.0, 1.0, 50)
    e = est.executing(widths, 10)
    assert e.std_us == pytest.approx(np.std(widths / 10, ddof=1), rel=1e-12)


def test_differential_against_loop():
    w1 = RNG.normal(101.0, 0.8, (9, 55))
    w2 = RNG.normal(201.0, 0.8, (9, 55))
    d = est.differential(w1, w2)
    per_rep = []
    medians = []
    trimmed = []
    for r in range(9):
        diffs = sorted(w2[r, j] - w1[r, j] for j in range(55))
        per_rep.append(sum(diffs) / 55)
        medians.append(diffs[27])
        cut = int(0.1 * 55)  # 5 dropped at each end
        kept = diffs[cut:55 - cut]
        trimmed.append(sum(kept) / len(kept))
    assert d.mean.mean_us == pytest.approx(np.mean(per_rep), rel=1e-13)
    assert d.mean.std_us == pytest.approx(np.std(per_rep, ddof=1), rel=1e-10)
    assert d.median.mean_us == pytest.approx(np.mean(medians), rel=1e-13)
    assert d.trimmed_mean.mean_us == pytest.approx(np.mean(trimmed), rel=1e-13)


def test_differential_exact():
    d = est.differential(np.full((3, 4), 101.0), np.full((3, 4), 201.0))
    assert d.mean.mean_us == d.median.mean_us == d.trimmed_mean.mean_us == 100.0


def test_fit_line_equals_eq4_eq5():
    x = np.arange(1, 21, dtype=float)
    y = 100 * x + 8.5 + RNG.normal(0, 1.2, 20)
    fit = est.fit_line(x, y)
    assert fit.kept.all()  # Gaussian noise: no point 5× the median deviation away
    a, b = slow_line(list(x), list(y))
    assert fit.slope_us == pytest.approx(a, rel=1e-12)
    assert fit.intercept_us == pytest.approx(b, rel=1e-9)
    residual = y - (a * x + b)
    assert fit.residual_rms_us == pytest.approx(math.sqrt(sum(residual ** 2) / 20), rel=1e-9)
    assert fit.r2 == pytest.approx(1 - sum(residual ** 2) / sum((y - y.mean()) ** 2), rel=1e-12)


def test_fit_line_exact_data_keeps_every_point():
    x = np.arange(1, 21, dtype=float)
    fit = est.fit_line(x, 100 * x + 1)
    assert fit.kept.all()
    assert fit.slope_us == pytest.approx(100, abs=1e-12) and fit.intercept_us == pytest.approx(1, abs=1e-10)
    assert fit.r2 == pytest.approx(1, abs=1e-15)


def test_fit_line_rejects_an_outlier():
    x = np.arange(1, 11, dtype=float)
    y = 100 * x + 1 + RNG.normal(0, 0.01, 10)
    y[6] += 30.0  # an interrupt during pulse 7
    fit = est.fit_line(x, y)
    assert list(np.flatnonzero(~fit.kept)) == [6]
    a = slow_line(list(np.delete(x, 6)), list(np.delete(y, 6)))[0]
    assert fit.slope_us == pytest.approx(a, rel=1e-12)
    assert abs(fit.slope_us - 100) < 0.05


def test_fit_line_rejects_an_outlier_at_the_end_of_the_line():
    """Where the least-squares line of all points leans toward the outlier the most (§4.1 screening)."""
    x = np.arange(1, 11, dtype=float)
    y = 100 * x + 1.0
    y[0] += 50.0
    fit = est.fit_line(x, y)
    assert list(np.flatnonzero(~fit.kept)) == [0]
    assert fit.slope_us == pytest.approx(100, abs=1e-9) and fit.intercept_us == pytest.approx(1, abs=1e-9)
    assert fit.all_points_us[0] < 99  # the line of all points is pulled far off


def test_fit_line_screens_with_theil_sen_deviations():
    x = np.arange(1, 21, dtype=float)
    y = 100 * x + 1 + RNG.normal(0, 1.0, 20)
    fit = est.fit_line(x, y)
    slopes = sorted((y[j] - y[i]) / (x[j] - x[i]) for i in range(20) for j in range(i + 1, 20))
    slope = (slopes[len(slopes) // 2 - 1] + slopes[len(slopes) // 2]) / 2  # 190 pairs: even count
    offsets = sorted(y - slope * x)
    intercept = (offsets[9] + offsets[10]) / 2
    deviation = np.abs(y - (slope * x + intercept))
    assert fit.deviation_us == pytest.approx(deviation, abs=1e-9)
    assert fit.threshold_us == pytest.approx(est.OUTLIER_FACTOR * np.median(deviation), rel=1e-9)


def test_trimmed_mean_equals_scipy():
    d = np.random.default_rng(3).normal(100.0, 1.0, (7, 37))
    d[0, :5] = 1e6  # outliers at one end
    np.testing.assert_array_equal(est._trimmed_mean(d), scipy.stats.trim_mean(d, est.TRIM_FRACTION, axis=1))


def test_theil_sen_slope_equals_scipy_with_unsorted_and_repeated_x():
    x = RNG.permutation(np.repeat(np.arange(1.0, 9.0), 2))[:13]
    y = RNG.normal(0, 1.0, 13)
    assert est._theil_sen_slope(x, y) == scipy.stats.theilslopes(y, x)[0]


def test_line_fit_std_over_repetitions():
    x = np.arange(1, 11)
    widths = 100 * x + 1 + RNG.normal(0, 1.2, (30, 10))
    lf = est.line_fit(widths)
    # the slow fit uses the points each repetition kept (§4.1 may reject a rare far point of the noise)
    slopes = [slow_line(list(x[r.kept].astype(float)), list(w[r.kept]))[0]
              for w, r in zip(widths, lf.reps, strict=True)]
    assert lf.slope.mean_us == pytest.approx(np.mean(slopes), rel=1e-12)
    assert lf.slope.std_us == pytest.approx(np.std(slopes, ddof=1), rel=1e-8)
    assert lf.outliers == sum(int((~r.kept).sum()) for r in lf.reps)


def overdet_matrix(m: int) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(1, m + 1)
    return k, np.where(k == 1, 1, k + 1)  # paper §5: M_1 = 1, M_k = k + 1


def test_overdetermined_exact():
    n, m = overdet_matrix(20)
    widths = np.tile(100 * n + 37 * m + 1.0, (4, 1))
    o = est.overdetermined(widths, n, m)
    assert o.t_e.mean_us == pytest.approx(100, abs=1e-9)
    assert o.t_i.mean_us == pytest.approx(37, abs=1e-9)
    assert o.epsilon.mean_us == pytest.approx(1, abs=1e-9)


def test_overdetermined_equals_normal_equations():
    n, m = overdet_matrix(20)
    widths = 100 * n + 37 * m + 1.0 + RNG.normal(0, 1.0, (5, 20))
    o = est.overdetermined(widths, n, m)
    a = np.column_stack([n, m, np.ones(20)]).astype(float)
    solutions = np.array([np.linalg.solve(a.T @ a, a.T @ w) for w in widths])  # eq. 8
    assert o.t_e.mean_us == pytest.approx(solutions[:, 0].mean(), rel=1e-9)
    assert o.t_i.mean_us == pytest.approx(solutions[:, 1].mean(), rel=1e-9)
    assert o.epsilon.std_us == pytest.approx(solutions[:, 2].std(ddof=1), rel=1e-6)
    s = np.linalg.svd(a, compute_uv=False)
    assert o.condition == pytest.approx(s[0] / s[-1], rel=1e-12)


def test_overdetermined_singular_system_refused():
    k = np.arange(1, 6)
    with pytest.raises(ValueError, match="singular"):
        est.overdetermined(np.ones((2, 5)), k, k + 1)  # M = N + 1 everywhere: columns dependent


def test_fit_line_rejects_only_a_small_number():
    """Errors that take two values (like the inflection method's) are no sporadic outliers (§4.1)."""
    x = np.arange(1, 11, dtype=float)
    y = 100 * x + 1 + np.array([0, 0, 2.2, 2.2, 0, 0, 0, 2.2, 2.2, 0]) + RNG.normal(0, 0.01, 10)
    assert est.fit_line(x, y).kept.all()
    # two far points in twenty: still "a small number"
    x20 = np.arange(1, 21, dtype=float)
    y20 = 100 * x20 + 1 + RNG.normal(0, 0.01, 20)
    y20[[3, 12]] += 40.0
    assert list(np.flatnonzero(~est.fit_line(x20, y20).kept)) == [3, 12]


def test_coverage_counts_misses_against_the_binomial_chance():
    c = est.coverage(np.array([True] * 59 + [False] * 2))
    assert (c.outside, c.total) == (2, 61)
    assert c.expected == pytest.approx(61 * 0.05)
    assert c.expected_sd == pytest.approx(math.sqrt(61 * 0.05 * 0.95))
    assert est.coverage(np.ones(0, dtype=bool)) == est.Coverage(0, 0, 0.0, 0.0)


def _misses(per_rep: np.ndarray, truth: np.ndarray) -> est.Coverage:
    """The coverage of ``summarize``'s CIs: one row of repetitions per estimate, each against its truth."""
    cis = [est.summarize(row).ci95_us for row in per_rep]
    return est.coverage(np.array([lo <= t <= hi for (lo, hi), t in zip(cis, truth, strict=True)]))


def test_summarize_cis_cover_their_truth_95_percent_of_the_time():
    """Known truths, 100 independent repetitions each (different scales): the misses are binomial."""
    truth = RNG.normal(0.0, 10.0, 4000)
    per_rep = truth[:, None] + RNG.normal(0.0, 1.0, (4000, 100)) * RNG.uniform(1e-6, 1.0, (4000, 1))
    c = _misses(per_rep, truth)
    assert c.expected == pytest.approx(200.0) and abs(c.outside - c.expected) < 4 * c.expected_sd


def test_coverage_exposes_repetitions_that_are_not_independent():
    """The same CIs on strongly autocorrelated repetitions (AR(1), ρ = 0.8) are far too narrow: the count of
    misses leaves the binomial range, which is what the Table 2 coverage check looks for."""
    truth = np.zeros(2000)
    shocks = RNG.normal(0.0, 1.0, (2000, 100))
    per_rep = np.empty_like(shocks)
    per_rep[:, 0] = shocks[:, 0]
    for k in range(1, 100):
        per_rep[:, k] = 0.8 * per_rep[:, k - 1] + math.sqrt(1 - 0.8 ** 2) * shocks[:, k]
    c = _misses(per_rep, truth)
    assert c.outside > c.expected + 10 * c.expected_sd


def test_bonferroni_factor_makes_a_family_of_cis_hold_jointly():
    """61 estimates of 100 independent repetitions each, 2000 families: with every CI widened by the
    factor, a family with any truth outside happens in at most 5 % of families (binomial margin), and the
    factor is 1 for a family of one."""
    assert est.bonferroni_factor(100, 1) == pytest.approx(1.0)
    factor = est.bonferroni_factor(100, 61)
    assert 1.5 < factor < 2.0  # t₉₉ at 1 − 0.025/61 ≈ 3.4 against 1.98
    per_rep = RNG.normal(0.0, 1.0, (2000, 61, 100))
    mean = per_rep.mean(axis=2)
    half = factor * scipy.stats.t.ppf(0.975, 99) * per_rep.std(axis=2, ddof=1) / 10.0  # t · s / √100
    failed = np.mean(np.any(np.abs(mean) > half, axis=1))
    assert failed < 0.05 + 3 * math.sqrt(0.05 * 0.95 / 2000)
    assert failed > 0.02  # and not vacuously wide: independent estimates use most of the 5 %
