"""Template method: edges so close that they share one window, fitted together (docs/design.md §10).

Both edges of a pulse a few samples long (every Table 1 pulse at 44.1–48 kHz) lie in one window: one
template per edge, a common offset and slope, Gauss–Newton on all times and amplitudes at once. Compiled
cluster by cluster, each stopping when its own times settle.
"""

from __future__ import annotations

import numpy as np

from pintime.compiled import kernel
from pintime.locate.template import Template, response_at

JOINT_STEPS = 12  # Gauss–Newton steps of a joint fit (it stops earlier once the times settle)
JOINT_TOLERANCE_SAMPLES = 1e-7  # a joint fit has settled when no time moves by more (≪ the CRLB)
# the shared-magnitude start of a joint fit is tried from the seeds moved by these (the threshold seeds of a
# pulse a few samples long can be more than a sample early or late)
SHARED_SHIFTS_SAMPLES = (0.0, -1.0, 1.0)  # the first: the seeds as they are
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
    clearly smaller: by more than the noise's variance). Without ``explore`` only the fit from the seeds:
    for seeds already fitted (a Gauss–Seidel sweep after the first, which moves them by ≲ 10⁻² sample).

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
    n_edges = tau0.shape[1]
    for c in range(y.shape[0]):
        free_tau, free_gram, free_amp, free_rss = _steps(parts, y[c], tau0[c], False)
        if explore:
            start_tau, _, _, start_rss = _steps(parts, y[c], tau0[c] + shifts[0], True)
            for s in range(1, len(shifts)):
                t, _, _, rss = _steps(parts, y[c], tau0[c] + shifts[s], True)
                if rss < start_rss:
                    start_tau, start_rss = t, rss
            t, gram, a, rss = _steps(parts, y[c], start_tau, False)
            if rss < free_rss - noise_rms ** 2:  # a clearly better minimum
                free_tau, free_gram, free_amp = t, gram, a
        free_cov = _solve(free_gram, np.eye(len(free_gram)))
        for k in range(n_edges):
            tau[c, k] = free_tau[k]
            sigma[c, k] = noise_rms * np.sqrt(free_cov[n_edges + k, n_edges + k])
            amp[c, k] = free_amp[k]


@kernel
def _steps(parts, y, tau0, shared):  # pragma: no cover (compiled)
    """Gauss–Newton steps of one window from ``tau0``, each edge's amplitude free or (``shared``) one
    magnitude for all with the signs of the linear fit at ``tau0``: times, the last step's JᵀJ (rows:
    amplitudes, times, offset and slope; the shared fit's is not used), amplitudes, residual sum of
    squares."""
    n_edges, length = len(tau0), len(y)
    ramp = np.arange(length) / (length - 1.0)
    tau = tau0.copy()
    g, dg = _responses(parts, tau, length)
    # amplitudes, offset and slope at the seeds: linear
    design = np.empty((n_edges + 2, length))
    design[:n_edges] = g
    design[n_edges] = 1.0
    design[n_edges + 1] = ramp
    theta = _solve(*_normal(design, y))
    amp = theta[:n_edges].copy()
    level = theta[n_edges:].copy()
    sign = np.where(amp < 0, -1.0, 1.0)
    if shared:
        amp = sign * np.mean(np.abs(amp))
    n_amp = 1 if shared else n_edges
    jac = np.empty((n_amp + n_edges + 2, length))
    jac[n_amp + n_edges] = 1.0
    jac[n_amp + n_edges + 1] = ramp
    gram = np.zeros((len(jac), len(jac)))
    for _ in range(JOINT_STEPS):
        if shared:
            jac[0] = sign @ g
        else:
            jac[:n_edges] = g
        for k in range(n_edges):
            jac[n_amp + k] = -amp[k] * dg[k]
        gram, rhs = _normal(jac, _residual(y, amp, g, level, ramp))
        step = _solve(gram, rhs)
        if shared:
            amp = amp + sign * step[0]
        else:
            amp = amp + step[:n_edges]
        level = level + step[n_amp + n_edges:]
        largest = 0.0
        for k in range(n_edges):
            move = min(max(step[n_amp + k], -0.5), 0.5)
            tau[k] += move
            largest = max(largest, abs(move))
        g, dg = _responses(parts, tau, length)
        if largest < JOINT_TOLERANCE_SAMPLES:
            break
    resid = _residual(y, amp, g, level, ramp)
    return tau, gram, amp, resid @ resid


@kernel
def _residual(y, amp, g, level, ramp):  # pragma: no cover (compiled)
    """``y − Σₖ amp[k]·g[k] − level[0] − level[1]·ramp``."""
    out = y - level[0] - level[1] * ramp
    for k in range(len(amp)):
        for m in range(len(y)):
            out[m] -= amp[k] * g[k, m]
    return out


@kernel
def _normal(jac, y):  # pragma: no cover (compiled)
    """``J·Jᵀ`` and ``J·y`` of the rows of ``jac`` (loops: a product this small costs more through BLAS)."""
    n = len(jac)
    gram = np.empty((n, n))
    rhs = np.zeros(n)
    for i in range(n):
        for j in range(i + 1):
            total = 0.0
            for m in range(len(y)):
                total += jac[i, m] * jac[j, m]
            gram[i, j] = total
            gram[j, i] = total
        for m in range(len(y)):
            rhs[i] += jac[i, m] * y[m]
    return gram, rhs


@kernel
def _responses(parts, tau, length):  # pragma: no cover (compiled)
    """Each edge's ``g`` and ``g′`` at the window's samples: (edges, length) each."""
    coef, half, knot, origin, carrier, ripple = parts
    g = np.empty((len(tau), length))
    dg = np.empty((len(tau), length))
    for k in range(len(tau)):
        for m in range(length):
            g[k, m], dg[k, m] = response_at(coef, half, knot, origin, carrier, ripple, m - tau[k])
    return g, dg


@kernel
def _solve(gram, rhs):  # pragma: no cover (compiled)
    """``gram⁻¹·rhs`` (``rhs`` a vector or columns) for the symmetric ``gram = JᵀJ``: by Cholesky, or where
    it is singular or nearly so (two detections of one step) by its pseudo-inverse (:func:`_pinv`)."""
    n = len(gram)
    low = np.zeros_like(gram)
    floor = PIVOT_FLOOR * np.max(np.diag(gram))
    for j in range(n):
        d = gram[j, j] - low[j, :j] @ low[j, :j]
        if d <= floor:
            return _pinv(gram) @ rhs
        low[j, j] = np.sqrt(d)
        for i in range(j + 1, n):
            low[i, j] = (gram[i, j] - low[i, :j] @ low[j, :j]) / low[j, j]
    x = rhs.copy()
    for i in range(n):  # L·z = rhs
        for k in range(i):
            x[i] -= low[i, k] * x[k]
        x[i] /= low[i, i]
    for i in range(n - 1, -1, -1):  # Lᵀ·x = z
        for k in range(i + 1, n):
            x[i] -= low[k, i] * x[k]
        x[i] /= low[i, i]
    return x


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
