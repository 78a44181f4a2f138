"""The sound-card model's recording formats: a profile's card at another rate, word length or channel count
(:mod:`pintime.soundcard.model` for the card itself)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from pintime.capture.wav import STANDARD_RATES_HZ
from pintime.errors import PintimeError
from pintime.soundcard.model import TABLE_STEPS_PER_SAMPLE, Profile

OUTPUT_BITS = (16, 24)  # what the renderer writes
OUTPUT_CHANNELS = (1, 2)  # the pin alone, or the pin (left) and the reference (right)
# README's wiring: 47 kΩ in series, 1 kΩ to ground, in parallel with a 10 kΩ line input
README_SERIES_OHM, README_SHUNT_OHM, LINE_INPUT_OHM = 47e3, 1e3, 10e3
README_LEVEL = "readme"  # the level argument that asks for README's divider


def with_format(profile: Profile, samplerate_hz: int | None = None, bits: int | None = None,
                channels: int | None = None) -> Profile:
    """``profile`` recording at another rate, word length or channel count (None: the profile's own).

    The same card at another rate: the decimation filter keeps its band edges as fractions of fs, the
    digital high-pass its corner as a fraction of fs (it scales with the rate in ADC chips); the analog
    parts (driver, front-end poles, AC coupling) keep their corners in Hz, and the modulator its clock:
    its oversampling becomes the power of two nearest its rate in Hz over the new fs (a chip runs its
    modulator from one master clock, 6.144 or 12.288 MHz, 5.6448 or 11.2896 for the 44.1 kHz family).
    """
    rate = profile.samplerate_hz if samplerate_hz is None else samplerate_hz
    bits = profile.bits if bits is None else bits
    channels = profile.channels if channels is None else channels
    if rate not in STANDARD_RATES_HZ:
        raise PintimeError(f"sample rate {rate} Hz is not a standard one "
                           f"({', '.join(str(r) for r in STANDARD_RATES_HZ)} Hz)")
    if bits not in OUTPUT_BITS:
        raise PintimeError(f"{bits}-bit output: the renderer writes 16 or 24 bits")
    if channels not in OUTPUT_CHANNELS:
        raise PintimeError(f"{channels} channels: the renderer writes 1 (the pin) or 2 (pin and reference)")
    highpass_hz = profile.digital_highpass_hz
    if highpass_hz is not None and rate != profile.samplerate_hz:
        highpass_hz = highpass_hz * rate / profile.samplerate_hz
    modulator_hz = profile.modulator_oversampling * profile.samplerate_hz
    oversampling = 1 << max(0, round(np.log2(modulator_hz / rate)))
    return replace(profile, samplerate_hz=rate, bits=bits, channels=channels, digital_highpass_hz=highpass_hz,
                   modulator_oversampling=min(oversampling, TABLE_STEPS_PER_SAMPLE))


def readme_divider_ratio() -> float:
    """Output/input of README's divider loaded by the card's line input."""
    shunt = 1.0 / (1.0 / README_SHUNT_OHM + 1.0 / LINE_INPUT_OHM)
    return shunt / (README_SERIES_OHM + shunt)


def with_level(profile: Profile, level: float | str) -> Profile:
    """``profile`` wired for pin steps of ``level`` (fraction of full scale, peak), or through README's
    divider (``README_LEVEL``: 5 V · 0.019 on the card's full scale, 0.034 FS on a 2 Vrms line input)."""
    if level == README_LEVEL:
        return replace(profile, attenuator_ratio=readme_divider_ratio())
    if isinstance(level, str) or not 0 < level < 1:
        raise PintimeError(f"the level must be a step between 0 and 1 of full scale or '{README_LEVEL}', "
                           f"got {level!r}")
    return replace(profile, attenuator_ratio=level * profile.full_scale_v / profile.pin_swing_v)


def with_steady_clock(profile: Profile) -> Profile:
    """``profile`` with its sample clock's wander switched off (its constant offset and jitter kept)."""
    return replace(profile, wander_adev_1s=0.0)
