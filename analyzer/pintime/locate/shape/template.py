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

from dataclasses import dataclass, replace

import numpy as np
from scipy import linalg

from pintime.compiled import kernel

N_ZERO = 3  # coefficients forced to 0 at the left end: the response is exactly 0 before the support
# modulator ripple: harmonics k·M of the modulator rate, each with envelopes S′ and S″ (see Template)
RIPPLE_HARMONICS = 4
RIPPLE_TERMS = 4  # per harmonic: S′·cos, S′·sin, S″·cos, S″·sin
ENERGY_PHASES = 256  # the Cramér–Rao energy is tabulated over the sub-sample phase (smooth, periodic)
SETTLED_SAMPLES = 4.0  # the support's last samples, where only a straight line (level, droop) is left


def bspline_weights(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Uniform cubic B-spline weights of the 4 active coefficients and their derivatives (per knot)."""
    t2, t3 = t * t, t * t * t
    s = 1.0 - t
    w = np.stack([s * s * s, 3 * t3 - 6 * t2 + 4, -3 * t3 + 3 * t2 + 3 * t + 1, t3], axis=-1) / 6.0
    dw = np.stack([-s * s, 3 * t2 - 4 * t, -3 * t2 + 2 * t + 1, t2], axis=-1) / 2.0
    return w, dw


def covered_knots(phase: np.ndarray, knots: tuple[float, ...], per_knot: int) -> list[float]:
    """Of the knot spacings ``knots`` (samples, finest first), those whose every interval of sub-sample
    phase holds ``per_knot`` of the edges at ``phase`` (taken modulo 1; NaN ones left out): the ones the
    edges determine."""
    phase = np.mod(phase[np.isfinite(phase)], 1.0)  # a window whose edge was not found has none
    return [knot for knot in knots
            if np.bincount(np.minimum((phase / knot).astype(np.int64), round(1 / knot) - 1),
                           minlength=round(1 / knot)).min() >= per_knot]


@dataclass(frozen=True)
class Template:
    """Cubic B-spline response ``S`` over ``[-half_samples, half_samples]`` about ``lead_samples`` after the
    edge, knots every ``knot_samples``, plus the ripple of a delta-sigma modulator's grid if the capture
    shows one. A minimum-phase decimation filter rings only after its edge, and for longer than
    ``half_samples``: its support is placed after the edge
    (:func:`pintime.locate.shape.traincheck.response_lead`).

    A delta-sigma ADC samples the analog step at M·fs and its decimation filter ``h`` averages those
    samples. Summing over the modulator's instants (Poisson summation), the response is the smooth
    ``S`` (``h`` after the analog front end) plus, per harmonic k of M, ``h(u)·e^{2πikMu}`` through the
    front end. ``h`` varies slowly against 1/(kM) sample, so integrating by parts that term is ``S′(u)``
    times a sinusoid of complex amplitude (the front end's response at kM·fs over 2πikM) plus a term in
    ``S″`` of relative size 1/(2πkM), over the whole support where ``h`` rings:
    ``Σₖ [S′·(aₖ cos + bₖ sin) + S″·(cₖ cos + dₖ sin)](2πkMu)``, ``ripple[k−1] = (aₖ, bₖ, cₖ, dₖ)``.
    Only linearity, a modulator grid and a front end smooth at kM·fs are assumed, not their values.
    """

    half_samples: float
    knot_samples: float
    coef: np.ndarray  # N_ZERO zeros, then the free coefficients
    origin: float = 0.0  # u = 0 lies this far (samples) from the middle of the spline's support
    carrier_per_sample: float = 0.0  # M: the modulator's rate per sample (0: no ripple)
    ripple: np.ndarray | None = None  # (RIPPLE_HARMONICS, RIPPLE_TERMS): (a, b, c, d) of each harmonic
    lead_samples: int = 0  # the support's middle lies about this far after the edge (-origin, rounded)
    # every edge's σ is this many times its fit's, and why: a dense signal's shape whose fit and centroid
    # disagree (pintime.locate.shape.dense), a blind one whose error follows the phase (…shape.phasebias)
    sigma_scale: float = 1.0
    sigma_why: str = ""

    @classmethod
    def initial(cls, half_samples: float, knot_samples: float, lead_samples: int = 0) -> Template:
        """A flat step one sample wide, its support centred ``lead_samples`` after it: only a starting point
        for learning."""
        n_int = int(round(2 * half_samples / knot_samples))
        u = -half_samples + (np.arange(n_int + 3) - 1.0) * knot_samples  # coefficient j peaks at knot j-1
        coef = np.clip(0.5 + (u + lead_samples) / 2.0, 0.0, 1.0)
        coef[:N_ZERO] = 0.0
        return cls(half_samples, knot_samples, coef, float(-lead_samples), lead_samples=lead_samples)

    @property
    def support_end(self) -> float:
        """Where the spline's support ends, in samples after the edge (nominally: the origin's fraction of a
        sample aside)."""
        return self.half_samples + self.lead_samples

    def basis(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each ``u``: first active coefficient, weights of the 4 active ones for ``g`` and for ``g′``.

        After the support the weights are those of the straight line ``g(U) + g′(U)·(u − U)``.
        """
        n_int = len(self.coef) - 3
        u = u + self.origin
        x = np.clip((u + self.half_samples) / self.knot_samples, 0.0, n_int)
        i = np.minimum(np.floor(x).astype(np.int64), n_int - 1)
        w, dw = bspline_weights(x - i)
        dw = dw / self.knot_samples
        beyond = np.maximum(u - self.half_samples, 0.0)
        return i, w + beyond[..., None] * dw, dw

    def smooth(self, x: np.ndarray) -> tuple[np.ndarray, ...]:
        """``S`` and its first three derivatives (per sample) at ``x`` samples from the support's middle
        (the origin not applied); the straight line after the support has no curvature."""
        x = np.asarray(x, dtype=np.float64)
        out = np.empty((4, x.size))
        _smooth_kernel(self.coef, self.half_samples, self.knot_samples, x.ravel(), out)
        return tuple(row.reshape(x.shape) for row in out)

    def evaluate(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``g(u)`` and ``g′(u)`` (per sample) at ``u`` samples from the edge."""
        u = np.asarray(u, dtype=np.float64)
        out = np.empty((2, u.size))
        _evaluate_kernel(*self.parts, u.ravel(), out)
        return out[0].reshape(u.shape), out[1].reshape(u.shape)

    @property
    def parts(self) -> tuple[np.ndarray, float, float, float, float, np.ndarray]:
        """What compiled code evaluates the template from (:func:`response_at`): coefficients, half
        support, knot spacing, origin, modulator rate and ripple terms (no rows without a ripple)."""
        ripple = np.zeros((0, RIPPLE_TERMS)) if self.ripple is None else np.ascontiguousarray(self.ripple)
        return (np.ascontiguousarray(self.coef, dtype=np.float64), float(self.half_samples),
                float(self.knot_samples), float(self.origin), float(self.carrier_per_sample), ripple)

    def _harmonics(self, x: np.ndarray):
        """Per harmonic k: its (a, b, c, d), 2πkM, and cos, sin(2πkMx) (by complex powers)."""
        omega = 2 * np.pi * self.carrier_per_sample
        step = np.exp(1j * omega * x)
        z = np.ones_like(step)
        for k, terms in enumerate(np.zeros((RIPPLE_HARMONICS, RIPPLE_TERMS)) if self.ripple is None
                                  else self.ripple, 1):
            z = z * step
            yield terms, k * omega, z.real, z.imag

    def refit(self, u: np.ndarray, gain: np.ndarray, target: np.ndarray,
              nuisance: np.ndarray | None = None, carrier_per_sample: float | None = None,
              shape: Template | None = None) -> Template:
        """:meth:`learn`'s template."""
        return self.learn(u, gain, target, nuisance, carrier_per_sample, shape)[0]

    def learn(self, u: np.ndarray, gain: np.ndarray, target: np.ndarray,
              nuisance: np.ndarray | None = None, carrier_per_sample: float | None = None,
              shape: Template | None = None) -> tuple[Template, np.ndarray]:
        """The template minimising ``Σ (target − gain·g(u) − baseline)²`` (:meth:`learn_each`), and the
        normal equations' Cholesky factor."""
        learned, factor = self.learn_each(u, gain, [target], nuisance, carrier_per_sample, shape)
        return learned[0], factor

    def learn_each(self, u: np.ndarray, gain: np.ndarray, targets: list[np.ndarray],
                   nuisance: np.ndarray | None = None, carrier_per_sample: float | None = None,
                   shape: Template | None = None) -> tuple[list[Template], np.ndarray]:
        """For each of ``targets``, the template minimising ``Σ (target − gain·g(u) − baseline)²``: one
        design, one factorization.

        ``u``, ``gain`` and each target are (windows, L). ``nuisance`` (L, p), orthonormal columns, spans a
        baseline that each window may add freely (offset, slope, curvature); it is projected out, which
        solves for the template and every window's baseline at once. ``carrier_per_sample`` (default:
        this template's) adds the modulator ripple, whose envelopes ``S′`` and ``S″`` are those of
        ``shape`` (default: this template), held fixed so that the problem stays linear: learning calls
        this again with the result until it settles (the ripple is ~1e-4 of the step). Normal equations:
        ``DᵀD − (QᵀD)ᵀ(QᵀD)`` with ``D`` the sparse design (4 basis functions per sample, and the
        ripple's RIPPLE_HARMONICS × RIPPLE_TERMS columns) and ``QᵀD`` its baseline part per window.
        Also returned: their Cholesky factor ``R`` (upper, ``RᵀR`` = the normal equations; garbage below
        the diagonal): under white noise of σ the free coefficients (and ripple terms) err with covariance
        ``σ²(RᵀR)⁻¹`` (:meth:`plus` adds such a deviation).
        """
        carrier = self.carrier_per_sample if carrier_per_sample is None else carrier_per_sample
        n_win, length = u.shape
        flat_gain = gain.ravel()
        i, w, _ = self.basis(u.ravel())
        n_smooth = len(self.coef)
        ripple = np.zeros((len(i), 0))
        if carrier:
            shape = shape or self
            x = u.ravel() + self.origin
            _, e1, e2, _ = shape.smooth(u.ravel() + shape.origin)
            inside = np.abs(x) < self.half_samples
            e1, e2 = e1 * inside * flat_gain, e2 * inside * flat_gain
            trig = replace(self, carrier_per_sample=carrier, ripple=None)
            # (a, b, c, d) of each harmonic: S′cos, S′sin, S″cos, S″sin
            ripple = np.stack([e * t for _, _, cos, sin in trig._harmonics(x) for e in (e1, e2)
                               for t in (cos, sin)], axis=1)
        n_all = n_smooth + ripple.shape[1]
        p = 0 if nuisance is None else nuisance.shape[1]
        target = np.stack([t.ravel() for t in (targets if nuisance is None else
                                                [t - (t @ nuisance) @ nuisance.T for t in targets])], axis=1)
        normal, rhs, qd, reached = _normal_equations(
            i, w * flat_gain[:, None], ripple, target, np.zeros((length, 0)) if nuisance is None
            else np.ascontiguousarray(nuisance), length, n_smooth - N_ZERO + ripple.shape[1])
        if p:
            # (QᵀD)ᵀ(QᵀD): a window's samples are whole samples apart, so it reaches only the coefficients
            # of its sub-sample phase (4 of every 1/knot_samples), and windows of one phase reach the same
            # ones: it is summed group by group of windows that reach the same coefficients, on just those
            # (~(4·knot_samples)² of the dense product's cost)
            groups: dict[bytes, list[int]] = {}
            for win, columns in enumerate(np.packbits(reached, axis=1)):
                groups.setdefault(columns.tobytes(), []).append(win)
            for windows in groups.values():
                c = np.flatnonzero(reached[windows[0]])
                part = qd[windows][:, :, c].reshape(-1, len(c))
                _subtract_at(normal, c, part.T @ part)
        sol = np.zeros((n_all, len(targets)))
        # the normal equations are symmetric positive definite: Cholesky
        factor = linalg.cho_factor(normal)
        sol[N_ZERO:] = linalg.cho_solve(factor, rhs)
        return [replace(self, coef=x[:n_smooth], carrier_per_sample=carrier,
                        ripple=x[n_smooth:].reshape(RIPPLE_HARMONICS, RIPPLE_TERMS) if carrier else None)
                for x in sol.T], factor[0]

    def plus(self, free: np.ndarray, scale: float) -> Template:
        """This template with ``free`` added: a deviation of :meth:`learn`'s free coefficients (times
        ``scale``, the factor between the template it learned and this one) and ripple terms (relative to
        the template's slope, so not scaled)."""
        n_spline = len(self.coef) - N_ZERO
        coef = self.coef.copy()
        coef[N_ZERO:] += free[:n_spline] * scale
        ripple = (None if self.ripple is None
                  else self.ripple + free[n_spline:].reshape(RIPPLE_HARMONICS, RIPPLE_TERMS))
        return replace(self, coef=coef, ripple=ripple)

    def normalized(self) -> Template:
        """The same shape scaled to 1 at the support's end and with its origin moved to where ``g = 1/2``."""
        top = self.evaluate(np.array([self.support_end]))[0][0]
        # the ripple multiplies S′ and S″, which scale with the coefficients
        scaled = replace(self, coef=self.coef / top)
        u = np.linspace(-self.half_samples, self.half_samples, int(64 * self.half_samples) + 1) \
            + self.lead_samples
        g, _ = scaled.evaluate(u)
        k = int(np.argmin(np.abs(g - 0.5)))
        u0 = u[k]
        for _ in range(4):  # Newton on g(u0) = 1/2 from the nearest grid point
            val, slope = scaled.evaluate(np.array([u0]))
            u0 -= (val[0] - 0.5) / slope[0]
        return replace(scaled, origin=self.origin + u0)

    def ringing(self, u: np.ndarray) -> np.ndarray:
        """The response at ``u`` less, after the edge, the straight line it settles on (fitted over the
        support's last SETTLED_SAMPLES): what an edge adds to a neighbour's window besides level and droop."""
        end = self.support_end
        settled = np.linspace(end - SETTLED_SAMPLES, end, 64)
        slope, offset = np.polyfit(settled, self.evaluate(settled)[0], 1)
        g, _ = self.evaluate(u)
        return np.where(u > 0, g - (offset + slope * u), g)

    def energy(self, frac: np.ndarray) -> np.ndarray:
        """``Σₙ g′(n − φ)²`` over the support for edges at sub-sample phases ``frac`` (Cramér–Rao bound)."""
        grid = np.linspace(0.0, 1.0, ENERGY_PHASES + 1)
        n = np.arange(-np.ceil(self.half_samples) - 2, np.ceil(self.half_samples) + 2) + self.lead_samples
        _, d = self.evaluate(n[None, :] - grid[:, None])
        energy = np.sum(d * d, axis=1)
        # linear interpolation on the uniform grid (np.interp's search per value is 5x slower)
        x = (np.asarray(frac) % 1.0) * ENERGY_PHASES
        i = np.minimum(x.astype(np.int64), ENERGY_PHASES - 1)
        return energy[i] + (x - i) * (energy[i + 1] - energy[i])


@kernel
def _subtract_at(normal, c, gram):  # pragma: no cover (compiled)
    """``normal[c[i], c[j]] −= gram[i, j]`` for all ``i``, ``j`` (numpy's 2-D fancy index is 10× slower)."""
    for i in range(len(c)):
        for j in range(len(c)):
            normal[c[i], c[j]] -= gram[i, j]


@kernel
def _normal_equations(first, weights, ripple, target, nuisance, length, n_free):  # pragma: no cover
    """The normal equations ``DᵀD`` (its upper triangle; zeros below, which the Cholesky factor does not
    read), ``Dᵀ·target`` (a column per target) of the design whose row r holds
    ``weights[r]`` at the 4 coefficients from ``first[r]`` and ``ripple[r]`` at the ripple's columns after
    the spline's, less the N_ZERO fixed coefficients; and ``QᵀD`` per window (rows ``length`` at a time:
    (windows, p, n_free)) with the coefficients each window reaches."""
    n_rows, n_ripple = len(first), ripple.shape[1]
    n_spline = n_free - n_ripple
    p = nuisance.shape[1]
    n_win = n_rows // length
    normal = np.zeros((n_free, n_free))
    # the ripple's columns are in every row: their blocks are summed apart, in arrays small enough to stay
    # in cache (the same products in the same order)
    cross = np.zeros((n_spline, n_ripple))
    square = np.zeros((n_ripple, n_ripple))
    rhs = np.zeros((n_free, target.shape[1]))
    qd = np.zeros((n_win, p, n_free))
    reached = np.zeros((n_win, n_free), dtype=np.bool_)
    col = np.empty(4, dtype=np.int64)
    val = np.empty(4)
    for r in range(n_rows):
        m = _row_columns(first[r], weights[r], col, val)
        win, sample = r // length, r % length
        _add_spline_terms(r, m, col, val, ripple, target, nuisance[sample], normal, cross, rhs, qd[win],
                          reached[win])
        _add_ripple_terms(r, n_spline, ripple, target, nuisance[sample], square, rhs, qd[win], reached[win])
    normal[:n_spline, n_spline:] = cross
    normal[n_spline:, n_spline:] = square
    return normal, rhs, qd, reached


@kernel(inline="always")
def _row_columns(first, weights, col, val):  # pragma: no cover (compiled)
    """A design row's spline columns from ``first`` less the N_ZERO fixed coefficients, and their
    ``weights``, into ``col`` and ``val``: how many."""
    m = 0
    for k in range(4):
        c = first + k - N_ZERO
        if c >= 0:
            col[m], val[m] = c, weights[k]
            m += 1
    return m


@kernel(inline="always")
def _add_spline_terms(r, m, col, val, ripple, target, nuisance, normal, cross, rhs, qd,
                      reached):  # pragma: no cover (compiled)
    """Row ``r``'s products with its ``m`` spline columns added: to the spline's normal equations (upper
    triangle), their cross terms with the ripple's, ``Dᵀ·target``, and its window's ``QᵀD`` (``qd``) and
    ``reached``; ``nuisance``: the row's sample of the window's baseline basis."""
    for a in range(m):
        ca, va = col[a], val[a]
        for t in range(target.shape[1]):
            rhs[ca, t] += va * target[r, t]
        for b in range(a, m):  # the upper triangle only (a row's columns ascend)
            normal[ca, col[b]] += va * val[b]
        for k in range(ripple.shape[1]):
            cross[ca, k] += va * ripple[r, k]
        reached[ca] = True
        for q in range(len(nuisance)):
            qd[q, ca] += nuisance[q] * va


@kernel(inline="always")
def _add_ripple_terms(r, n_spline, ripple, target, nuisance, square, rhs, qd,
                      reached):  # pragma: no cover (compiled)
    """Row ``r``'s products with the ripple's columns (after the spline's ``n_spline``) added: to their
    normal equations (upper triangle), ``Dᵀ·target``, and its window's ``QᵀD`` and ``reached``."""
    n_ripple = ripple.shape[1]
    for k in range(n_ripple):
        vk = ripple[r, k]
        for t in range(target.shape[1]):
            rhs[n_spline + k, t] += vk * target[r, t]
        for j in range(k, n_ripple):
            square[k, j] += vk * ripple[r, j]
        reached[n_spline + k] = True
        for q in range(len(nuisance)):
            qd[q, n_spline + k] += nuisance[q] * vk


@kernel(inline="always")
def spline_at(coef, half, knot, x):  # pragma: no cover (compiled)
    """``S`` and its first three derivatives (per sample) at ``x`` samples from the support's middle: the
    uniform cubic B-spline in power form around its knot (the weights of :func:`bspline_weights`),
    continued by its straight line after the support."""
    n_int = len(coef) - 3
    per_knot = 1.0 / knot
    t = min(max((x + half) * per_knot, 0.0), float(n_int))
    i = min(int(t), n_int - 1)
    t -= i
    c0, c1, c2, c3 = coef[i], coef[i + 1], coef[i + 2], coef[i + 3]
    a0 = (c0 + 4 * c1 + c2) * (1.0 / 6.0)
    a1 = (c2 - c0) * 0.5
    a2 = (c0 - 2 * c1 + c2) * 0.5
    a3 = (c3 - c0 + 3 * (c1 - c2)) * (1.0 / 6.0)
    g = a0 + t * (a1 + t * (a2 + t * a3))
    d1 = (a1 + t * (2 * a2 + t * 3 * a3)) * per_knot
    d2, d3 = 0.0, 0.0
    if abs(x) < half:
        d2 = (2 * a2 + 6 * a3 * t) * per_knot * per_knot
        d3 = 6 * a3 * per_knot * per_knot * per_knot
    return g + max(x - half, 0.0) * d1, d1, d2, d3


@kernel(inline="always")
def response_at(coef, half, knot, origin, carrier, ripple, u):  # pragma: no cover (compiled)
    """``g(u)`` and ``g′(u)`` of the template whose :attr:`Template.parts` these are, ``u`` samples from
    the edge: the smooth spline, and inside its support the modulator ripple's harmonics (see
    :class:`Template`)."""
    x = u + origin
    g, d1, d2, d3 = spline_at(coef, half, knot, x)
    dg = d1
    if ripple.shape[0] and abs(x) < half:  # the ripple lives where h does (after it S′ is the droop's)
        omega = 2 * np.pi * carrier
        step = complex(np.cos(omega * x), np.sin(omega * x))
        z = complex(1.0, 0.0)
        for k in range(ripple.shape[0]):
            z = z * step
            a, b, c, d = ripple[k, 0], ripple[k, 1], ripple[k, 2], ripple[k, 3]
            w = (k + 1) * omega
            p, q = a * z.real + b * z.imag, c * z.real + d * z.imag
            dp, dq = w * (b * z.real - a * z.imag), w * (d * z.real - c * z.imag)
            g += d1 * p + d2 * q
            dg += d2 * p + d1 * dp + d3 * q + d2 * dq
    return g, dg


@kernel
def _smooth_kernel(coef, half, knot, x, out):  # pragma: no cover (compiled)
    """:meth:`Template.smooth` at every ``x`` into the rows of ``out``."""
    for j in range(len(x)):
        out[0, j], out[1, j], out[2, j], out[3, j] = spline_at(coef, half, knot, x[j])


@kernel
def _evaluate_kernel(coef, half, knot, origin, carrier, ripple, u, out):  # pragma: no cover (compiled)
    """:meth:`Template.evaluate` at every ``u`` into the rows of ``out``."""
    for j in range(len(u)):
        out[0, j], out[1, j] = response_at(coef, half, knot, origin, carrier, ripple, u[j])
