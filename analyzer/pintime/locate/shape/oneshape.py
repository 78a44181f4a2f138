"""Whether a learned edge shape holds the edges it was learned from: the one rule a learned response is
accepted by, from the calibration train (:mod:`pintime.locate.shape.traincheck`) or without one, from
isolated edges (:mod:`pintime.locate.shape.blind`). Not from all edges together
(:mod:`pintime.locate.shape.dense`): a pattern that hides part of the response leaves more than the
noise there, and its σ is enlarged by its own rule instead.

A shape whose fit leaves more than MISFIT_MAX × the noise (RMS) over its learning windows has not learned
the edges' shape: they are not one shape (rising and falling edges that differ, through a nonlinear input;
a shape that changes with where an edge falls between samples), and each edge's σ, from the noise alone,
knows nothing of the error that leaves (docs/design.md §13).
"""

from __future__ import annotations

import numpy as np

from pintime.errors import PintimeError
from pintime.locate.shape import train
from pintime.locate.shape.template import Template

MISFIT_MAX = 3.0  # a learned shape's fit leaving more than this × the noise (RMS) has not learned it
# why: the edges are not one shape, and the two causes a fit cannot tell apart: a bent input, or a
# converter's filter that varies with the edge's place between samples (docs/design.md §13)
NOT_ONE_SHAPE = (": its edges are not one shape: a nonlinear input makes rising and falling edges differ "
                 "(record at a lower level, the steps well below full scale), a resampled file's converter "
                 "makes the shape change with where an edge falls between samples (a file converted to "
                 "another rate or stretched in time: analyse it as the card recorded it)")


def holds(misfit_x: float) -> bool:
    """Whether a fit leaving ``misfit_x`` × the noise (RMS) holds the shape (an unknown noise, NaN, refuses
    nothing)."""
    return not misfit_x > MISFIT_MAX


def misfit_x(template: Template, y: np.ndarray, tau: np.ndarray, noise_rms: float) -> float:
    """What ``template`` leaves in the windows ``y`` (on :data:`train.WINDOW`) of edges ``tau`` samples from
    their centres, each window's step and quadratic baseline fitted, in the noise's RMS ``noise_rms`` (inf
    for a noise-free recording, as a train's)."""
    m, ramp, _ = train.window_baseline()
    lin, cols, _, _ = train.window_linear(template, y, m[None, :] - tau[:, None], ramp)
    resid = y - np.einsum("elp,ep->el", cols, lin)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.sqrt(np.mean(resid * resid)) / noise_rms)


def check_holds(template: Template, y: np.ndarray, tau: np.ndarray, noise_rms: float, what: str) -> Template:
    """``template`` where it holds the windows ``y`` of edges at ``tau`` (:func:`misfit_x`); else
    PintimeError saying what it was learned from (``what``) and why it fails."""
    misfit = misfit_x(template, y, tau, noise_rms)
    if not holds(misfit):
        raise PintimeError(f"the edge shape learned from {what} leaves {misfit:.1f}× the noise over their "
                           f"windows{NOT_ONE_SHAPE}")
    return template
