"""A periodic signal too dense for an edge's shape to be learned alone: its whole period learned by folding,
and each edge located against it (docs/design.md §10).

A square wave faster than fs/244 puts every edge's neighbours inside its learning window, so no edge shows
its response alone (:mod:`pintime.locate.shape.train`, :mod:`pintime.locate.shape.blind`). A periodic signal
needs none: its samples, placed by the signal's phase ``φ`` (the period is no whole number of samples, so the
sample grid walks through every phase), trace one period of the recorded waveform ``W(φ)`` as finely as the
card's response, neighbours' ringing included. ``W`` is a periodic cubic B-spline learned by least squares
alternating with the line the edges lie on (straight, or a smooth spline where the edges show the period
drifting), as the calibration train's fit learns its template. Each edge is then located by fitting
``a + A·W`` shifted to the samples around it, as the template method fits a step; the line also shows the
ADC modulator's ripple, which is taken out. Every channel holding a periodic signal has its own ``W``.

What a periodic signal cannot tell. Through an unknown linear response only its harmonics are seen, and
they do not fix where in ``W`` an edge lies: differences between edges of one polarity are measured, the
offset between rising and falling edges is a convention. Each polarity's edge is placed at the
Gaussian-windowed centroid of ``W``'s slope around it, the same rule for both. At a 50 % duty that is exact
for any linear card (``W(φ + ½) = −W(φ)``: the falling edge sees the mirror image of the rising one); at
another duty the neighbours' ringing differs on the two sides, and how far the offset moves when the
centroid's window is halved is reported as the convention's uncertainty. Neighbours' jitter is not
modelled: ``W`` holds them where the period puts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from pintime.capture.wav import Block, WavInfo, iter_blocks
from pintime.compiled import kernel
from pintime.errors import PintimeError
from pintime.locate.detect import detect
from pintime.locate.locators.centroid import centroids
from pintime.locate.shape import train
from pintime.locate.shape.template import RIPPLE_HARMONICS, bspline_weights
from pintime.locate.stream.windows import windows

KNOT_CHOICES_SAMPLES = (train.KNOT_SAMPLES, 0.125, 0.25, 0.5)  # finest first, as blind learning's
# a knot spacing is used when every knot interval of the phase holds this many samples, and no two phases
# next to each other that the samples fall on are more than 1/KNOT_PER_GAP of it apart
SAMPLES_PER_KNOT = 16
KNOT_PER_GAP = 2.0
LEARN_PERIODS = 8192  # W is learned from up to this many periods (≥ 500 samples per coefficient)
LINE_KNOT_SAMPLES = 1024  # the line's knots are at least this far apart (23 ms at 44.1 kHz)
LEARN_ROUNDS = 4  # fold / locate / line alternations
LINE_BENDS = 10.0  # the seeds bend when the spline takes out this many times what noise would (F test)
STEPS = 8  # Gauss–Newton steps of each edge's fit from its seed (the steepest sample, or the line)
CENTROID_SIGMA_SAMPLES = 3.0  # the convention's window (as blind learning's seeds), at most a quarter
# of the fit's: wider, it reaches the neighbours' lobes (docs/design.md §13)
CENTROID_GRID = 16  # points per sample where the convention's centroid is evaluated
CENTROID_ITERATIONS = 30
BASELINE_PERIODS = 2  # the baseline under W (an AC coupling's settling, hum) is the residual's mean over this
CHUNK_PERIODS = 16  # the noise is the median of the fold's residual RMS over stretches this long
# W is learned from where the signal's mean level over BASELINE_PERIODS has settled within this fraction of
# its swing: a signal that starts during the recording moves an AC-coupled level for a second or two, and
# with it, through the slightest nonlinearity, its edges' shape (the `default` card's level 0.06 of the
# swing off at 0.3 s left W's fall − rise mismatch 0.02 sample; 0.002 at 1 s: 0.0006)
SETTLED_FRACTION = 0.005
MISFIT_CHANCE = 3.0  # a window's residual over the noise's (per degree of freedom) beyond chance (p ≪ 1e-4)
RIPPLE_POWER = 10.0  # a ripple's fit must take out this many times the noise's share (F test)
RIPPLE_STEPS = 2  # fixed-point steps from the fitted position to the edge's (the ripple's slope is ≪ 1)
HIGH_TIME_EDGES = 16  # a block's high time is checked against W's from this many high pulses
# ... and may differ by this much from W's at the block's own period: within it the edges' misfit raises
# their σ; beyond, they would be σs off (docs/design.md §13)
HIGH_TIME_TOLERANCE_SAMPLES = 0.1
MAX_HALF_SAMPLES = 24  # an edge's fit window reaches half-way to its nearest neighbour, at most this far
MIN_HALF_SAMPLES = 2  # ... and at least: 3 samples leave no timing past level and gain (10 kHz: σ = ∞)


@dataclass(frozen=True)
class Periodic:
    """One period ``W(φ)`` of a periodic signal, a periodic cubic B-spline over ``φ ∈ [0, 1)`` (FS), and
    where in it the signal's rising (``up``) and falling edges lie (fractions of the period)."""

    period_samples: float
    coef: np.ndarray  # one per knot interval of the period
    up_phase: float
    down_phase: float
    half_samples: int  # an edge's fit window: ±this many samples
    swing: float  # high − low level of W (FS)
    offset_sigma_samples: float  # uncertainty of the fall − rise offset's convention
    residual_rms: float  # of the fold's fit: the noise (FS)
    periods: int  # learned from this many
    carrier_per_sample: int = 0  # M: the ADC modulator's rate per sample whose ripple moves edges (0: none)
    ripple: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (a, b) per harmonic (samples)
    others: tuple[Periodic | None, ...] = ()  # the other channels' own (None: no periodic signal there)

    def crlb_s(self, time_s: np.ndarray, step: np.ndarray, channel: np.ndarray, noise_rms: tuple[float, ...],
               samplerate_hz: float) -> np.ndarray:
        """:meth:`crlb_samples` (in s) of edges on every channel, each against its channel's own period."""
        out = np.full(len(time_s), np.nan)
        for c, own in enumerate((self, *self.others)):
            here = channel == c
            if own is not None and here.any():
                out[here] = own.crlb_samples(time_s[here] * samplerate_hz, step[here], noise_rms[c])
        return out / samplerate_hz

    def ripple_at(self, position_samples: np.ndarray) -> np.ndarray:
        """How far the modulator's ripple moves edges at ``position_samples`` (samples; 0 without one):
        ``Σₖ aₖ·cos(2πkM·x) + bₖ·sin(2πkM·x)``."""
        return _ripple_columns(position_samples, self.carrier_per_sample) @ self.ripple

    def evaluate(self, phase: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``W`` and its slope per sample at ``phase`` (fractions of the period, any real)."""
        phase = np.asarray(phase, dtype=np.float64)
        out = np.empty((2, phase.size))
        _periodic_kernel(np.ascontiguousarray(self.coef), self.period_samples, phase.ravel(), out)
        return out[0].reshape(phase.shape), out[1].reshape(phase.shape)

    def locate(self, y: np.ndarray, seed: np.ndarray, falling: np.ndarray, noise_rms: float
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Position (samples from each window's centre), 1-sigma and gain ``A`` of the edges whose windows
        (``y``: samples ``−half_samples … half_samples`` about each one's centre) fit ``a + A·W`` shifted,
        from ``seed`` (samples from the centre). Variable projection: ``A``, ``a`` solved at each step."""
        m = np.arange(-self.half_samples, self.half_samples + 1, dtype=np.float64)
        at = np.where(falling, self.down_phase, self.up_phase)[:, None]
        tau = np.asarray(seed, dtype=np.float64).copy()
        for _ in range(STEPS):
            gain, info, grad = self._projected(y, at, m, tau)
            tau = tau + np.clip(grad / info, -0.5, 0.5)
        gain, info, _ = self._projected(y, at, m, tau)
        w = self._waveform(at, m, tau)[0]
        resid = y - y.mean(axis=1, keepdims=True) - gain[:, None] * (w - w.mean(axis=1, keepdims=True))
        misfit = np.sum(resid * resid, axis=1) / ((len(m) - 3) * noise_rms * noise_rms)
        # a window the period does not fit (the signal's first and last edges, which lack a neighbour W
        # holds; a glitch): σ scaled by the misfit where it stands beyond chance
        scale = np.where(misfit > MISFIT_CHANCE, np.sqrt(misfit), 1.0)
        true = tau
        for _ in range(RIPPLE_STEPS):  # the fit finds true + ripple(true): the ripple taken out
            true = tau - self.ripple_at(true)
        return true, scale * noise_rms / np.sqrt(info), gain

    def crlb_samples(self, position_samples: np.ndarray, step: np.ndarray, noise_rms: float) -> np.ndarray:
        """The Cramér–Rao bound (1-sigma, samples) of edges at ``position_samples`` whose steps (FS, the
        signal's sign) are ``step``, under white noise of ``noise_rms``: the fit's own σ (:meth:`locate`)."""
        m = np.arange(-self.half_samples, self.half_samples + 1, dtype=np.float64)
        at = np.where(step < 0, self.down_phase, self.up_phase)[:, None]
        tau = position_samples - np.rint(position_samples)
        j, _ = self._jacobian(at, m, tau, np.abs(step) / self.swing)
        return noise_rms / np.sqrt(np.sum(j * j, axis=1))

    def _waveform(self, at: np.ndarray, m: np.ndarray, tau: np.ndarray):
        """W and its slope per sample at the samples ``m`` of windows whose edges, at positions ``tau``,
        lie at phases ``at``."""
        return self.evaluate(at + (m[None, :] - tau[:, None]) / self.period_samples)

    def _projected(self, y: np.ndarray, at: np.ndarray, m: np.ndarray, tau: np.ndarray):
        """Per window at positions ``tau``: the gain, the timing information left after the level and
        gain (per unit noise variance), and the gradient of the fit's agreement in ``tau``."""
        wc = self._waveform(at, m, tau)[0]
        wc -= wc.mean(axis=1, keepdims=True)
        yc = y - y.mean(axis=1, keepdims=True)
        gain = np.sum(wc * yc, axis=1) / np.sum(wc * wc, axis=1)
        j, wc = self._jacobian(at, m, tau, gain)
        return gain, np.sum(j * j, axis=1), np.sum(j * (yc - gain[:, None] * wc), axis=1)

    def _jacobian(self, at: np.ndarray, m: np.ndarray, tau: np.ndarray, gain: np.ndarray):
        """The model's derivative in each window's position ``tau`` with its level and gain projected
        out, and ``W`` about its mean (:meth:`_waveform`)."""
        w, dw = self._waveform(at, m, tau)
        wc = w - w.mean(axis=1, keepdims=True)
        j = -gain[:, None] * (dw - dw.mean(axis=1, keepdims=True))
        j -= (np.sum(j * wc, axis=1) / np.sum(wc * wc, axis=1))[:, None] * wc
        return j, wc


@kernel
def _periodic_kernel(coef, period, phase, out):  # pragma: no cover (compiled)
    """``out[0]``, ``out[1]``: the periodic uniform cubic B-spline ``coef`` over one period and its slope
    per sample (``period`` samples a period) at each ``phase`` (the weights of :func:`bspline_weights`)."""
    k = len(coef)
    for j in range(len(phase)):
        x = (phase[j] - np.floor(phase[j])) * k
        i = min(int(x), k - 1)
        t = x - i
        c0, c1, c2, c3 = coef[(i - 1) % k], coef[i], coef[(i + 1) % k], coef[(i + 2) % k]
        s = 1.0 - t
        out[0, j] = (s * s * s * c0 + (3 * t * t * t - 6 * t * t + 4) * c1
                     + (-3 * t * t * t + 3 * t * t + 3 * t + 1) * c2 + t * t * t * c3) / 6.0
        out[1, j] = (-s * s * c0 + (3 * t * t - 4 * t) * c1 + (-3 * t * t + 2 * t + 1) * c2
                     + t * t * c3) * 0.5 * k / period


def periodic_rows(periodic: Periodic, block: Block, channel: int, pos: np.ndarray, sign: np.ndarray,
                  info: WavInfo, noise_rms: float) -> np.ndarray:
    """The edges at ``pos`` (absolute samples, signal signs ``sign``) of a block's ``channel`` located
    against ``periodic``: rows of position (samples), σ, step (FS, signed), channel and sign."""
    if channel:
        own = periodic.others[channel - 1]
        if own is None:
            raise PintimeError(f"{info.path}: the {info.channel_name(channel)} channel holds edges, but no "
                               "periodic signal where the measurement channel's was learned: record the "
                               "measurement channel alone (mono, or --reference none)")
        periodic = own
    h = np.arange(-periodic.half_samples, periodic.half_samples + 1)
    phase, sigma, gain = periodic.locate(windows(block, channel, pos, h, info), np.zeros(len(pos)), sign < 0,
                                         noise_rms)
    _check_high_time(periodic, pos + phase, sign, info)
    return np.stack([pos + phase, sigma, gain * periodic.swing * sign, np.full(len(pos), channel), sign])


def _check_high_time(periodic: Periodic, located: np.ndarray, sign: np.ndarray, info: WavInfo) -> None:
    """Refuse a block whose median high time (falling edge less the rising one before it) is not W's: the
    signal changed, and W holds each edge's neighbours where they no longer are (a 490 Hz PWM from 25 to
    50 % halfway, located against one period: 10× σ, exit status 0)."""
    falling = np.flatnonzero(sign[1:] < 0) + 1
    falling = falling[sign[falling - 1] > 0]
    if len(falling) < HIGH_TIME_EDGES:
        return
    rising = located[sign > 0]
    period = float(np.median(np.diff(rising))) if len(rising) > 1 else periodic.period_samples
    high = float(np.median(located[falling] - located[falling - 1]))
    expected = (periodic.down_phase - periodic.up_phase) % 1.0 * period  # a drifting period's, scaled
    if abs(high - expected) > HIGH_TIME_TOLERANCE_SAMPLES:
        at_s = located[falling[0]] / info.samplerate_hz
        raise PintimeError(f"{info.path}: the periodic signal changes by {at_s:.3f} s: its high time is "
                           f"{high:.3f} samples there, {expected:.3f} in the period learned (another duty "
                           "cycle or waveform); pintime learns one period a recording: record each setting "
                           "apart")


def learn_from_capture(info: WavInfo, start: int, stop: int, block_frames: int, pad_frames: int) -> Periodic:
    """:func:`learn_periodic` on the measurement channel's frames ``start … stop`` as recorded, read in
    blocks of ``block_frames`` (``pad_frames`` beyond each), and on every other channel that holds a
    periodic signal there (:attr:`Periodic.others`: the same wave through a second input, or its
    crosstalk). AC coupling keeps a periodic signal periodic, so ``W`` holds its droop, and nothing is
    undone: a coupling learned from a PWM output's quiet stretches and undone left a 352 Hz sinusoid 17×
    the noise in the samples of a 490 Hz one at 192 kHz."""
    parts = [np.asarray(block.data[block.own_lo - block.first:block.own_hi - block.first], dtype=np.float64)
             for block in iter_blocks(info, block_frames, pad_frames, start, stop)]
    x = np.concatenate(parts)
    try:
        first = learn_channel(x[:, 0], start)
        others = tuple(learn_channel(x[:, c], start) for c in range(1, x.shape[1]))
    except PintimeError as err:
        raise PintimeError(f"{info.path}: {err}") from None
    if first is None:
        raise PintimeError(f"{info.path}: no periodic signal found where its edges were seen")
    return replace(first, others=others)


def learn_channel(x: np.ndarray, start: int) -> Periodic | None:
    """:func:`learn_periodic` on one channel's samples ``x`` (``x[0]`` is frame ``start``), from where the
    signal's level has settled; None if they hold no periodic run of edges."""
    from scipy.ndimage import uniform_filter1d  # only a dense periodic signal needs it (start-up time)

    threshold = detect.edge_threshold(x, None)
    if threshold is None:
        return None
    pos, strength = detect.find_steps(x, threshold)
    run = detect.find_periodic(pos, np.sign(strength))
    if run is None:
        return None
    pos, sign, swing = pos[run], np.sign(strength[run]), float(np.median(np.abs(strength[run])))
    level = uniform_filter1d(x, round(BASELINE_PERIODS * np.median(pos[2:] - pos[:-2])), mode="nearest")
    level -= np.median(level[pos[0]:pos[-1]])
    settled = pos[0] + int(np.argmax(np.abs(level[pos[0]:pos[-1]]) <= SETTLED_FRACTION * swing))
    keep = (pos >= settled) & (pos + train.WINDOW[0] >= 0) & (pos + train.WINDOW[-1] < len(x))
    pos, sign = pos[keep], sign[keep]
    # seeds without a sub-sample bias (centroid.centroids): the steepest samples' rounding, slow where the
    # period is nearly whole samples, would look like a bend to the choice of line below. Their window
    # stays within a quarter of the edges' spacing: 3 samples summed a 5 kHz wave's neighbours (4.4 apart)
    # to nothing. A seed that finds no centroid is its steepest sample.
    with np.errstate(divide="ignore", invalid="ignore"):
        seed = centroids(x[pos[:, None] + train.WINDOW], np.zeros(len(pos)),
                         min(CENTROID_SIGMA_SAMPLES, detect.spacing_samples(pos) / 4))
    return learn_periodic(x, start, pos + np.where(np.abs(seed) < 1, seed, 0.0) + start, sign)


def learn_periodic(x: np.ndarray, first: int, pos: np.ndarray, sign: np.ndarray) -> Periodic:
    """:class:`Periodic` from the samples ``x`` (``x[0]`` is sample ``first``) holding the periodic run of
    edges at ``pos`` (absolute samples, sub-sample seeds) with signal signs ``sign`` (:func:`find_periodic`).

    Raises PintimeError when the phases the samples fall on leave the waveform undetermined (a period
    that is a whole number of samples, as when the signal's clock is the card's own).
    """
    pos, sign = pos[:2 * LEARN_PERIODS], sign[:2 * LEARN_PERIODS]
    falling = sign < 0
    period_index = (np.arange(len(pos)) + int(falling[0])) // 2  # an up edge starts each period
    spacing = detect.spacing_samples(pos)
    half = int(min(MAX_HALF_SAMPLES, np.floor(spacing / 2)))
    if half < MIN_HALF_SAMPLES:
        raise PintimeError(f"the periodic signal's edges are {spacing:.1f} samples apart, too close to "
                           f"locate (it needs {2 * MIN_HALF_SAMPLES}: a square wave up to "
                           f"1/{4 * MIN_HALF_SAMPLES} of the sample rate, 5.5 kHz at 44.1 kHz)")
    period = np.polyfit(period_index, pos, 1)[0]
    every = max(int(np.ceil(LINE_KNOT_SAMPLES / period)), int(train.MIN_TURNS * _covering_periods(period)))
    v = _line_basis(falling, every, period_index)
    straight = np.column_stack([np.ones(len(pos)), period_index, falling]).astype(np.float64)
    rss = [float(np.sum((pos - d @ _solve(d, pos)) ** 2)) for d in (straight, v)]
    # the spline only where the seeds bend: its freedom trades against W where the sample grid walks
    # slowly (a steady 1 kHz wave at 48 kHz: after 4 rounds the noise estimate 1.7× the straight line's)
    if not (rss[0] - rss[1]) / max(1, v.shape[1] - 3) > LINE_BENDS * rss[1] / max(1, len(pos) - v.shape[1]):
        v = straight
    line = _solve(v, pos)
    centre = np.rint(pos).astype(np.int64)
    inside = (centre - half - first >= 0) & (centre + half - first < len(x))
    y = x[(centre[inside] - first)[:, None] + np.arange(-half, half + 1)]
    n = np.arange(max(int(np.ceil(pos[0] + period)), first), min(int(pos[-1] - period), first + len(x)))
    baseline = np.zeros(len(n))
    for _ in range(LEARN_ROUNDS):
        periodic, baseline = _fold(x[n - first], n, v @ line, period_index, falling, half, baseline)
        tau, _, _ = periodic.locate(y, (v @ line - centre)[inside], falling[inside], 1.0)
        line = _solve(v[inside], tau + centre[inside])
    periodic = _placed(_fold(x[n - first], n, v @ line, period_index, falling, half, baseline)[0])
    tau, _, _ = periodic.locate(y, (v @ line - centre)[inside], falling[inside], 1.0)
    return _with_ripple(periodic, tau + centre[inside], v[inside])


def _ripple_columns(position_samples: np.ndarray, carrier_per_sample: int) -> np.ndarray:
    """cos and sin of ``2πkM·x`` for the harmonics k of the modulator's rate M (no columns for M = 0)."""
    if not carrier_per_sample:
        return np.zeros((len(position_samples), 0))
    angle = 2 * np.pi * carrier_per_sample * np.mod(position_samples, 1.0)
    return np.column_stack([f(k * angle) for k in range(1, RIPPLE_HARMONICS + 1) for f in (np.cos, np.sin)])


def _with_ripple(periodic: Periodic, located: np.ndarray, v: np.ndarray) -> Periodic:
    """``periodic`` with the ripple of a delta-sigma modulator's grid (as in
    :class:`pintime.locate.shape.template.Template`) if its edges at ``located`` (samples) show one: their
    departures from the line (design ``v``) fitted by harmonics of each candidate modulator rate M, the
    rate kept whose fit takes out RIPPLE_POWER times what the noise would (an F test). The ripple moves
    each edge by a function of its phase against the modulator's grid, exactly as a shifted edge would; a
    periodic signal's line tells them apart, where isolated edges cannot (:mod:`pintime.locate.shape.blind`).
    1 kHz at 192 kHz: 7.9× the bound on the `wide-filter` card, 2.5× on `default`; 0.6× and 1.0× with
    it taken out."""
    line_only = located - v @ _solve(v, located)
    rss = float(line_only @ line_only)
    best = (rss, 0, np.zeros(0))
    for carrier in train.RIPPLE_RATES:
        design = np.column_stack([v, _ripple_columns(located, carrier)])
        coef = np.linalg.lstsq(design, located, rcond=None)[0]  # the ripple may all but match the line
        resid = located - design @ coef
        if float(resid @ resid) < best[0]:
            best = (float(resid @ resid), carrier, coef[v.shape[1]:])
    dof = max(1, len(located) - v.shape[1] - 2 * RIPPLE_HARMONICS)
    if rss - best[0] <= RIPPLE_POWER * 2 * RIPPLE_HARMONICS * best[0] / dof:
        return periodic
    return replace(periodic, carrier_per_sample=best[1], ripple=best[2])


def _line_basis(falling: np.ndarray, every: int, period_index: np.ndarray) -> np.ndarray:
    """Design of the run's edge positions: a uniform cubic B-spline in the period index, knots ``every``
    periods apart, then the falling edges' offset (last column). Smooth, so that a drifting period (an RC
    oscillator's, 10⁻⁴ in 10 s) is followed without kinks: a piecewise-linear line bending as often traded
    against W warped along the sample grid (edges 55× their σ at 48 kHz)."""
    k = period_index / every
    intervals = max(1, int(np.ceil(k[-1])))  # the last edge at the end of the last interval, not past it
    i = np.minimum(k.astype(np.int64), intervals - 1)
    w, _ = bspline_weights(k - i)
    basis = np.zeros((len(k), intervals + 3))
    for j in range(4):
        basis[np.arange(len(k)), i + j] = w[:, j]
    return np.column_stack([basis, falling.astype(np.float64)])


def _covering_periods(period_samples: float) -> int:
    """How many periods it takes the sample grid to fall on every sub-sample phase of the signal, no two
    next to each other more than half the finest knot spacing apart (at most :data:`LEARN_PERIODS`).

    The line's knots must be further apart than this: within a shorter stretch the samples see ``W`` only
    on a comb of phases (a period of 19.2 samples, 2.5 kHz at 48 kHz: 0.2 sample apart, the comb drifting
    through its spacing in 100 periods), and a line that bends at that pace trades against ``W`` warped
    along the comb (knots 54 periods apart left edges 64× their σ)."""
    n, gap = 16, KNOT_CHOICES_SAMPLES[0] / KNOT_PER_GAP
    while n < LEARN_PERIODS and _widest_gap(np.arange(n) * period_samples) > gap:
        n *= 2
    return n


def _widest_gap(phase: np.ndarray) -> float:
    """The widest gap between neighbouring values of ``phase`` modulo 1 (around the circle)."""
    ordered = np.sort(np.mod(phase, 1.0))
    return float(np.max(np.diff(ordered, append=ordered[0] + 1.0)))


def _solve(v: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Least-squares line ``v @ line ≈ pos`` (normal equations: a few columns, well conditioned)."""
    return np.linalg.solve(v.T @ v, v.T @ pos)


def _fold(y: np.ndarray, n: np.ndarray, at: np.ndarray, period_index: np.ndarray, falling: np.ndarray,
          half: int, baseline: np.ndarray) -> tuple[Periodic, np.ndarray]:
    """``W`` fitted to the samples ``y`` (sample indices ``n``) less their ``baseline``, each at the phase
    the run's line (``at``: where it puts each edge) gives it, with the finest knot spacing the phases
    determine; then the baseline under the samples (their residual's mean over BASELINE_PERIODS)."""
    from scipy import sparse  # only a dense periodic signal needs these (start-up time)
    from scipy.ndimage import uniform_filter1d
    from scipy.sparse.linalg import spsolve

    # every period from the run's first rising edge to its last, and where the line puts that edge
    periods = np.arange(period_index[~falling][0], period_index[~falling][-1] + 1)
    up = np.interp(periods, period_index[~falling], at[~falling])
    period = float((up[-1] - up[0]) / (len(up) - 1))
    frac = np.mod(np.interp(n, up, periods), 1.0)
    widest = _widest_gap(frac) * period  # samples between the phases the samples fall on
    for knot in KNOT_CHOICES_SAMPLES:
        k = int(np.ceil(period / knot))
        if knot >= KNOT_PER_GAP * widest and \
                np.bincount((frac * k).astype(np.int64), minlength=k)[:k].min() >= SAMPLES_PER_KNOT:
            break
    else:
        raise PintimeError(f"the signal's period is {period:.6f} samples, so nearly a whole number of them "
                           "that the samples fall on too few of its phases to trace its waveform: record "
                           "for longer, or at another sample rate")
    t = frac * k
    i = np.minimum(t.astype(np.int64), k - 1)
    w, _ = bspline_weights(t - i)
    design = sparse.csr_matrix((w.ravel(), (np.repeat(np.arange(len(n)), 4),
                                            np.mod(i[:, None] + np.arange(-1, 3), k).ravel())),
                               shape=(len(n), k))
    coef = spsolve((design.T @ design).tocsc(), design.T @ (y - baseline))
    resid = y - design @ coef
    baseline = uniform_filter1d(resid, round(BASELINE_PERIODS * period), mode="nearest")
    # the noise as an edge's fit sees it: about the level of its window (a slow tone, hum, a modulator's
    # idle tone under a PWM output's DC are the fit's level, not its noise: docs/design.md §13)
    length = 2 * half + 1
    resid -= uniform_filter1d(resid, length, mode="nearest")
    size = round(CHUNK_PERIODS * period)
    chunk = np.sqrt(np.mean(resid[:len(n) // size * size].reshape(-1, size) ** 2, axis=1))
    rms = float(np.median(chunk)) * np.sqrt(length / (length - 1))  # robust to a stretch with more (a click)
    offset = float(np.median(at[falling] - np.interp(period_index[falling], periods, up))) / period
    return Periodic(period, np.asarray(coef), 0.0, offset, half, 0.0, 0.0, rms, len(up) - 1), baseline


def _placed(periodic: Periodic) -> Periodic:
    """``periodic`` with each polarity's edge at the centroid of ``W``'s slope about where its line puts
    it, the waveform's swing, and the uncertainty of that convention's fall − rise offset: how far the
    offset moves when the centroid's window is halved (not at all where the falling edge is the rising
    one's mirror image, as at a 50 % duty)."""
    p = periodic.period_samples
    sigma = min(CENTROID_SIGMA_SAMPLES, periodic.half_samples / 4)  # within the window: no neighbour's lobe

    def centroid(at: float, sense: float, width: float) -> float:
        u = np.arange(-periodic.half_samples * CENTROID_GRID, periodic.half_samples * CENTROID_GRID + 1
                      ) / CENTROID_GRID
        c = 0.0
        for _ in range(CENTROID_ITERATIONS):
            weight = np.exp(-0.5 * (u / width) ** 2) * sense * periodic.evaluate(at + (u + c) / p)[1]
            c += float(np.sum(weight * u) / np.sum(weight))
        return at + c / p

    up, down = (centroid(periodic.up_phase, 1.0, sigma), centroid(periodic.down_phase, -1.0, sigma))
    narrow = centroid(periodic.down_phase, -1.0, sigma / 2) - centroid(periodic.up_phase, 1.0, sigma / 2)
    levels = periodic.evaluate(np.linspace(0.0, 1.0, 64 * int(np.ceil(p)), endpoint=False))[0]
    return Periodic(p, periodic.coef, up % 1.0, down % 1.0, periodic.half_samples,
                    float(np.percentile(levels, 99) - np.percentile(levels, 1)),
                    abs((down - up) - narrow) * p, periodic.residual_rms, periodic.periods)
