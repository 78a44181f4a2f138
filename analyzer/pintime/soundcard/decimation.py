"""The sound-card model's decimation filters: the FIR a delta-sigma ADC turns its modulator's samples into
card samples with (:mod:`pintime.soundcard.model`, item 7)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import signal


@dataclass(frozen=True)
class DecimationFilter:
    """A decimation FIR, specified as in ADC datasheets (edges relative to fs)."""

    name: str
    passband_fs: float  # passband edge / fs
    stopband_fs: float  # stopband edge / fs
    attenuation_db: float  # stopband attenuation (and passband ripple of the Kaiser design)
    minimum_phase: bool = False  # False: linear phase (the step rings before and after its middle)


# AKM's sharp roll-off filters (AK5385A ADC of the paper's card, AK4385): 0.4535 fs / 0.546 fs, 100 dB.
SHARP = DecimationFilter("sharp", 0.4535, 0.546, 100.0)
# Cirrus CS5361/CS5381 in quad-speed mode (100-216 kHz): 0.24 fs / 0.78 fs, 97 dB, group delay 5/fs.
WIDE = DecimationFilter("wide", 0.24, 0.78, 97.0)
# The same band edges, minimum phase, as consumer codecs offer for a short latency (e.g. AKM's "short
# delay" filters, Cirrus' "low latency" ones): the step rings only after the edge, and about twice as long.
SHARP_MINIMUM_PHASE = DecimationFilter("sharp-minimum-phase", 0.4535, 0.546, 100.0, minimum_phase=True)


@lru_cache(maxsize=8)
def decimation_fir(spec: DecimationFilter, oversampling: int) -> np.ndarray:
    """Taps of the decimation FIR at the modulator rate ``oversampling · fs``; DC gain 1.

    Kaiser-window design (odd length, type I): the transition band is ``spec``'s passband → stopband,
    the cutoff their midpoint, the attenuation (and passband ripple) ``spec.attenuation_db``. A one-stage
    equivalent of the chip's multi-stage decimator: it meets the datasheet's band edges, not its taps.
    Minimum phase: the linear-phase design's homomorphic minimum-phase counterpart of the same length and
    magnitude response (its stopband checked as the linear one's).
    """
    nyquist_fs = oversampling / 2  # modulator Nyquist frequency in units of fs
    numtaps, beta = signal.kaiserord(spec.attenuation_db, (spec.stopband_fs - spec.passband_fs) / nyquist_fs)
    cutoff_fs = (spec.passband_fs + spec.stopband_fs) / 2
    stopband_fs = [spec.stopband_fs, nyquist_fs]  # checked at 20 000 points, both edges included
    while True:  # kaiserord's length is an estimate: lengthen until the stopband meets the spec (± 0.1 dB)
        numtaps |= 1
        taps = signal.firwin(numtaps, cutoff_fs / nyquist_fs, window=("kaiser", beta))
        if spec.minimum_phase:
            taps = signal.minimum_phase(taps, method="homomorphic", n_fft=1 << 16, half=False)
        taps /= taps.sum()
        response = signal.zoom_fft(taps, stopband_fs, m=20_000, fs=oversampling, endpoint=True)
        if 20 * np.log10(np.abs(response).max()) <= 0.1 - spec.attenuation_db:
            return taps
        numtaps += 2
