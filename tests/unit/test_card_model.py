"""The sound-card model's ADC variants (pintime.soundcard.decimation, formats, synth): a minimum-phase
decimation filter, the modulator's clock kept in Hz at other rates, and the input stage's nonlinearity."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import soundfile as sf
from pintime.soundcard import model as sc
from pintime.soundcard.decimation import SHARP, SHARP_MINIMUM_PHASE, decimation_fir
from pintime.soundcard.formats import with_format
from pintime.soundcard.synth import synthesize
from scipy import signal

F_CPU = 16_000_000


def test_minimum_phase_filter_has_the_linear_ones_band_edges_and_rings_only_after_the_edge():
    linear, minimum = decimation_fir(SHARP, 64), decimation_fir(SHARP_MINIMUM_PHASE, 64)
    freqs_fs = np.linspace(0, 32, 100_001)
    _, response = signal.freqz(minimum, worN=freqs_fs, fs=64)
    gain_db = 20 * np.log10(np.abs(response) + 1e-300)
    assert np.abs(gain_db[freqs_fs <= SHARP.passband_fs]).max() < 0.01
    assert gain_db[freqs_fs >= SHARP.stopband_fs].max() < 0.1 - SHARP.attenuation_db
    step_lin, step_min = np.cumsum(linear), np.cumsum(minimum)
    half_lin, half_min = np.argmax(step_lin >= 0.5), np.argmax(step_min >= 0.5)
    assert step_lin[:half_lin].min() < -0.05  # the linear-phase step undershoots before its middle …
    assert step_min[:half_min].min() > -1e-6  # … the minimum-phase one does not
    assert step_min[half_min:].max() > 1.05  # and rings after it
    assert half_min < half_lin / 5  # its delay: a few samples, not half the filter


@pytest.mark.parametrize(("name", "rate_hz", "oversampling"), [
    ("default", 192000, 64), ("default", 48000, 256), ("default", 44100, 256),
    ("wide-filter", 48000, 128), ("wide-filter", 44100, 128), ("laptop-48k", 96000, 32)])
def test_the_modulator_keeps_its_clock_at_another_rate(name, rate_hz, oversampling):
    """The card's 12.288 or 6.144 MHz modulator at 48 kHz oversamples 4× more than at 192 kHz (the nearest
    power of two at 44.1 kHz)."""
    assert with_format(sc.PROFILES[name], rate_hz).modulator_oversampling == oversampling


def test_nonlinearity_bends_the_level_not_the_edges_shape(tmp_path):
    """A DC-coupled step of s FS is recorded at s + a₂s² + a₃s³; the bend acts before the decimation filter,
    so the edge keeps the linear card's shape (only its height changes): bending the recorded samples
    instead changes the shape's ringing by ≈ 2a₂s of it, 10⁻⁴ here."""
    linear = replace(sc.PROFILES["default"].quiet(), name="linear", ac_coupling_hz=(),
                     digital_highpass_hz=None, clock_ppm=0.0)
    bent = replace(linear, name="bent", nonlinearity=(1e-3, 1e-3))
    csv = tmp_path / "e.edges.csv"
    csv.write_text(f"cycle,channel,level\n{F_CPU // 10},0,1\n")
    def shape(y):
        return (y - y[0]) / (y[-1] - y[0])

    recorded = [sf.read(synthesize(csv, tmp_path / f"{card.name}.wav", card, 1, f_cpu_hz=F_CPU).wav_path,
                        dtype="float64")[0][:, 0] for card in (linear, bent)]
    s, y = bent.step_fs, recorded[1]
    assert y[-100:] == pytest.approx(s + 1e-3 * s ** 2 + 1e-3 * s ** 3, abs=2 ** -22)
    assert abs(y[-1] - s) > 100 * 2 ** -23  # the bend is far above the 24-bit step
    lsb = 2 ** -23 / s
    assert np.abs(shape(y) - shape(recorded[0])).max() < 4 * lsb  # the same shape within the 24-bit LSB
    after = recorded[0] + (1e-3 + 1e-3 * recorded[0]) * recorded[0] ** 2  # what bending the samples gives
    assert np.abs(shape(after) - shape(recorded[0])).max() > 20 * lsb
