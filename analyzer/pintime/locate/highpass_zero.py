"""The AC coupling's zero away from DC, learned from the edges (:mod:`pintime.locate.highpass` learns its
poles from the quiet samples between them).

A chain of first-order high-passes has all its zeros at DC, and its step response undershoots by at most
e⁻² = 0.135 of the step. A real input can undershoot far more (a PC line input: −0.4 of the step 1.2 ms
after it, the zero crossing at 0.4 ms): two real poles with one zero at DC and one at r₀ ≠ 1. With the
poles removed and one zero undone, the recording is ``w = g·(x[n] − r₀·x[n−1])``, x the pin level: between
edges ``w = g(1 − r₀)·L + c'`` (L the level), and each edge adds an impulse of area ``g·r₀`` times its step.
So the quiet samples' regression on the level gives β = g(1 − r₀), the edges' impulses γ = g·r₀, and
r₀ = γ / (β + γ). The regression is per block (each block starts its filters from zero: a constant, and
its first moments left out, where the leaky integrator still settles: ``SETTLE_CORNERS``).
"""

from __future__ import annotations

import numpy as np

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

    def __init__(self, samplerate_hz: float, guard_samples: int, leak_hz: float) -> None:
        """``guard_samples``: quiet samples are this far from every edge; ``leak_hz``: the corner of the
        leaky integrator that undid the zero at DC."""
        self.guard = guard_samples
        self.settle = int(SETTLE_CORNERS / leak_hz * samplerate_hz)
        self.sums = np.zeros(3)  # Σ l², Σ l·w, Σ w² of the quiet samples, each block's means taken off
        self.count = 0
        self.impulses: list[np.ndarray] = []  # per isolated edge: (Σ w, Σ L) about the block's quiet means

    def add(self, w: np.ndarray, pos: np.ndarray, sign: np.ndarray, lo: int, hi: int,
            first_block: bool) -> None:
        """A block: ``w`` its samples, ``pos`` / ``sign`` its edges (sorted), its own frames [lo, hi)."""
        level = np.zeros(len(w))
        np.add.at(level, np.clip(pos, 0, len(w) - 1), sign)
        level = np.cumsum(level)  # the pin level (in steps, from the block's start) after each edge
        n = np.arange(lo if first_block else max(lo, self.settle), min(hi, len(w)))
        near = _nearest(pos, n)
        quiet = n[near > self.guard]
        if len(quiet) < 2:
            return
        l_mean, w_mean = level[quiet].mean(), w[quiet].mean()
        dl, dw = level[quiet] - l_mean, w[quiet] - w_mean
        self.sums += [dl @ dl, dl @ dw, dw @ dw]
        self.count += len(quiet)
        gap = np.diff(pos)
        apart = gap > 2 * self.guard
        alone = np.concatenate([[False], apart]) & np.concatenate([apart, [False]])
        alone &= (pos >= max(lo, self.guard)) & (pos < min(hi, len(w) - self.guard))
        if not first_block:
            alone &= pos >= self.settle
        for p, s in zip(pos[alone], sign[alone], strict=True):
            window = slice(p - self.guard, p + self.guard + 1)
            self.impulses.append(s * np.array([np.sum(w[window] - w_mean), np.sum(level[window] - l_mean)]))

    def result(self) -> float:
        """r₀, or 1.0 (both zeros at DC) where it is not clearly determined or moves nothing."""
        sll, slw, sww = self.sums
        if len(self.impulses) < MIN_EDGES or self.count < 3 or sll <= 0:
            return 1.0
        beta = slw / sll
        se = np.sqrt(max(sww - beta * slw, 0.0) / (self.count - 2) / sll)
        rows = np.array(self.impulses)
        gamma = float(np.median(rows[:, 0] - beta * rows[:, 1]))
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
