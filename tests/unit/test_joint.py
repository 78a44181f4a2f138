"""The compiled template evaluation and joint fits against independent evaluations and known truths."""

from __future__ import annotations

import numpy as np
from pintime.locate.locators.joint import fit_joint, inverse_symmetric
from pintime.locate.shape.template import RIPPLE_HARMONICS, RIPPLE_TERMS, Template
from scipy.interpolate import BSpline
from test_locate_template import ringing_template


def with_ripple(template: Template) -> Template:
    """``template`` with a modulator ripple of 1e-3 of its slope at 5.3 per sample."""
    ripple = np.random.default_rng(5).normal(0, 1e-3, (RIPPLE_HARMONICS, RIPPLE_TERMS))
    return Template(template.half_samples, template.knot_samples, template.coef, template.origin, 5.3, ripple)


def test_evaluate_is_the_b_spline_and_its_derivative():
    """g(u) is scipy's cubic B-spline on the template's knots (then its straight line), and g′ is g's
    slope (central differences, off the knots: the ripple's S‴ term steps there), with and without a
    ripple."""
    template = ringing_template()
    half, knot = template.half_samples, template.knot_samples
    n_coef = len(template.coef)
    knots = -half + (np.arange(n_coef + 4) - 3.0) * knot  # coefficient j peaks at knot j − 1
    spline = BSpline(knots, template.coef, 3)
    u = np.linspace(-half - 3, half + 6, 4001) + 1e-3 * np.pi - template.origin
    g, dg = template.evaluate(u)
    x = u + template.origin
    inside = np.abs(x) < half
    np.testing.assert_allclose(g[inside], spline(x[inside]), rtol=0, atol=1e-12)
    after = x >= half
    line = spline(half) + spline.derivative()(half) * (x[after] - half)
    np.testing.assert_allclose(g[after], line, rtol=0, atol=1e-12)
    for shape in (template, with_ripple(template)):
        h = 1e-6
        slope = (shape.evaluate(u + h)[0] - shape.evaluate(u - h)[0]) / (2 * h)
        np.testing.assert_allclose(shape.evaluate(u)[1], slope, rtol=0, atol=1e-6)


def pulses(template: Template, tau: np.ndarray, amp: float, noise: float, rng: np.random.Generator,
           length: int) -> np.ndarray:
    """Windows of a rising then a falling step at ``tau`` (windows, 2), a level and slope, and noise."""
    m = np.arange(length, dtype=np.float64)
    y = amp * (template.evaluate(m - tau[:, :1])[0] - template.evaluate(m - tau[:, 1:])[0])
    return y + 0.02 + 1e-3 * m / length + rng.normal(0, noise, y.shape)


def test_joint_fit_finds_both_edges_of_short_pulses_with_honest_sigma():
    """Pulses 4.8 samples long (Table 1's 100 µs at 48 kHz), seeds up to a sample off: every time within
    5 of its sigma, and the sigmas as large as the errors' spread (ratio 0.85–1.15 over 400 windows)."""
    rng = np.random.default_rng(11)
    for template in (ringing_template(), with_ripple(ringing_template())):
        start = rng.uniform(5.0, 6.0, 400)
        true = np.stack([start, start + 4.8], axis=1)
        noise = 1e-4
        y = pulses(template, true, 0.3, noise, rng, 21)
        seeds = true + rng.uniform(-1.0, 1.0, true.shape)
        tau, sigma, amp = fit_joint(template, y, seeds, noise)
        z = (tau - true) / sigma
        assert np.abs(z).max() < 5.0
        assert 0.85 < np.std(z) < 1.15
        np.testing.assert_allclose(amp, np.broadcast_to([0.3, -0.3], amp.shape), rtol=1e-2)
        # refined from where it is (explore=False): the same fit
        again, _, _ = fit_joint(template, y, tau, noise, explore=False)
        np.testing.assert_allclose(again, tau, rtol=0, atol=1e-6)


def test_two_seeds_on_one_step_give_finite_times():
    """Two detections of one step make the normal equations singular: the pseudo-inverse still gives
    finite times and sigmas (no exception, no NaN)."""
    template = ringing_template()
    rng = np.random.default_rng(2)
    m = np.arange(21, dtype=np.float64)
    y = 0.3 * template.evaluate(m[None, :] - 8.2)[0] + rng.normal(0, 1e-4, (5, len(m)))
    tau, sigma, amp = fit_joint(template, y, np.full((5, 2), 8.2), 1e-4)
    assert np.isfinite(tau).all() and np.isfinite(sigma).all() and np.isfinite(amp).all()


def test_windows_in_a_local_minimum_are_explored_out_of_it():
    """Two 2.5-sample pulses 5.4 samples apart in one window (a kernel run-queue insertion chain), seeds up
    to a sample off: fitted from the seeds alone, some windows settle in a local minimum; exploring (only
    where the fit looks like one) leaves none, every time within 5 of its sigma."""
    rng = np.random.default_rng(3)
    template = ringing_template()
    start = rng.uniform(5.0, 6.0, 1000)
    true = np.stack([start, start + 2.5, start + 5.4, start + 7.9], axis=1)
    m = np.arange(30, dtype=np.float64)
    sign = np.array([1.0, -1.0, 1.0, -1.0])
    y = 0.3 * np.einsum("k,wkm->wm", sign, template.evaluate(m[None, None, :] - true[:, :, None])[0])
    y = y + rng.normal(0, 1e-4, y.shape)
    seeds = true + rng.uniform(-1.0, 1.0, true.shape)
    stuck = np.abs(fit_joint(template, y, seeds, 1e-4, explore=False)[0] - true).max(axis=1) > 0.1
    assert stuck.sum() >= 10
    tau, sigma, _ = fit_joint(template, y, seeds, 1e-4)
    assert np.abs((tau - true) / sigma).max() < 5.0


def test_inverse_symmetric_is_the_inverse_or_the_pseudo_inverse():
    """A joint fit's covariance: numpy's inverse of a positive definite JᵀJ, its pseudo-inverse when two
    columns are the same (singular)."""
    rng = np.random.default_rng(6)
    jac = rng.normal(size=(6, 20))
    for gram in (jac @ jac.T, np.vstack([jac[:5], jac[:1]]) @ np.vstack([jac[:5], jac[:1]]).T):
        out = inverse_symmetric(gram, np.empty_like(gram), np.empty_like(gram))
        np.testing.assert_allclose(out, np.linalg.pinv(gram, hermitian=True), rtol=1e-9, atol=1e-12)
