"""The edge template: the capture's response to one pin step, a cubic B-spline learned from the capture.

``g(u)`` is the response ``u`` samples after the edge: exactly 0 before the support ``[−U, U]``, a uniform
cubic B-spline inside it, and a straight line continuing it after ``U`` (the AC-coupling droop, which goes
on far longer than the ringing). Its scale and time origin are conventions, set once learning is done by
:meth:`Template.normalized`: ``g(U) = 1`` and ``g(0) = 1/2``. Any fixed origin serves, since only
differences between edge times matter, and rising and falling edges share it, so their physical offset
is kept. Nothing about the sound card is assumed
beyond linearity and a finite anti-alias response: the synthesizer's model is never used (DESIGN.md §5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

N_ZERO = 3  # coefficients forced to 0 at the left end: the response is exactly 0 before the support
ENERGY_PHASES = 256  # the Cramér–Rao energy is tabulated over the sub-sample phase (smooth, periodic)


def _weights(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Uniform cubic B-spline weights of the 4 active coefficients and their derivatives (per knot)."""
    t2, t3 = t * t, t * t * t
    s = 1.0 - t
    w = np.stack([s * s * s, 3 * t3 - 6 * t2 + 4, -3 * t3 + 3 * t2 + 3 * t + 1, t3], axis=-1) / 6.0
    dw = np.stack([-s * s, 3 * t2 - 4 * t, -3 * t2 + 2 * t + 1, t2], axis=-1) / 2.0
    return w, dw


@dataclass(frozen=True)
class Template:
    """Cubic B-spline response over ``[-half_samples, half_samples]``, knots every ``knot_samples``."""

    half_samples: float
    knot_samples: float
    coef: np.ndarray  # N_ZERO zeros, then the free coefficients
    origin: float = 0.0  # u = 0 lies this far (samples) from the middle of the spline's support

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
        return g + np.maximum(u - self.half_samples, 0.0) * dg, dg

    def refit(self, u: np.ndarray, gain: np.ndarray, target: np.ndarray,
              nuisance: np.ndarray | None = None) -> Template:
        """The template minimising ``Σ (target − gain·g(u) − baseline)²``.

        ``u``, ``gain`` and ``target`` are (windows, L). ``nuisance`` (L, p), orthonormal columns, spans a
        baseline that each window may add freely (offset, slope, curvature); it is projected out, which
        solves for the template and every window's baseline at once. Linear in the coefficients: the
        normal equations are ``DᵀD − (QᵀD)ᵀ(QᵀD)`` with ``D`` the sparse design (4 basis functions per
        sample) and ``QᵀD`` its baseline part per window.
        """
        n_win, length = u.shape
        i, w, _ = self.basis(u.ravel())
        rows = np.repeat(np.arange(len(i)), 4)
        cols = (i[:, None] + np.arange(4)).ravel()
        design = sparse.csr_matrix(((w * gain.ravel()[:, None]).ravel(), (rows, cols)),
                                   shape=(len(i), len(self.coef)))[:, N_ZERO:].tocsr()
        normal = (design.T @ design).toarray()
        if nuisance is not None:
            p = nuisance.shape[1]
            q_rows = np.repeat(np.arange(n_win * p), length)
            q_cols = (np.arange(n_win)[:, None, None] * length + np.arange(length)[None, None, :])
            q_cols = np.broadcast_to(q_cols, (n_win, p, length)).ravel()
            q_vals = np.broadcast_to(nuisance.T[None], (n_win, p, length)).ravel()
            q_block = sparse.csr_matrix((q_vals, (q_rows, q_cols)), shape=(n_win * p, n_win * length))
            qd = (q_block @ design).toarray()
            normal -= qd.T @ qd
            target = target - (target @ nuisance) @ nuisance.T
        coef = np.zeros(len(self.coef))
        coef[N_ZERO:] = np.linalg.solve(normal, design.T @ target.ravel())
        return Template(self.half_samples, self.knot_samples, coef, self.origin)

    def normalized(self) -> Template:
        """The same shape scaled to ``g(U) = 1`` and with its origin moved to where ``g = 1/2``."""
        top = self.evaluate(np.array([self.half_samples]))[0][0]
        scaled = Template(self.half_samples, self.knot_samples, self.coef / top, self.origin)
        u = np.linspace(-self.half_samples, self.half_samples, int(64 * self.half_samples) + 1)
        g, _ = scaled.evaluate(u)
        k = int(np.argmin(np.abs(g - 0.5)))
        u0 = u[k]
        for _ in range(4):  # Newton on g(u0) = 1/2 from the nearest grid point
            val, slope = scaled.evaluate(np.array([u0]))
            u0 -= (val[0] - 0.5) / slope[0]
        return Template(self.half_samples, self.knot_samples, scaled.coef, self.origin + u0)

    def energy(self, frac: np.ndarray) -> np.ndarray:
        """``Σₙ g′(n − φ)²`` over the support for edges at sub-sample phases ``frac`` (Cramér–Rao bound)."""
        grid = np.linspace(0.0, 1.0, ENERGY_PHASES + 1)
        n = np.arange(-np.ceil(self.half_samples) - 2, np.ceil(self.half_samples) + 2)
        _, d = self.evaluate(n[None, :] - grid[:, None])
        return np.interp(np.asarray(frac) % 1.0, grid, np.sum(d * d, axis=1))
