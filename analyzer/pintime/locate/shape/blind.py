"""The edge template learned blind, from isolated edges at unknown sub-sample positions (no calibration
train; docs/design.md §10).

Edge positions and template trade against each other: a template warped by a periodic function of the
sub-sample phase, ``g(x + D(x mod 1))``, fits every window as well as the true one at positions moved by
``D``, so alternating fit and refit keeps whatever phase-dependent error its seeds had (the threshold
method's: ≈ 0.05 sample, 1 µs at 48 kHz). The seeds here have none: the centroids of
:mod:`pintime.locate.locators.centroid`, whose noise is a few times the Cramér–Rao bound; the alternation,
started there, stays unbiased.

One error no blind learning can see: a delta-sigma modulator's ripple (:class:`Template`) moves each
edge's response by an amount periodic in its phase against the modulator's grid, exactly as a shifted
edge would look; only edges of known times (a calibration train) tell them apart.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from pintime.errors import PintimeError
from pintime.locate.locators.centroid import centroids
from pintime.locate.locators.fit import FIT_HALF_SAMPLES, TemplateTable, fit_isolated
from pintime.locate.shape import oneshape, phasebias, train
from pintime.locate.shape.dense import learn_dense
from pintime.locate.shape.template import Template, covered_knots

BLIND_ROUNDS = 4  # fit / refit alternations
# knot spacings tried, finest first: a slow signal's few edges, or a clock nearly locked to the card's,
# leave finer ones without data
KNOT_CHOICES_SAMPLES = (train.KNOT_SAMPLES, 0.125, 0.25, 0.5)
EDGES_PER_KNOT = 4  # ... a spacing is tried when every knot interval of sub-sample phase holds this many
MIN_ISOLATED = 20  # fewer isolated edges: the template is learned from all edges together


def isolated_edges(pos: np.ndarray) -> np.ndarray:
    """Which of the edges at ``pos`` (samples, ascending) have no neighbour within a learning window."""
    apart = np.diff(pos) > len(train.WINDOW)
    return np.concatenate([[True], apart]) & np.concatenate([apart, [True]])


def learn_blind(pos: np.ndarray, sign: np.ndarray, y: np.ndarray, seeds: np.ndarray, span_s: float,
                noise_rms: float, frames: bool = True) -> Template:
    """Template from the isolated edges at ``pos`` (samples; polarity ``sign``; windows ``y`` on
    :data:`train.WINDOW`, threshold ``seeds``) of a learning span ``span_s`` long without a calibration
    train; from all of them together (:mod:`pintime.locate.shape.dense`; the capture's noise ``noise_rms``)
    where too few are isolated. ``frames``: the edges hold pintime frames (a refusal then names the train they
    lack; else what the signal lacks, in its terms). Refused where the shape learned does not hold the
    edges (:func:`oneshape.check_holds`: they are not one shape); every σ raised where the isolated edges
    show an error that follows their sub-sample phase (:func:`_phase_widened`)."""
    isolated = isolated_edges(pos)
    if isolated.sum() < MIN_ISOLATED:
        try:
            return learn_dense(pos, sign, y, seeds, noise_rms, KNOT_CHOICES_SAMPLES, EDGES_PER_KNOT)
        except PintimeError as err:
            alone = (f"only {isolated.sum()} edges there more than {len(train.WINDOW)} samples from their "
                     f"neighbours (learning the edge shape from them needs {MIN_ISOLATED}), and from all "
                     f"edges together {err}")
            if frames:
                raise PintimeError(
                    f"no calibration train in the {span_s:.3g} s from the measurement channel's first edges, "
                    f"{alone}: a pintime recording must start before the run (the train follows its first "
                    "frame), or --channel names another channel than the measurement pin's") from None
            raise PintimeError(
                f"the signal's {len(pos)} edges in its first {span_s:.3g} s lie on no grid of one cell (a "
                f"code's bit, a timer's period) that they would be learned from; {alone}: a signal with "
                "pauses between its edges, or one whose edges keep a constant cell, would help") from None
    y, seed = y[isolated], centroids(y[isolated], seeds[isolated] - pos[isolated])
    found = np.isfinite(seed) & (np.abs(seed) < FIT_HALF_SAMPLES)  # a window without a step has none
    y, seed, phase = y[found], seed[found], np.mod(pos[isolated][found] + seed[found], 1.0)
    for knot in covered_knots(phase, KNOT_CHOICES_SAMPLES, EDGES_PER_KNOT):  # the finest first
        try:
            template, tau = _alternate(Template.initial(train.TEMPLATE_HALF_SAMPLES, knot), y, seed)
        except np.linalg.LinAlgError:  # too few windows reach some coefficient (a slow signal's few)
            continue
        template = oneshape.check_holds(template, y, tau, noise_rms, f"the {len(y)} isolated edges")
        return _phase_widened(template, y, pos[isolated][found], sign[isolated][found], tau, noise_rms)
    raise PintimeError(f"the {len(y)} edges to learn the edge shape from do not determine it (their "
                       "sub-sample phases leave parts of it without data): record for longer")


def _alternate(template: Template, y: np.ndarray, tau: np.ndarray) -> tuple[Template, np.ndarray]:
    """BLIND_ROUNDS refits of ``template`` to the windows ``y`` at positions ``tau`` (samples from each
    window's centre), each followed by locating the edges with it: the template, and the edges located."""
    m, ramp, nuisance = train.window_baseline()
    for _ in range(BLIND_ROUNDS):
        u = m[None, :] - tau[:, None]
        amp = train.window_linear(template, y, u, ramp)[0][:, 0]
        gain = train.common_gain(amp, amp < 0)
        template = template.refit(u, np.broadcast_to(gain[:, None], u.shape), y, nuisance).normalized()
        tau = fit_isolated(TemplateTable.build(template), y[:, train.FIT_COLUMNS], tau, 1.0).phase
    return template, tau


def _phase_widened(template: Template, y: np.ndarray, pos: np.ndarray, sign: np.ndarray, tau: np.ndarray,
                   noise_rms: float) -> Template:
    """``template`` with every σ raised to hold the error periodic in the phase that the learning edges
    (windows ``y`` at ``pos``, ``tau`` from their centres) show where they repeat with a period
    (:func:`phasebias.phase_sigma_scale`)."""
    fit = fit_isolated(TemplateTable.build(template), y[:, train.FIT_COLUMNS], tau, noise_rms)
    scale = phasebias.phase_sigma_scale(pos + fit.phase, sign, fit.sigma)
    return template if scale == 1.0 else replace(template, sigma_scale=scale, sigma_why=phasebias.WHY)
