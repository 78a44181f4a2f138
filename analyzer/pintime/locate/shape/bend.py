"""A bent input: a static nonlinearity after the card's filter, found from how the edges' shape changes
with the recorded level, and how far it moves them (docs/design.md §11, "A bent input").

An input stage that bends, ``y = x + a₂x² + a₃x³`` (``x`` in FS), after the card's filter turns a step
``Δ·s`` from a level ``L`` into ``f(L + Δ·s) − f(L)``: normalized, ``s + ε·(s² − s)`` with
``ε = Δ·(a₂ + 3a₃·L)`` to first order. The template, learned from the calibration train's edges at one
level, holds that level's ``ε``; an edge at another level moves by ``k·3a₃·Δ·(L − L_train)``, ``k`` the
template fit's phase per unit ``ε`` (:func:`sensitivity`). The even term moves all the edges of a polarity
alike (as the pin's own rise–fall difference does: the estimators that cancel ε cancel it). The odd term
moves them by their level, which the AC coupling sets from the duty cycle: pulses of different lengths
move differently, and no spread of repetitions shows it (docs/results.md, "A bent input": 0.03·y³ read the
overdetermined T_e 3.1 ns off, ten CIs, with exit status 0). Each isolated edge's ``ε`` is read off its
fit and regressed on the recorded level before it (:class:`BendSums`). A bend before the filter (an ADC's
input stage) changes the steps' heights, not their shape: it moves no edge, and is not found.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pintime.capture.wav import Block
from pintime.errors import PintimeError
from pintime.locate.locators.fit import FIT_HALF_SAMPLES, TemplateTable, fit_isolated

LEVEL_SAMPLES_192K = 12  # the level either side of an edge: samples h … 2h from it (h at 192 kHz, scaled)
MIN_LEVEL_SAMPLES = 3
MIN_EDGES = 50  # of a polarity, for its regression
SIGNIFICANT_Z = 5.0  # a₃ this many standard errors from 0 is a bend (200 linear captures: |z| ≤ 2.8)
SHIFT_MAX_SIGMA = 0.25  # edges moved with the level by more than this × their own σ (RMS): refused
PROBE_PHASES = np.linspace(-0.45, 0.45, 10)  # sub-sample phases :func:`sensitivity` averages over
PROBE_EPSILON = 1e-3


@dataclass(frozen=True)
class Bend:
    """The input's cubic bend found from the edges' shape, and how far it moves them."""

    cubic_per_fs2: float  # a₃ of y = x + a₂x² + a₃x³, x and y in FS
    cubic_se_per_fs2: float  # its standard error
    shift_rms_s: float  # the edges' moves with their level, RMS about their mean
    shift_range_s: float  # … from the lowest level to the highest
    sigma_s: float  # the pin's edges' own 1σ, their median
    edges: int  # the isolated edges it was found from

    @property
    def significant(self) -> bool:
        """The bend is beyond what the noise could make of the edges' shape."""
        return abs(self.cubic_per_fs2) >= SIGNIFICANT_Z * self.cubic_se_per_fs2

    def to_json(self) -> dict[str, float | int | bool]:
        return {"cubic_per_fs2": self.cubic_per_fs2, "cubic_se_per_fs2": self.cubic_se_per_fs2,
                "significant": self.significant, "shift_rms_ns": self.shift_rms_s * 1e9,
                "shift_range_ns": self.shift_range_s * 1e9, "sigma_ns": self.sigma_s * 1e9,
                "edges": self.edges}

    def text(self) -> str:
        """What it is and what it does, in one line."""
        return (f"the edges' shape changes with the recorded level, as an input that bends after the card's "
                f"filter makes it (y = x {self.cubic_per_fs2:+.2g}·x³ ± {self.cubic_se_per_fs2:.1g}, x in "
                f"FS), which moves them by {self.shift_rms_s * 1e9:.2g} ns RMS with their level "
                f"({self.shift_range_s * 1e9:.2g} ns from the lowest to the highest), "
                f"{self.shift_rms_s / self.sigma_s:.2g}× their own σ")


class BendSums:
    """The regression of the measurement pin's isolated edges' shape change ``ε`` on the recorded level
    before them, per polarity, summed block by block (a few numbers: memory does not grow with the
    capture). Each edge's ``ε`` is its fit's residual along ``s² − s``, both taken off the fit's own
    columns (the template, its slope, the window's offset and slope)."""

    def __init__(self, samplerate_hz: float, table: TemplateTable) -> None:
        self.samplerate_hz, self.table = samplerate_hz, table
        self.h = max(MIN_LEVEL_SAMPLES, round(LEVEL_SAMPLES_192K * samplerate_hz / 192000))
        self.reach = max(2 * self.h, FIT_HALF_SAMPLES)  # samples either side an edge's sums read
        self.apart = max(table.reach_samples, 2 * self.reach)  # from both neighbours: their steps outside
        self.sums = np.zeros((2, 6))  # per polarity (rising, falling): Σ 1, L, L², ε, εL, ε²
        self.low, self.high = np.full(2, np.inf), np.full(2, -np.inf)  # the levels' range
        self.height = np.zeros(2)  # Σ A (the steps, signed)

    def add(self, block: Block, located: list[np.ndarray]) -> None:
        """A block's located edges (rows: position, sigma, amplitude, channel, sign; samples), its restored
        samples and those recorded (``raw`` of a restored block)."""
        pin = [r for r in located if len(r[0]) and r[3, 0] == 0]
        raw = getattr(block, "raw", None)
        if not pin or raw is None:
            return
        rows = pin[0][:, np.isfinite(pin[0][0])]
        pos, _, amp = rows[:3, np.argsort(rows[0], kind="stable")]
        gap = np.diff(pos)
        alone = np.zeros(len(pos), dtype=bool)
        alone[1:-1] = (gap[:-1] >= self.apart) & (gap[1:] >= self.apart)  # block ends: neighbours unseen
        centre = np.round(pos).astype(np.int64)
        n = centre - block.first
        alone &= (n >= self.reach) & (n + self.reach + 1 <= len(raw))
        if not alone.any():
            return
        n, phase, amp = n[alone], (pos - centre)[alone], amp[alone]
        h = self.h
        level = raw[n[:, None] + np.arange(-2 * h, -h), 0].astype(np.float64).mean(axis=1)
        m = np.arange(-FIT_HALF_SAMPLES, FIT_HALF_SAMPLES + 1)
        y = block.data[n[:, None] + m, 0].astype(np.float64)
        g, slope = self.table.template.evaluate(m[None, :] - phase[:, None])
        tilt = np.broadcast_to(m / FIT_HALF_SAMPLES, g.shape)
        # the fit's columns and s² − s: the last one's coefficient is A·ε (Frisch–Waugh: y's residual along
        # the residual of s² − s, both off the fit's columns)
        columns = np.stack([g, slope, np.ones_like(g), tilt, g * g - g], axis=2)
        across = columns.transpose(0, 2, 1)
        coef = np.linalg.solve(across @ columns, across @ y[..., None])[..., 0]
        epsilon = coef[:, 4] / amp
        for p, of in enumerate((amp > 0, amp < 0)):
            if of.any():
                lv, e = level[of], epsilon[of]
                self.sums[p] += [len(lv), lv.sum(), lv @ lv, e.sum(), e @ lv, e @ e]
                self.low[p], self.high[p] = min(self.low[p], lv.min()), max(self.high[p], lv.max())
                self.height[p] += amp[of].sum()

    def result(self, sigma_s: float) -> Bend | None:
        """The bend (None: too few isolated edges of either polarity); ``sigma_s``: the pin's edges' σ (their
        median, as kept: raised to the train's error)."""
        cubic, weight, spread, counts = [], [], [], []
        for p in range(2):
            count, sl, sll, se, sel, see = self.sums[p]
            var_level = sll / count - (sl / count) ** 2 if count else 0.0
            if count < MIN_EDGES or not var_level > 0:  # (a DC-coupled card: every edge at one level)
                continue
            beta = (sel / count - sl * se / count ** 2) / var_level  # ε per FS of level
            residual = max(see / count - (se / count) ** 2 - beta ** 2 * var_level, 0.0) * count / (count - 2)
            step = self.height[p] / count
            cubic.append(beta / (3 * step))  # ε = Δ·(a₂ + 3a₃·L): the bend's a₃
            weight.append((3 * step) ** 2 * count * var_level / max(residual, np.finfo(float).tiny))
            spread.append((var_level, self.high[p] - self.low[p], beta))
            counts.append(count)
        if not cubic:
            return None
        k = sensitivity(self.table) / self.samplerate_hz  # s per unit ε
        shift = np.array([(abs(k * beta) * np.sqrt(v), abs(k * beta) * r) for v, r, beta in spread])
        return Bend(float(np.average(cubic, weights=weight)), float(1 / np.sqrt(np.sum(weight))),
                    float(np.sqrt(np.average(shift[:, 0] ** 2, weights=counts))), float(shift[:, 1].max()),
                    sigma_s, int(sum(counts)))


def sensitivity(table: TemplateTable) -> float:
    """``k``: the phase (samples) the template fit gives a window whose response is ``s + ε·(s² − s)``
    per unit ``ε``, ``s`` the template; the mean over sub-sample phases (it is 0.09–0.27 between them)."""
    m = np.arange(-FIT_HALF_SAMPLES, FIT_HALF_SAMPLES + 1)
    u = m[None, :] - PROBE_PHASES[:, None]
    s = table.template.evaluate(u.ravel())[0].reshape(u.shape)
    windows = np.concatenate([s, s + PROBE_EPSILON * (s * s - s)])
    fit = fit_isolated(table, windows, np.concatenate([PROBE_PHASES, PROBE_PHASES]), 1.0)
    return float(np.mean(fit.phase[len(PROBE_PHASES):] - fit.phase[:len(PROBE_PHASES)]) / PROBE_EPSILON)


def refuse_bent(bend: Bend | None, path: str) -> None:
    """Refuse a capture whose bend moves its edges with their level by more than SHIFT_MAX_SIGMA × their
    own σ: the estimators that subtract pulses of other duty cycles would be off by that, unseen."""
    if bend is not None and bend.significant and bend.shift_rms_s > SHIFT_MAX_SIGMA * bend.sigma_s:
        raise PintimeError(f"{path}: {bend.text()}, more than {SHIFT_MAX_SIGMA:g}×, and no repetition shows "
                           "it: record at a lower level (the move falls with its square)")
