"""The learned template's error, which every edge shares: how far it moves each edge, from the edge list.

The template is learned once, from the calibration train (:mod:`pintime.locate.train`), so its error
moves every edge the same way for the same arrangement of neighbours: no spread over repetitions shows it,
and where a technique subtracts pulses whose edges lie within the template's reach of one another in
different arrangements it does not cancel (docs/results.md, "What the confidence intervals leave out").
The train fit gives draws ``T + Δₖ`` of that error (:func:`pintime.locate.train.error_draws`). For each,
the time the template locator (:mod:`pintime.locate.fit`) would have given every edge follows to first
order from the least-squares fit it made, without the audio: at the fit's optimum a model changed by
``ΔM`` moves the parameters by ``−(JᵀJ)⁻¹Jᵀ·ΔM``, and ``ΔM`` is the change of the edge's own response
and of the ringing of its neighbours that the fit took out, all known from the edges' times and signs
(the pin's steps are all one size: only their signs enter).
"""

from __future__ import annotations

import numba
import numpy as np

from pintime.locate.fit import JOINT_SAMPLES, PHASE_RANGE, PHASES_PER_SAMPLE, TemplateTable, window_ringing
from pintime.locate.template import Template

TABLE_PER_SAMPLE = 128  # g, g′ and Δg are tabulated this finely (linear interpolation ≪ their error)


def draw_shifts_samples(table: TemplateTable, draw: Template, pos: np.ndarray,
                        sign: np.ndarray) -> np.ndarray:
    """How far (samples) the template locator would have moved each edge at ``pos`` (samples, one channel,
    ascending; ``sign`` ±1 its step's sign) had it learned ``draw`` instead of ``table``'s template.

    Edges within JOINT_SAMPLES of each other were fitted together (one window, one template each, offset
    and slope): their shifts solve that joint fit's linearized system. The others were fitted one per
    window, their neighbours' ringing taken out: the pseudo-inverse's timing row on the change of the
    window's model gives theirs.
    """
    base = table.template
    draw_table = TemplateTable.build(draw)
    d_ring = draw_table.ringing.astype(np.float64) - table.ringing
    d_slope = draw_table.ringing_slope.astype(np.float64) - table.ringing_slope
    u_lo = -base.half_samples - 1.0
    u = u_lo + np.arange(int((2 * base.half_samples + 3) * TABLE_PER_SAMPLE) + 1) / TABLE_PER_SAMPLE
    g, dg = base.evaluate(u)
    tables = np.stack([g, dg, draw.evaluate(u)[0] - g])  # g, g′ and Δg from u_lo on
    centre = np.floor(pos).astype(np.int64)
    phase = pos - centre
    amp = np.asarray(sign, dtype=np.float64)
    gap = np.diff(centre)
    new = np.concatenate([[True], gap > JOINT_SAMPLES])  # each cluster's first edge
    first = np.flatnonzero(new)
    size = np.diff(np.append(first, len(pos)))
    shift = np.zeros(len(pos))
    _shift_kernel(table.pinv, d_ring, d_slope, table.ringing_half + 2, tables, u_lo, centre, phase, amp,
                  first, size, shift)
    return shift


@numba.njit(cache=True, nogil=True)
def _lookup(tables, row, u_lo, u):  # pragma: no cover (compiled)
    """Row ``row`` of ``tables`` at ``u``: 0 before it, linear interpolation, then straight on."""
    x = (u - u_lo) * TABLE_PER_SAMPLE
    if x < 0.0:
        return 0.0
    last = tables.shape[1] - 1
    i = min(int(x), last - 1)
    return tables[row, i] + (x - i) * (tables[row, i + 1] - tables[row, i])


@numba.njit(cache=True, nogil=True)
def _shift_kernel(pinv, d_ring, d_slope, stop, tables, u_lo, centre, phase, amp, first, size,
                  shift):  # pragma: no cover (compiled)
    """:func:`draw_shifts_samples` cluster by cluster: a single edge ``−pinv_δ·ΔM / A``, a joint one the
    times of ``−(JᵀJ)⁻¹Jᵀ·ΔM`` with ``J`` the joint fit's columns (amplitudes, times, offset, slope)."""
    half = pinv.shape[2] // 2
    lo_phase = PHASE_RANGE[0]
    for c in range(len(first)):
        f, n = first[c], size[c]
        start = centre[f] - half
        length = int(centre[f + n - 1] - centre[f]) + 2 * half + 1
        change = np.zeros(length)
        window_ringing(d_ring, d_slope, stop, start, f, f + n - 1, centre, phase, amp, change)
        for k in range(f, f + n):
            offset = centre[k] - start + phase[k]
            for m in range(length):
                change[m] += amp[k] * _lookup(tables, 2, u_lo, m - offset)
        if n == 1:
            cell = min(int((phase[f] - lo_phase) * PHASES_PER_SAMPLE), pinv.shape[0] - 1)
            t = 0.0
            for m in range(length):
                t += pinv[cell, 1, m] * change[m]
            shift[f] = -t / amp[f]
            continue
        jac = np.empty((length, 2 * n + 2))  # amplitudes, times, offset, slope
        for j in range(n):
            offset = centre[f + j] - start + phase[f + j]
            for m in range(length):
                jac[m, j] = _lookup(tables, 0, u_lo, m - offset)
                jac[m, n + j] = -amp[f + j] * _lookup(tables, 1, u_lo, m - offset)
        for m in range(length):
            jac[m, 2 * n] = 1.0
            jac[m, 2 * n + 1] = m / (length - 1)
        step = _solve_normal(jac, change)
        for j in range(n):
            shift[f + j] = -step[n + j]


@numba.njit(cache=True, nogil=True)
def _solve_normal(jac, y):  # pragma: no cover (compiled)
    """Least squares ``jac·x ≈ y`` by its normal equations, Gaussian elimination with partial pivoting
    (a few unknowns: LAPACK's call costs more than the work); zeros if they are singular."""
    p = jac.shape[1]
    a = jac.T @ jac
    b = jac.T @ y
    scale = max(np.max(np.abs(np.diag(a))), 1e-300)
    for i in range(p):
        r = i + np.argmax(np.abs(a[i:, i]))
        if abs(a[r, i]) < 1e-12 * scale:
            return np.zeros(p)
        if r != i:
            a[np.array([i, r])] = a[np.array([r, i])]
            b[i], b[r] = b[r], b[i]
        for k in range(i + 1, p):
            factor = a[k, i] / a[i, i]
            a[k, i:] -= factor * a[i, i:]
            b[k] -= factor * b[i]
    x = np.zeros(p)
    for i in range(p - 1, -1, -1):
        x[i] = (b[i] - np.dot(a[i, i + 1:], x[i + 1:])) / a[i, i]
    return x
