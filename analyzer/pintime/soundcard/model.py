"""The sound-card capture model: what a card records when a GPIO pin toggles.

The model is a chain of named physical effects, applied in this order to each channel:

1. **attenuator** — the pin swings ``pin_swing_v``; a resistive divider (``attenuator_ratio``) brings it to
   line level; the card's full scale is ``full_scale_v`` (peak). Each edge is a step of ±``step_fs``.
2. **driver** — the pin's output stage: a propagation delay (``rise_delay_s`` / ``fall_delay_s``) and a
   linear ramp (``rise_time_s`` / ``fall_time_s``, 0 → 100 %). Their difference is the rise-vs-fall
   asymmetry (the reason for the paper's consistent polarity, §4).
3. **latency** — a constant ``latency_s`` for both channels plus ``right_delay_s`` for the right channel
   (nonzero only where a card has two ADCs).
4. **sample clock** — the card samples at ``samplerate_hz · (1 + clock_ppm·1e-6)`` *as measured by the MCU's
   clock*: only the ratio of the two crystals matters (an MCU crystal at +a ppm and a card at +b ppm give
   ``clock_ppm ≈ b − a``). Slow wander of that ratio (Allan deviation ``wander_adev_1s`` at 1 s) and white
   ``jitter_rms_s`` of each output sample instant.
5. **analog front end** — low-pass poles ``frontend_poles_hz`` (divider source resistance × cable
   capacitance, the card's anti-alias RC).
6. **polarity** — ``inverted`` for cards whose input stage inverts.
7. **ADC** — the delta-sigma modulator samples the analog signal at ``modulator_oversampling · fs``; a
   decimation FIR (:mod:`pintime.soundcard.decimation`: ``SHARP`` or ``WIDE``, linear-phase, or
   ``SHARP_MINIMUM_PHASE``, designed at the modulator rate) produces one output per card sample. Its band
   edges are fractions of fs and its length a number of samples, as a real decimator's: at a lower rate
   the same chip's step response is as many samples long, so longer in time, and its modulator keeps its
   clock (:func:`pintime.soundcard.formats.with_format`), so oversamples more.
   Evaluated at the card's instants this passes whatever lies above fs/2 into the samples
   (aliasing), as the wide quad-speed filters do. Interchannel ``crosstalk_db``: each channel carries a
   copy of the other's signal at that level.
8. **AC coupling** — analog high-pass corners ``ac_coupling_hz`` and the ADC's digital high-pass
   ``digital_highpass_hz``: long pulses droop toward zero. Both are first-order sections applied at the
   card rate (bilinear transform, prewarped to the corner; the difference from the continuous-time filter
   is of order (2π·f/fs)²: 4e-7 of the step for 20 Hz at 192 kHz, 2e-3 for 300 Hz at 48 kHz).
   A coupling of any shape with real poles, ``coupling_tau_s``: its step response is Σ wᵢ·e^(−t/τᵢ)
   (``coupling_weights``, summing to 1): the input less the weighted outputs of first-order low-passes of
   time constants τᵢ (bilinear at the card rate). Weights far from those of a chain of high-passes give a
   zero away from DC: a step response that crosses zero and undershoots by far more than a chain's
   e⁻² = 0.135 of the step. The coupling may drift along the take (components age, warm up):
   ``coupling_drift``, the fraction its undershoot moves, as a sinusoid of ``coupling_drift_period_s`` and a
   random phase (the first weight moves, the last takes up the difference).
9. **additive** — mains hum (``hum_hz`` and its harmonics at ``hum_dbfs``), white noise ``noise_dbfs``,
   DC offset ``dc_offset_fs``; then the input stage's static **nonlinearity** ``y + a₂y² + a₃y³``
   (``nonlinearity`` = (a₂, a₃), y in FS: at a full-scale sine, harmonics a₂/2 and a₃/4). As a real card,
   it bends the ADC's input, before the decimation filter: the level between edges, and each step's
   height (:meth:`pintime.soundcard.synth._Channel.bend`), not the filter's ringing.
10. **output** — clipping at full scale, quantization to ``bits`` (16 or 24; optional TPDF dither), and
    ``channels`` of them: 2 (left = pin, right = reference) or 1 (the pin alone).

Levels in dBFS are relative to the full-scale *peak* (a noise RMS of −100 dBFS is 1e-5 of full scale).

The deterministic part of the chain (2, 5, 7, 8) is one step response, :func:`step_response`, which the
renderer (:mod:`pintime.soundcard.synth`) evaluates at every sample near every edge and which other modules
may use (e.g. Cramér–Rao bounds, docs/design.md §10).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import signal

from pintime.errors import PintimeError
from pintime.soundcard.decimation import SHARP, SHARP_MINIMUM_PHASE, WIDE, DecimationFilter, decimation_fir

SAMPLE_RATE_HZ = 192_000  # nominal card rate of the paper's setting and of the profiles that give no other
TABLE_STEPS_PER_SAMPLE = 2048  # fine grid of the tabulated step response (2.5 ns at 192 kHz)
SETTLE_TIME_CONSTANTS = 40  # front-end poles settle to e^-40 ≈ 4e-18 after this many time constants


@dataclass(frozen=True)
class Profile:
    """One sound card + wiring: every parameter of the chain in the module docstring."""

    name: str
    description: str
    # 1. attenuator
    pin_swing_v: float  # MCU pin high level (5 V Arduino Mega)
    attenuator_ratio: float  # divider output / input
    full_scale_v: float  # card input level at digital full scale, peak
    # 2. driver
    rise_delay_s: float
    fall_delay_s: float
    rise_time_s: float  # linear ramp duration, 0 → 100 %
    fall_time_s: float
    # 3. latency
    latency_s: float
    right_delay_s: float
    # 4. sample clock
    clock_ppm: float  # card rate vs MCU clock, parts per million
    wander_adev_1s: float  # Allan deviation of the clock ratio at 1 s
    jitter_rms_s: float  # white jitter of each output sample (modulator jitter after decimation averaging)
    # 5. analog front end
    frontend_poles_hz: tuple[float, ...]
    # 6. polarity
    inverted: bool
    # 7. ADC
    decimation: DecimationFilter
    modulator_oversampling: int  # modulator rate / fs
    crosstalk_db: float | None  # each channel picks up the other at this level; None = off
    # 8. AC coupling
    ac_coupling_hz: tuple[float, ...]  # analog first-order high-pass corners
    digital_highpass_hz: float | None
    # 9. additive
    noise_dbfs: float | None  # white noise RMS re full-scale peak; None = off
    hum_hz: float | None
    hum_dbfs: tuple[float, ...]  # level of the fundamental, 3rd, 5th … harmonic (odd harmonics)
    dc_offset_fs: float
    # 10. output
    dither: bool  # TPDF dither of ±1 LSB before rounding to ``bits``
    nonlinearity: tuple[float, float] = (0.0, 0.0)  # (a₂, a₃) of y + a₂y² + a₃y³, y in FS (item 9)
    # 8. a coupling of real poles of any shape: step response Σ wᵢ·e^(−t/τᵢ), and its drift (item 8)
    coupling_tau_s: tuple[float, ...] = ()
    coupling_weights: tuple[float, ...] = ()
    coupling_drift: float = 0.0  # fraction the undershoot moves along the take (peak)
    coupling_drift_period_s: float = 30.0
    samplerate_hz: int = SAMPLE_RATE_HZ  # nominal card rate
    bits: int = 24  # PCM word length of the WAV
    channels: int = 2  # 2: left = measurement pin, right = clock reference; 1: the pin alone

    @property
    def step_fs(self) -> float:
        """Size of one pin step at the ADC, as a fraction of full scale (peak)."""
        return self.pin_swing_v * self.attenuator_ratio / self.full_scale_v

    def delay_s(self, polarity: int, channel: int = 0) -> float:
        """Constant delay from the pin instruction to the start of the driver ramp."""
        edge = self.rise_delay_s if polarity > 0 else self.fall_delay_s
        return edge + self.latency_s + (self.right_delay_s if channel == 1 else 0.0)

    def asymmetry_s(self) -> float:
        """Fall-minus-rise delay of the pin's step midpoints (delay + half ramp); ε's hardware part."""
        return (self.fall_delay_s + self.fall_time_s / 2) - (self.rise_delay_s + self.rise_time_s / 2)

    def locked(self) -> Profile:
        """The card clocked from the MCU's crystal (nominal rate, no wander): edge phases fixed by cycles."""
        return replace(self, clock_ppm=0.0, wander_adev_1s=0.0)

    def quiet(self) -> Profile:
        """The same card without any random or additive effect (for tests and plots)."""
        return replace(self, wander_adev_1s=0.0, jitter_rms_s=0.0, noise_dbfs=None, hum_hz=None,
                       dc_offset_fs=0.0, crosstalk_db=None, dither=False)


_ARDUINO: dict[str, Any] = dict(
    pin_swing_v=5.0,
    # ATmega2560 at 5 V driving ~100 pF (cable + card input). The datasheet gives no edge timing; the pin's
    # high side is weaker than its low side (DC characteristics: V_OH vs V_OL curves), so the rise is the
    # slower edge. Few-ns values, estimates: the point is an asymmetry an ns-level analyzer must carry.
    rise_delay_s=7e-9, fall_delay_s=5e-9, rise_time_s=3.5e-9, fall_time_s=2.5e-9,
    latency_s=0.0,
)

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            name="default",
            description="a good modern card: AKM AK5385A-class ADC (sharp filter), 2 Vrms line input",
            **_ARDUINO,
            attenuator_ratio=3.9 / 13.9,  # 10 kΩ over 3.9 kΩ: 5 V → 1.40 V, step 0.50 FS
            full_scale_v=2.83,  # 2 Vrms line input
            right_delay_s=0.0,  # one stereo ADC: negligible skew
            clock_ppm=23.0,  # within the ±50 ppm of typical crystals (docs/design.md §10)
            wander_adev_1s=5e-9,  # mid-range of 1e-9 … 5e-8 (docs/design.md §10)
            jitter_rms_s=20e-12,  # per output sample; adds ≈0.018 ns (in quadrature) to a fitted edge
            frontend_poles_hz=(570e3, 1.5e6),  # 2.8 kΩ divider × 100 pF; card anti-alias RC
            inverted=False,
            decimation=SHARP,
            modulator_oversampling=64,  # AK5385A: MCLK 128 fs in quad speed; modulator assumed 64 fs
            crosstalk_db=-110.0,  # interchannel isolation of good stereo ADCs: 100-120 dB; assumed
            ac_coupling_hz=(1.6,),  # 10 µF into 10 kΩ
            digital_highpass_hz=4.0,  # AK5385A/CS5381: ~1 Hz at 48 kHz, scales with fs
            noise_dbfs=-108.0,  # AK5385A DR 114 dB (A-wt, 20 kHz): ≈ -105 dB re FS sine over 96 kHz
            hum_hz=None, hum_dbfs=(), dc_offset_fs=0.0,  # digital HPF removes offset
            dither=False,  # noise ≫ 1 LSB (-138 dBFS)
        ),
        Profile(
            name="paper",
            description="the paper's setting: HT Omega Claro Halo (AKM AK5385 ADC), 192 kHz / 24 bit",
            **_ARDUINO,
            attenuator_ratio=0.2,  # paper gives no wiring; 5 V → 1 V, step 0.35 FS
            full_scale_v=2.83,  # 2 Vrms assumed
            right_delay_s=0.0,
            clock_ppm=-37.0,  # paper §6: crystals deviate "no more than 100 or 200 ppm"
            wander_adev_1s=1e-8,
            jitter_rms_s=50e-12,
            frontend_poles_hz=(300e3, 1.0e6),  # op-amp line buffer + RC; assumed
            inverted=False,
            decimation=SHARP,  # AK5385: 0.4535 / 0.546 fs, 100 dB (docs/design.md §10)
            modulator_oversampling=64,
            crosstalk_db=-100.0,  # assumed
            ac_coupling_hz=(1.6,),
            digital_highpass_hz=4.0,
            noise_dbfs=-105.0,  # consumer PCB around an AK5385 (DR 114 dB)
            hum_hz=None, hum_dbfs=(), dc_offset_fs=0.0,
            dither=False,
        ),
        Profile(
            name="wide-filter",
            description="a card with a Cirrus CS5381-class ADC in quad-speed mode: wide filter, aliasing",
            **_ARDUINO,
            attenuator_ratio=3.9 / 13.9,
            full_scale_v=2.83,
            right_delay_s=0.0,
            clock_ppm=12.0,
            wander_adev_1s=2e-9,
            jitter_rms_s=20e-12,
            frontend_poles_hz=(570e3, 1.5e6),
            inverted=False,
            decimation=WIDE,  # CS5381 quad speed: 0.24 / 0.78 fs, 97 dB
            modulator_oversampling=32,  # 6.144 MHz modulator; assumed
            crosstalk_db=-110.0,  # assumed
            ac_coupling_hz=(1.6,),
            digital_highpass_hz=4.0,  # CS5381: 1 Hz at 48 kHz, scales with fs
            noise_dbfs=-108.0,  # CS5381 DR 120 dB (A-wt), less in 96 kHz and with the card's analog stage
            hum_hz=None, hum_dbfs=(), dc_offset_fs=0.0,
            dither=False,
        ),
        Profile(
            name="noisy",
            description="a cheap USB codec on a laptop: low level, mains hum, strong droop, more wander",
            **_ARDUINO,
            attenuator_ratio=0.05,  # 5 V → 0.25 V: step 0.09 FS
            full_scale_v=2.83,
            right_delay_s=1.3e-6,  # channels sampled 1.3 µs apart (two ADCs); illustrative, not measured
            clock_ppm=-48.0,  # near the ±50 ppm limit
            wander_adev_1s=5e-8,  # top of 1e-9 … 5e-8 (docs/design.md §10)
            jitter_rms_s=300e-12,
            frontend_poles_hz=(150e3, 600e3),  # higher source impedance, cheaper anti-alias RC
            inverted=True,  # some cards invert (docs/design.md §10)
            decimation=SHARP,
            modulator_oversampling=64,
            crosstalk_db=-80.0,  # cheap codec, shared ground; assumed
            ac_coupling_hz=(20.0,),  # 1 µF into 8 kΩ: the upper end of 1-20 Hz (docs/design.md §10)
            digital_highpass_hz=None,  # HPF disabled, so the DC offset stays
            noise_dbfs=-90.0,
            hum_hz=50.0, hum_dbfs=(-70.0, -76.0, -82.0),  # ground loop: 50, 150, 250 Hz
            dc_offset_fs=3e-3,
            dither=True,
        ),
        Profile(
            name="laptop-48k",
            description="a laptop's line/mic jack: 48 kHz, 16-bit codec, strong AC coupling (a step keeps "
                        "~20 % after 0.5 ms), hum, more noise",
            **_ARDUINO,
            attenuator_ratio=1.5 / 11.5,  # 10 kΩ over 1.5 kΩ: 5 V → 0.65 V, step 0.46 FS
            full_scale_v=1.41,  # 1 Vrms jack
            right_delay_s=0.0,  # one stereo codec
            clock_ppm=35.0,
            wander_adev_1s=2e-8,
            jitter_rms_s=200e-12,
            frontend_poles_hz=(100e3, 400e3),  # high source impedance into the jack's filter; assumed
            inverted=False,
            decimation=SHARP,  # codec decimators: passband ≈ 0.45 fs, stopband ≈ 0.55 fs
            modulator_oversampling=64,  # 3.072 MHz
            crosstalk_db=-70.0,  # laptop codec, shared ground; assumed
            # mic/laptop jacks couple through small capacitors: 0.22 µF into 2.4 kΩ (300 Hz) and the codec's
            # input coupling (100 Hz): a step is back to ≈ 22 % of its height 0.5 ms later
            ac_coupling_hz=(300.0, 100.0),
            digital_highpass_hz=None,
            noise_dbfs=-88.0,  # consumer codec: ≈ 85-90 dB dynamic range; 1.3 LSB at 16 bits
            hum_hz=50.0, hum_dbfs=(-80.0, -86.0),  # charger plugged in
            dc_offset_fs=1e-3,
            dither=True,
            samplerate_hz=48000,
            bits=16,
        ),
        Profile(
            name="minphase-48k",
            description="a consumer codec at 48 kHz / 16 bit with a minimum-phase (low-latency) decimation "
                        "filter, a slightly nonlinear input (THD ≈ −85 dB at full scale) and a 20 Hz input "
                        "coupling",
            **_ARDUINO,
            attenuator_ratio=1.5 / 11.5,  # as laptop-48k: step 0.46 FS on a 1 Vrms input
            full_scale_v=1.41,
            right_delay_s=0.0,
            clock_ppm=-22.0,
            wander_adev_1s=1e-8,
            jitter_rms_s=100e-12,
            frontend_poles_hz=(150e3, 600e3),  # assumed
            inverted=False,
            decimation=SHARP_MINIMUM_PHASE,
            modulator_oversampling=128,  # 6.144 MHz
            crosstalk_db=-90.0,  # assumed
            ac_coupling_hz=(20.0,),  # 1 µF into 8 kΩ
            digital_highpass_hz=None,
            noise_dbfs=-92.0,  # 90-95 dB dynamic range
            hum_hz=None, hum_dbfs=(), dc_offset_fs=5e-4,
            dither=True,
            nonlinearity=(8e-5, 2e-4),  # HD2 −88 dB, HD3 −86 dB at full scale: THD −84 dB
            samplerate_hz=48000,
            bits=16,
        ),
        Profile(
            name="pc-line-44k",
            description="a consumer PC's line input at 44.1 kHz / 16 bit, mono: slow edges (10-90 % in 1.44 "
                        "samples), a strong AC coupling of two real poles (0.7 and 0.9 ms) whose step "
                        "response crosses zero 0.42 ms after the edge and undershoots to -0.4 of the step, "
                        "drifting ±10 % along the take; step 0.09 FS, noise 4e-4 FS",
            **_ARDUINO,
            attenuator_ratio=0.09 * 1.41 / 5.0,  # step 0.09 FS on a 1 Vrms input
            full_scale_v=1.41,
            right_delay_s=0.0,
            clock_ppm=-41.0,  # unlocked consumer crystal
            wander_adev_1s=2e-8,
            jitter_rms_s=300e-12,
            # the measured 10-90 % rise of 1.44 samples (32.7 µs): an input filter far below the
            # decimator's band edge (two poles near 12 kHz; assumed shape)
            frontend_poles_hz=(12.1e3, 12.2e3),
            inverted=False,
            decimation=SHARP,
            modulator_oversampling=64,  # 2.8224 MHz
            crosstalk_db=None,  # mono
            ac_coupling_hz=(),  # all in the coupling below
            digital_highpass_hz=None,
            noise_dbfs=-67.96,  # 4e-4 FS RMS, measured
            hum_hz=None, hum_dbfs=(), dc_offset_fs=2e-4,
            dither=False,  # noise ≫ 1 LSB (3e-5 FS)
            samplerate_hz=44100,
            bits=16,
            channels=1,
            # measured on a real recording: zero crossing 0.5 ms, undershoot -0.4 ± 0.04 at 1.3 ms; two
            # real poles reach -0.40 at 1.21 ms with the zero crossing at 0.42 ms
            coupling_tau_s=(0.7e-3, 0.9e-3),
            coupling_weights=(7.97, -6.97),
            coupling_drift=0.1,
            coupling_drift_period_s=40.0,
        ),
        Profile(
            name="usb-96k",
            description="a USB audio interface at 96 kHz / 24 bit: sharp filter, 2 Vrms line input",
            **_ARDUINO,
            attenuator_ratio=3.9 / 13.9,  # as the default profile: step 0.50 FS
            full_scale_v=2.83,
            right_delay_s=0.0,
            clock_ppm=-15.0,
            wander_adev_1s=1e-8,
            jitter_rms_s=50e-12,
            frontend_poles_hz=(300e3, 1.0e6),  # op-amp input buffer + RC; assumed
            inverted=False,
            decimation=SHARP,
            modulator_oversampling=64,  # 6.144 MHz
            crosstalk_db=-100.0,  # assumed
            ac_coupling_hz=(1.6,),
            digital_highpass_hz=2.0,  # ~1 Hz at 48 kHz, scales with fs
            noise_dbfs=-105.0,
            hum_hz=None, hum_dbfs=(), dc_offset_fs=0.0,
            dither=False,
            samplerate_hz=96000,
        ),
    )
}


def get_profile(name: str) -> Profile:
    """The profile called ``name``; a clear error naming the valid ones otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise PintimeError(f"unknown profile '{name}' (valid: {', '.join(PROFILES)})") from None


def frontend_step(profile: Profile, x: np.ndarray, ramp_s: float) -> np.ndarray:
    """Analog step response (driver ramp ⊗ front-end poles) at ``x`` card samples after the ramp starts.

    A pole chain with distinct time constants τᵢ has step response p(t) = 1 − Σ Aᵢ e^(−t/τᵢ),
    Aᵢ = Πⱼ≠ᵢ τᵢ/(τᵢ − τⱼ); a linear ramp of width w averages p over [t − w, t].
    """
    tau = profile.samplerate_hz / (2 * np.pi * np.asarray(profile.frontend_poles_hz, dtype=float))
    if len(set(tau)) != len(tau) or len(tau) == 0:
        raise PintimeError(f"profile {profile.name}: front-end poles must be distinct and at least one")
    amp = np.array([np.prod([ti / (ti - tj) for tj in tau if tj != ti]) for ti in tau])
    x = np.asarray(x, dtype=float)
    w = ramp_s * profile.samplerate_hz
    out = np.zeros_like(x)
    if w == 0:
        pos = x >= 0
        out[pos] = 1 - np.exp(-x[pos, None] / tau) @ amp
        return out
    ramp = (x >= 0) & (x < w)
    xr = x[ramp, None]
    out[ramp] = (xr[:, 0] - (tau * -np.expm1(-xr / tau)) @ amp) / w  # ∫0^t p / w
    after = x >= w
    out[after] = 1 - (np.exp(-x[after, None] / tau) * (np.expm1(w / tau) * tau / w)) @ amp
    return out


def _settle_samples(profile: Profile, ramp_s: float) -> float:
    tau = profile.samplerate_hz / (2 * np.pi * min(profile.frontend_poles_hz))
    return ramp_s * profile.samplerate_hz + SETTLE_TIME_CONSTANTS * tau


def lowpass_step_direct(profile: Profile, x: np.ndarray, polarity: int = 1) -> np.ndarray:
    """The card's step response without AC coupling, summed tap by tap (slow; the reference).

    s(x) = Σₘ hₘ g(x − m/R): the modulator samples the analog step g at R·fs and the FIR h averages them.
    ``x`` is in card samples after the driver ramp starts.
    """
    ramp_s = profile.rise_time_s if polarity > 0 else profile.fall_time_s
    taps = decimation_fir(profile.decimation, profile.modulator_oversampling)
    x = np.asarray(x, dtype=float)
    shifts = np.arange(len(taps)) / profile.modulator_oversampling
    return frontend_step(profile, (x[..., None] - shifts).ravel(), ramp_s).reshape(*x.shape, -1) @ taps


@dataclass(frozen=True)
class LowpassTable:
    """The AC-coupling-free step response s(x) tabulated every 1/TABLE_STEPS_PER_SAMPLE sample.

    s(x) = 0 for x < 0 and s(x) = 1 for x ≥ ``support_samples`` (to 1e-15); linear interpolation in
    between (the interpolation error is checked in tests/test_synth.py).
    """

    values: np.ndarray  # s at k / TABLE_STEPS_PER_SAMPLE, k = 0 … len-1; the last value is 1
    support_samples: float

    def __call__(self, x: np.ndarray) -> np.ndarray:
        k = np.asarray(x, dtype=float) * TABLE_STEPS_PER_SAMPLE
        k = np.clip(k, 0.0, len(self.values) - 1.0)
        i = np.minimum(k.astype(np.int64), len(self.values) - 2)
        frac = k - i
        v = self.values
        return v[i] + (v[i + 1] - v[i]) * frac


@lru_cache(maxsize=16)
def lowpass_table(profile: Profile, polarity: int) -> LowpassTable:
    """Tabulate s(x) = Σₘ hₘ g(x − m/R) on the fine grid (see :func:`lowpass_step_direct`).

    Write g = 1 + e with e(t) = g(t) − 1 on t ≥ 0 (e decays within the settle time); then
    s = Σₘ hₘ [t ≥ m/R] + Σₘ hₘ e(t − m/R): a staircase of cumulative taps plus one convolution.
    """
    ratio = TABLE_STEPS_PER_SAMPLE // profile.modulator_oversampling
    if ratio * profile.modulator_oversampling != TABLE_STEPS_PER_SAMPLE:
        raise PintimeError(f"modulator oversampling must divide {TABLE_STEPS_PER_SAMPLE}")
    ramp_s = profile.rise_time_s if polarity > 0 else profile.fall_time_s
    taps = decimation_fir(profile.decimation, profile.modulator_oversampling)
    upsampled = np.zeros((len(taps) - 1) * ratio + 1)
    upsampled[::ratio] = taps
    settle = int(np.ceil(_settle_samples(profile, ramp_s) * TABLE_STEPS_PER_SAMPLE))
    decay = frontend_step(profile, np.arange(settle) / TABLE_STEPS_PER_SAMPLE, ramp_s) - 1.0
    n = len(upsampled) + settle
    values = np.empty(n + 1)
    values[:n] = np.concatenate([np.cumsum(upsampled), np.ones(settle)])
    values[:n - 1] += signal.fftconvolve(upsampled, decay)  # length n − 1
    values[n] = 1.0
    return LowpassTable(values, n / TABLE_STEPS_PER_SAMPLE)


def corners_ba(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """AC coupling corners + digital high-pass as one IIR at the card rate (bilinear first-order sections)."""
    corners = list(profile.ac_coupling_hz)
    if profile.digital_highpass_hz:
        corners.append(profile.digital_highpass_hz)
    b, a = np.array([1.0]), np.array([1.0])
    for f_hz in corners:
        k = np.tan(np.pi * f_hz / profile.samplerate_hz)  # prewarped: the corner lands exactly at f_hz
        b = np.polymul(b, np.array([1.0, -1.0]) / (1 + k))
        a = np.polymul(a, [1.0, (k - 1) / (k + 1)])
    return b, a


def coupling_lowpass_ba(profile: Profile) -> list[tuple[np.ndarray, np.ndarray]]:
    """The first-order low-passes of the shaped coupling (item 8), one per time constant, bilinear at the
    card rate (prewarped to the corner 1/(2πτ))."""
    out = []
    for tau_s in profile.coupling_tau_s:
        k = np.tan(0.5 / (tau_s * profile.samplerate_hz))
        out.append((np.array([k, k]) / (1 + k), np.array([1.0, (k - 1) / (k + 1)])))
    return out


def coupling_drift_weight(profile: Profile) -> float:
    """How far the first weight moves at the drift's peak: the undershoot, at its deepest, by
    ``coupling_drift`` of itself (it is linear in the weights; the last weight takes up the difference)."""
    if not profile.coupling_drift:
        return 0.0
    tau = np.asarray(profile.coupling_tau_s)
    t = np.linspace(0.0, 10 * tau.max(), 20001)
    parts = np.exp(-t[:, None] / tau)
    y = parts @ np.asarray(profile.coupling_weights)
    k = int(np.argmin(y))
    return float(profile.coupling_drift * abs(y[k]) / abs(parts[k, 0] - parts[k, -1]))


def highpass_ba(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """AC coupling, digital high-pass and the shaped coupling at its nominal weights as one IIR at the
    card rate: ``1 − Σ wᵢ·LPᵢ`` over the common denominator of the low-passes."""
    b, a = corners_ba(profile)
    lowpass = coupling_lowpass_ba(profile)
    if not lowpass:
        return b, a
    den = np.array([1.0])
    for _, a_i in lowpass:
        den = np.polymul(den, a_i)
    num = den.copy()
    for i, ((b_i, _), w) in enumerate(zip(lowpass, profile.coupling_weights, strict=True)):
        rest = np.array([1.0])
        for j, (_, a_j) in enumerate(lowpass):
            if j != i:
                rest = np.polymul(rest, a_j)
        num = np.polysub(num, w * np.polymul(b_i, rest))
    return np.polymul(b, num), np.polymul(a, den)


def step_response(profile: Profile, t_s: np.ndarray, polarity: int = 1, channel: int = 0) -> np.ndarray:
    """The card's output for a unit pin step at t = 0, evaluated at ``t_s`` seconds (card sample clock).

    Includes every deterministic effect (driver delay and ramp, latency, front-end poles, modulator and
    decimation FIR, AC coupling and digital high-pass) and none of the random, additive or amplitude ones
    (no ``step_fs``, inversion, clock offset, noise). A rendered isolated edge of polarity ±1 at time τ is
    ``±step_fs · step_response(profile, t − τ, polarity)`` plus noise.

    The high-pass is applied exactly as the renderer does: y(t) = Σₘ hpₘ s(t·fs − m), hp the IIR's
    impulse response.
    """
    table = lowpass_table(profile, 1 if polarity > 0 else -1)
    fs = profile.samplerate_hz
    x = np.asarray(t_s, dtype=float) * fs - profile.delay_s(polarity, channel) * fs
    b, a = highpass_ba(profile)
    support = table.support_samples
    n_full = np.floor(x - support).astype(np.int64)  # s(x − m) == 1 for m ≤ n_full
    top = max(int(np.max(x, initial=0.0)) + 2, 1)
    impulse = np.zeros(top + 1)
    impulse[0] = 1.0
    hp = signal.lfilter(b, a, impulse)
    hp_step = np.cumsum(hp)
    out = np.where(n_full >= 0, hp_step[np.clip(n_full, 0, top)], 0.0)
    near = np.arange(int(np.ceil(support)) + 2)
    m = np.maximum(n_full, -1)[..., None] + 1 + near  # the m still inside the table's support
    xm = x[..., None] - m
    inside = (xm >= 0) & (m <= top)
    out += np.sum(np.where(inside, hp[np.clip(m, 0, top)] * table(xm), 0.0), axis=-1)
    return out
