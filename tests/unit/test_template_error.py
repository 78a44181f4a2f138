"""The learned template's shared error: each edge's first-order shift under a template draw against the
locator run again with that draw, and every estimate's CI widened by the draws' spread."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest
import scipy.special
from pintime.estimate.estimators import CI_LEVEL, Estimate, summarize
from pintime.estimate.shared import estimate_means, with_shared_error
from pintime.locate.detect.detect import find_steps
from pintime.locate.locators.fit import FIT_HALF_SAMPLES, TemplateTable, fit_groups, fit_isolated
from pintime.locate.shape import template_error
from pintime.locate.shape.template import N_ZERO, Template
from pintime.locate.shape.template_error import DrawModel
from test_locate_template import ringing_template


def rendered(template: Template, times: np.ndarray, sign: np.ndarray, length: int) -> np.ndarray:
    """Noise-free samples of steps ``sign`` at ``times`` through ``template``."""
    n = np.arange(length, dtype=np.float64)
    return sum(s * template.evaluate(n - t)[0] for t, s in zip(times, sign, strict=True))


def pulses(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Edge times (samples) and signs of pulses 4.8, 9.7, 20 and 300 samples wide, four of each, 150
    samples and a random fraction apart."""
    times, sign = [], []
    t = 200.0
    for width in (4.8, 9.7, 20.0, 300.0) * 4:
        t += 150.0 + rng.uniform(0, 1)
        times += [t, t + width]
        sign += [1.0, -1.0]
        t += width
    return np.array(times), np.array(sign)


def located(table: TemplateTable, x: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Every edge's time as the capture locator fits it: windows where the detector puts the edges, alone
    one per window, the others with their neighbours (pintime.locate.stream.capture_edges)."""
    centre = find_steps(x, 0.3)[0]
    assert len(centre) == len(times)
    seeds = times - centre + 0.05  # a seed off by 0.05 sample, as a simple estimator's is
    gap = np.diff(centre)
    alone = np.concatenate([[True], gap >= table.reach_samples]) & \
        np.concatenate([gap >= table.reach_samples, [True]])
    phase = np.empty(len(times))
    windows = x[centre[alone, None] + np.arange(-FIT_HALF_SAMPLES, FIT_HALF_SAMPLES + 1)[None, :]]
    phase[alone] = fit_isolated(table, windows, seeds[alone], 1e-6).phase
    phase[~alone] = fit_groups(table, x, centre[~alone], seeds[~alone], 1e-6).phase
    return centre + phase


def test_first_order_shifts_are_those_of_locating_again():
    """Isolated edges, pulses of 4.8 samples (one joint window), 9.7 and 20 samples (neighbours' ringing
    taken out), each at several sub-sample phases: the shifts a template draw makes, computed from the
    edge list, against locating the same samples again with the draw."""
    base = ringing_template()
    rng = np.random.default_rng(3)
    free = np.zeros(len(base.coef) - N_ZERO)
    free[:] = np.convolve(rng.standard_normal(len(free)), np.ones(8) / 8, mode="same") * 2e-3
    draw = base.plus(free, 1.0)
    times, sign = pulses(rng)
    x = rendered(base, times, sign, int(times[-1]) + 200)
    table = TemplateTable.build(base)
    before = located(table, x, times)
    np.testing.assert_allclose(before, times, atol=1e-6)  # the base template locates its own render
    again = located(TemplateTable.build(draw), x, times) - before
    first_order = DrawModel.build(table, draw).shifts_samples(before, sign)
    assert np.abs(again).max() > 1e-3  # the draw does move edges ...
    np.testing.assert_allclose(first_order, again, atol=0.01 * np.abs(again).max())  # ... as predicted


def test_moved_times_chunk_by_chunk_are_the_whole_lists(monkeypatch):
    """Chunks of 5 edges (each ends between clusters; the edges within reach either side come along) give
    the times the whole list gives."""
    base = ringing_template()
    free = np.convolve(np.random.default_rng(4).standard_normal(len(base.coef) - N_ZERO), np.ones(8) / 8,
                       mode="same") * 2e-3
    model = DrawModel.build(TemplateTable.build(base), base.plus(free, 1.0))
    rng = np.random.default_rng(5)
    pos = np.cumsum(rng.uniform(3.0, 40.0, 200)) + 100.0
    sign = np.where(np.arange(200) % 2, -1.0, 1.0)
    fs = 48000.0
    whole = pos / fs + model.shifts_samples(pos, sign) / fs
    monkeypatch.setattr(template_error, "CHUNK_EDGES", 5)
    np.testing.assert_allclose(model.moved_times_s(pos / fs, sign, fs), whole, rtol=0, atol=1e-15)


@dataclass(frozen=True)
class Result:
    rows: list[Estimate]
    label: str
    points: np.ndarray


def test_every_estimate_gets_the_draws_spread():
    """σ is the RMS of the draws' means about the result's, the CI grows in quadrature by t(dof)·σ, and
    whatever is not an Estimate is the result's own; Estimates are matched by their path (a row by its
    position here, as these rows have no label), and one the base lacks has no σ and no CI."""
    main = Result([summarize(np.array([1.0, 1.2, 0.8])), summarize(np.array([5.0, 5.0, 5.1]))], "a",
                  np.zeros(3))
    shifts = [(0.01, -0.02), (-0.03, 0.0), (0.02, 0.04)]
    draws = [Result([Estimate(e.mean_us + d, e.std_us, e.ci95_us, e.count) for e, d in zip(main.rows, s,
                                                                                               strict=True)],
                    "b", np.ones(3)) for s in shifts]
    out = with_shared_error(main, estimate_means(main), [estimate_means(d) for d in draws])
    assert out.label == "a" and out.points is main.points
    # a base of a part of the capture, its rows by label: ours at its own means, a row it lacks unknown
    part = Result([Estimate(0.0, 0.1, (0.0, 0.0), 3)], "p", np.zeros(3))
    moved = [Result([replace(part.rows[0], mean_us=s[1])], "p", np.zeros(3)) for s in shifts]
    keyed = with_shared_error(main, estimate_means(part), [estimate_means(d) for d in moved])
    assert keyed.rows[0].template_sigma_us == pytest.approx(np.sqrt(np.mean([s[1] ** 2 for s in shifts])))
    assert np.isnan(keyed.rows[1].template_sigma_us) and np.isnan(keyed.rows[1].ci95_us).all()
    t = scipy.special.stdtrit(len(draws), (1 + CI_LEVEL) / 2)
    for i, (before, after) in enumerate(zip(main.rows, out.rows, strict=True)):
        sigma = np.sqrt(np.mean([s[i] ** 2 for s in shifts]))
        assert after.template_sigma_us == pytest.approx(sigma)
        half = np.hypot((before.ci95_us[1] - before.ci95_us[0]) / 2, t * sigma)
        assert after.ci95_us == pytest.approx((before.mean_us - half, before.mean_us + half))
        assert (after.mean_us, after.std_us, after.count) == (before.mean_us, before.std_us, before.count)


def test_each_capture_draws_its_own_template_errors():
    """The same learned template gives the same draws (reproducible); templates of different captures give
    others, so that over captures a coefficient's drawn error has the covariance σ²(RᵀR)⁻¹ (here R = 2·I:
    variance σ²/4) instead of one fixed value for every capture (Student's t then covers the draws'
    chance)."""
    template = ringing_template()
    n_free = len(template.coef) - N_ZERO
    factor, noise = 2.0 * np.eye(n_free), 1e-3
    scale = 1.0 / template.evaluate(np.array([template.support_end]))[0][0]

    def drawn(learned: Template) -> np.ndarray:  # the first free coefficient's error in each draw
        draws = template_error.error_draws(learned, learned, factor, noise)
        return np.array([(d.coef[N_ZERO] - learned.coef[N_ZERO]) / scale for d in draws])

    np.testing.assert_array_equal(drawn(template), drawn(template))
    rng = np.random.default_rng(4)
    captures = [replace(template, coef=template.coef + rng.normal(0, 1e-9, len(template.coef)))
                for _ in range(200)]
    errors = np.concatenate([drawn(t) for t in captures])
    assert len(np.unique(errors)) == len(errors)
    assert 0.85 < np.std(errors) / (noise / 2) < 1.15
