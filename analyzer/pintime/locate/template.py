"""The edge template: the capture's response to one pin step, a cubic B-spline learned from the capture.

``g(u)`` is the response ``u`` samples after the edge: exactly 0 before the support ``[−U, U]``, a uniform
cubic B-spline inside it, and a straight line continuing it after ``U`` (the AC-coupling droop, which goes
on far longer than the ringing). Its scale and time origin are conventions, set once learning is done by
:meth:`Template.normalized`: ``g(U) = 1`` and ``g(0) = 1/2``. Any fixed origin serves, since only
differences between edge times matter, and rising and falling edges share it, so their physical offset
is kept. Nothing about the sound card is assumed
beyond linearity and a finite anti-alias response: the synthesizer's model is never used (docs/design.md §10).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from scipy import linalg, sparse

N_ZERO = 3  # coefficients forced to 0 at the left end: the response is exactly 0 before the support
ENV_HALF, ENV_KNOT = 6.0, 0.25  # support and knots of the ripple envelopes (where the ADC filter is large)
ENV_COEFS = int(round(2 * ENV_HALF / ENV_KNOT)) + 3
ENERGY_PHASES = 256  # the Cramér–Rao energy is tabulated over the sub-sample phase (smooth, periodic)


def _weights(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Uniform cubic B-spline weights of the 4 active coefficients and their derivatives (per knot)."""
    t2, t3 = t * t, t * t * t
    s = 1.0 - t
    w = np.stack([s * s * s, 3 * t3 - 6 * t2 + 4, -3 * t3 + 3 * t2 + 3 * t + 1, t3], axis=-1) / 6.0
    dw = np.stack([-s * s, 3 * t2 - 4 * t, -3 * t2 + 2 * t + 1, t2], axis=-1) / 2.0
    return w, dw


def _envelope_basis(u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cubic B-spline basis of the ripple envelopes on ``[−ENV_HALF, ENV_HALF]`` (zero outside)."""
    n_int = ENV_COEFS - 3
    x = np.clip((u + ENV_HALF) / ENV_KNOT, 0.0, n_int)
    j = np.minimum(x.astype(np.int64), n_int - 1)
    w, dw = _weights(x - j)
    return j, w, dw / ENV_KNOT


@dataclass(frozen=True)
class Template:
    """Cubic B-spline response over ``[-half_samples, half_samples]``, knots every ``knot_samples``."""

    half_samples: float
    knot_samples: float
    coef: np.ndarray  # N_ZERO zeros, then the free coefficients
    origin: float = 0.0  # u = 0 lies this far (samples) from the middle of the spline's support
    carrier_per_sample: float = 0.0  # M: modulator-rate ripple cos/sin(2πMu) (0: none)
    envelope: np.ndarray | None = None  # (2, n) B-spline coefficients of the ripple's cos and sin envelopes

    @classmethod
    def initial(cls, half_samples: float, knot_samples: float) -> Template:
        """A flat step one sample wide: only a starting point for learning."""
        n_int = int(round(2 * half_samples / knot_samples))
        u = -half_samples + (np.arange(n_int + 3) - 1.0) * knot_samples  # coefficient j peaks at knot j-1
        coef = np.clip(0.5 + u / 2.0, 0.0, 1.0)
        coef[:N_ZERO] = 0.0
        return cls(half_samples, knot_samples, coef)

    def basis(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each ``u``: first active coefficient, weights of the 4 active ones for ``g`` and for ``g′``.

        After the support the weights are those of the straight line ``g(U) + g′(U)·(u − U)``.
        """
        n_int = len(self.coef) - 3
        u = u + self.origin
        x = np.clip((u + self.half_samples) / self.knot_samples, 0.0, n_int)
        i = np.minimum(np.floor(x).astype(np.int64), n_int - 1)
        w, dw = _weights(x - i)
        dw = dw / self.knot_samples
        beyond = np.maximum(u - self.half_samples, 0.0)
        return i, w + beyond[..., None] * dw, dw

    def evaluate(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``g(u)`` and ``g′(u)`` (per sample) at ``u`` samples from the edge."""
        n_int = len(self.coef) - 3
        u = np.asarray(u, dtype=np.float64) + self.origin
        x = np.clip((u + self.half_samples) / self.knot_samples, 0.0, n_int)
        i = np.minimum(x.astype(np.int64), n_int - 1)
        t = x - i
        c0, c1, c2, c3 = (self.coef[i + k] for k in range(4))
        # cubic B-spline in power form around the knot: value and derivative (same weights as _weights)
        a0 = (c0 + 4 * c1 + c2) / 6
        a1 = (c2 - c0) / 2
        a2 = (c0 - 2 * c1 + c2) / 2
        a3 = (c3 - c0 + 3 * (c1 - c2)) / 6
        g = a0 + t * (a1 + t * (a2 + t * a3))
        dg = (a1 + t * (2 * a2 + t * 3 * a3)) / self.knot_samples
        g = g + np.maximum(u - self.half_samples, 0.0) * dg
        if self.envelope is not None:
            # the envelopes are 0 beyond their support (refit holds their end coefficients at 0)
            inside = np.abs(u) < ENV_HALF
            u = u[inside]
            j, w, dw = _envelope_basis(u)
            omega = 2 * np.pi * self.carrier_per_sample
            cos, sin = np.cos(omega * u), np.sin(omega * u)
            env = [(np.sum(w * e[j[..., None] + np.arange(4)], axis=-1),
                    np.sum(dw * e[j[..., None] + np.arange(4)], axis=-1)) for e in self.envelope]
            (ec, dec), (es, des) = env
            g[inside] = g[inside] + ec * cos + es * sin
            dg[inside] = dg[inside] + dec * cos + des * sin + omega * (es * cos - ec * sin)
        return g, dg

    def refit(self, u: np.ndarray, gain: np.ndarray, target: np.ndarray,
              nuisance: np.ndarray | None = None, carrier_per_sample: float | None = None) -> Template:
        """The template minimising ``Σ (target − gain·g(u) − baseline)²``.

        ``u``, ``gain`` and ``target`` are (windows, L). ``nuisance`` (L, p), orthonormal columns, spans a
        baseline that each window may add freely (offset, slope, curvature); it is projected out, which
        solves for the template and every window's baseline at once. Linear in the coefficients: the
        normal equations are ``DᵀD − (QᵀD)ᵀ(QᵀD)`` with ``D`` the sparse design (4 basis functions per
        sample, 12 with a ripple) and ``QᵀD`` its baseline part per window. ``carrier_per_sample``
        (default: this template's) adds the modulator ripple, cos/sin(2πMu) with spline envelopes.
        """
        carrier = self.carrier_per_sample if carrier_per_sample is None else carrier_per_sample
        n_win, length = u.shape
        flat_u, flat_gain = u.ravel() + self.origin, gain.ravel()
        i, w, _ = self.basis(u.ravel())
        n_smooth = len(self.coef)
        blocks = [((w * flat_gain[:, None]), i)]
        if carrier:
            j, we, _ = _envelope_basis(flat_u)
            phase = 2 * np.pi * carrier * flat_u
            blocks += [(we * (flat_gain * np.cos(phase))[:, None], j + n_smooth),
                       (we * (flat_gain * np.sin(phase))[:, None], j + n_smooth + ENV_COEFS)]
        n_all = n_smooth + (2 * ENV_COEFS if carrier else 0)
        vals = np.concatenate([b[0] for b in blocks], axis=1).ravel()
        cols = np.concatenate([b[1][:, None] + np.arange(4) for b in blocks], axis=1).ravel()
        rows = np.repeat(np.arange(len(i)), 4 * len(blocks))
        free = np.ones(n_all, dtype=bool)
        free[:N_ZERO] = False
        if carrier:  # envelopes vanish at both ends of their support
            for start in (n_smooth, n_smooth + ENV_COEFS):
                free[start:start + N_ZERO] = free[start + ENV_COEFS - N_ZERO:start + ENV_COEFS] = False
        design = sparse.csr_matrix((vals, (rows, cols)), shape=(len(i), n_all))[:, free].tocsr()
        normal = (design.T @ design).toarray()
        if nuisance is not None:
            # QᵀD: row (window, baseline column). A window's samples are whole samples apart, so it reaches
            # only the coefficients of its sub-sample phase (4 of every 1/knot_samples), and windows of one
            # phase reach the same ones: (QᵀD)ᵀ(QᵀD) is summed group by group of windows that reach the same
            # coefficients, on just those (~(4·knot_samples)² of the dense product's cost)
            p = nuisance.shape[1]
            n_free = design.shape[1]
            nz = free[cols]
            col = (np.cumsum(free) - 1)[cols[nz]]
            window, sample = np.divmod(rows[nz], length)
            at = (window[:, None] * p + np.arange(p)) * n_free + col[:, None]
            qd = np.bincount(at.ravel(), (vals[nz, None] * nuisance[sample]).ravel(),
                             minlength=n_win * p * n_free).reshape(n_win, p, n_free)
            reached = np.zeros((n_win, n_free), dtype=bool)
            reached[window, col] = True
            groups: dict[bytes, list[int]] = {}
            for win, columns in enumerate(np.packbits(reached, axis=1)):
                groups.setdefault(columns.tobytes(), []).append(win)
            for windows in groups.values():
                c = np.flatnonzero(reached[windows[0]])
                part = qd[windows][:, :, c].reshape(-1, len(c))
                _subtract_at(normal, c, part.T @ part)
            target = target - (target @ nuisance) @ nuisance.T
        sol = np.zeros(n_all)
        # the normal equations are symmetric positive definite: Cholesky
        sol[free] = linalg.cho_solve(linalg.cho_factor(normal), design.T @ target.ravel())
        envelope = sol[n_smooth:].reshape(2, ENV_COEFS) if carrier else None
        return Template(self.half_samples, self.knot_samples, sol[:n_smooth], self.origin, carrier, envelope)

    def normalized(self) -> Template:
        """The same shape scaled to ``g(U) = 1`` and with its origin moved to where ``g = 1/2``."""
        top = self.evaluate(np.array([self.half_samples]))[0][0]
        envelope = None if self.envelope is None else self.envelope / top
        scaled = Template(self.half_samples, self.knot_samples, self.coef / top, self.origin,
                          self.carrier_per_sample, envelope)
        u = np.linspace(-self.half_samples, self.half_samples, int(64 * self.half_samples) + 1)
        g, _ = scaled.evaluate(u)
        k = int(np.argmin(np.abs(g - 0.5)))
        u0 = u[k]
        for _ in range(4):  # Newton on g(u0) = 1/2 from the nearest grid point
            val, slope = scaled.evaluate(np.array([u0]))
            u0 -= (val[0] - 0.5) / slope[0]
        return Template(self.half_samples, self.knot_samples, scaled.coef, self.origin + u0,
                        self.carrier_per_sample, scaled.envelope)

    def energy(self, frac: np.ndarray) -> np.ndarray:
        """``Σₙ g′(n − φ)²`` over the support for edges at sub-sample phases ``frac`` (Cramér–Rao bound)."""
        grid = np.linspace(0.0, 1.0, ENERGY_PHASES + 1)
        n = np.arange(-np.ceil(self.half_samples) - 2, np.ceil(self.half_samples) + 2)
        _, d = self.evaluate(n[None, :] - grid[:, None])
        energy = np.sum(d * d, axis=1)
        # linear interpolation on the uniform grid (np.interp's search per value is 5x slower)
        x = (np.asarray(frac) % 1.0) * ENERGY_PHASES
        i = np.minimum(x.astype(np.int64), ENERGY_PHASES - 1)
        return energy[i] + (x - i) * (energy[i + 1] - energy[i])


@numba.njit(cache=True, nogil=True)
def _subtract_at(normal, c, gram):  # pragma: no cover (compiled)
    """``normal[c[i], c[j]] −= gram[i, j]`` for all ``i``, ``j`` (numpy's 2-D fancy index is 10× slower)."""
    for i in range(len(c)):
        for j in range(len(c)):
            normal[c[i], c[j]] -= gram[i, j]
