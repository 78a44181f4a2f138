"""Quantization without dither: the error every repetition shares on a recording quieter than one LSB.

A card whose analog noise is well below one LSB (a 24-bit interface recording at 16 bits without dither, at
a small level) rounds each level the pin sets to the same code every time. The rounding error is then a
fixed function of where the waveform lies between two codes, the same in every repetition of a pulse: the
edges' times move the same way each time and no spread of repetitions shows it (docs/results.md,
"Quantization without dither"). The template is learned from the calibration train, whose windows round
alike too, so it takes that rounding in: the larger part where pulses' edges share windows. Where the
levels lie between the codes is not known (the quiet between edges is one code), so its effect is drawn
as the template's error is (:mod:`pintime.locate.shape.template_error`): for DRAWS offsets of the levels from
the codes, spread evenly over one LSB, the template the train's rounded windows would teach
(:func:`rounding_errors`, learned in :func:`pintime.locate.shape.train.learn_from_train`), and each edge's
move under its own window's rounding (:class:`QuantizationModel`), both to first order. The window's data
changed by ``e`` moves the fit's parameters by ``(JᵀJ)⁻¹Jᵀ·e``, where ``e`` is the expected rounding error
of the window's noise-free waveform: its own and its neighbours' steps (the pin's steps are all one size,
``step_lsb``) over a level ``offset_lsb``. With Gaussian analog noise of σ LSB that error is the rounding
sawtooth smoothed, ``Σₖ (−1)ᵏ sin(2πkx) e^(−2π²k²σ²) / (πk)``; from σ = 0.6 LSB on it is below 10⁻³ LSB and
nothing is drawn. The levels are taken the same between codes in every window, though an AC coupling
moves them: the largest sharing, and the widest CI.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pintime.compiled import kernel
from pintime.locate.locators.fit import PHASE_RANGE, PHASES_PER_SAMPLE, TemplateTable
from pintime.locate.shape.template_error import (
    TABLE_PER_SAMPLE,
    detector_offsets,
    detector_windows,
    joint_solve,
    moved_times_s,
)

DRAWS = 8  # offsets of the levels from the codes, evenly over one LSB
NEGLIGIBLE_LSB = 1e-3  # the sawtooth's first harmonic, smoothed by the noise, below this: nothing to draw
EXACT_BELOW_LSB = 0.02  # analog noise below this is taken as none (the sawtooth itself)
HARMONIC_FLOOR = 1e-4  # the smoothed sawtooth's series stops where its terms fall below this


def analog_noise_lsb(noise_rms: float, lsb: float) -> float:
    """The analog noise (LSB, 1σ) beneath a measured quiet noise ``noise_rms`` (the same units as ``lsb``):
    what exceeds the rounding's own LSB/√12 (none where the quiet is all one code)."""
    return math.sqrt(max(0.0, (noise_rms / lsb) ** 2 - 1.0 / 12.0))


def shared(noise_lsb: float) -> bool:
    """Whether rounding with ``noise_lsb`` of analog noise beneath it leaves an error repetitions share."""
    return math.exp(-2.0 * math.pi ** 2 * noise_lsb ** 2) / math.pi >= NEGLIGIBLE_LSB


def series_for(noise_lsb: float) -> np.ndarray:
    """The weights ``(−1)ᵏ e^(−2π²k²σ²) / (πk)`` of the sawtooth's harmonics k = 1, 2, … damped by Gaussian
    noise of ``noise_lsb`` (σ), until they fall below HARMONIC_FLOOR; none below EXACT_BELOW_LSB of noise
    (:func:`_rounding_error_lsb` then takes the sawtooth itself)."""
    if noise_lsb < EXACT_BELOW_LSB:
        return np.zeros(0)
    k = np.arange(1, int(math.ceil(math.sqrt(math.log(1.0 / HARMONIC_FLOOR) / 2.0) / (math.pi * noise_lsb)))
                  + 1)
    return (-1.0) ** k * np.exp(-2.0 * (math.pi * k * noise_lsb) ** 2) / (math.pi * k)


def rounding_errors(lsb: float, noise_rms: float) -> Callable[[np.ndarray], list[np.ndarray]] | None:
    """For a recording of codes ``lsb`` apart (0: float samples) and quiet noise ``noise_rms`` (the same
    units), the expected rounding errors of noise-free samples (same units) at each offset of
    :func:`offsets_lsb`; None where rounding leaves no error repetitions share (:func:`shared`)."""
    noise_lsb = analog_noise_lsb(noise_rms, lsb) if lsb else math.inf
    if not shared(noise_lsb):
        return None
    series = series_for(noise_lsb)

    def errors(samples: np.ndarray) -> list[np.ndarray]:
        out = []
        for offset in offsets_lsb():
            error = np.empty(samples.size)
            _rounding_errors(samples.ravel() / lsb + offset, series, error)
            out.append(error.reshape(samples.shape) * lsb)
        return out

    return errors


def offsets_lsb() -> np.ndarray:
    """The DRAWS offsets of the levels from the codes, evenly over one LSB."""
    return (np.arange(DRAWS) + 0.5) / DRAWS


@dataclass(frozen=True)
class QuantizationModel:
    """What rounding moves the template locator's edges by, tabulated once (:meth:`build`)."""

    table: TemplateTable  # the locator's, for the template it learned
    curves: np.ndarray  # (2, …): g and g′, every 1/TABLE_PER_SAMPLE sample from u_lo
    u_lo: float
    coarse_offset: np.ndarray  # the detector's sample less floor(t), by sub-sample phase
    step_lsb: float  # the pin's step, LSB
    noise_lsb: float  # the analog noise beneath the rounding, LSB (1σ)

    @classmethod
    def build(cls, table: TemplateTable, step_lsb: float, noise_lsb: float) -> QuantizationModel:
        base = table.template
        u_lo = base.lead_samples - base.half_samples - 1.0
        u = u_lo + np.arange(int((2 * base.half_samples + 3) * TABLE_PER_SAMPLE) + 1) / TABLE_PER_SAMPLE
        return cls(table, np.stack(base.evaluate(u)), u_lo, detector_offsets(base), step_lsb, noise_lsb)

    def moved_times_s(self, time_s: np.ndarray, sign: np.ndarray, fs: float, offset_lsb: float
                      ) -> np.ndarray:
        """The edge times ``time_s`` (seconds of the capture, one channel, ascending, the first DRAW_EDGES
        or so; ``sign`` ±1 each step's sign) moved by the rounding of levels ``offset_lsb`` above the codes
        (:meth:`shifts_samples`)."""
        amp = np.asarray(sign, np.float64)
        level = np.cumsum(amp) - amp  # the waveform's level before each edge, in steps
        level -= min(0.0, float(np.min(level + np.minimum(amp, 0.0))))  # its lowest level 0
        return moved_times_s(lambda pos, s, lv: self.shifts_samples(pos, s, lv, offset_lsb), time_s, fs,
                             self.table.ringing_half, amp, level)

    def shifts_samples(self, pos: np.ndarray, sign: np.ndarray, level: np.ndarray, offset_lsb: float
                       ) -> np.ndarray:
        """How far (samples) rounding moved each edge at ``pos`` (samples, ascending; ``sign`` its step's
        sign, ``level`` the waveform's level before it in steps) in the locator's fit of its window
        (:func:`pintime.locate.shape.template_error.detector_windows`): one edge's window by the
        pseudo-inverse's timing row, a cluster's by its joint fit's linearized system."""
        centre, phase, first, size = detector_windows(pos, self.coarse_offset)
        shift = np.zeros(len(pos))
        _shift_kernel(self.table.pinv, self.curves, self.u_lo, self.table.template.support_end, centre, phase,
                      sign, level, first, size, offset_lsb, self.step_lsb, series_for(self.noise_lsb), shift)
        return shift


@kernel
def _rounding_error_lsb(x, series):  # pragma: no cover (compiled)
    """The expected error of rounding ``x`` (LSB) with Gaussian noise added first: the sawtooth
    ``round(x) − x`` (no ``series``), or its harmonics weighted by ``series`` (:func:`series_for`; the
    sines by the recurrence ``sin (k+1)θ = 2 cos θ · sin kθ − sin (k−1)θ``)."""
    if len(series) == 0:
        return np.floor(x + 0.5) - x
    theta = 2.0 * np.pi * (x - np.floor(x))
    c2 = 2.0 * np.cos(theta)
    before, now = 0.0, np.sin(theta)
    total = 0.0
    for k in range(len(series)):
        total += series[k] * now
        before, now = now, c2 * now - before
    return total


@kernel
def _rounding_errors(x, series, out):  # pragma: no cover (compiled)
    """:func:`_rounding_error_lsb` of every ``x``, into ``out``."""
    for i in range(len(x)):
        out[i] = _rounding_error_lsb(x[i], series)


@kernel
def _step_at(curves, u_lo, u_end, u):  # pragma: no cover (compiled)
    """The step response ``g`` at ``u``: 0 before its table, 1 from the support's end ``u_end`` on (the
    level the step settles at; the straight line a template ends on, an AC coupling's droop, is the
    windows' baseline)."""
    if u >= u_end:
        return 1.0
    x = (u - u_lo) * TABLE_PER_SAMPLE
    if x <= 0.0:
        return 0.0
    i = int(x)
    return curves[0, i] + (x - i) * (curves[0, i + 1] - curves[0, i])


@kernel
def _shift_kernel(pinv, curves, u_lo, u_end, centre, phase, amp, level, first, size, offset_lsb, step_lsb,
                  series, shift):  # pragma: no cover (compiled)
    """:meth:`QuantizationModel.shifts_samples` cluster by cluster, into ``shift``: each window's
    noise-free waveform (the edges whose response changes in it, over the level before the first of them),
    its expected rounding error in steps, and the fit's move: a single edge's ``pinv_δ·e / A``, a
    cluster's times of ``(JᵀJ)⁻¹Jᵀ·e``."""
    half = pinv.shape[2] // 2
    lo_phase = PHASE_RANGE[0]
    n_edges = len(centre)
    for c in range(len(first)):
        f, n = first[c], size[c]
        start = centre[f] - half
        length = int(centre[f + n - 1] - centre[f]) + 2 * half + 1
        k0 = f  # the first edge whose response still changes in the window
        while k0 > 0 and centre[k0 - 1] + phase[k0 - 1] + u_end > start:
            k0 -= 1
        k1 = f + n - 1  # the last edge whose response has begun in it
        while k1 + 1 < n_edges and centre[k1 + 1] + phase[k1 + 1] + u_lo < start + length:
            k1 += 1
        error = np.empty(length)
        for m in range(length):
            y = level[k0]
            for k in range(k0, k1 + 1):
                y += amp[k] * _step_at(curves, u_lo, u_end, m - (centre[k] - start + phase[k]))
            error[m] = _rounding_error_lsb(offset_lsb + step_lsb * y, series) / step_lsb
        if n == 1:
            cell = min(int((phase[f] - lo_phase) * PHASES_PER_SAMPLE), pinv.shape[0] - 1)
            t = 0.0
            for m in range(length):
                t += pinv[cell, 1, m] * error[m]
            shift[f] = t / amp[f]
            continue
        step = joint_solve(curves, u_lo, centre, phase, amp, f, n, start, error)
        for j in range(n):
            shift[f + j] = step[n + j]
