"""The AC coupling's zero away from DC, learned from the edges (:mod:`pintime.locate.coupling.highpass` learns
its poles from the quiet samples between them).

A chain of first-order high-passes has all its zeros at DC, and its step response undershoots by at most
e⁻² = 0.135 of the step. A real input can undershoot far more (a PC line input: −0.4 of the step 1.2 ms
after it, the zero crossing at 0.4 ms): two real poles with one zero at DC and one at r₀ ≠ 1. With the
poles removed and one zero undone, the recording is ``w = g·(x[n] − r₀·x[n−1])``, x the pin level: between
edges ``w = g(1 − r₀)·L + c'`` (L the level), and each edge adds an impulse of area ``g·r₀`` times its step.
So the quiet samples' regression on the level (as the leaky integrator that undid the zero at DC passes
it: the level less its average over the integrator's time constant) gives β = g(1 − r₀), the edges'
impulses γ = g·r₀, and r₀ = γ / (β + γ). The regression is per block (each block starts its filters
from zero: a constant, and its first moments left out, where the leaky integrator still settles:
``SETTLE_CORNERS``).
"""

from __future__ import annotations

import numpy as np
from scipy import signal

SETTLE_CORNERS = 5 / (2 * np.pi)  # the leaky integrator's state from zero: e⁻⁵ of it left after this / its
# corner (s)
# a zero is kept where it moves the restored level by this fraction of the step over the template's ±48
# samples (a chain of high-passes: its estimate is noise about r₀ = 1) …
MIN_EFFECT = 0.01
MIN_T = 10.0  # … and stands this many standard errors from r₀ = 1
HALF_SUPPORT = 48  # train.TEMPLATE_HALF_SAMPLES (not imported: train imports the locators)
MIN_EDGES = 20  # isolated edges whose impulses give γ


class ZeroLearner:
    """Sums over one channel's blocks (restored with the poles removed and one zero undone)."""

    TERMS = 1  # the level

    def __init__(self, samplerate_hz: float, guard_samples: int, leak_hz: float) -> None:
        """``guard_samples``: quiet samples are this far from every edge; ``leak_hz``: the corner of the
        leaky integrator that undid the zero at DC."""
        self.guard = guard_samples
        self.settle = int(SETTLE_CORNERS / leak_hz * samplerate_hz)
        self.leak = np.exp(-2 * np.pi * leak_hz / samplerate_hz)
        self.gram = np.zeros((self.TERMS + 1, self.TERMS + 1))  # [level, w] of the quiet samples, centred
        self.count = 0
        self.impulses: list[np.ndarray] = []  # per isolated edge: Σ [level, w] about the block's quiet means

    def add(self, w: np.ndarray, pos: np.ndarray, sign: np.ndarray, lo: int, hi: int,
            first_block: bool) -> None:
        """A block: ``w`` its samples, ``pos`` / ``sign`` its edges (sorted), its own frames [lo, hi)."""
        # each step half on its sample, half on the next: the level's own step centred on the edge's
        # sample, as the edge is (its integer step one sample late had read r₀ 3e-4 low, γ 1 % off)
        steps = np.zeros(len(w) + 1)
        np.add.at(steps, np.clip(pos, 0, len(w) - 1), 0.5 * sign)
        np.add.at(steps, np.clip(pos, 0, len(w) - 1) + 1, 0.5 * sign)
        steps = steps[:-1]
        level = signal.lfilter([1.0], [1.0, -self.leak], steps)  # L as the leaky integrator passes it
        cols = np.stack([level, w], axis=1)
        n = np.arange(lo if first_block else max(lo, self.settle), min(hi, len(w)))
        quiet = n[_nearest(pos, n) > self.guard]
        if len(quiet) < self.TERMS + 1:
            return
        mean = cols[quiet].mean(axis=0)
        centred = cols[quiet] - mean
        self.gram += centred.T @ centred
        self.count += len(quiet)
        if len(pos) == 0:  # a block without edges: its quiet samples only
            return
        apart = np.diff(pos) > 2 * self.guard
        alone = np.concatenate([[False], apart]) & np.concatenate([apart, [False]])
        alone &= (pos >= max(lo, self.guard)) & (pos < min(hi, len(w) - self.guard))
        if not first_block:
            alone &= pos >= self.settle
        for p, s in zip(pos[alone], sign[alone], strict=True):
            self.impulses.append(s * np.sum(cols[p - self.guard:p + self.guard + 1] - mean, axis=0))

    def result(self) -> float:
        """r₀, or 1.0 (both zeros at DC) where it is not clearly determined or moves nothing."""
        if len(self.impulses) < MIN_EDGES or self.count <= self.TERMS + 1:
            return 1.0
        xx, xy = self.gram[:-1, :-1], self.gram[:-1, -1]
        try:
            theta = np.linalg.solve(xx, xy)
            inverse = np.linalg.inv(xx)
        except np.linalg.LinAlgError:
            return 1.0
        residual = max(float(self.gram[-1, -1] - theta @ xy), 0.0) / (self.count - self.TERMS - 1)
        beta, se = theta[0], np.sqrt(residual * inverse[0, 0])
        rows = np.array(self.impulses)
        gamma = float(np.median(rows[:, -1] - rows[:, :-1] @ theta))
        if gamma <= 0 or abs(beta) < MIN_T * se or HALF_SUPPORT * abs(beta) < MIN_EFFECT * gamma:
            return 1.0
        return float(gamma / (beta + gamma))


def _nearest(pos: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Distance of each sample ``n`` from its nearest edge in ``pos`` (sorted)."""
    if len(pos) == 0:
        return np.full(len(n), np.iinfo(np.int64).max)
    k = np.searchsorted(pos, n)
    before = np.abs(n - pos[np.maximum(k - 1, 0)])
    after = np.abs(pos[np.minimum(k, len(pos) - 1)] - n)
    return np.minimum(before, after)
