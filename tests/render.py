"""Real-like digital signals rendered to small mono WAVs for the tests of ``pintime edges`` on signals
without pintime's calibration train: a pin's level from its edge times, band-limited (a Gaussian step of a
given 10–90 % rise), AC-coupled by one pole, with white noise, optional spikes, quantized to 16 bits.

Nothing here is what the analyzer assumes: it learns its response from the recording alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf
from scipy import signal
from scipy.special import erf

RISE_PER_SIGMA = 2.563  # a Gaussian step's 10–90 % rise is 2.563 of its σ


def level(edges_samples: np.ndarray, first_level: int, n: int, rise_samples: float,
          sign: np.ndarray | None = None) -> np.ndarray:
    """A pin's level (0 … 1) at samples 0 … n − 1 from its edges (ascending, alternating from
    ``first_level``, or each of step ``sign``), each a Gaussian step of 10–90 % rise ``rise_samples``."""
    sigma = rise_samples / RISE_PER_SIGMA
    reach = int(np.ceil(6 * sigma)) + 2
    if sign is None:
        sign = np.where(np.arange(len(edges_samples)) % 2 == 0, 1.0 - 2 * first_level, 2 * first_level - 1.0)
    out = np.full(n, float(first_level))
    m = np.arange(-reach, reach + 1)
    for lo in range(0, len(edges_samples), 4096):  # in chunks: bounded memory
        t, s = edges_samples[lo:lo + 4096], sign[lo:lo + 4096]
        at = np.floor(t).astype(np.int64)[:, None] + m[None, :]
        step = 0.5 * (1 + erf((at - t[:, None]) / (np.sqrt(2) * sigma)))
        inside = (at >= 0) & (at < n)
        np.add.at(out, at[inside], ((step - (m[None, :] >= 0)) * s[:, None])[inside])
        after = np.clip(np.floor(t).astype(np.int64), 0, n)
        jumps = np.zeros(n + 1)
        np.add.at(jumps, after, s)
        out += np.cumsum(jumps)[:n]
    return out


def write(path: Path, edges_samples: np.ndarray, rate_hz: int, seconds: float, rise_samples: float = 1.2,
          corner_hz: float = 20.0, noise_fs: float = 3e-4, amplitude_fs: float = 0.4, first_level: int = 0,
          spikes: int = 0, seed: int = 1) -> Path:
    """Render the edges to a mono 16-bit WAV at ``path``."""
    rng = np.random.default_rng(seed)
    n = int(seconds * rate_hz)
    edges_samples = edges_samples[(edges_samples > 8) & (edges_samples < n - 8)]
    x = amplitude_fs * (level(edges_samples, first_level, n, rise_samples) - 0.5)
    b, a = signal.butter(1, corner_hz / (rate_hz / 2), "highpass")
    x = signal.lfilter(b, a, x) + rng.normal(0.0, noise_fs, n)
    if spikes:
        x[rng.integers(0, n, spikes)] = rng.choice([-0.99, 0.99], spikes)
    sf.write(path, np.clip(x, -1, 1 - 2 ** -15), rate_hz, subtype="PCM_16")
    return path


def biphase_mark(seconds: float, rate_hz: int, cell_s: float = 1 / 3840, ppm: float = 40.0,
                 seed: int = 1) -> np.ndarray:
    """A biphase-mark code's edge times (samples): an edge at every bit's start, another in its middle
    for a 1, random bits on a half-bit grid of ``cell_s`` off by ``ppm``."""
    rng = np.random.default_rng(seed)
    cell = cell_s * (1 + ppm * 1e-6) * rate_hz
    bits = rng.integers(0, 2, int(seconds / cell_s / 2) + 2)
    start = 2 * np.arange(len(bits))
    cells = np.sort(np.concatenate([start, (start + 1)[bits == 1]]))
    return 20.3 + cells * cell


def nrz(seconds: float, rate_hz: int, samples_per_bit: float, seed: int = 1) -> np.ndarray:
    """A serial line sending random bits without pause (NRZ): an edge wherever a bit differs from the one
    before."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, int(seconds * rate_hz / samples_per_bit))
    change = np.flatnonzero(np.diff(bits) != 0) + 1
    return 10.37 + change * samples_per_bit


def rephased_square(seconds: float, rate_hz: int, half_period_s: float = 1e-3, seed: int = 1,
                    ppm: float = 30.0) -> np.ndarray:
    """A pin toggled every ``half_period_s`` by a timer that restarts at a random phase every second, its
    clock ``ppm`` off the card's (never a whole number of samples: every method looks perfect there)."""
    rng = np.random.default_rng(seed)
    out = []
    for second in range(int(np.ceil(seconds))):
        start = second + rng.uniform(0.0, half_period_s)
        count = int((1.0 - half_period_s) / half_period_s)
        out.append(start + half_period_s * np.arange(count))
    t = np.concatenate(out) * rate_hz * (1 + ppm * 1e-6)
    return t[: len(t) // 2 * 2]


def bursts(seconds: float, rate_hz: int, samples_per_bit: float = 4.6, seed: int = 1) -> np.ndarray:
    """Bursts of 20 random bytes (a UART: start bit, 8 data, stop) every 50 ms."""
    rng = np.random.default_rng(seed)
    out, t = [], 100.0
    while t < seconds * rate_hz - 2000:
        level = 1
        for _ in range(20):
            for k, b in enumerate([0, *rng.integers(0, 2, 8), 1]):
                if b != level:
                    out.append(t + k * samples_per_bit)
                    level = b
            t += 10 * samples_per_bit
        t += 0.05 * rate_hz
    return np.array(out)
