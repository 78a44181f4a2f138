"""Whether a fit learned from the calibration train (:mod:`pintime.locate.shape.train`) holds the card's
response, and what to do where it does not: move its support after the edge (a minimum-phase filter's
ringing, :func:`response_lead`), widen it (a response ringing beyond ±48 samples either side, where the
train's spacing leaves room), learn blind (a train disturbed), or refuse with the cause (a response longer
than any support, edges of more than one shape, automatic gain control)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pintime.capture.wav import STANDARD_RATES_HZ
from pintime.errors import PintimeError
from pintime.locate.shape.oneshape import NOT_ONE_SHAPE, holds
from pintime.locate.shape.template import SETTLED_SAMPLES
from pintime.locate.shape.train import (
    LONG_HALF_SAMPLES,
    MAX_LEAD_SAMPLES,
    MIN_TRAIN_EDGES,
    NEIGHBOUR_FREE_SPACING_SAMPLES,
    TEMPLATE_HALF_SAMPLES,
    TrainFit,
    clear,
    cut,
    gain_change,
    learn_from_train,
    neighbour_free,
)

LEAD_STEP_SAMPLES = 12  # each move of the support (response_lead) …
LEAD_ROUNDS = MAX_LEAD_SAMPLES // LEAD_STEP_SAMPLES  # … and how many at most
# a support moved along the response sees the same edges: the moved fit's first edge within this of the
# fit before (else it settled on another feature of a response it cannot hold, and the move is undone)
SAME_EDGE_SAMPLES = 1.0
END_SAMPLES = 8  # the support's ends compared (response_lead) …
CUT_RATIO = 10.0  # … and how much more ringing at its end than at its start cuts the response short
# a train fit leaving more than this × the noise (RMS) in its windows' stretch before the support: the
# response reaches beyond ±U (a resampler's long ringing), so the ringing of an edge's neighbours within
# reach is not taken out (between the modelled cards and resamplers' long ringing: docs/design.md §13)
BEFORE_MAX = 2.0
# … or more than this × the fit's own residual over its windows: the same reach, in a recording whose noise
# measure leaves it under BEFORE_MAX (16 bits, quantization): above every modelled card and datasheet
# decimation filter, below a linear-phase filter whose transition band is 0.05 fs (docs/design.md §13;
# docs/results.md)
BEFORE_EXCESS_MAX = 1.15
# the train's step height may stray this far (relative) from a steady drift: a pin's level follows its
# supply, which moves with load, far less than automatic gain control moves it (docs/design.md §13)
GAIN_TOLERANCE = 0.05
AGC = ("the card applies automatic gain control (AGC; on a laptop, in its microphone settings), or the "
       "board's supply varies. Switch AGC off and record again")


def agc_reason(what: str, change: str) -> str:
    """Why a recording whose ``what`` (a step height, a swing) changes as ``change`` says is refused."""
    return f"{what} changes {change}, where a digital pin's swing is steady: {AGC}"


def check_gain(heights: np.ndarray, falling: np.ndarray, path: str, span_s: float, what: str) -> None:
    """Refuse a recording whose ``heights`` (the isolated edges' step heights, or a periodic signal's
    gains) stray more than GAIN_TOLERANCE from a steady line (:func:`gain_change`): a card's automatic gain
    control, which the AC coupling's learning and every σ would be wrong under (with a calibration train,
    :func:`checked_fit` checks its windows)."""
    change = gain_change(heights, falling)
    if change > GAIN_TOLERANCE:
        raise PintimeError(f"{path}: " + agc_reason(what, f"by up to {change:.0%} within {span_s:.3g} s"))


def response_lead(fit: TrainFit) -> int:
    """Where a train fit's template should have its support centred (samples after the edge): where it
    is, unless the response is cut short by the support's end while its start is quiet, as a minimum-phase
    decimation filter's is (no ringing before its edge, ~70 samples after it); then LEAD_STEP_SAMPLES
    further on (learning again sees more of it: LEAD_ROUNDS).

    Cut short when the ringing (:meth:`Template.ringing`) over the support's last END_SAMPLES (before the
    straight line it ends on) stands out of the spread of the template's error draws (mean square CUT_RATIO
    times the spread's) and has CUT_RATIO times the mean square of that over the first END_SAMPLES. A
    linear-phase filter rings alike before and after its edge; at the `minphase-48k` card's noise (0.46 FS,
    −92 dBFS) nothing of its tail beyond 48 samples stands out, at −110 dBFS it does (cut there, edges were
    4–6× their Cramér–Rao bound). The head's spread is ~10⁻² the tail's (its first coefficients are held at
    0): in it, −50 dBFS of hum stood out 7–14× and kept the tail cut (Differential 1000× +1.8 ns, 4σ)."""
    t = fit.template
    lo, end = t.lead_samples - t.half_samples, t.support_end
    u = np.arange(lo, end, 0.125)
    g = t.evaluate(u)[0]
    spread = np.sqrt(np.mean([(d.evaluate(u)[0] - g) ** 2 for d in fit.draws], axis=0))
    ringing, head = t.ringing(u), u < lo + END_SAMPLES
    tail = (u >= end - SETTLED_SAMPLES - END_SAMPLES) & (u < end - SETTLED_SAMPLES)
    tail_z2 = np.mean(np.divide(ringing, spread, out=np.zeros_like(u), where=spread > 0)[tail] ** 2)
    if tail_z2 > CUT_RATIO and np.mean(ringing[tail] ** 2) > CUT_RATIO * np.mean(ringing[head] ** 2):
        return min(t.lead_samples + LEAD_STEP_SAMPLES, MAX_LEAD_SAMPLES)
    return t.lead_samples


def checked_fit(y: np.ndarray, centre: np.ndarray, seed_samples: np.ndarray, falling: np.ndarray,
                noise_rms: float, path: str, rate_hz: int,
                rounding: Callable[[np.ndarray], list[np.ndarray]] | None = None,
                around: tuple[float, float] = (-np.inf, np.inf), name: str = "calibration train"
                ) -> tuple[TrainFit | None, str | None]:
    """:func:`learn_from_train`'s fit if it holds the response (it leaves at most MISFIT_MAX × the noise,
    and before the edges no more than noise: :func:`_reaches_beyond`), or else why not, the template then
    being learned blind: the train's edges are too close for the learning window, or a third of the train
    holds the shape where the whole does not (something in it: lost audio, which the capture's check then
    finds). ``y``: the windows on WIDE_WINDOW, from which each learning's are cut with its support's lead
    (:func:`response_lead`). ``rounding``: as :func:`learn_from_train` takes it. A response that reaches
    beyond the support either side is learned again on ±LONG_HALF_SAMPLES where the train's spacing leaves
    room, from the edges whose windows are clear of those ``around`` the train (:func:`outside`). ``name``:
    what the train is called in a refusal (a capture without pintime frames has a square wave, no
    calibration train).

    Raises PintimeError (naming ``path``) where the fit holds but the step's height along the train strays
    more than GAIN_TOLERANCE from a steady drift (:func:`gain_change`: automatic gain control, whose
    restored levels and edge shape would be no card's), and where the spacing suits the window and no
    third of the train holds a template either: the response is longer than the template (the stretch
    before the edges holds more than noise), or its edges are not one shape (it does not: a nonlinear
    input), and a blind one would leave the edges off by far more than their σ."""
    fit, misfit_x, before_x, lead, period = _best_attempt(y, centre, seed_samples, falling, noise_rms,
                                                          rounding, around)
    if fit is not None and _holds(fit, misfit_x, before_x):
        if fit.gain_change > GAIN_TOLERANCE:
            span_s = fit.edges * fit.period_samples / rate_hz
            change = f"by up to {fit.gain_change:.0%} along the {name} ({span_s:.2g} s)"
            raise PintimeError(f"{path}: " + agc_reason("the edges' step height", change))
        return fit, None
    misfit = ("no template (singular normal equations)" if fit is None
              else f"{misfit_x:.1f}× the noise" if noise_rms > 0
              else f"{fit.residual_rms:.2g} FS RMS on a noise-free recording")
    if period <= NEIGHBOUR_FREE_SPACING_SAMPLES:
        return None, (f"the template fitted to the {name} leaves {misfit}: its edges are "
                      f"{period:.1f} samples apart at {rate_hz} Hz, inside one another's learning window (it "
                      f"needs more than {NEIGHBOUR_FREE_SPACING_SAMPLES})")
    for part in np.array_split(np.arange(len(centre)), 3):
        if len(part) >= MIN_TRAIN_EDGES and _holds(*_attempt(y[part], centre[part], seed_samples[part],
                                                             falling[part], noise_rms, lead)):
            return None, (f"the template fitted to the {name} leaves {misfit}, where a third of "
                          "it holds the shape: something in the train (lost audio?)")
    raise _not_held(fit, misfit, before_x, noise_rms, period, f"{path}: ", rate_hz, name)


def _best_attempt(y: np.ndarray, centre: np.ndarray, seed_samples: np.ndarray, falling: np.ndarray,
                  noise_rms: float, rounding: Callable[[np.ndarray], list[np.ndarray]] | None,
                  around: tuple[float, float]) -> tuple[TrainFit | None, float, float, int, float]:
    """The train's fit, its support moved after the edge while its ringing shows it there
    (:func:`response_lead`, at most LEAD_ROUNDS times), or on ±LONG_HALF_SAMPLES where it reaches beyond
    the support and the train's spacing leaves room: the fit, its misfit and its stretch before the edges
    against the noise, its lead, and the train's period (samples) as the fit on the short support saw it.
    A move that shifts the train's edges (:data:`SAME_EDGE_SAMPLES`) is not made: the support's place is
    the model's choice, the edges' times are the signal's."""
    lead = 0
    fit, misfit_x, before_x = _attempt(y, centre, seed_samples, falling, noise_rms, lead, rounding)
    for _ in range(LEAD_ROUNDS):
        if fit is None or (moved := response_lead(fit)) == lead:
            break
        attempt = _attempt(y, centre, seed_samples, falling, noise_rms, moved, rounding)
        if attempt[0] is None or abs(attempt[0].first_samples - fit.first_samples) > SAME_EDGE_SAMPLES:
            break
        lead, (fit, misfit_x, before_x) = moved, attempt
    period = float(np.median(np.diff(centre))) if fit is None else fit.period_samples
    if (fit is None or _reaches_beyond(fit, before_x)) and period > neighbour_free(LONG_HALF_SAMPLES):
        k = clear(centre, around, LONG_HALF_SAMPLES)
        attempt = (None, np.inf, np.inf) if k.stop - k.start < MIN_TRAIN_EDGES else _attempt(
            y[k], centre[k], seed_samples[k], falling[k], noise_rms, 0, rounding, LONG_HALF_SAMPLES)
        if _holds(*attempt):
            lead, (fit, misfit_x, before_x) = 0, attempt
    return fit, misfit_x, before_x, lead, period


def _not_held(fit: TrainFit | None, misfit: str, before_x: float, noise_rms: float, period: float, where: str,
              rate_hz: int, name: str) -> PintimeError:
    """Why no template holds a train (called ``name``) whose spacing suits the window: none fits, its shape
    differs (the response ends within the template), or the response is longer than the template."""
    if fit is None:
        return PintimeError(f"{where}no template fits the {name}'s windows (singular normal "
                            f"equations){_too_long(period, rate_hz)}")
    before = f"{before_x:.1f}× the noise" if noise_rms > 0 else f"{fit.before_rms:.2g} FS RMS"
    before += f", {fit.before_rms / fit.residual_rms:.2f}× what the template leaves in them,"
    if not _reaches_beyond(fit, before_x):  # the response ends within the template: its shape differs
        return PintimeError(f"{where}the template fitted to the {name}'s windows leaves {misfit} "
                            f"(and {before} before their edges, where only noise belongs){NOT_ONE_SHAPE}")
    return PintimeError(f"{where}the {name}'s windows leave {before} before their edges, where "
                        f"no response should be, and the template fitted to them leaves {misfit}"
                        f"{_too_long(period, rate_hz)}")


def _too_long(period_samples: float, rate_hz: int) -> str:
    """Why a train's fit fails at a rate its spacing suits: the response is longer than the template's
    support, the long one's where the train's edges ``period_samples`` apart leave room for it (then tried
    too), and what to record at."""
    if period_samples > neighbour_free(LONG_HALF_SAMPLES):
        return (f": the response rings beyond the ±{LONG_HALF_SAMPLES} samples of pintime's edge shape, as "
                "an operating system's sample-rate converter makes it; record at the card's own rate, "
                "without resampling")
    need_hz = rate_hz * (neighbour_free(LONG_HALF_SAMPLES) + 1) / period_samples
    higher = [r for r in STANDARD_RATES_HZ if r >= need_hz]
    return (f": the response rings beyond the ±{TEMPLATE_HALF_SAMPLES} samples of pintime's edge shape, as "
            "an operating system's sample-rate converter makes it (libsoxr's and libsamplerate's best do at "
            "44.1–48 kHz); record at the card's own rate, without resampling"
            + (f", or at {higher[0] / 1000:g} kHz or more, where the edges of the train leave room for a "
               f"±{LONG_HALF_SAMPLES}-sample shape" if higher else ""))


def _holds(fit: TrainFit | None, misfit_x: float, before_x: float) -> bool:
    """Whether a fit (:func:`_attempt`) holds the response: it leaves at most MISFIT_MAX × the noise
    (:func:`oneshape.holds`), and no more than noise before the edges (:func:`_reaches_beyond`)."""
    return fit is not None and holds(misfit_x) and not _reaches_beyond(fit, before_x)


def _reaches_beyond(fit: TrainFit, before_x: float) -> bool:
    """Whether the stretch before the fit's support holds more than noise: more than BEFORE_MAX × the
    noise (``before_x``), or BEFORE_EXCESS_MAX × what the fit leaves over its windows."""
    return before_x > BEFORE_MAX or fit.before_rms > BEFORE_EXCESS_MAX * fit.residual_rms


def _attempt(y: np.ndarray, centre: np.ndarray, seed_samples: np.ndarray, falling: np.ndarray,
             noise_rms: float, lead: int,
             rounding: Callable[[np.ndarray], list[np.ndarray]] | None = None,
             half: int = TEMPLATE_HALF_SAMPLES) -> tuple[TrainFit | None, float, float]:
    """:func:`learn_from_train`'s fit with its support ±``half`` ``lead`` samples after the edges (``y`` on
    WIDE_WINDOW) and what it leaves in the noise's RMS, over the windows and before the edges (None, inf,
    inf where the normal equations are singular; NaN for an unknown noise)."""
    try:
        fit = learn_from_train(cut(y, half, lead), centre, seed_samples, falling, lead, rounding, half)
    except np.linalg.LinAlgError:  # singular normal equations: no template of this support gives them
        return None, np.inf, np.inf
    with np.errstate(divide="ignore", invalid="ignore"):  # noise-free: inf
        misfit_x, before_x = np.divide([fit.residual_rms, fit.before_rms], noise_rms)
    return fit, float(misfit_x), float(before_x)
