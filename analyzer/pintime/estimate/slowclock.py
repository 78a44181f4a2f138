"""The slow-clock model of the count method (Beilner, "Measuring with Slow Clocks", 1988): variances and
confidence intervals of the paper's estimators from the quantization of whole-sample edges alone.

A pulse of true width d ticks (samples of the card's clock, ``tick_us`` µs of MCU time each) starting at a
uniformly random phase of the sample clock is counted ⌊d⌋ ticks with probability 1 − f and ⌈d⌉ with
probability f = frac(d): the count's mean is d and its variance f·(1 − f) ticks² (Beilner's eq. 9c),
at most 1/4 (eq. 10b) and 1/6 on average over f. Every estimator here is linear in the widths of one
repetition — the least-squares solution of a design ``X`` (widths = X · params): Direct ``[1]``,
Executing N× ``[N]``, Differential (1-call ``[0, 1]`` and 2-call ``[1, 1]`` rows), Line fit ``[k, 1]``,
the §5 system ``[N_k, M_k, 1]`` — so a parameter's variance per repetition is ``Σ_j P[i, j]² · V_j`` with
``P = X⁺`` and ``V_j = tick² f_j (1 − f_j)``, f_j from the widths the fit expects (``X · P · mean
widths``): a prediction from the durations alone, valid for any number of repetitions, even two. It takes
the widths of one repetition as independent (Beilner's eq. 7c). They are not: the pulses of a repetition
lie at fixed offsets from one another and share its phase (his eq. 11), so their errors cancel (line fits
and differentials: the model is pessimistic, as he found) or add up (the §5 system). The spread over
repetitions holds those covariances; both CIs are reported (docs/results.md has their coverage).

The phases must be uniform: a card clock locked to the MCU's puts every repetition at the same phase and the
count's mean is then biased by up to a tick. :func:`phase_test` checks it on the data: the edges that
calibrated the clock (reference or calibration train, all at exact MCU instants) have predicted sample
positions from the clock line, and their fractional parts must be uniform (Kolmogorov–Smirnov).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.special

from pintime.clock import Clock
from pintime.edges import MEASUREMENT_CHANNEL, REFERENCE_CHANNEL, Edges
from pintime.estimate import estimators as est
from pintime.estimate.table1 import Table1, overdetermined_design
from pintime.estimate.user import UserRow
from pintime.frames import FrameDecode

Z95 = 1.959963984540054  # two-sided 95 % normal quantile: the model's sigma is known, not estimated
PHASE_P_MIN = 1e-3  # phases whose KS p-value falls below this are not uniform (the model is refused)
MIN_COUNTS = 10  # counts per fitted parameter below which a width's fraction is not estimated (eq. 10b)
DIFFER_P = 0.01  # the repetitions' spread and the model's differ when a two-sided χ² test rejects at this


def count_variance_ticks2(d_ticks: np.ndarray) -> np.ndarray:
    """Variance of a count (ticks²) for true durations ``d_ticks`` at a uniform phase: f (1 − f), f = frac."""
    f = np.asarray(d_ticks, dtype=np.float64) % 1.0
    return f * (1.0 - f)


def design(technique: str, n: int) -> np.ndarray:
    """The least-squares design (pulses × parameters) behind a technique's per-repetition estimate; the
    first parameter is the execution time T_e."""
    if technique in ("direct", "executing"):
        return np.array([[float(n)]])
    if technique == "differential":  # pulses alternate 1 call, 2 calls; parameters (T_e, w1)
        return np.tile(np.array([[0.0, 1.0], [1.0, 1.0]]), (n, 1))
    if technique == "line_fit":
        return np.column_stack([np.arange(1, n + 1), np.ones(n)]).astype(np.float64)
    raise ValueError(f"no design for technique {technique}")


def sawtooth_covariance(t_ticks: np.ndarray) -> np.ndarray:
    """Covariance of the quantization errors of two edges ``t_ticks`` apart at one uniform phase (ticks²):
    1/12 − g (1 − g)/2 with g = frac(t); 1/12 (a uniform error's variance) for one edge."""
    g = np.asarray(t_ticks, dtype=np.float64) % 1.0
    return 1.0 / 12.0 - g * (1.0 - g) / 2.0


def beilner_std_us(x: np.ndarray, pulse_edges_us: np.ndarray, tick_us: float,
                   exact_widths: bool = False) -> np.ndarray:
    """Per-repetition standard deviation (µs) of each parameter of the fit ``widths = x · params``, the
    widths taken as independent (Beilner's eq. 10a), each with the variance of the width the fit expects.

    ``pulse_edges_us`` (repetitions, 2 · pulses): each repetition's edges from its first, rising then
    falling edge of every pulse. The expected widths rest on the counts of R repetitions of K pulses with
    p parameters; below ``MIN_COUNTS`` counts per parameter (R K / p: a Direct row of 2 repetitions whose
    counts agree would give frac 0 and no variance at all) every width takes Beilner's bound 1/4 (eq. 10b),
    unless the widths are ``exact_widths`` (nominal ones, not counted).
    """
    e = np.atleast_2d(pulse_edges_us) / tick_us
    p = np.linalg.pinv(x)
    expected = x @ (p @ np.mean(e[:, 1::2] - e[:, 0::2], axis=0))
    variance = count_variance_ticks2(expected)
    if not exact_widths and len(e) * x.shape[0] / x.shape[1] < MIN_COUNTS:  # fractions unknown: the bound
        variance = np.full_like(variance, 0.25)
    return tick_us * np.sqrt((p ** 2) @ variance)


def shared_phase_std_us(x: np.ndarray, pulse_edges_us: np.ndarray, tick_us: float) -> np.ndarray:
    """As :func:`beilner_std_us`, with the covariances of the edges of one repetition, which share its phase
    (Beilner's eq. 11): edges t ticks apart have errors of covariance :func:`sawtooth_covariance` (t).

    The offsets come from the mean of ``pulse_edges_us`` (unbiased at uniform phases). With offsets so
    estimated from the same counts, this is exactly the population std of the repetitions' estimates
    whenever the count between any two edges takes two adjacent values (the estimate is a contrast of edge
    counts, whose variance the pairwise differences' variances fix): it adds no information to the
    repetitions, but it carries their spread over to another number of repetitions (``pintime plan``).
    """
    e = np.atleast_2d(pulse_edges_us) / tick_us
    p = np.linalg.pinv(x)
    coef = np.zeros((p.shape[0], e.shape[1]))
    coef[:, 0::2], coef[:, 1::2] = -p, p  # width j = falling − rising edge
    offset = np.mean(e, axis=0)
    cov = sawtooth_covariance(offset[:, None] - offset[None, :])
    return tick_us * np.sqrt(np.maximum(np.einsum("pi,ij,pj->p", coef, cov, coef), 0.0))


@dataclass(frozen=True)
class ModelEstimate:
    """An estimate beside the slow-clock model's prediction of its spread."""

    estimate: est.Estimate  # from the repetitions (mean, std, Student-t CI)
    model_std_us: float  # per repetition, predicted by Beilner's model (:func:`beilner_std_us`)
    model_ci95_us: tuple[float, float]  # mean ± z · model std / √R

    @property
    def std_ratio(self) -> float:
        """The repetitions' std over the model's (1 for one pulse; below 1 when the widths' errors within a
        repetition cancel, above 1 when they add up or more than quantization varies)."""
        return self.estimate.std_us / self.model_std_us if self.model_std_us > 0 else float("nan")

    @property
    def differs(self) -> bool:
        """The repetitions' variance is not the model's (two-sided χ² test at ``DIFFER_P``)."""
        r = self.estimate.count
        if r < 2 or not self.model_std_us > 0:
            return False
        cdf = float(scipy.special.chdtr(r - 1, (r - 1) * self.std_ratio ** 2))
        return min(cdf, 1 - cdf) < DIFFER_P / 2


def model_estimate(e: est.Estimate, std_us: np.ndarray, i: int = 0) -> ModelEstimate:
    """``e`` beside parameter ``i`` of :func:`beilner_std_us`'s result."""
    std = float(std_us[i])
    half = Z95 * std / np.sqrt(e.count)
    return ModelEstimate(e, std, (e.mean_us - half, e.mean_us + half))


@dataclass(frozen=True)
class PhaseTest:
    """Kolmogorov–Smirnov test of the clock edges' sub-sample phases against the uniform distribution."""

    edges: int
    statistic: float  # KS D
    p_value: float

    @property
    def uniform(self) -> bool:
        return self.edges >= 2 and not self.p_value < PHASE_P_MIN


def phase_test(predicted_samples: np.ndarray) -> PhaseTest:
    """Test the fractional parts of ``predicted_samples`` (the clock line's sample positions of edges at
    exact MCU instants) for uniformity; asymptotic KS p-value."""
    u = np.sort(np.asarray(predicted_samples, dtype=np.float64) % 1.0)
    n = len(u)
    if n == 0:
        return PhaseTest(0, float("nan"), float("nan"))
    i = np.arange(1, n + 1)
    d = float(max(np.max(i / n - u), np.max(u - (i - 1) / n)))
    return PhaseTest(n, d, float(scipy.special.kolmogorov(np.sqrt(n) * d)))


@dataclass(frozen=True)
class SlowClock:
    """The count method's model beside every estimate of a capture."""

    tick_us: float  # one sample of the card's clock in MCU µs
    phases: PhaseTest
    # beside the program's estimates (pintime.programs): Table 1's by technique, n, label; the §5 system's
    # t_e, t_i, epsilon; user functions' time per call by name; Table 2's unknowns by label
    table1: list[tuple[str, int, str, ModelEstimate]] = field(default_factory=list)
    overdetermined: dict[str, ModelEstimate] = field(default_factory=dict)
    user: list[tuple[str, ModelEstimate]] = field(default_factory=list)
    table2: list[tuple[str, ModelEstimate]] = field(default_factory=list)


def clock_edge_samples(edges: Edges, clock: Clock, decode: FrameDecode, gaps: np.ndarray,
                       rate_hz: float) -> np.ndarray:
    """Sample positions the clock line predicts for the edges it was fitted to (all at exact MCU instants):
    the reference's before the first recording gap (the line's offset is that stretch's), or the first
    calibration train's. ``edges`` in seconds of the capture (a WAV's)."""
    fit = clock.fit
    if clock.source == "reference":
        ref = edges.on(REFERENCE_CHANNEL)
        keep = ref.time < (gaps[0] if len(gaps) else np.inf)
        time, falling = ref.time[keep], ref.polarity[keep] < 0
    else:
        train = decode.calibration_train()
        meas = edges.on(MEASUREMENT_CHANNEL)
        g = np.zeros(0, dtype=np.int64) if train is None else train.group
        time = meas.time[g]
        falling = (-meas.polarity[g] if decode.inverted else meas.polarity[g]) < 0
    line = fit.t0 + fit.fall_offset * falling
    return (line + np.rint((time - line) / fit.step) * fit.step) * rate_hz


def slow_clock(edges: Edges, clock: Clock, decode: FrameDecode, gaps: np.ndarray,
               rate_hz: float) -> SlowClock:
    """The model of a count-method capture's clock, and its phase test; the models beside its program's
    estimates are added by the program (:meth:`pintime.programs.base.Program.with_slow_clock`)."""
    tick_us = clock.us_per_unit / rate_hz
    return SlowClock(tick_us, phase_test(clock_edge_samples(edges, clock, decode, gaps, rate_hz)))


def user_models(user: list[UserRow], tick_us: float) -> list[tuple[str, ModelEstimate]]:
    """The model beside every user function's time per call."""
    return [(u.name, model_estimate(u.fit.slope, beilner_std_us(design("line_fit", u.m), u.pulse_edges_us,
                                                                 tick_us))) for u in user]


def table1_models(table: Table1, tick_us: float) -> tuple[list[tuple[str, int, str, ModelEstimate]],
                                                          dict[str, ModelEstimate]]:
    """The model beside every Table 1 row and the §5 system."""
    rows = []
    for row in table.rows:
        edges = table.pulse_edges_us((row.technique, row.n))
        std = beilner_std_us(design(row.technique, row.n), edges, tick_us)
        rows.append((row.technique, row.n, row.label, model_estimate(row.estimate, std)))
    over: dict[str, ModelEstimate] = {}
    o, m = table.overdetermined, table.overdetermined_m
    if o is not None and m is not None:
        std = beilner_std_us(overdetermined_design(m), table.pulse_edges_us(("overdet", m)), tick_us)
        over = {"t_e": model_estimate(o.t_e, std), "t_i": model_estimate(o.t_i, std, 1),
                "epsilon": model_estimate(o.epsilon, std, 2)}
    return rows, over


def _json(m: ModelEstimate) -> dict[str, Any]:
    e = m.estimate
    return {"mean_us": e.mean_us, "model_std_us": m.model_std_us, "model_ci95_us": list(m.model_ci95_us),
            "std_us": None if np.isnan(e.std_us) else e.std_us,
            "ci95_us": [None if np.isnan(x) else x for x in e.ci95_us], "count": e.count,
            "std_ratio": None if np.isnan(m.std_ratio) else m.std_ratio, "differs": m.differs}


def slow_clock_json(s: SlowClock) -> dict[str, Any]:
    """The ``slow_clock`` object of the analyze JSON (docs/design.md §6)."""
    p = s.phases
    return {"tick_us": s.tick_us, "edge_sigma_us": s.tick_us / np.sqrt(12.0),
            "phases": {"edges": p.edges, "ks_statistic": None if np.isnan(p.statistic) else p.statistic,
                       "p_value": None if np.isnan(p.p_value) else p.p_value, "uniform": p.uniform},
            "table1": [{"technique": t, "n": n, "label": label, **_json(m)} for t, n, label, m in s.table1],
            "overdetermined": {k: _json(m) for k, m in s.overdetermined.items()} or None,
            "user": [{"name": name, **_json(m)} for name, m in s.user],
            "table2": [{"label": label, **_json(m)} for label, m in s.table2]}


def format_slow_clock(s: SlowClock) -> str:
    """The model's CI beside the repetitions' for every estimate, and the phase test, loudly if it fails."""
    p = s.phases
    lines = [f"Slow-clock model (Beilner 1988; --method count): tick {s.tick_us:.4f} µs, edge σ "
             f"{s.tick_us / np.sqrt(12.0):.4f} µs; clock-edge phases {p.edges}, KS D {p.statistic:.3f}, "
             f"p {p.p_value:.2g}"]
    if not p.uniform:
        lines.append("WARNING: the edges' sample phases are NOT uniform: the card's clock looks locked to "
                     "the MCU's, so the count method's means may be biased by up to a tick and its model "
                     "CIs do not hold")
    head = (f"{'Estimate':<26} {'mean (µs)':>11} {'model σ':>9} {'model 95 % CI (µs)':>23} {'reps σ':>9} "
            f"{'reps 95 % CI (µs)':>23} {'ratio':>6}")
    lines += [head, "-" * len(head)]
    named = [(label, m) for _, _, label, m in s.table1] + [(f"§5 system {k}", m)
                                                         for k, m in s.overdetermined.items()]
    named += [(f"{name} per call", m) for name, m in s.user] + [(f"Table 2 {k}", m) for k, m in s.table2]
    for label, m in named:
        lo, hi = m.model_ci95_us
        flag = "  differs" if m.differs else ""
        rlo, rhi = m.estimate.ci95_us
        lines.append(f"{label:<26} {m.estimate.mean_us:>11.4f} {m.model_std_us:>9.4f} "
                     f"{f'[{lo:.4f}, {hi:.4f}]':>23} {m.estimate.std_us:>9.4f} "
                     f"{f'[{rlo:.4f}, {rhi:.4f}]':>23} {m.std_ratio:>6.2f}{flag}")
    if any(m.differs for _, m in named):
        lines.append("  differs: the repetitions' spread is not the model's (χ², 1 %): the widths of a "
                     "repetition share its phase, so their errors cancel (< 1) or add up (> 1)")
    return "\n".join(lines)
