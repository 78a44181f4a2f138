"""The learned template's error, which every edge shares: how far it moves each edge, from the edge list.

The template is learned once, from the calibration train (:mod:`pintime.locate.shape.train`), so its error
moves every edge the same way for the same arrangement of neighbours: no spread over repetitions shows it,
and where a technique subtracts pulses whose edges lie within the template's reach of one another in
different arrangements it does not cancel (docs/results.md, "The learned edge shape's error in every
CI").
The train fit gives draws ``T + Δₖ`` of that error (:func:`error_draws`). For each,
the time the template locator (:mod:`pintime.locate.locators.fit`) would have given every edge follows to
first order from the least-squares fit it made, without the audio: at the fit's optimum a model changed by
``ΔM`` moves the parameters by ``−(JᵀJ)⁻¹Jᵀ·ΔM``, and ``ΔM`` is the change of the edge's own response
and of the ringing of its neighbours that the fit took out, all known from the edges' times and signs
(the pin's steps are all one size: only their signs enter).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import linalg

from pintime.compiled import kernel
from pintime.locate.locators.fit import (
    JOINT_SAMPLES,
    PHASE_RANGE,
    PHASES_PER_SAMPLE,
    TemplateTable,
    window_ringing,
)
from pintime.locate.locators.joint import normal_equations, solve_symmetric
from pintime.locate.shape.template import N_ZERO, Template

TABLE_PER_SAMPLE = 128  # g, g′ and Δg are tabulated this finely (linear interpolation ≪ their error)
COARSE_PHASES = 256  # the detector's choice of sample is tabulated over this many sub-sample phases
DRAWS = 8  # draws of the template's error (TrainFit.draws): the uncertainties they give have DRAWS dof
CHUNK_EDGES = 1 << 18  # moved_times_s works this many edges at a time (≈ 25 MB of temporaries)
MARGIN_REACHES = 3  # … with the edges this many neighbours' reaches either side of a chunk


def error_draws(final: Template, learned: Template, factor: np.ndarray, noise_rms: float
                ) -> tuple[Template, ...]:
    """DRAWS templates: ``final`` (``learned`` normalized) plus random draws of the error its learning
    left, from the normal equations' Cholesky factor ``factor`` (:meth:`Template.learn`) and the train
    fit's residual RMS ``noise_rms`` (noise and misfit: at least the noise).

    The template is learned once, so its error is shared by every edge and no spread of repetitions
    shows it. Each result ``R`` computed again with each draw gives its variance from that error,
    ``Σₖ (R(drawₖ) − R(final))² / DRAWS`` (to first order; DRAWS degrees of freedom). Seeded by what was
    learned: the same capture always gives the same draws, and each capture others. Student's t with
    DRAWS degrees of freedom covers the chance of so few draws only if it is chance: one seed for every
    capture would make a card whose draws fall short have every capture's CI too narrow (docs/design.md §13).
    """
    seed = np.frombuffer(learned.coef.tobytes(), dtype=np.uint32)  # a capture's own, and reproducible
    z = np.random.default_rng(seed).standard_normal((factor.shape[0], DRAWS))
    deviation = linalg.solve_triangular(factor, z, lower=False) * noise_rms  # covariance σ²(RᵀR)⁻¹
    scale = 1.0 / learned.evaluate(np.array([learned.support_end]))[0][0]  # as normalized() scales
    return tuple(final.plus(deviation[:, k], scale) for k in range(DRAWS))


def learned_free(learned: Template) -> np.ndarray:
    """The free coefficients and ripple terms of a template :meth:`Template.learn` made (as
    :meth:`Template.plus` adds them)."""
    return np.concatenate([learned.coef[N_ZERO:], np.zeros(0) if learned.ripple is None
                           else learned.ripple.ravel()])


@dataclass(frozen=True)
class DrawModel:
    """What locating with a draw of the template changes, tabulated once per draw (:meth:`build`)."""

    table: TemplateTable  # the locator's, for the template it learned
    d_ring: np.ndarray  # the draw's neighbours' ringing less the template's (the table's layout) …
    d_ring_slope: np.ndarray  # … and its change to the next finer u
    curves: np.ndarray  # (3, …): g, g′ and the draw's Δg, every 1/TABLE_PER_SAMPLE sample from u_lo
    u_lo: float
    coarse_offset: np.ndarray  # (COARSE_PHASES,) the detector's sample less floor(t), by sub-sample phase

    @classmethod
    def build(cls, table: TemplateTable, draw: Template) -> DrawModel:
        base = table.template
        draw_table = TemplateTable.build(draw)
        u_lo = base.lead_samples - base.half_samples - 1.0
        u = u_lo + np.arange(int((2 * base.half_samples + 3) * TABLE_PER_SAMPLE) + 1) / TABLE_PER_SAMPLE
        g, dg = base.evaluate(u)
        return cls(table, draw_table.ringing.astype(np.float64) - table.ringing,
                   draw_table.ringing_slope.astype(np.float64) - table.ringing_slope,
                   np.stack([g, dg, draw.evaluate(u)[0] - g]), u_lo, detector_offsets(base))

    def moved_times_s(self, time_s: np.ndarray, sign: np.ndarray, fs: float) -> np.ndarray:
        """The edge times ``time_s`` (seconds of the capture, one channel, ascending; ``sign`` ±1 each
        step's sign) the template locator would have given with the draw (:meth:`shifts_samples`)."""
        return moved_times_s(self.shifts_samples, time_s, fs, self.table.ringing_half, sign)

    def shifts_samples(self, pos: np.ndarray, sign: np.ndarray) -> np.ndarray:
        """How far (samples) the template locator would have moved each edge at ``pos`` (samples, one
        channel, ascending; ``sign`` ±1 its step's sign) had it learned the draw instead of the template.

        Windows are centred where the detector puts each edge (a template's error moves an edge as its
        window sees it). Edges within JOINT_SAMPLES of each other were fitted together (one window, one
        template each, offset and slope): their shifts solve that joint fit's linearized system. The others
        were fitted one per window, their neighbours' ringing taken out: the pseudo-inverse's timing row on
        the change of the window's model gives theirs. Left out: that their neighbours' own shifts move the
        ringing taken out of their windows, as the locator's Gauss–Seidel sweeps would (on a sinc-like
        step's pulses of 4.8–20 samples the shifts are then off by 0.76 % of the largest, 0.42 % with it:
        not worth a second pass, tests/unit/test_template_error.py).
        """
        centre, phase, first, size = detector_windows(pos, self.coarse_offset)
        amp = np.asarray(sign, dtype=np.float64)
        shift = np.zeros(len(pos))
        _shift_kernel(self.table.pinv, self.d_ring, self.d_ring_slope, self.table.ringing_half + 2,
                      self.curves, self.u_lo, centre, phase, amp, first, size, shift)
        return shift


def detector_offsets(template: Template) -> np.ndarray:
    """(COARSE_PHASES,) the sample the detector centres an edge's window on less floor(t), by the edge's
    sub-sample phase: the steepest by central difference of the noise-free response ``template``."""
    frac = np.linspace(0.0, 1.0, COARSE_PHASES, endpoint=False)
    m = np.arange(-3, 5)
    steep = np.abs(template.evaluate(m[None, :] + 1 - frac[:, None])[0]
                   - template.evaluate(m[None, :] - 1 - frac[:, None])[0])
    return m[np.argmax(steep, axis=1)]


def detector_windows(pos: np.ndarray, coarse_offset: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The windows the template locator fitted the edges at ``pos`` (samples, ascending) in: each edge's
    window centre (the detector's sample, :func:`detector_offsets`) and phase from it, and the clusters of
    edges within JOINT_SAMPLES of each other fitted together (their first edges and sizes)."""
    whole = np.floor(pos)
    centre = (whole + coarse_offset[((pos - whole) * COARSE_PHASES).astype(np.int64)
                                    % COARSE_PHASES]).astype(np.int64)
    first = np.flatnonzero(np.concatenate([[True], np.diff(centre) > JOINT_SAMPLES]))  # clusters' starts
    return centre, pos - centre, first, np.diff(np.append(first, len(pos)))


def moved_times_s(shifts_samples: Callable[..., np.ndarray], time_s: np.ndarray, fs: float,
                  ringing_half: int, *per_edge: np.ndarray) -> np.ndarray:
    """The edge times ``time_s`` (seconds of the capture, one channel, ascending) moved by
    ``shifts_samples(pos, *per_edge)`` (samples; ``per_edge``: arrays of one value per edge, each step's
    sign first), worked out CHUNK_EDGES at a time: memory stays bounded on any capture. Chunks end between
    two clusters (edges fitted together), and each is worked out with the edges within MARGIN_REACHES
    neighbours' reach (``ringing_half`` + 2 samples) either side, whose ringing reaches into its windows."""
    out = np.empty_like(time_s)
    n = len(time_s)
    margin_s = MARGIN_REACHES * (ringing_half + 2) / fs
    a = 0
    while a < n:
        b = min(a + CHUNK_EDGES, n)
        while b < n and (time_s[b] - time_s[b - 1]) * fs <= JOINT_SAMPLES + 1:  # inside a cluster
            b += 1
        lo = int(np.searchsorted(time_s, time_s[a] - margin_s))
        hi = int(np.searchsorted(time_s, time_s[b - 1] + margin_s, side="right"))
        shift = shifts_samples(time_s[lo:hi] * fs, *(e[lo:hi] for e in per_edge))
        out[a:b] = time_s[a:b] + shift[a - lo:b - lo] / fs
        a = b
    return out


@kernel
def lookup(tables, row, u_lo, u):  # pragma: no cover (compiled)
    """Row ``row`` of ``tables`` at ``u``: 0 before it, linear interpolation, then straight on."""
    x = (u - u_lo) * TABLE_PER_SAMPLE
    if x < 0.0:
        return 0.0
    last = tables.shape[1] - 1
    i = min(int(x), last - 1)
    return tables[row, i] + (x - i) * (tables[row, i + 1] - tables[row, i])


@kernel
def _shift_kernel(pinv, d_ring, d_ring_slope, stop, tables, u_lo, centre, phase, amp, first, size,
                  shift):  # pragma: no cover (compiled)
    """:meth:`DrawModel.shifts_samples` cluster by cluster, into ``shift``: a single edge's ``−pinv_δ·ΔM /
    A``, a joint one's the times of ``−(JᵀJ)⁻¹Jᵀ·ΔM`` with ``J`` the joint fit's columns (amplitudes,
    times, offset, slope); ``ΔM`` is the change of the neighbours' ringing (``d_ring``, in the layout of the
    locator's table) and of the window's own edges' response (Δg: ``tables`` row 2)."""
    half = pinv.shape[2] // 2
    lo_phase = PHASE_RANGE[0]
    # a single edge's own part, −pinv_δ·Δg, depends on its phase alone: once per tabulated phase
    own = np.zeros(pinv.shape[0])
    for cell in range(pinv.shape[0]):
        at = lo_phase + (cell + 0.5) / PHASES_PER_SAMPLE
        for m in range(2 * half + 1):
            own[cell] -= pinv[cell, 1, m] * lookup(tables, 2, u_lo, m - half - at)
    single = np.zeros(2 * half + 1)
    for c in range(len(first)):
        f, n = first[c], size[c]
        start = centre[f] - half
        if n == 1:
            cell = min(int((phase[f] - lo_phase) * PHASES_PER_SAMPLE), pinv.shape[0] - 1)
            single[:] = 0.0
            window_ringing(d_ring, d_ring_slope, stop, start, f, f, centre, phase, amp, single)
            t = 0.0
            for m in range(len(single)):
                t += pinv[cell, 1, m] * single[m]
            shift[f] = own[cell] - t / amp[f]
            continue
        length = int(centre[f + n - 1] - centre[f]) + 2 * half + 1
        change = np.zeros(length)
        window_ringing(d_ring, d_ring_slope, stop, start, f, f + n - 1, centre, phase, amp, change)
        for k in range(f, f + n):
            offset = centre[k] - start + phase[k]
            for m in range(length):
                change[m] += amp[k] * lookup(tables, 2, u_lo, m - offset)
        step = joint_solve(tables, u_lo, centre, phase, amp, f, n, start, change)
        for j in range(n):
            shift[f + j] = -step[n + j]


@kernel
def joint_solve(tables, u_lo, centre, phase, amp, f, n, start, change):  # pragma: no cover (compiled)
    """``(JᵀJ)⁻¹Jᵀ·change`` of the joint fit of the ``n`` edges from ``f`` in one window from sample
    ``start`` (as long as ``change``): ``J``'s columns the edges' amplitudes, their times (samples), the
    window's offset and slope, from ``tables`` rows 0 and 1 (g, g′)."""
    length = len(change)
    jac = np.empty((2 * n + 2, length))  # amplitudes, times, offset, slope
    for j in range(n):
        offset = centre[f + j] - start + phase[f + j]
        for m in range(length):
            jac[j, m] = lookup(tables, 0, u_lo, m - offset)
            jac[n + j, m] = -amp[f + j] * lookup(tables, 1, u_lo, m - offset)
    for m in range(length):
        jac[2 * n, m] = 1.0
        jac[2 * n + 1, m] = m / (length - 1)
    gram, step = np.empty((2 * n + 2, 2 * n + 2)), np.empty(2 * n + 2)
    normal_equations(jac, change, gram, step)
    return solve_symmetric(gram, step, np.empty_like(gram))
