"""Clock calibration: the capture clock against the MCU clock, from the 1 s reference or the calibration
train.

The reference pin toggles every ``F_CPU / 2`` cycles (FORMAT.md §1), so its edge k lies at
``t0 + k · h + d · [edge k falls]`` in the source time base, with ``h`` half an MCU second and ``d`` the
fall-minus-rise asymmetry of the pin and the capture chain. A weighted least-squares fit of all edges gives
``h`` with an uncertainty that shrinks as (number of edges)^-1.5, far better than timing one interval.

Without a reference (a mono recording, or a second channel put to other use) the measurement pin's own
calibration train gives the same line: its edge i lies exactly ``i · period_cycles`` cycles after the first
(FORMAT.md §4, CAL frame), so the fitted step is ``period_cycles`` MCU cycles in source units. It measures
the rate over the train's second only, which is all a pulse width needs: a rate off by 10⁻⁸ (a card's
wander over minutes) moves a 10 ms pulse by 0.1 ps.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from pintime.edges import MEASUREMENT_CHANNEL, REFERENCE_CHANNEL, Edges, is_reference, nearest_index
from pintime.errors import PintimeError
from pintime.frames import ScaledTimes, cut_trains, decode_frames
from pintime.lost_audio import near_spans

# Beyond this the capture's time base is wrong, not its clock: sound cards are within ±50 ppm
# (docs/design.md §10) and the MCU's clock within ±0.5 % even on a ceramic resonator (±1 % on a
# user-calibrated RC oscillator), while the usual mistakes are far larger: a VCD timescale off by 10× or
# 1000×, a 44.1 kHz recording taken for 48 kHz (−8.1 %), a RUN frame's F_CPU that is not the clock the
# reference counts.
MAX_RATE_PPM = 20_000.0
# The reference and the measurement pin's calibration train count one MCU clock on one card clock, so after
# calibration the train's period is nominal but for the card clock's wander between the seconds each
# averages (10⁻⁹–5·10⁻⁸ at 1 s, docs/design.md §10: hundredths of a ppm). A disagreement surely beyond this
# (TRAIN_Z standard deviations of the check) is two card clocks: a reference recorded in another take
# (crystals differ by tens of ppm, paper §6), and every time the reference calibrates is off by as much.
TRAIN_AGREEMENT_PPM = 1.0
TRAIN_Z = 8.0
PERIOD_TOLERANCE = 0.01  # a cut train's edges a period (to 1 %: any card's ppm) from a neighbour are its own


@dataclass(frozen=True)
class LineFit:
    """Edge times on a line: ``t = t0 + step · k + fall_offset · [falling]``, with 1-sigma uncertainties."""

    t0: float
    step: float
    step_sigma: float
    fall_offset: float
    fall_offset_sigma: float
    residual_rms: float
    n_edges: int


@dataclass(frozen=True)
class Clock:
    """Conversion from a source time base to MCU time, from the reference fit."""

    units_per_mcu_s: float  # source time units per second of MCU time (twice the fitted half period)
    units_per_mcu_s_sigma: float
    fit: LineFit  # the fit of the edges it comes from (reference or calibration train), in source units
    unit_s: float | None  # seconds per source unit, nominal (1/f_cpu for a cycle source once known)
    source: str = "reference"  # what the rate comes from: "reference" or "calibration train"

    @property
    def rate_ppm(self) -> float | None:
        """How fast the capture clock runs against the MCU clock, in ppm (None if ``unit_s`` is unknown)."""
        if self.unit_s is None:
            return None
        return (self.units_per_mcu_s * self.unit_s - 1.0) * 1e6

    @property
    def rate_ppm_sigma(self) -> float | None:
        """1-sigma uncertainty of ``rate_ppm``."""
        if self.unit_s is None:
            return None
        return self.units_per_mcu_s_sigma * self.unit_s * 1e6

    @property
    def us_per_unit(self) -> float:
        """MCU µs per source time unit."""
        return 1e6 / self.units_per_mcu_s

    @property
    def residual_rms_us(self) -> float:
        """RMS of the fitted edges (reference or train) about their line, in MCU µs."""
        return self.fit.residual_rms * self.us_per_unit

    def to_us(self, t: np.ndarray) -> np.ndarray:
        """Source time → MCU µs (linear, no offset: source time 0 stays 0)."""
        return np.asarray(t, dtype=np.float64) * self.us_per_unit

    def to_cycles(self, t: np.ndarray, f_cpu_hz: int) -> np.ndarray:
        """Source time → MCU cycles, given the MCU clock frequency (from a RUN frame)."""
        return np.asarray(t, dtype=np.float64) * (f_cpu_hz / self.units_per_mcu_s)

    def with_unit(self, unit_s: float) -> Clock:
        """The same calibration with a known nominal source unit (e.g. 1/f_cpu for an edge list)."""
        return replace(self, unit_s=unit_s)


def fit_edge_line(time: np.ndarray, index: np.ndarray, falling: np.ndarray,
                  sigma: np.ndarray | None = None, segment: np.ndarray | None = None) -> LineFit:
    """Weighted least-squares fit of ``time = t0[segment] + step · index + fall_offset · falling``.

    Weights are ``1/sigma²`` when every sigma is positive, else equal. The covariance is
    ``(AᵀWA)⁻¹`` scaled by the reduced χ² (and, with real sigmas, by at least 1: the given sigmas are a
    floor, clock wander only adds to them). ``segment`` (default: all 0) numbers stretches of the time base
    with offsets of their own (recordings with gaps); ``t0`` is the first one's.
    """
    n = len(time)
    if n < 3:
        raise PintimeError(f"clock calibration needs at least 3 reference edges, found {n}")
    weighted = sigma is not None and bool(np.all(np.asarray(sigma) > 0))
    w = 1.0 / np.asarray(sigma, dtype=np.float64) if weighted else np.ones(n)
    _, seg = np.unique(np.zeros(n) if segment is None else segment, return_inverse=True)
    offsets = (seg[:, None] == np.arange(seg.max() + 1)[None, :]).astype(np.float64)  # one column each
    # centre index and time: nearly orthogonal columns, and no rounding of large absolute times
    k_mid, t_mid = float(np.mean(index)), float(np.median(time))
    design = np.column_stack([offsets, index - k_mid, falling.astype(np.float64)])
    # min ‖W^½ (A p − (t − t_mid))‖²  solved by lstsq (SVD) on the weighted system
    params, _, rank, _ = np.linalg.lstsq(design * w[:, None], (time - t_mid) * w, rcond=None)
    n_par = design.shape[1]
    if rank < n_par:
        raise PintimeError("clock calibration: reference edges must include both rising and falling edges"
                           + (" and two edges between recording gaps" if n_par > 3 else ""))
    residual = time - t_mid - design @ params
    dof = n - n_par
    chi2 = float(np.sum((residual * w) ** 2))
    scale = chi2 / dof if dof > 0 else (1.0 if weighted else np.nan)
    if weighted:
        scale = max(scale, 1.0)
    cov = np.linalg.inv((design * w[:, None]).T @ (design * w[:, None])) * scale
    step = float(params[-2])
    return LineFit(t0=float(t_mid + params[0] - step * k_mid), step=step,
                   step_sigma=float(np.sqrt(cov[-2, -2])),
                   fall_offset=float(params[-1]), fall_offset_sigma=float(np.sqrt(cov[-1, -1])),
                   residual_rms=float(np.sqrt(np.mean(residual ** 2))), n_edges=n)


def edge_indices(time: np.ndarray, polarity: np.ndarray, what: str,
                 segment: np.ndarray | None = None) -> np.ndarray:
    """Number edges of a regular square wave 0, 1, 2 … from their spacing, allowing missing edges.

    ``segment`` (ascending, default all 0) marks stretches between recording gaps: across a gap the
    number of edges lost is unknown, so each stretch only counts on from the last (its own offset in
    :func:`fit_edge_line` absorbs the difference).

    Raises PintimeError when the edges are not evenly spaced alternating edges.
    """
    if len(time) < 3:
        raise PintimeError(f"{what}: needs at least 3 edges, found {len(time)}")
    seg = np.zeros(len(time), dtype=np.int64) if segment is None else np.asarray(segment)
    spacing = np.diff(time)
    same = seg[1:] == seg[:-1]
    if not same.any():
        raise PintimeError(f"{what}: no two edges between recording gaps")
    step = float(np.median(spacing[same]))
    if step <= 0:
        raise PintimeError(f"{what}: edges are not evenly spaced")
    steps = np.rint(spacing / step)
    if np.any(same & ((steps < 1) | (np.abs(spacing / step - steps) > 0.1))):
        raise PintimeError(f"{what}: edges are not evenly spaced")
    index = np.concatenate(([0], np.cumsum(np.where(same, steps, 1)))).astype(np.int64)
    first = np.flatnonzero(np.concatenate(([True], ~same)))[np.cumsum(np.concatenate(([True], ~same))) - 1]
    expected = polarity[first] * np.where((index - index[first]) % 2 == 0, 1, -1)
    if np.any(polarity != expected):
        raise PintimeError(f"{what}: edges do not alternate rising/falling")
    return index


def calibrate(edges: Edges, gaps: np.ndarray | None = None) -> Clock:
    """Fit every reference-channel edge (half an MCU second apart) and build the time conversion.

    ``gaps`` (ascending, in the edges' time base): where a recording lost audio; each stretch between them
    gets an offset of its own, the rate is common to all.

    Raises
    ------
    PintimeError
        Fewer than 3 reference edges, or a reference channel that is not a steady square wave.
    """
    ref = edges.on(REFERENCE_CHANNEL)
    if len(ref.time) < 3:
        raise PintimeError(f"{edges.source}: clock calibration needs at least 3 edges on the reference "
                           f"channel (right / channel 1), found {len(ref.time)}")
    segment = np.searchsorted(np.zeros(0) if gaps is None else gaps, ref.time)
    try:
        index = edge_indices(ref.time, ref.polarity, f"{edges.source}: reference channel", segment)
    except PintimeError as e:
        if copies_the_pin(edges):
            raise PintimeError(f"{edges.source}: the reference channel holds the measurement pin's own edges "
                               "(a mono input recorded as two identical channels?): --reference none reads "
                               "the capture without a reference") from None
        raise PintimeError(f"{e}: not a 1 s clock reference (another signal on that channel? "
                           "--reference none reads the capture without one; a resistor-ladder capture "
                           "needs --ladder)") from None
    fit = fit_edge_line(ref.time, index, ref.polarity < 0, ref.sigma, segment)
    return Clock(units_per_mcu_s=2.0 * fit.step, units_per_mcu_s_sigma=2.0 * fit.step_sigma, fit=fit,
                 unit_s=edges.unit_s)


def copies_the_pin(edges: Edges) -> bool:
    """Whether nine in ten reference edges have a measurement edge within 1 µs, all of their polarity or all
    of the other (the same signal on both channels, maybe inverted); never for a time base of unknown
    unit."""
    ref, pin = edges.on(REFERENCE_CHANNEL), edges.on(MEASUREMENT_CHANNEL)
    if edges.unit_s is None or len(pin.time) < 2:
        return False
    k = nearest_index(pin.time, ref.time)
    near = np.abs(ref.time - pin.time[k]) < 1e-6 / edges.unit_s
    same = ref.polarity == pin.polarity[k]
    return bool(max(np.count_nonzero(near & same), np.count_nonzero(near & ~same)) >= 0.9 * len(ref.time))


def not_a_reference(edges: Edges, channel_name: str) -> str | None:
    """Why the reference channel of ``edges`` (the file's ``channel_name`` one) can be no 1 s clock
    reference: it repeats the measurement pin, or holds too few edges to calibrate; None otherwise (another
    signal there is left to :func:`calibrate` to refuse, naming the options)."""
    ref = edges.on(REFERENCE_CHANNEL).time
    if len(ref) == 0 or is_reference(ref):
        return None
    if copies_the_pin(edges):
        return f"the {channel_name} channel repeats the measurement pin, as a mono input recorded as two does"
    if len(ref) < 3:  # as calibrate needs
        return f"the {channel_name} channel's {len(ref)} edge(s) are too few for a 1 s clock reference"
    return None


def calibrate_from_train(edges: Edges, cuts_s: np.ndarray | None = None, guard_s: float = 0.0) -> Clock:
    """The clock from the measurement pin's first calibration train, for captures without a reference.

    The frames are decoded in nominal µs first (every tolerance of the format is far wider than a card's
    clock error, FORMAT.md §2), which finds the CAL frame and the RUN frame's F_CPU. ``cuts_s`` (rows of
    (start, end), ascending, :func:`pintime.lost_audio.cut_spans`) are where the capture lost or gained
    audio: a train they cross is fitted stretch by stretch, each with an offset of its own, without its
    edges inside a cut or within ``guard_s`` of one; a train whose edges a gap took is not decoded at all.

    Raises
    ------
    PintimeError
        A source of unknown time unit (an edge list in cycles needs its reference), or no RUN frame or no
        calibration train of at least 3 edges decoded.
    """
    if edges.unit_s is None:
        raise PintimeError(f"{edges.source}: no reference channel, and the time unit is unknown: the MCU "
                           "clock cannot be calibrated")
    meas = edges.on(MEASUREMENT_CHANNEL)
    time_us = ScaledTimes(meas.time, edges.unit_s * 1e6)
    decode = decode_frames(time_us, meas.polarity)
    runs, train = decode.of_kind("run"), decode.calibration_train()
    cuts = np.zeros((0, 2)) if cuts_s is None else np.asarray(cuts_s, dtype=np.float64).reshape(-1, 2)
    polarity = -meas.polarity if decode.inverted else meas.polarity
    cut_train = train is None and len(cuts) > 0 and bool(runs)
    if cut_train:  # lost audio inside the train: its header still tells its period, its edges their times
        train = next(iter(cut_trains(time_us, polarity)), None)
    if not runs or train is None:
        cut = f" (lost audio at {', '.join(f'{a:.4f}' for a, _ in cuts)} s may cut it)" if len(cuts) else ""
        raise PintimeError(f"{edges.source}: no reference channel (right / channel 1) and no "
                           f"{'RUN frame' if not runs else 'calibration train'} decoded{cut}: the MCU clock "
                           "cannot be calibrated")
    f_cpu_hz, g = runs[0].fields["f_cpu_hz"], train.group
    time = meas.time[g]
    keep = ~near_spans(time, cuts, guard_s)
    falling = polarity[g] < 0
    index = np.arange(len(g))
    if cut_train:  # indices from the nominal period (a stretch's own offset takes the lost audio's), and
        # only edges a period from a neighbour: a QUIET the cut took joins the next frame's edges to it
        period = train.fields["period_cycles"] / f_cpu_hz / edges.unit_s
        index = np.rint((time - time[0]) / period).astype(np.int64)
        near = np.abs(np.diff(time) / period - 1) < PERIOD_TOLERANCE
        keep &= np.concatenate([[False], near]) | np.concatenate([near, [False]])
    fit = fit_edge_line(time[keep], index[keep], falling[keep], meas.sigma[g][keep],
                        np.searchsorted(cuts[:, 1], time[keep]))
    cycles_per_s = f_cpu_hz / train.fields["period_cycles"]  # fitted steps per MCU second
    return Clock(units_per_mcu_s=fit.step * cycles_per_s, units_per_mcu_s_sigma=fit.step_sigma * cycles_per_s,
                 fit=fit, unit_s=edges.unit_s, source="calibration train")


def calibration_train_ppm(time_us: np.ndarray, polarity: np.ndarray, period_cycles: int,
                          f_cpu_hz: int) -> tuple[float, float, float]:
    """Check the clock with a CAL frame's train: (period error in ppm, its 1-sigma uncertainty, the second
    half's period less the first half's, ppm).

    After calibration the train's edges must be ``period_cycles / f_cpu_hz`` s apart; the fitted period's
    relative deviation is what is left of the clock error over the train (0 within the uncertainty, but
    for the clock's wander: the ratio of the two clocks moves, so a train and a reference spanning other
    seconds see different mean ratios; the halves' difference shows by how much over the train's length).
    """
    index = edge_indices(time_us, polarity, "calibration train")
    nominal_us = period_cycles * 1e6 / f_cpu_hz
    fit = fit_edge_line(time_us, index, polarity < 0)
    second = index >= np.median(index)
    halves = [fit_edge_line(time_us[h], index[h], polarity[h] < 0).step for h in (~second, second)]
    return ((fit.step / nominal_us - 1.0) * 1e6, fit.step_sigma / nominal_us * 1e6,
            (halves[1] - halves[0]) / nominal_us * 1e6)


def train_fall_minus_rise_us(time_us: np.ndarray, polarity: np.ndarray) -> tuple[float, float]:
    """The measurement pin's own fall-minus-rise offset from a CAL frame's train (µs, ±1σ): its edges lie
    on a line but for this offset on every falling edge, the pin driver's and the card's asymmetry (and the
    edge locator's between rising and falling edges). A low's true width is its measured width plus the
    offset, a high's less it.

    Each falling edge is taken against the mean of the rising edges either side of it, so the clock's rate
    and its wander (nanoseconds over the train's seconds, but linear over two periods) cancel; the offset
    is the mean of these differences. Neighbouring differences share a rising edge, so for equal
    independent edge errors the mean's variance is 4/3 of a difference's variance over their number.

    Raises PintimeError when the train is not evenly spaced alternating edges or holds fewer than two
    falling edges between rising ones."""
    index = edge_indices(time_us, polarity, "calibration train")
    rising, step = polarity > 0, np.diff(index)
    mid = np.flatnonzero(~rising[1:-1] & rising[:-2] & rising[2:] & (step[:-1] == 1) & (step[1:] == 1)) + 1
    if len(mid) < 2:
        raise PintimeError("calibration train: fewer than two falling edges between rising ones")
    d = time_us[mid] - (time_us[mid - 1] + time_us[mid + 1]) / 2
    return float(np.mean(d)), float(np.std(d, ddof=1) * np.sqrt(4 / (3 * len(d))))




def check_train_agrees(train_ppm: tuple[float, float, float] | None, source: str) -> None:
    """PintimeError when the calibration train's period after a reference's calibration
    (:func:`calibration_train_ppm`) is off by more than TRAIN_AGREEMENT_PPM beyond TRAIN_Z of its σ: the
    reference channel was recorded by another card clock than the pin's (another take mixed in)."""
    if train_ppm is None or abs(train_ppm[0]) - TRAIN_Z * train_ppm[1] <= TRAIN_AGREEMENT_PPM:
        return
    raise PintimeError(f"{source}: the calibration train's period after calibration by the 1 s reference is "
                       f"{train_ppm[0]:+.4f} ± {train_ppm[1]:.4f} ppm off (one recording's clocks agree to "
                       f"{TRAIN_AGREEMENT_PPM:g} ppm): the reference channel was not recorded with this "
                       "pin (another take's?); --reference none calibrates from the train alone")


def check_rate(clock: Clock, f_cpu_hz: int, source: str) -> None:
    """PintimeError naming both clocks when the capture's time base and the MCU's differ by more than
    MAX_RATE_PPM (the source's nominal unit must be known, see :meth:`Clock.with_unit`)."""
    ppm = clock.rate_ppm
    if ppm is None or clock.unit_s is None or abs(ppm) <= MAX_RATE_PPM:
        return
    seconds = clock.units_per_mcu_s * clock.unit_s
    raise PintimeError(f"{source}: 1 s of the clock reference (F_CPU {f_cpu_hz} Hz from the RUN frame) spans "
                       f"{clock.units_per_mcu_s:.9g} units of {clock.unit_s:.3g} s = {seconds:.6g} s of the "
                       f"capture ({ppm:+.0f} ppm, limit ±{MAX_RATE_PPM:.0f}): wrong VCD timescale, sample "
                       "rate or F_CPU")
