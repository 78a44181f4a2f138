"""Template method: edges so close that they share one window, fitted together (docs/design.md §10).

Both edges of a pulse a few samples long (every Table 1 pulse at 44.1–48 kHz) lie in one window: one
template per edge, a common offset and slope, Gauss–Newton on all times and amplitudes at once. Compiled
cluster by cluster, each stopping when its own times settle.
"""

from __future__ import annotations

import numpy as np

from pintime.compiled import kernel
from pintime.locate.shape.template import Template, response_at

JOINT_STEPS = 12  # Gauss–Newton steps of a joint fit (it stops earlier once the times settle)
JOINT_TOLERANCE_SAMPLES = 1e-7  # a joint fit has settled when no time moves by more (≪ the CRLB)
# the shared-magnitude start of a joint fit is tried from the seeds moved by these (the threshold seeds of a
# pulse a few samples long can be more than a sample early or late)
SHARED_SHIFTS_SAMPLES = (0.0, -1.0, 1.0)  # the first: the seeds as they are
# a fit from the seeds is explored from the other starts when its residual sum of squares exceeds the noise's
# expectation by this many of its standard deviations, or a step's magnitude differs from their mean by this
# many of its sigmas (the steps of one pin are equal; a wrong minimum trades magnitude against time)
SUSPECT_Z = 5.0
PINV_RCOND = 1e-15  # eigenvalues below this fraction of the largest are dropped (numpy's pinv default)
PIVOT_FLOOR = 1e-10  # a Cholesky pivot below this fraction of the largest diagonal: near singular, by eigh


def fit_joint(template: Template, y: np.ndarray, tau0: np.ndarray, noise_rms: float,
              explore: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gauss–Newton fit of K edges sharing one window: ``y[m] = Σₖ Aₖ·g(m − τₖ) + a + b·m/(L−1)``.

    Edges a few samples apart give the fit local minima: from poor seeds, two steps of a pulse may settle
    a sample or two apart with amplitudes that make up for it (a train of 3-sample pulses, program
    ``kernel``'s run-queue insertions). So each window is also fitted from a start where every edge's step
    has one magnitude ``A`` (edges of one pin do: ``y = A·Σₖ sₖ·g(m − τₖ) + …``, signs ``sₖ`` from the
    seeds), then freed; of the two fits the one with the smaller residual is kept (the freed one only if
    clearly smaller: by more than the noise's variance). Only where the fit from the seeds looks like such
    a minimum, though (:func:`_suspect`: a residual beyond the noise's, or step magnitudes that differ
    beyond their sigmas): elsewhere the other starts settle where it did (none of 8382 Table 1 windows at
    48 kHz moved) at 5× its cost. So ``explore`` once the windows have lost their neighbours' ringing (a
    window with it fits no better than the ringing's size); without, only the fit from the seeds.

    Parameters
    ----------
    y : (clusters, L) windows
    tau0 : (clusters, K) seeds of the edge times in window samples

    Returns
    -------
    Times ``τ`` (samples from the window start), their 1-sigma from the fit's covariance with the
    capture's noise ``noise_rms``, and amplitudes, each (clusters, K).
    """
    tau = np.empty(tau0.shape)
    sigma = np.empty(tau0.shape)
    amp = np.empty(tau0.shape)
    _joint_kernel(*template.parts, np.ascontiguousarray(y, dtype=np.float64),
                  np.ascontiguousarray(tau0, dtype=np.float64), np.asarray(SHARED_SHIFTS_SAMPLES),
                  float(noise_rms), explore, tau, sigma, amp)
    return tau, sigma, amp


@kernel
def _joint_kernel(coef, half, knot, origin, carrier, ripple, y, tau0, shifts, noise_rms, explore,
                  tau, sigma, amp):  # pragma: no cover (compiled)
    """:func:`fit_joint`, window by window, into ``tau``, ``sigma`` and ``amp``."""
    parts = (coef, half, knot, origin, carrier, ripple)
    n_edges, length = tau0.shape[1], y.shape[1]
    n_free = 2 * n_edges + 2
    work = (np.empty((n_edges, length)), np.empty((n_edges, length)), np.empty((n_free, length)),
            np.empty((n_free, n_free)), np.empty((n_free, n_free)), np.empty(n_free), np.empty(length),
            np.arange(length) / (length - 1.0))
    best_tau, best_amp, best_gram = np.empty(n_edges), np.empty(n_edges), np.empty((n_free, n_free))
    run_tau, run_amp = np.empty(n_edges), np.empty(n_edges)
    seed, start, cov = np.empty(n_edges), np.empty(n_edges), np.empty((n_free, n_free))
    for c in range(y.shape[0]):
        rss = _steps(parts, y[c], tau0[c], False, work, best_tau, best_amp)
        best_gram[:] = work[3]
        inverse_symmetric(best_gram, work[4], cov)
        if explore and _suspect(rss, cov, best_amp, noise_rms, length - n_free):
            start_rss = np.inf
            for s in range(len(shifts)):
                seed[:] = tau0[c] + shifts[s]
                shared_rss = _steps(parts, y[c], seed, True, work, run_tau, run_amp)
                if shared_rss < start_rss:
                    start[:], start_rss = run_tau, shared_rss
            freed_rss = _steps(parts, y[c], start, False, work, run_tau, run_amp)
            if freed_rss < rss - noise_rms ** 2:  # a clearly better minimum
                best_tau[:], best_amp[:], best_gram[:] = run_tau, run_amp, work[3]
                inverse_symmetric(best_gram, work[4], cov)
        for k in range(n_edges):
            tau[c, k] = best_tau[k]
            sigma[c, k] = noise_rms * np.sqrt(cov[n_edges + k, n_edges + k])
            amp[c, k] = best_amp[k]


@kernel
def _suspect(rss, cov, amp, noise_rms, dof):  # pragma: no cover (compiled)
    """A fit (residual sum of squares ``rss``, covariance ``cov``/σ², amplitudes ``amp``) that may have
    settled in a local minimum (:func:`fit_joint`): SUSPECT_Z beyond the noise's χ² with ``dof`` degrees
    of freedom, or a step magnitude that far from their mean."""
    var = noise_rms ** 2
    if rss > var * (dof + SUSPECT_Z * np.sqrt(2.0 * max(dof, 1))):
        return True
    magnitude = np.mean(np.abs(amp))
    for k in range(len(amp)):
        if abs(abs(amp[k]) - magnitude) > SUSPECT_Z * noise_rms * np.sqrt(cov[k, k]):
            return True
    return False


@kernel
def _steps(parts, y, tau0, shared, work, tau, amp):  # pragma: no cover (compiled)
    """Gauss–Newton steps of one window from ``tau0`` into ``tau`` and ``amp``, each edge's amplitude free
    or (``shared``) one magnitude for all with the signs of the linear fit at ``tau0``; the residual sum
    of squares is returned, the last step's JᵀJ left in ``work[3]`` (rows: amplitudes, times, offset and
    slope; the shared fit's is not used). ``work``: (g, g′, Jacobian, JᵀJ, Cholesky factor, right-hand
    side, residual, ramp), sized for the free fit; nothing is allocated per step."""
    g, dg, jac_all, gram_all, low_all, rhs_all, resid, ramp = work
    n_edges = len(tau0)
    tau[:] = tau0
    _responses(parts, tau, g, dg)
    # amplitudes, offset and slope at the seeds: linear
    n_lin = n_edges + 2
    jac, gram, low, rhs = jac_all[:n_lin], gram_all[:n_lin, :n_lin], low_all[:n_lin, :n_lin], rhs_all[:n_lin]
    jac[:n_edges] = g
    jac[n_edges] = 1.0
    jac[n_edges + 1] = ramp
    normal_equations(jac, y, gram, rhs)
    solve_symmetric(gram, rhs, low)
    level0, level1 = rhs[n_edges], rhs[n_edges + 1]
    magnitude = 0.0
    for k in range(n_edges):
        amp[k] = rhs[k]
        magnitude += abs(rhs[k]) / n_edges
    sign = np.sign(amp) + (amp == 0)  # the signs of the linear fit (+ for 0)
    if shared:
        amp[:] = sign * magnitude
    n_amp = 1 if shared else n_edges
    n_par = n_amp + n_edges + 2
    jac, gram, low, rhs = jac_all[:n_par], gram_all[:n_par, :n_par], low_all[:n_par, :n_par], rhs_all[:n_par]
    jac[n_par - 2] = 1.0
    jac[n_par - 1] = ramp
    for _ in range(JOINT_STEPS):
        if shared:
            jac[0] = 0.0
            for k in range(n_edges):
                jac[0] += sign[k] * g[k]
        else:
            jac[:n_edges] = g
        for k in range(n_edges):
            jac[n_amp + k] = -amp[k] * dg[k]
        _residual(y, amp, g, level0, level1, ramp, resid)
        normal_equations(jac, resid, gram, rhs)
        solve_symmetric(gram, rhs, low)
        for k in range(n_edges):
            amp[k] += sign[k] * rhs[0] if shared else rhs[k]
        level0 += rhs[n_par - 2]
        level1 += rhs[n_par - 1]
        largest = 0.0
        for k in range(n_edges):
            move = min(max(rhs[n_amp + k], -0.5), 0.5)
            tau[k] += move
            largest = max(largest, abs(move))
        _responses(parts, tau, g, dg)
        if largest < JOINT_TOLERANCE_SAMPLES:
            break
    _residual(y, amp, g, level0, level1, ramp, resid)  # gram: still the last step's JᵀJ
    return resid @ resid


@kernel
def _residual(y, amp, g, level0, level1, ramp, out):  # pragma: no cover (compiled)
    """``out = y − Σₖ amp[k]·g[k] − level0 − level1·ramp``."""
    for m in range(len(y)):
        total = y[m] - level0 - level1 * ramp[m]
        for k in range(len(amp)):
            total -= amp[k] * g[k, m]
        out[m] = total


@kernel
def normal_equations(jac, y, gram, rhs):  # pragma: no cover (compiled)
    """``gram = J·Jᵀ`` and ``rhs = J·y`` of the rows of ``jac`` (loops: so small a product costs more
    through BLAS)."""
    n = len(jac)
    for i in range(n):
        for j in range(i + 1):
            total = 0.0
            for m in range(len(y)):
                total += jac[i, m] * jac[j, m]
            gram[i, j] = total
            gram[j, i] = total
        total = 0.0
        for m in range(len(y)):
            total += jac[i, m] * y[m]
        rhs[i] = total


@kernel
def _responses(parts, tau, g, dg):  # pragma: no cover (compiled)
    """Each edge's ``g`` and ``g′`` at the window's samples into ``g`` and ``dg`` (edges, length)."""
    coef, half, knot, origin, carrier, ripple = parts
    for k in range(len(tau)):
        for m in range(g.shape[1]):
            g[k, m], dg[k, m] = response_at(coef, half, knot, origin, carrier, ripple, m - tau[k])


@kernel
def solve_symmetric(gram, rhs, low):  # pragma: no cover (compiled)
    """``rhs ← gram⁻¹·rhs`` (a vector; also returned) for the symmetric ``gram = JᵀJ``: by Cholesky
    (factor into ``low``), or where it is singular or nearly so (two detections of one step) by its
    pseudo-inverse (:func:`_pinv`)."""
    if not _factor(gram, low):
        rhs[:] = _pinv(gram) @ rhs.copy()
        return rhs
    _substitute(low, rhs)
    return rhs


@kernel
def inverse_symmetric(gram, low, out):  # pragma: no cover (compiled)
    """``gram⁻¹`` into ``out`` (also returned), as :func:`solve_symmetric` solves, column by column (loops:
    a row operation on all columns at once costs a temporary array each, 8× the time)."""
    if not _factor(gram, low):
        out[:] = _pinv(gram)
        return out
    out[:] = 0.0
    for c in range(len(gram)):
        out[c, c] = 1.0
        _substitute(low, out[:, c])
    return out


@kernel
def _factor(gram, low):  # pragma: no cover (compiled)
    """The Cholesky factor of ``gram`` into ``low`` (lower); False where a pivot falls below PIVOT_FLOOR
    of the largest diagonal (near singular)."""
    n = len(gram)
    floor = 0.0
    for j in range(n):
        floor = max(floor, PIVOT_FLOOR * gram[j, j])
    for j in range(n):
        d = gram[j, j]
        for k in range(j):
            d -= low[j, k] * low[j, k]
        if d <= floor:
            return False
        low[j, j] = np.sqrt(d)
        for i in range(j + 1, n):
            total = gram[i, j]
            for k in range(j):
                total -= low[i, k] * low[j, k]
            low[i, j] = total / low[j, j]
    return True


@kernel
def _substitute(low, b):  # pragma: no cover (compiled)
    """``b ← (L·Lᵀ)⁻¹·b`` in place, ``L`` the Cholesky factor ``low``."""
    n = len(b)
    for i in range(n):  # L·z = b
        for k in range(i):
            b[i] -= low[i, k] * b[k]
        b[i] /= low[i, i]
    for i in range(n - 1, -1, -1):  # Lᵀ·x = z
        for k in range(i + 1, n):
            b[i] -= low[k, i] * b[k]
        b[i] /= low[i, i]


@kernel
def _pinv(gram):  # pragma: no cover (compiled)
    """The pseudo-inverse of the symmetric ``gram``: by its eigenvectors, dropping eigenvalues below
    PINV_RCOND of the largest (as numpy's ``pinv(hermitian=True)``)."""
    values, vectors = np.linalg.eigh(gram)
    cutoff = PINV_RCOND * np.max(np.abs(values))
    inverse = np.zeros_like(gram)
    for i in range(len(values)):
        if abs(values[i]) > cutoff:
            inverse += np.outer(vectors[:, i], vectors[:, i]) / values[i]
    return inverse
