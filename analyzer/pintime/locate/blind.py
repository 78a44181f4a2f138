"""The edge template learned blind, from isolated edges at unknown sub-sample positions (no calibration
train): seeded by the threshold method, then alternating fit and refit, so it inherits part of the seed's
sub-sample bias (docs/design.md §10)."""

from __future__ import annotations

import numpy as np

from pintime.errors import PintimeError
from pintime.locate import train
from pintime.locate.fit import FIT_HALF_SAMPLES, TemplateTable, fit_isolated
from pintime.locate.template import Template

BLIND_ROUNDS = 4  # fit / refit alternations


def learn_blind(pos: np.ndarray, y: np.ndarray, seeds: np.ndarray, span_s: float) -> Template:
    """Template from the isolated edges at ``pos`` (samples; windows ``y`` on :data:`train.WINDOW`, threshold
    ``seeds``) of a learning span ``span_s`` long without a calibration train: alternate locating and
    refitting."""
    gap = np.diff(pos)
    isolated = np.concatenate([[True], gap > len(train.WINDOW)]) & np.concatenate([gap > len(train.WINDOW),
                                                                                     [True]])
    if isolated.sum() < 20:
        raise PintimeError(f"no calibration train in the {span_s:g} s from the measurement channel's "
                           f"first edges, and only {isolated.sum()} isolated edges there to learn the edge "
                           "shape from: the recording must start before the run (the train follows its first "
                           "frame), or --channel names another channel than the measurement pin's")
    y, tau = y[isolated], seeds[isolated] - pos[isolated]
    template = Template.initial(train.TEMPLATE_HALF_SAMPLES, train.KNOT_SAMPLES)
    m = train.WINDOW.astype(np.float64)
    ramp = m / m[-1]
    nuisance = np.linalg.qr(np.stack([np.ones(len(m)), ramp, ramp * ramp], axis=1))[0]
    centre = -int(train.WINDOW[0]) + np.arange(-FIT_HALF_SAMPLES, FIT_HALF_SAMPLES + 1)
    for _ in range(BLIND_ROUNDS):
        u = m[None, :] - tau[:, None]
        amp = train.window_linear(template, y, u, ramp)[0][:, :1]
        template = template.refit(u, np.broadcast_to(amp, u.shape), y, nuisance).normalized()
        tau = fit_isolated(TemplateTable.build(template), y[:, centre], tau, 1.0).phase
    return template
