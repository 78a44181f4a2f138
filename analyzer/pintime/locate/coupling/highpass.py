"""The card's AC coupling learned from the capture and undone before edges are located (docs/design.md §10).

Line and mic inputs are AC-coupled: a chain of first-order high-passes (coupling capacitors, the ADC's
digital high-pass). After an edge the recording decays toward zero, on a laptop jack to a fifth of the step
within half a millisecond. A local fit's offset and slope take only the straight part of that droop; what
is left, the droop's curvature under each edge and the learned template's own long tail, depends on the
edges before, and biased the edges of long pulses by tens of ns.

Between edges (once the anti-alias response has settled) the pin is constant, so a high-pass of order p
leaves a sum of p decaying exponentials plus the DC offset: samples D apart obey the recurrence

    y[n] = a₁·y[n−D] + … + a_p·y[n−pD] + c

whose characteristic roots are the sections' poles to the power D (D = ``LAG_S``: a few samples, so that
a slow decay shows between them). The coefficients are fitted on the quiet samples of the first seconds
(:class:`HighpassLearner`), order 2 kept only when it is clearly determined (:meth:`HighpassLearner.result`).
Applying the per-sample ``A(z) = Π(1 − rᵢz⁻¹)`` to the recording removes the poles; the sections' zeros at
DC, (1 − z⁻¹)ᵖ, are undone by leaky integrators ``1/(1 − ρz⁻¹)ᵖ`` (a corner of ``LEAK_HZ``, far below
anything the fits see: the restored step still drops 2 % over a 3 ms pulse, a straight line the local fit
takes), after the constant ``c`` (the DC offset) is taken off. The restored recording is what a DC-coupled
card would give, up to a scale: the template, the fits and the noise all work on it.

A block restored on its own starts from a zero filter state: it lacks the past's contribution, which is a
solution of the leaky integrators' homogeneous recurrence, ``(α + β·n)·ρⁿ``: an offset and a slope (a
slope as small as the slow noise the integrators accumulate) that every fit's baseline takes, and the
first p samples, inside the block's padding.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import signal

from pintime.capture.wav import Block, WavInfo, iter_blocks
from pintime.compiled import kernel
from pintime.errors import PintimeError
from pintime.locate.coupling.highpass_zero import ZeroLearner
from pintime.locate.detect import detect

LEAK_HZ = 1.0  # corner of the leaky integrators that replace the coupling's zeros at DC
GUARD_SAMPLES = 40  # quiet samples are this far from every edge (the anti-alias response has settled)
MAX_ORDER = 2
CORNER_TOLERANCE = 0.1  # an order-2 fit's roots must be known to this fraction of their distance from 1
LAG_S = 1e-4  # D: the recurrence steps this far (5 samples at 48 kHz, 19 at 192 kHz), where the decay shows
# the quiet samples are smoothed by this binomial low-pass before the recurrence is fitted: it passes the
# coupling's slow decay, whose recurrence it leaves as it is (a filtered sum of exponentials is one with
# other amplitudes), and takes out the decimation filter's ringing near fs/2, which a minimum-phase filter
# keeps for tens of samples after its edge and which the fit would take for a fast corner (docs/design.md §13)
SMOOTHING = np.array([1.0, 4.0, 6.0, 4.0, 1.0]) / 16.0
ORDER_T = 10.0  # order 2 is kept when its second coefficient is this many standard errors from 0
# quiet samples are at most this long after an edge: where the decay shows. A slow signal's long quiet
# stretches hold mostly mains hum, a sinusoid whose own recurrence pulls the fit (docs/design.md §13)
DECAY_S = 0.02
MIN_QUIET = 500  # fewer quiet samples (per channel) learn nothing: the recording is left as it is (one
# 20 ms decay at 44.1 kHz: 882)
# the coupling undone leaves at most this many times the recording's own noise between edges: above what
# undoing a coupling's loss at 50-60 Hz makes of mains hum, below what a corner learned from a filter's
# ringing leaves (every step integrated into a ramp) (docs/design.md §13)
RESTORED_NOISE_MAX = 20.0
ZERO_TAIL = 1e-4  # a zero undone backwards leaves at most this fraction of the level at a block's own end
# the most a chain of first-order high-passes undershoots, as a fraction of the step: a zero too slow to undo
# is kept (and refused) only where the response it implies undershoots more, as no chain can
CHAIN_UNDERSHOOT = np.exp(-2.0)
FINEST_STEP_FS = 2.0 ** -23  # a 24-bit converter's least step: the finest any sound card resolves


@dataclass(frozen=True)
class Highpass:
    """A channel's learned coupling: ``y[n] = Σ aₖ·y[n−k] + c`` between edges, and where its order 2 has
    one zero away from DC: ``zero``, that zero's root r₀ (numerator (1 − z⁻¹)(1 − r₀z⁻¹); 1: both at DC,
    a chain of high-passes; 0: only one zero undone, the learner's view)."""

    coef: tuple[float, ...]  # a₁ … a_p (empty: nothing learned, the recording is used as it is)
    constant: float  # c
    samplerate_hz: float
    zero: float = 1.0

    def corners_hz(self) -> tuple[float, ...]:
        """The sections' corner frequencies (a root r is a corner of −ln(r)·fs/2π)."""
        if not self.coef:
            return ()
        roots = np.roots(np.concatenate([[1.0], -np.asarray(self.coef)]))
        return tuple(float(-np.log(np.abs(r)) * self.samplerate_hz / (2 * np.pi)) for r in roots)

    def restore(self, x: np.ndarray) -> np.ndarray:
        """The samples ``x`` (one channel, zero filter state before the first) with the coupling undone."""
        return restore_columns(np.asarray(x, dtype=np.float64)[:, None], (self,))[:, 0]

    def filters(self) -> tuple[np.ndarray, np.ndarray]:
        """``A(z)``'s coefficients ``a₁ … a_p``; the leaky integrators' ``L(z)`` negated, ``−l₁ … −l_p``."""
        rho = np.exp(-2 * np.pi * LEAK_HZ / self.samplerate_hz)
        leak = np.array([1.0])
        for _ in self.coef[:len(self.coef) - (self.zero != 1.0)]:
            leak = np.polymul(leak, [1.0, -rho])
        return np.asarray(self.coef, dtype=np.float64), np.pad(-leak[1:], (0, len(self.coef) + 1 - len(leak)))


def restore_columns(x: np.ndarray, highpass: tuple[Highpass, ...]) -> np.ndarray:
    """Each column of ``x`` (frames, channels) restored by its channel's ``highpass`` (zero filter state
    before the first frame; a channel with nothing learned as it is), into one C-ordered array: the
    channels' recursions run side by side."""
    order = np.array([len(h.coef) for h in highpass], dtype=np.int64)
    a, leak = np.zeros((len(highpass), MAX_ORDER)), np.zeros((len(highpass), MAX_ORDER))
    for c, h in enumerate(highpass):
        a[c, :order[c]], leak[c, :order[c]] = h.filters()
    constant = np.array([h.constant for h in highpass])
    out = np.empty(x.shape, dtype=np.float64)
    _restore_kernel(x, a, constant, leak, order, out)
    for c, h in enumerate(highpass):
        if h.zero != 1.0:
            out[:, c] = through_zero(out[:, c], h.zero)
    return out


def through_zero(y: np.ndarray, zero: float) -> np.ndarray:
    """``y / (1 − r₀z⁻¹)``: the coupling's zero r₀ away from DC undone. A zero outside the unit circle (a
    step response that undershoots more than a chain of high-passes can) is undone backwards in time, from
    a zero state after the last sample: stable, and its error decays as r₀⁻ᵏ k samples before the end."""
    if zero <= 1.0:
        return signal.lfilter([1.0], [1.0, -zero], y)
    return signal.lfilter([0.0, -1.0 / zero], [1.0, -1.0 / zero], y[::-1])[::-1]


@kernel
def _restore_kernel(x, a, c, leak, order, y):  # pragma: no cover (compiled)
    """Per channel ``ch`` of order ``p`` > 0: ``A(z)`` then minus ``c`` then ``1/L(z)``,
    ``v[n] = x[n] − Σ aₖ·x[n−k] − c``, ``y[n] = v[n] + Σ leakₖ·y[n−k]`` (``leak``: L's coefficients
    negated), from zero state; each sum taken from its oldest term to the newest, as a transposed
    direct-form filter adds them. Order 0: ``y = x``. Past the first MAX_ORDER frames every term exists:
    the orders are written out there, without a branch per term."""
    head = min(x.shape[0], MAX_ORDER)
    for n in range(head):
        for ch in range(x.shape[1]):
            p = order[ch]
            if p == 0:
                y[n, ch] = x[n, ch]
                continue
            acc = 0.0
            for k in range(p, 0, -1):
                if n >= k:
                    acc = acc - a[ch, k - 1] * x[n - k, ch]
            v = (x[n, ch] + acc) - c[ch]
            acc = 0.0
            for k in range(p, 0, -1):
                if n >= k:
                    acc = acc + leak[ch, k - 1] * y[n - k, ch]
            y[n, ch] = v + acc
    for n in range(head, x.shape[0]):
        for ch in range(x.shape[1]):
            p = order[ch]
            if p == 2:
                v = ((x[n, ch] + ((0.0 - a[ch, 1] * x[n - 2, ch]) - a[ch, 0] * x[n - 1, ch])) - c[ch])
                y[n, ch] = v + ((0.0 + leak[ch, 1] * y[n - 2, ch]) + leak[ch, 0] * y[n - 1, ch])
            elif p == 1:
                v = (x[n, ch] + (0.0 - a[ch, 0] * x[n - 1, ch])) - c[ch]
                y[n, ch] = v + (0.0 + leak[ch, 0] * y[n - 1, ch])
            else:
                y[n, ch] = x[n, ch]


def restore_block(block: Block, highpass: tuple[Highpass, ...]) -> Block:
    """The block with each channel's coupling undone (float64; its ``raw`` samples kept for clipping)."""
    return RestoredBlock(block.first, restore_columns(block.data, highpass), block.own_lo, block.own_hi,
                         block.data)


@dataclass(frozen=True)
class RestoredBlock(Block):
    """A block whose ``data`` are restored; ``raw`` the samples as recorded."""

    raw: np.ndarray


class HighpassLearner:
    """Sums of the recurrence over the quiet samples of one channel, block by block, and its fit.

    The regressors y[n−1], y[n−2] carry the recording's noise, which would bias least squares toward
    faster decay (the droop's curvature, which tells the two corners apart, is small against the noise);
    the earlier samples y[n−3], y[n−4] serve as instruments instead: the recurrence's error
    e[n] − a₁e[n−1] − a₂e[n−2] is uncorrelated with them (instrumental variables; docs/design.md §13).
    """

    LAGS = 2 * MAX_ORDER  # y[n−D] … y[n−4D]

    def __init__(self, samplerate_hz: float) -> None:
        # D: at least the smoothing's length, so that the instruments share no noise with the recurrence's
        # error (the smoothed noise is correlated over that length)
        self.spacing = max(len(SMOOTHING), round(LAG_S * samplerate_hz))
        self.decay_samples = round(DECAY_S * samplerate_hz)
        self.samplerate_hz = samplerate_hz
        # [y[n−D] … y[n−4D], 1, y[n]] outer products over the samples after the channel's own edges, and
        # over those after any channel's
        self.gram = np.zeros((2, self.LAGS + 2, self.LAGS + 2))
        self.count = np.zeros(2, np.int64)

    def add(self, x: np.ndarray, edge_pos: np.ndarray, own_pos: np.ndarray, lo: int, hi: int) -> None:
        """Add the samples ``n`` in [lo, hi) of ``x`` smoothed (SMOOTHING) whose window n−4D … n, and the
        smoothing's before it, is ``GUARD_SAMPLES`` from every edge (``edge_pos``: sorted sample indices into
        ``x``) and less than DECAY_S after the channel's own last edge (``own_pos``, sorted: where its own
        decay shows), and apart those less than DECAY_S after any edge (what :meth:`result` falls back on)."""
        span = self.LAGS * self.spacing + len(SMOOTHING) - 1
        n = np.arange(max(lo, span), min(hi, len(x)))
        if n.size == 0:
            return
        far = np.iinfo(np.int64).max // 2  # sentinels: no edge before the first sample, none after the last
        pos, own = (np.concatenate([[-far], np.sort(p), [far]]) for p in (edge_pos, own_pos))
        k = np.searchsorted(pos, n)
        n = n[(pos[k] - n > GUARD_SAMPLES) & (n - span - pos[k - 1] > GUARD_SAMPLES)
              & (n - pos[k - 1] < self.decay_samples)]
        after_own = n - own[np.searchsorted(own, n) - 1] < self.decay_samples
        x = np.convolve(np.asarray(x, dtype=np.float64), SMOOTHING)[:len(x)]
        cols = np.stack([x[n - lag * self.spacing] for lag in range(1, self.LAGS + 1)]
                        + [np.ones(len(n)), x[n]], axis=1)
        for i, rows in enumerate((cols[after_own], cols)):
            self.gram[i] += rows.T @ rows
            self.count[i] += len(rows)

    def result(self) -> Highpass:
        """The recurrence of order 2 when its second coefficient stands ``ORDER_T`` standard errors clear of
        zero, it leaves less residual than order 1 (each per unit of the noise's power gain through it,
        ``1 + Σaₖ²``: its residual holds the noise of every sample it takes, as :meth:`with_poles` weighs
        them) and both its corners are known to CORNER_TOLERANCE (a
        single section fitted with two leaves its second root to the noise: a wide error, a larger
        residual; two corners of a few Hz are too slow to tell apart in the quiet stretches, and a wrong
        second corner, 18 Hz for 1 Hz, bends the restored baseline), else of order 1; nothing with fewer than
        MIN_QUIET quiet samples or without decay (a root ≥ 1: DC coupling).

        Fitted on the samples after the channel's own edges where there are MIN_QUIET of them, else on
        those after any channel's. A 1 Hz reference's samples after the measurement pin's edges are long
        after its own decay, mains hum and noise, which a fit takes for corners (a sinusoid obeys a
        recurrence of order 2); its own decays are few, and hold the corner (docs/design.md §13). Roots the
        noise made complex (a pair of close corners) are taken as the double root of their magnitude. The
        roots found over D samples are the sections' poles to the power D: the per-sample recurrence has their
        D-th roots, and the constant c scales as the recurrence's value at z = 1."""
        none = Highpass((), 0.0, self.samplerate_hz)
        if self.count[1] < MIN_QUIET:
            return none
        sums = int(self.count[0] < MIN_QUIET)  # the samples after its own edges, else after any
        one = self.LAGS
        beta2, cov2, rss2 = self._fit(sums, [0, 1, one], [2, 3, one])
        beta1, _, rss1 = self._fit(sums, [0, one], [1, one])
        roots = np.array([beta1[0]])
        constant = beta1[1]
        if abs(beta2[1]) > ORDER_T * np.sqrt(cov2[1, 1]) \
                and rss2 / (1 + beta2[0] ** 2 + beta2[1] ** 2) < rss1 / (1 + beta1[0] ** 2):
            fitted = np.roots([1.0, -beta2[0], -beta2[1]])
            complex_pair = np.iscomplexobj(fitted) and np.any(fitted.imag != 0)
            pair = np.abs(fitted) if complex_pair else fitted.real
            if not self._seen(pair):  # a root the quiet samples cannot hold: order 1
                return self._checked(roots, constant)
            # each root's error from the coefficients' (r² = a₁r + a₂: dr = (r·da₁ + da₂)/(2r − a₁))
            grad = np.stack([pair, np.ones(2)], axis=1) / (2 * pair - beta2[0])[:, None]
            root_se = np.sqrt(np.einsum("ri,ij,rj->r", grad, cov2[:2, :2], grad))
            if np.all((pair > 0) & (pair < 1) & (root_se < CORNER_TOLERANCE * (1 - pair))):
                roots, constant = pair, beta2[2]
            elif self._close_pair(beta2, cov2, pair):  # its polynomial as fitted: the roots are not known
                roots, constant = (fitted if complex_pair else pair), beta2[2]
        return self._checked(roots, constant)

    def _checked(self, roots: np.ndarray, constant: float) -> Highpass:
        """The coupling of ``roots``, or nothing where a root shows no decay (≥ 1: DC coupling)."""
        if not np.all((roots.real > 0) & (np.abs(roots) < 1)):
            return Highpass((), 0.0, self.samplerate_hz)
        return self._highpass(roots, constant)

    def _seen(self, pair: np.ndarray) -> bool:
        """Whether both roots (over D samples) decay slowly enough to show in the quiet samples: by at most
        CHAIN_UNDERSHOOT's e² over the GUARD_SAMPLES before the first of them. A faster one (the settling of
        steps too small to detect, a ladder's smaller pins: 3 kHz at 192 kHz) is no coupling they saw."""
        return bool(np.all(np.abs(pair) ** (GUARD_SAMPLES / self.spacing) >= CHAIN_UNDERSHOOT))

    @staticmethod
    def _close_pair(beta: np.ndarray, cov: np.ndarray, pair: np.ndarray) -> bool:
        """Two close corners (0.7 and 0.9 ms: the noise makes their roots complex, or each root's own error
        large) whose polynomial is known: its distance from 1 at z = 1, (1 − r₁)(1 − r₂) = 1 − a₁ − a₂, and
        its roots' mean distance, 1 − a₁/2, each to CORNER_TOLERANCE of itself."""
        grads = np.array([[-1.0, -1.0], [-0.5, 0.0]])
        values = np.array([1 - beta[0] - beta[1], 1 - beta[0] / 2])
        se = np.sqrt(np.einsum("ri,ij,rj->r", grads, cov[:2, :2], grads))
        return bool(np.all((pair > 0) & (pair < 1)) and np.all(se < CORNER_TOLERANCE * values))

    def with_poles(self, other: Highpass) -> Highpass | None:
        """This channel's coupling with the poles of ``other`` (another channel's, of order 2) and its own
        constant, where they fit its quiet samples better than its own order-1 recurrence does (with one
        free coefficient fewer), else None. A channel with few edges (a 1 Hz reference: one decay in the
        first seconds, 602 samples at 44.1 kHz) at README's level learns only order 1: 47 Hz for corners
        of 100 and 300 Hz, which left its edges 1.4 µs early; the measurement channel's corners, learned
        from thousands of decays on the same card, fit its samples better."""
        sums = int(self.count[0] < MIN_QUIET)
        if self.count[sums] < MIN_QUIET:
            return None
        roots = np.sort(np.abs(np.roots(np.concatenate([[1.0], -np.asarray(other.coef)])))) ** self.spacing
        g, one = self.gram[sums], self.LAGS
        a = -np.poly(roots)[1:]  # the recurrence over D samples: y[n] = a₁y[n−D] + a₂y[n−2D] + c
        w = np.zeros(len(g))
        w[[0, 1, -1]] = -a[0], -a[1], 1.0
        total = g[one] @ w  # Σ (y[n] − a₁y[n−D] − a₂y[n−2D]) over the samples
        rss = float(w @ g @ w - total ** 2 / g[one, one])
        own, _, own_rss = self._fit(sums, [0, one], [1, one])
        # each recurrence's residual holds the noise filtered by A(z), whose power gain is 1 + Σaₖ²: the
        # noise's variance under either (measured on 1330 samples of one decay: the right poles 0.02-0.97 of
        # order 1's, as the noise rises from 3e-4 to 1e-2 of the step; another card's poles 1.02-112×)
        if rss / (1 + a[0] ** 2 + a[1] ** 2) >= own_rss / (1 + own[0] ** 2):
            return None
        return self._highpass(roots, total / g[one, one])

    def _highpass(self, roots: np.ndarray, constant: float) -> Highpass:
        """The per-sample coupling whose recurrence over D samples has ``roots`` and ``constant``: the
        roots found over D samples are the sections' poles to the power D, and the constant scales as the
        recurrence's value at z = 1."""
        per_sample = roots ** (1.0 / self.spacing)  # (a complex pair's: its principal roots, conjugate)
        coef = (-np.poly(per_sample)[1:]).real  # A(z) = Π (1 − rᵢ z⁻¹) = 1 − a₁z⁻¹ − a₂z⁻²
        scale = (np.prod(1 - per_sample) / np.prod(1 - roots)).real  # A(1) / A_D(1)
        return Highpass(tuple(float(a) for a in coef), float(constant * scale), self.samplerate_hz)

    def _fit(self, sums: int, regressors: list[int], instruments: list[int]
             ) -> tuple[np.ndarray, np.ndarray, float]:
        """Instrumental-variable fit of y[n] on ``regressors`` (columns of the ``sums``-th sums):
        coefficients, their covariance σ²·(ZᵀX)⁻¹ZᵀZ(ZᵀX)⁻ᵀ (σ² the residuals' variance), the residual sum
        of squares."""
        g = self.gram[sums]
        zx = g[np.ix_(instruments, regressors)]
        beta = np.linalg.lstsq(zx, g[instruments, -1], rcond=None)[0]
        xx, xy = g[np.ix_(regressors, regressors)], g[regressors, -1]
        rss = max(float(g[-1, -1] - 2 * beta @ xy + beta @ xx @ beta), 0.0)
        inv = np.linalg.pinv(zx)
        # the smoothed residuals are correlated over the smoothing's length: their sums vary 1/Σb² times
        # as much as independent ones' would
        inflation = 1.0 / float(np.sum(SMOOTHING ** 2))
        dof = self.count[sums] - len(beta)
        cov = inflation * rss / dof * inv @ g[np.ix_(instruments, instruments)] @ inv.T
        return beta, cov, rss


def learn_highpass(info: WavInfo, block_frames: int, pad_frames: int, start_frame: int,
                   stop_frame: int) -> tuple[Highpass, ...]:
    """Each channel's coupling, learned from the quiet samples of the capture's frames ``start_frame`` …
    ``stop_frame`` (edges found as :mod:`pintime.locate.detect.detect` finds them, on the recording as it is):
    quiet on every channel, since a channel's edges cross over into the other as steps too small to detect
    (at −40 dB, the reference channel's coupling of 100 and 300 Hz was learned as one of 40 Hz)."""
    learners = [HighpassLearner(info.samplerate_hz) for _ in info.columns]
    swing: list[float | None] = [None] * len(info.columns)
    edges = []  # per block, per channel: the edges' positions and signs
    for block in iter_blocks(info, block_frames, pad_frames, start_frame, stop_frame):
        found = []
        for c in range(len(learners)):
            x = block.data[:, c]
            threshold = detect.edge_threshold(x, swing[c])
            pos, strength = np.zeros(0, np.int64), np.zeros(0)
            if threshold is not None:
                pos, strength = detect.find_steps(x, threshold)
                if swing[c] is None and pos.size:
                    swing[c] = _step_fs(strength, info, c)
            found.append((pos, np.sign(strength)))
        every = np.sort(np.concatenate([p for p, _ in found]))
        for c, learner in enumerate(learners):
            learner.add(block.data[:, c], every, found[c][0], block.own_lo - block.first,
                        block.own_hi - block.first)
        edges.append(found)
    learned = [learner.result() for learner in learners]
    # a channel that learned order 1 takes the poles of one that learned order 2, where they fit it better
    donors = [c for c, h in enumerate(learned)
              if len(h.coef) == MAX_ORDER and learners[c].count[0] >= MIN_QUIET]
    if donors:
        donor = learned[max(donors, key=lambda c: learners[c].count[0])]
        for c, learner in enumerate(learners):
            if len(learned[c].coef) == 1:
                learned[c] = learner.with_poles(donor) or learned[c]
    return _with_zeros(info, tuple(learned), edges, block_frames, pad_frames, start_frame, stop_frame)


def _step_fs(strength: np.ndarray, info: WavInfo, channel: int) -> float:
    """The channel's step (its edges' median strength). Refused on the measurement channel where it is
    smaller than a 24-bit converter's least step: no card records that (a float WAV scaled down after
    recording), and the noise measured beside such steps is rounding, not the card's."""
    step_fs = float(np.median(np.abs(strength)))
    if channel != 0 or step_fs >= FINEST_STEP_FS:
        return step_fs
    raise PintimeError(f"{info.path}: the {info.channel_name(0)} channel's edges are steps of "
                       f"{step_fs:.2g} FS ({20 * np.log10(step_fs):.0f} dBFS), below one step of a 24-bit "
                       f"converter ({FINEST_STEP_FS:.2g} FS): no sound card records that; a float WAV scaled "
                       "down after recording? Scale it back up (normalize it) and analyse that")


def _with_zeros(info: WavInfo, learned: tuple[Highpass, ...], edges: list, block_frames: int,
                pad_frames: int, start_frame: int, stop_frame: int) -> tuple[Highpass, ...]:
    """Each order-2 coupling with its zero away from DC, where the edges show one (:mod:`highpass_zero`):
    the blocks again, with the poles removed and one zero undone. ``edges``: per block and channel, the
    positions and signs of the edges found on the first pass."""
    second = [c for c, h in enumerate(learned) if len(h.coef) == MAX_ORDER]
    if not second:
        return learned
    one_zero = tuple(replace(h, zero=0.0) for h in learned)
    zeros = {c: ZeroLearner(info.samplerate_hz, GUARD_SAMPLES, LEAK_HZ) for c in second}
    blocks = iter_blocks(info, block_frames, pad_frames, start_frame, stop_frame)
    for k, (block, found) in enumerate(zip(blocks, edges, strict=True)):
        w = restore_columns(block.data, one_zero)
        for c in second:
            pos, sign = found[c]
            zeros[c].add(w[:, c], pos, sign, block.own_lo - block.first, block.own_hi - block.first, k == 0)
    out = tuple(replace(h, zero=zeros[c].result()) if c in zeros else h for c, h in enumerate(learned))
    out = tuple(h if _paddable(h, pad_frames) or _undershoot(h) > CHAIN_UNDERSHOOT else replace(h, zero=1.0)
                for h in out)
    for c, h in enumerate(out):
        _check_padding(h, pad_frames, f"{info.path}", info.channel_name(c))
    return out


def _paddable(highpass: Highpass, pad_frames: int) -> bool:
    """Whether the zero is undone within the blocks' padding: at or inside the unit circle (undone forwards),
    or outside it with its backward error ``r₀⁻ᵏ`` below ZERO_TAIL after ``pad_frames``."""
    return highpass.zero <= 1.0 or highpass.zero ** -pad_frames <= ZERO_TAIL


def _undershoot(highpass: Highpass) -> float:
    """How far below zero the coupling's step response goes, as a fraction of the step (over ten time
    constants of its slowest corner, at most one second)."""
    slowest_hz = min(highpass.corners_hz())
    n = int(min(10 / (2 * np.pi * slowest_hz), 1.0) * highpass.samplerate_hz)
    numerator = np.polymul([1.0, -1.0], [1.0, -highpass.zero])
    step = signal.lfilter(numerator, np.concatenate([[1.0], -np.asarray(highpass.coef)]), np.ones(n))
    return float(max(-step.min(), 0.0))


def _check_padding(highpass: Highpass, pad_frames: int, path: str, channel: str) -> None:
    """Refuse a zero outside the unit circle too slow for the blocks: undone backwards from each block's
    end, its error ``r₀⁻ᵏ`` of the level must fall below ZERO_TAIL over the ``pad_frames`` after the
    block's own frames."""
    if _paddable(highpass, pad_frames):
        return
    zero_hz = np.log(highpass.zero) * highpass.samplerate_hz / (2 * np.pi)
    need = int(np.ceil(-np.log(ZERO_TAIL) / np.log(highpass.zero)))
    raise PintimeError(f"{path}: the AC coupling on the {channel} channel has a zero at {zero_hz:.3g} Hz "
                       "(its step response undershoots more than a chain of high-passes can); undoing it "
                       f"needs {need} samples after each stretch read, more than the {pad_frames} pintime "
                       f"reads at {highpass.samplerate_hz:g} Hz: record at a lower sample rate "
                       f"(≤ {_highest_rate_hz(zero_hz, pad_frames):.0f} Hz)")


def _highest_rate_hz(zero_hz: float, pad_frames: int) -> float:
    """The sample rate up to which a zero of ``zero_hz`` decays to ZERO_TAIL over ``pad_frames``."""
    return 2 * np.pi * zero_hz * pad_frames / -np.log(ZERO_TAIL)


def check_restored(highpass: Highpass, restored: float, recorded: float, path: str, channel: str) -> None:
    """Refuse a channel whose learned coupling ``highpass``, undone, leaves a noise between edges
    (``restored``) more than RESTORED_NOISE_MAX times the recording's (``recorded``, at least the
    quantization's), where a coupling undone flattens the droop: it is no coupling the card has, and every
    edge located on the restoration would be wrong (an unknown noise, NaN, or none refuses nothing)."""
    ratio = restored / recorded if recorded > 0 else np.nan
    if ratio > RESTORED_NOISE_MAX:
        corners = " and ".join(f"{c:.3g}" for c in highpass.corners_hz())
        raise PintimeError(f"{path}: the AC coupling learned on the {channel} channel ({corners} Hz), "
                           f"undone, leaves {ratio:.3g}× the recording's noise between edges instead of "
                           "flat levels: the input's response after an edge is not one pintime models (a "
                           f"high-pass of order 1 or 2 after a filter settled in {GUARD_SAMPLES} samples)")
