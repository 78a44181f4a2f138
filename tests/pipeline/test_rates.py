"""Captures at every standard rate and format: the reader, the renderer and the edge locator off 192 kHz."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from pintime.capture.edgelist import read_edge_list
from pintime.capture.vcd import read_vcd
from pintime.capture.wav import STANDARD_RATES_HZ, iter_blocks, open_wav
from pintime.cli import main
from pintime.errors import PintimeError
from pintime.locate.shape.train import LONG_HALF_SAMPLES, NEIGHBOUR_FREE_SPACING_SAMPLES
from pintime.locate.stream.capture_edges import locate_capture
from pintime.soundcard import model as sc
from pintime.soundcard.decimation import DecimationFilter
from pintime.soundcard.formats import with_format, with_level, with_steady_clock
from pintime.soundcard.synth import synthesize
from pintime.validate.edgecheck import errors_of
from pintime.validate.edgematch import match_stretches
from scipy import signal
from support import run_cli

F_CPU = 1_000_000


def write(path: Path, rate_hz: int, subtype: str, channels: int, wav_format: str = "WAV") -> np.ndarray:
    """0.05 s of loud noise (with each format's extreme codes) written to ``path``; what libsndfile reads."""
    x = np.random.default_rng(rate_hz + channels).uniform(-0.9, 0.9, (int(0.05 * rate_hz), channels))
    x[0], x[1] = -1.0, 1.0 - 2.0 ** -23
    sf.write(path, x, rate_hz, subtype=subtype, format=wav_format)
    return sf.read(path, dtype="float32", always_2d=True)[0]


def read_all(info, block_frames: int = 1000, pad_frames: int = 100) -> np.ndarray:
    """Every owned frame of the file, as the blocks give them."""
    return np.concatenate([b.data[b.own_lo - b.first:b.own_hi - b.first]
                           for b in iter_blocks(info, block_frames, pad_frames)])


@pytest.mark.parametrize("rate_hz", STANDARD_RATES_HZ)
@pytest.mark.parametrize("subtype", ["PCM_16", "PCM_24", "PCM_32", "FLOAT"])
def test_reader_gives_libsndfiles_values_at_every_rate_and_format(tmp_path, rate_hz, subtype):
    for channels in (1, 2, 3):
        path = tmp_path / f"x{channels}.wav"
        exact = write(path, rate_hz, subtype, channels)
        info = open_wav(path)
        assert (info.samplerate_hz, info.channels, info.measurement_channel) == (rate_hz, channels, 0)
        assert info.reference_channel == (None if channels == 1 else 1)
        assert (info.pcm_layout is not None) == (subtype in ("PCM_16", "PCM_24"))  # the fast path
        np.testing.assert_array_equal(read_all(info), exact[:, list(info.columns)])


@pytest.mark.parametrize("subtype", ["PCM_16", "PCM_24", "PCM_32"])
def test_extensible_wavs_read_exactly(tmp_path, subtype):
    path = tmp_path / "ext.wav"
    exact = write(path, 48000, subtype, 4, wav_format="WAVEX")
    assert path.read_bytes()[20:22] == b"\xfe\xff"  # WAVE_FORMAT_EXTENSIBLE
    info = open_wav(path, measurement_channel=3, reference_channel=0)
    assert (info.pcm_layout is not None) == (subtype != "PCM_32")
    np.testing.assert_array_equal(read_all(info), exact[:, [3, 0]])


def test_mono_blocks_hold_one_channel_and_no_reference(tmp_path):
    path = tmp_path / "mono.wav"
    exact = write(path, 44100, "PCM_16", 1)
    info = open_wav(path)
    assert info.columns == (0,) and info.channel_name(0) == "mono"
    assert all(b.data.shape[1] == 1 for b in iter_blocks(info, 1000, 100))
    np.testing.assert_array_equal(read_all(info), exact)
    assert open_wav(path, reference_channel=None).columns == (0,)


def test_the_reference_can_be_left_out_or_moved(tmp_path):
    path = tmp_path / "st.wav"
    exact = write(path, 96000, "PCM_24", 2)
    np.testing.assert_array_equal(read_all(open_wav(path, 1, None)), exact[:, [1]])
    np.testing.assert_array_equal(read_all(open_wav(path, 1, 0)), exact[:, [1, 0]])


def run_edges(capsys, path: Path, *options: str) -> str:
    """``pintime edges`` expected to fail: its single stderr line."""
    assert main(["edges", str(path), "--csv", str(path.with_suffix(".csv")), *options]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pintime: error: ")
    return err[0]


@pytest.mark.parametrize(("rate_hz", "subtype", "options", "message"), [
    (48000, "PCM_U8", (), "8-bit samples (PCM_U8) are too coarse to time edges"),
    (22050, "PCM_16", (), "sample rate is 22050 Hz; pintime reads the standard rates 44100, 48000"),
    (32000, "PCM_24", (), "sample rate is 32000 Hz"),
    (48000, "PCM_16", ("--channel", "2"), "no channel 2 for the measurement pin: the file has 2 channels"),
    (48000, "PCM_16", ("--reference", "5"), "no channel 5 for the clock reference"),
    (48000, "PCM_16", ("--channel", "1", "--reference", "1"), "channel 1 cannot be both"),
    (48000, "PCM_16", ("--channel", "left"), "--channel must be an integer, got 'left'"),
])
def test_refusals_are_one_line(capsys, tmp_path, rate_hz, subtype, options, message):
    path = tmp_path / "bad.wav"
    write(path, rate_hz, subtype, 2)
    assert message in run_edges(capsys, path, *options)


def test_float_nan_is_refused_on_a_selected_channel(tmp_path):
    path = tmp_path / "nan.wav"
    x = np.zeros((4800, 3), dtype=np.float32)
    x[100, 2] = np.nan
    sf.write(path, x, 48000, subtype="FLOAT")
    read_all(open_wav(path, 0, 1))  # the damaged channel is not read
    with pytest.raises(PintimeError, match="sample at frame 100 is not a finite number"):
        read_all(open_wav(path, 2, None))


def test_renderer_writes_the_asked_format(tmp_path):
    edges = tmp_path / "e.edges.csv"
    edges.write_text("cycle,channel,level\n100000,0,1\n100100,1,1\n200000,0,0\n")
    for rate_hz, bits, channels in ((44100, 16, 1), (96000, 24, 2)):
        profile = with_format(sc.PROFILES["default"], rate_hz, bits, channels)
        wav = synthesize(edges, tmp_path / f"{rate_hz}.wav", profile, 1, F_CPU).wav_path
        info = sf.info(wav)
        assert (info.samplerate, info.channels, info.subtype) == (rate_hz, channels, f"PCM_{bits}")
        codes = sf.read(wav, dtype="int32", always_2d=True)[0] >> (32 - bits)
        assert codes[:, 0].max() == pytest.approx(profile.step_fs * 2 ** (bits - 1), rel=0.1)
    with pytest.raises(PintimeError, match="sample rate 50000 Hz is not a standard one"):
        with_format(sc.PROFILES["default"], 50000)


def test_the_cards_decimation_filter_scales_with_the_rate():
    """A delta-sigma ADC's filter is specified in fractions of fs: its group delay is the same number of
    samples at any rate (the analog poles, hundreds of kHz, move it by less than 0.05 sample, and the
    filter's design at the modulator's rate, 64 to 256 fs, by less than 0.07)."""
    delays = []
    for rate_hz in (44100, 96000, 192000):
        card = replace(with_format(sc.PROFILES["default"], rate_hz).quiet(), ac_coupling_hz=(),
                       digital_highpass_hz=None)
        t_s = np.arange(0, 100, 1 / 64) / rate_hz
        delays.append(t_s[np.argmax(sc.step_response(card, t_s) >= 0.5)] * rate_hz)
    assert np.ptp(delays) < 0.1 and 30 < delays[0] < 40


def test_laptop_jack_droops_to_a_fifth_within_half_a_millisecond():
    card = sc.PROFILES["laptop-48k"]
    t_s = np.arange(0, 4e-3, 1e-7)
    y = sc.step_response(card, t_s)
    mid_s = t_s[np.argmax(y >= 0.5)]
    assert 0.15 < np.interp(mid_s + 0.5e-3, t_s, y) < 0.25
    assert (card.samplerate_hz, card.bits) == (48000, 16)


def train_and_pulses(path: Path, period_us: int) -> Path:
    """A calibration-like train of 400 alternating edges ``period_us`` apart, then pulses of 100 … 1000 µs
    with 300 µs between them and a 4 ms quiet every 8 pulses: an edge list at 1 MHz."""
    cycle, rows = 20_000, []
    for k in range(400):
        rows.append((cycle, k % 2 == 0))
        cycle += period_us
    cycle += 5000
    widths = np.random.default_rng(3).integers(100, 1000, 600)
    for k, width in enumerate(widths):
        rows += [(cycle, True), (cycle + int(width), False)]
        cycle += int(width) + (4000 if k % 8 == 7 else 300)
    path.write_text("cycle,channel,level\n" + "".join(f"{c},0,{int(level)}\n" for c, level in rows))
    return path


@pytest.mark.parametrize(("rate_hz", "bits"), [(48000, 24), (44100, 16)])
def test_mono_edges_at_low_rates_are_where_the_exact_ones_say(tmp_path, rate_hz, bits):
    """With a train slow enough for the rate (edges > 120 samples apart), a mono capture's edges are
    located within a few Cramér–Rao bounds of the exact ones, every one of them.

    The default card's 64 fs modulator leaves a ripple in the step response, 1/64 sample apart, that the
    template carries (docs/design.md §10): 0.24 ns against a 0.17 ns bound at 48 kHz (1.4×; it was 6× with
    the ripple modelled on ±6 samples only), 0.59 against 0.41 ns at 44.1 kHz, 16-bit (1.5×; it was 37×
    before the train's knots were spaced by its phase walk and the fit took 6 steps)."""
    period_us = 2777  # 122.5 samples at 44.1 kHz
    assert period_us * 1e-6 * rate_hz > NEIGHBOUR_FREE_SPACING_SAMPLES
    edges = train_and_pulses(tmp_path / "t.edges.csv", period_us)
    card = with_format(sc.PROFILES["default"], rate_hz, bits, 1)
    wav = synthesize(edges, tmp_path / "capture.wav", card, 2, F_CPU).wav_path
    result = locate_capture(wav)
    assert result.train is not None and result.train_refused is None and len(result.noise_rms) == 1
    truth = replace(read_edge_list(edges), unit_s=1.0 / F_CPU)
    e = errors_of(result, truth)
    assert e.matched == e.located == e.exact == 1600
    assert e.locator_rms_ns < 2 * e.crlb_ns
    assert e.max_ns < 8 * e.rms_ns


@pytest.mark.parametrize("hum_hz", [50.0, 61.3])
def test_mains_hum_off_the_trains_rhythm_is_no_long_response(tmp_path, hum_hz):
    """A laptop input (100 + 300 Hz coupling) with −56 dBFS of mains hum at 48 kHz, 16-bit mono: undone, the
    coupling raises the hum 13×, and the train windows' quadratic baselines leave its cubic, largest before
    the edges. That is no response reaching beyond the template (refused as one before, unless at 60 Hz,
    six train periods); the edges are located within their bound."""
    edges = train_and_pulses(tmp_path / "t.edges.csv", 2777)
    card = replace(with_format(sc.PROFILES["laptop-48k"], 48000, 16, 1), hum_hz=hum_hz,
                   hum_dbfs=(-56.0, -62.0))
    result = locate_capture(synthesize(edges, tmp_path / "hum.wav", card, 2, F_CPU).wav_path)
    assert result.train is not None and result.train_refused is None
    e = errors_of(result, replace(read_edge_list(edges), unit_s=1.0 / F_CPU))
    assert e.matched == e.located == e.exact == 1600
    assert e.locator_rms_ns < 1.5 * e.crlb_ns


def _first_cycles(make_sim: Path, tmp_path: Path, cycles: int) -> Path:
    """simavr's table1 edge list cut to its edges before ``cycles``, written under ``tmp_path``."""
    lines = (make_sim / "table1.edges.csv").read_text().splitlines()
    edges = tmp_path / "table1.edges.csv"
    edges.write_text("\n".join([lines[0], *[r for r in lines[1:] if int(r.split(",")[0]) < cycles]]) + "\n")
    return edges


def test_a_train_too_fast_for_the_rate_is_refused_with_its_reason(tmp_path, make_sim):
    """The firmware's train (2777 µs) played 2777/1037 times as fast — frame format version 1's train,
    1037 µs — is 49.8 samples at 48 kHz: inside the learning window of its neighbours."""
    edges = _first_cycles(make_sim, tmp_path, 3_100_000)  # RUN and CAL frames
    card = with_format(sc.PROFILES["default"], 48000, 24, 1)
    wav = synthesize(edges, tmp_path / "capture.wav", card, 1, F_CPU * 2777 / 1037).wav_path
    with pytest.raises(PintimeError, match=r"edges are 49\.8 samples apart at 48000 Hz, inside one "
                                           r"another's learning window \(it needs more than 120\)"):
        locate_capture(wav)


@pytest.mark.parametrize("taps", [0, 1601])
def test_a_resampler_that_rings_longer_than_the_template_is_refused(tmp_path, make_sim, taps):
    """A 96 kHz render halved to 48 kHz by a polyphase FIR, as an operating system's sample-rate converter
    does: scipy's own short filter (its ringing inside the template's ±48 samples) is located as any card;
    a 1601-tap Kaiser FIR cut at 0.49 of the 96 kHz band (as sharp as libsoxr's best, ringing ~100 samples)
    leaves far more than the noise before the train's edges and is refused, naming the cause, instead of
    giving its edges' neighbours errors hundreds of times their σ."""
    edges = _first_cycles(make_sim, tmp_path, 3_100_000)  # RUN and CAL frames
    card = with_steady_clock(with_format(sc.PROFILES["default"], 96000, 24, 1))
    x, _ = sf.read(synthesize(edges, tmp_path / "card.wav", card, 1, F_CPU).wav_path, dtype="float64")
    window = ("kaiser", 5.0) if not taps else signal.firwin(taps, 0.49, window=("kaiser", 12.0))
    wav = tmp_path / "resampled.wav"
    sf.write(wav, signal.resample_poly(x, 1, 2, window=window), 48000, subtype="PCM_24")
    if not taps:
        result = locate_capture(wav)
        assert result.train is not None and result.train.before_rms < 1.5 * result.noise_rms[0]
        return
    with pytest.raises(PintimeError, match=r"windows leave \d+\.\d× the noise, \d\.\d\d× what the template "
                                           r"leaves in them, before their edges.*rings beyond the ±48 samples"
                                           r".*without resampling"):
        locate_capture(wav)


def test_a_narrow_decimation_filter_at_16_bits_is_refused(tmp_path, make_sim):
    """A linear-phase decimation filter with a transition band of 0.05 fs (0.45 → 0.50 fs) rings beyond
    the template's ±48 samples. At 24 bits the stretch before the train's edges holds 2.7× the noise; at 16
    bits the quantization hides it under BEFORE_MAX (1.6× the LSB/√12 floor), yet it is 1.33× what the fit
    leaves over its windows, and the edges located beside a neighbour had been 2.8× their bound, up to 9 σ
    (Differential 1000× 99.9991 ± 0.0002 µs for 100 on the whole run): refused, naming the cause and the
    rate whose train leaves room for a longer support."""
    edges = _first_cycles(make_sim, tmp_path, 3_100_000)  # RUN and CAL frames
    card = replace(with_format(sc.PROFILES["default"], 48000, 16, 1),
                   decimation=DecimationFilter("narrow", 0.45, 0.50, 100.0))
    wav = synthesize(edges, tmp_path / "capture.wav", card, 1, F_CPU).wav_path
    with pytest.raises(PintimeError, match=r"1\.\d× the noise, 1\.[2-4]\d× what the template leaves in them, "
                                           r"before their edges.*rings beyond the ±48 samples.*without "
                                           r"resampling, or at 88\.2 kHz or more, where the edges of the "
                                           r"train leave room for a ±96-sample shape"):
        locate_capture(wav)


@pytest.mark.parametrize(("rate_hz", "bits", "channels"), [(96000, 24, 1), (192000, 24, 2)])
def test_a_narrow_decimation_filter_is_learned_on_a_longer_support_where_the_train_leaves_room(
        tmp_path, make_sim, rate_hz, bits, channels):
    """The same 0.05 fs transition band (0.45 → 0.50 fs, 100 dB), its ringing beyond ±48 samples either
    side, at 96 and 192 kHz: the train's edges are 267 and 533 samples apart, room for a support of ±96
    (and its baseline stretch: 216 samples). The train is learned again on it, and every edge is located
    within 1.5× its Cramér–Rao bound against simavr, none beyond 6 σ of its own RMS error (before: refused
    as at 48 kHz; 1.12–1.16× on 4 s of table1, docs/results.md)."""
    edges = _first_cycles(make_sim, tmp_path, 3_100_000)  # RUN and CAL frames
    card = replace(with_steady_clock(with_format(sc.PROFILES["default"], rate_hz, bits, channels)),
                   decimation=DecimationFilter("narrow", 0.45, 0.50, 100.0))
    wav = synthesize(edges, tmp_path / "capture.wav", card, 1, F_CPU).wav_path
    result = locate_capture(wav)
    assert result.train is not None and result.train_refused is None
    assert result.template.half_samples == LONG_HALF_SAMPLES
    truth = replace(read_edge_list(edges), unit_s=1.0 / F_CPU)
    e = errors_of(result, truth)
    assert e.matched == e.located == (e.exact if channels == 2 else np.count_nonzero(truth.channel == 0))
    assert e.locator_rms_ns is not None and e.locator_rms_ns < 1.5 * e.crlb_ns
    assert e.max_ns < 6 * e.rms_ns


def test_edges_of_a_square_wave_recorded_at_44_1_khz_mono(tmp_path):
    """`pintime edges` on any digital signal, no firmware frames, no reference: a 100.26 Hz square wave
    through a 44.1 kHz 16-bit mono card (steady clock). Every edge is found, in order, and the times lie
    on the square wave's line within a few of their own σ (the template learned from the wave itself)."""
    half_cycles, n = 4987, 2000  # at 1 MHz: never a whole number of samples
    source = tmp_path / "square.edges.csv"
    source.write_text("cycle,channel,level\n"
                      + "".join(f"{1000 + k * half_cycles},0,{1 - k % 2}\n" for k in range(n)))
    card = replace(with_format(sc.PROFILES["default"], 44100, 16, 1), wander_adev_1s=0.0)
    wav = synthesize(source, tmp_path / "recorded.wav", card, 1, F_CPU).wav_path
    out, vcd = tmp_path / "found.csv", tmp_path / "found.vcd"
    assert main(["edges", str(wav), "--csv", str(out), "--vcd", str(vcd)]) == 0
    found = np.genfromtxt(out, delimiter=",", names=True)
    back = read_vcd(vcd)  # the VCD for a logic viewer holds the same edges (both files round to 1 ps)
    assert np.array_equal(back.polarity, found["polarity"])
    assert np.max(np.abs(back.time * back.unit_s - found["time_s"])) < 1.5e-12
    assert len(found) == n and np.all(found["polarity"] == np.where(np.arange(n) % 2, -1, 1))
    design = np.column_stack([np.ones(n), np.arange(n), found["polarity"] < 0])
    residual = found["time_s"] - design @ np.linalg.lstsq(design, found["time_s"], rcond=None)[0]
    assert np.sqrt(np.mean(residual ** 2)) < 3 * np.median(found["sigma_s"])


def test_edges_of_a_pps_signal_through_a_laptop_jack(tmp_path):
    """`pintime edges` on a PPS output (100 ms high every second, 80 s) through a laptop jack at 44.1 kHz,
    16-bit mono, README's divider, 100 and 300 Hz AC coupling and mains hum: no train, edges far apart.
    The learning span goes on to the slow signal's 160th edge, the coupling is learned from the samples
    just after edges (the long quiet stretches hold mostly hum), and the template is learned blind: every
    edge found, within 1.5× its σ on RMS about the wave's line and none beyond 6 σ (before: refused, 16
    isolated edges in the first 8 s)."""
    rises = 1000 + F_CPU * np.arange(80)
    cycles = np.sort(np.concatenate([rises, rises + 100_000]))
    source = tmp_path / "signal.edges.csv"
    source.write_text("cycle,channel,level\n" + "".join(f"{c},0,{1 - k % 2}\n" for k, c in enumerate(cycles)))
    card = with_steady_clock(with_level(with_format(sc.PROFILES["laptop-48k"], 44100, 16, 1), "readme"))
    wav = synthesize(source, tmp_path / "pps.wav", card, 2, F_CPU).wav_path
    out = tmp_path / "pps.csv"
    assert main(["edges", str(wav), "--csv", str(out)]) == 0
    found = np.genfromtxt(out, delimiter=",", names=True)
    alternating = np.where(np.arange(len(cycles)) % 2, -1, 1)
    assert len(found) == len(cycles) and np.all(found["polarity"] == alternating)
    design = np.column_stack([np.ones(len(cycles)), cycles, found["polarity"] < 0])
    residual = found["time_s"] - design @ np.linalg.lstsq(design, found["time_s"], rcond=None)[0]
    assert np.sqrt(np.mean(residual ** 2)) < 1.5 * np.median(found["sigma_s"])
    assert np.max(np.abs(residual) / found["sigma_s"]) < 6


@pytest.mark.parametrize("profile, level", [("laptop-48k", "readme"), ("default", None)])
def test_edges_of_a_1_khz_square_wave_at_44_1_khz(tmp_path, capsys, profile, level):
    """A 1 kHz square wave (4 s) through a 44.1 kHz 16-bit mono card, on a laptop jack through README's
    divider and on the `default` card: edges 22 samples apart, each in its neighbours' ringing, so no edge
    shows its shape alone (before: refused, "no edges", or "a square wave below 180 Hz"). The period is
    learned by folding (pintime.locate.shape.periodic): every edge found, in order, within 1.5× its σ on RMS
    about the wave's line and none beyond 6 σ, and the output says what the times rest on. The threshold
    method too: its σ is raised to its error about the wave's line (noise alone, it was 2000× too small)."""
    source = tmp_path / "signal.edges.csv"
    rows = "".join(f"{1000 + k * 500},0,{1 - k % 2}\n" for k in range(8000))  # 500 µs: 1 kHz
    source.write_text("cycle,channel,level\n" + rows)
    card = with_steady_clock(with_format(sc.PROFILES[profile], 44100, 16, 1))
    wav = synthesize(source, tmp_path / "square.wav", with_level(card, level) if level else card, 1,
                     F_CPU).wav_path
    for method in ("template", "threshold"):  # the threshold method's σ: raised to its error on the run
        out = tmp_path / f"{method}.csv"
        assert main(["edges", str(wav), "--csv", str(out), "--method", method]) == 0
        assert "one period of a periodic signal (" in capsys.readouterr().err
        found = np.genfromtxt(out, delimiter=",", names=True)
        assert len(found) == 8000 and np.all(found["polarity"] == np.where(np.arange(8000) % 2, -1, 1))
        design = np.column_stack([np.ones(8000), np.arange(8000), found["polarity"] < 0])
        residual = found["time_s"] - design @ np.linalg.lstsq(design, found["time_s"], rcond=None)[0]
        assert np.sqrt(np.mean((residual / found["sigma_s"]) ** 2)) < 1.5
        assert np.max(np.abs(residual) / found["sigma_s"]) < 6


def test_a_square_wave_in_stereo_with_its_crosstalk(tmp_path, capsys):
    """A 1 kHz square wave on the left channel of a 44.1 kHz 16-bit stereo recording, its crosstalk at −60
    dB on the right (a cheap card's): the right channel's edges are detected too, and were refused; each
    channel's own period is learned, and both channels' edges are within 1.5× their σ. A right channel
    with other, sparse pulses has no period to learn there: one error line that says so."""
    source = tmp_path / "signal.edges.csv"
    rows = "".join(f"{1000 + k * 500},0,{1 - k % 2}\n" for k in range(8000))
    source.write_text("cycle,channel,level\n" + rows)
    card = with_steady_clock(with_format(sc.PROFILES["default"], 44100, 16, 1))
    left, rate = sf.read(synthesize(source, tmp_path / "square.wav", card, 1, F_CPU).wav_path)
    noise = np.random.default_rng(2).normal(0.0, 1e-5, len(left))
    sparse = np.where((np.arange(len(left)) // 3000) % 2, 0.3, 0.0)  # steps 3000 samples apart
    for right, works in ((1e-3 * left + noise, True), (sparse + noise, False)):
        wav, out = tmp_path / "stereo.wav", tmp_path / "stereo.csv"
        sf.write(wav, np.column_stack([left, right]), rate, subtype="PCM_16")
        if not works:
            assert main(["edges", str(wav)]) == 2
            assert "right channel holds edges, but no periodic signal" in capsys.readouterr().err
            continue
        assert main(["edges", str(wav), "--csv", str(out)]) == 0
        assert "1 other channel(s) with their own" in capsys.readouterr().err
        found = np.genfromtxt(out, delimiter=",", names=True)
        for channel in (0, 1):
            mine = found[found["channel"] == channel]
            design = np.column_stack([np.ones(8000), np.arange(8000), mine["polarity"] < 0])
            residual = mine["time_s"] - design @ np.linalg.lstsq(design, mine["time_s"], rcond=None)[0]
            assert len(mine) == 8000 and np.sqrt(np.mean((residual / mine["sigma_s"]) ** 2)) < 1.5


def test_audio_lost_from_a_square_wave_is_found_from_its_phase(tmp_path, capsys):
    """1000 samples cut out of a 1 kHz square wave at 44.1 kHz, 2 s in (a dropout no sidecar lists): the
    cut broke the wave into two periodic runs, and the first block, judged to hold no edges, was skipped:
    the first 5.9 s of a 10 s capture's edges were missing, exit status 0. Every edge outside the cut is
    found, and the jump of the wave's phase there, 1000 samples modulo the period, is reported."""
    source = tmp_path / "signal.edges.csv"
    rows = "".join(f"{1000 + k * 500},0,{1 - k % 2}\n" for k in range(8000))
    source.write_text("cycle,channel,level\n" + rows)
    card = with_steady_clock(with_format(sc.PROFILES["default"], 44100, 16, 1))
    x, rate = sf.read(synthesize(source, tmp_path / "square.wav", card, 1, F_CPU).wav_path)
    cut = tmp_path / "cut.wav"
    sf.write(cut, np.concatenate([x[:2 * rate], x[2 * rate + 1000:]]), rate, subtype="PCM_16")
    out = tmp_path / "cut.csv"
    assert main(["edges", str(cut), "--csv", str(out)]) == 0
    err = capsys.readouterr().err
    found = np.genfromtxt(out, delimiter=",", names=True)
    lost = round(1000 / 22.05)  # edges in the samples cut out, 22.05 samples apart
    assert abs(len(found) - (8000 - lost)) <= 1
    at_cut = r"([-+]\d+\.\d+) µs between 1\.99\d+ and 2\.00\d+ s \[period\]"
    jumps = [float(j) for j in re.findall(at_cut, err)]
    lost_us = (1000 - 44.1 * (1000 // 44.1)) / rate * 1e6  # the loss, modulo whole periods
    assert "phase jumps 1 time(s)" in err and len(jumps) == 1 and abs(jumps[0] - lost_us) < 0.5e6 / rate, err


def test_a_pwm_whose_duty_changes_is_refused(tmp_path, capsys):
    """A 490 Hz PWM at 25 % for 3 s, then at 50 % (44.1 kHz, 16-bit mono): one period is learned, and the
    other setting's edges were located against it (5 s of each at 48 kHz: 10× their σ, exit status 0).
    Refused, one line."""
    rises = 1000 + 2041 * np.arange(2940)
    cycles = np.sort(np.concatenate([rises, rises + np.where(np.arange(2940) < 1470, 510, 1020)]))
    source = tmp_path / "signal.edges.csv"
    source.write_text("cycle,channel,level\n" + "".join(f"{c},0,{1 - k % 2}\n" for k, c in enumerate(cycles)))
    card = with_steady_clock(with_format(sc.PROFILES["default"], 44100, 16, 1))
    wav = synthesize(source, tmp_path / "pwm.wav", card, 1, F_CPU).wav_path
    assert main(["edges", str(wav)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "the periodic signal changes by" in lines[0] and "duty cycle" in lines[0]


def _located_about_line(tmp_path: Path, cycles: np.ndarray, levels: np.ndarray, card) -> tuple[list[str],
                                                                                                np.ndarray]:
    """The edges at ``cycles`` (1 MHz; the pin's level after each ``levels``) rendered by ``card`` (seed 1)
    and located by `pintime edges`, every one found: its summary lines, and each edge's error in its σ
    about a straight line in the exact time with an offset per polarity."""
    source = tmp_path / "signal.edges.csv"
    rows = "".join(f"{c:.0f},0,{v:.0f}\n" for c, v in zip(cycles, levels, strict=True))
    source.write_text("cycle,channel,level\n" + rows)
    wav = synthesize(source, tmp_path / "capture.wav", card, 1, F_CPU).wav_path
    out = tmp_path / "capture.csv"
    code, _, lines = run_cli(["edges", wav, "--csv", out])
    assert code == 0, lines
    found = np.genfromtxt(out, delimiter=",", names=True)
    assert len(found) == len(cycles)
    design = np.column_stack([np.ones(len(cycles)), cycles, found["polarity"] < 0])
    residual = found["time_s"] - design @ np.linalg.lstsq(design, found["time_s"], rcond=None)[0]
    return lines, residual / found["sigma_s"]


def test_a_dense_signal_that_is_not_periodic_is_learned_from_all_its_edges(tmp_path):
    """Pulses 1-1.5 ms apart at random (44-66 samples at 44.1 kHz): inside one another's learning window,
    and no period to fold (before: refused). The edge shape is learned from all edges together
    (pintime.locate.shape.dense): every edge found, within 1.5× its σ on RMS and none beyond 6 σ."""
    spacing = np.random.default_rng(4).uniform(1000, 1500, 1600)
    cycles = np.round(1000 + np.cumsum(spacing))
    card = with_steady_clock(with_format(sc.PROFILES["default"], 44100, 16, 1))
    _, z = _located_about_line(tmp_path, cycles, 1 - np.arange(len(cycles)) % 2, card)
    assert np.sqrt(np.mean(z ** 2)) < 1.5 and np.max(np.abs(z)) < 6, z


def test_a_uart_sending_without_pause_is_located_with_its_sigma_enlarged(tmp_path):
    """9600 baud, 1000 random bytes back to back (48 kHz, 16-bit mono: a bit is 5 samples). Learned from
    all edges, the shape's fit and each edge's centroid disagree by 7× their σ: the pattern hides part of
    the response (before: refused). Every edge is found, each σ enlarged that much and said so, and the
    edges lie within it (0.25× on RMS, the worst 1.3)."""
    rng = np.random.default_rng(5)
    bits = np.column_stack([np.zeros(1000), rng.integers(0, 2, (1000, 8)), np.ones(1000)]).ravel()
    level = np.concatenate([[1.0], bits])
    change = np.flatnonzero(np.diff(level)) + 1  # bit k starts at 1000 + (k − 1) · 10⁶/9600 cycles
    card = with_steady_clock(with_format(sc.PROFILES["default"], 48000, 16, 1))
    lines, z = _located_about_line(tmp_path, np.round(1000 + (change - 1) * 1e6 / 9600), level[change], card)
    assert "× its fit's: fit and centroid of each edge disagree" in lines[0], lines
    assert np.sqrt(np.mean(z ** 2)) < 1.0 and np.max(np.abs(z)) < 6, z


def test_a_servo_sweep_is_learned_as_a_dense_signal(tmp_path):
    """A hobby servo's 50 Hz signal, its pulse sweeping 1 → 2 → 1 ms in 2 s (48 kHz, 16-bit mono): the rises
    are periodic and each fall moves by a sample a period, within a periodic run's tolerance, so one period
    was folded and the next block refused ("the periodic signal changes"). A run whose pulse width drifts
    is no periodic signal (detect.steady_duty): learned from all edges, every edge within 1.5× its σ on
    RMS and none beyond 6 σ."""
    rises = 1000 + 20000 * np.arange(400)
    width = np.round(1000 + 1000 * (1 - np.abs(2 * (np.arange(400) % 100) / 100 - 1)))
    cycles = np.column_stack([rises, rises + width]).ravel()
    card = with_steady_clock(with_format(sc.PROFILES["default"], 48000, 16, 1))
    _, z = _located_about_line(tmp_path, cycles, 1 - np.arange(len(cycles)) % 2, card)
    assert np.sqrt(np.mean(z ** 2)) < 1.5 and np.max(np.abs(z)) < 6, z


def test_a_16_bit_card_whose_quiet_is_one_code_has_its_noise_from_the_train(tmp_path, make_sim):
    """`usb-96k` at 48 kHz 16-bit mono: −105 dBFS of analog noise, below one LSB, so its quiet stretches are
    all one code and the noise measured there was the LSB/√12 floor, leaving the analog noise out of the
    Cramér–Rao bound (its edges 1.56× it). The train fit's residual holds it (1.16× the floor): the noise,
    and the edges within 1.5× the bound."""
    edges = _first_cycles(make_sim, tmp_path, 3_000_000)
    card = with_steady_clock(with_format(sc.PROFILES["usb-96k"], 48000, 16, 1))
    result = locate_capture(synthesize(edges, tmp_path / "capture.wav", card, 1, F_CPU).wav_path)
    floor = (1.0 - result.info.clip_level) / np.sqrt(12.0)
    assert result.train is not None and result.noise_rms[0] == result.train.residual_rms > 1.1 * floor
    e = errors_of(result, replace(read_edge_list(edges), unit_s=1.0 / F_CPU))
    assert e.matched == e.located and e.rms_ns < 1.5 * e.crlb_ns, e


def test_laptop_jack_long_pulses_unbiased_at_readme_level(tmp_path, make_sim):
    """A laptop jack's strong AC coupling (100 and 300 Hz: a step keeps a fifth of itself after 0.5 ms),
    16-bit mono at 48 kHz, README's 47 kΩ / 1 kΩ divider (0.067 FS on its 1 Vrms input), steady clock:
    the first 3 s of table1 against simavr's edges. The coupling is learned and undone
    (pintime.locate.coupling.highpass), so the edges after Table 1's 2.4-2.8 ms overdetermined pulses carry no
    droop bias (before: −37 … +18 ns, by the interval before the edge), every edge is within 1.5× its bound
    on RMS and none beyond 6 σ."""
    edges = _first_cycles(make_sim, tmp_path, 3_000_000)  # the first 3 s at 1 MHz
    card = with_steady_clock(with_level(with_format(sc.PROFILES["laptop-48k"], 48000, 16, 1), "readme"))
    wav = synthesize(edges, tmp_path / "capture.wav", card, 3, F_CPU).wav_path
    result = locate_capture(wav)
    assert result.train is not None and len(result.highpass[0].coef) == 2
    truth = replace(read_edge_list(edges), unit_s=1.0 / F_CPU)
    e = errors_of(result, truth)
    assert e.matched == e.located == np.count_nonzero(truth.channel == 0)  # mono: the pin's edges
    assert e.rms_ns < 1.5 * e.crlb_ns, e
    m = match_stretches(result.edges, truth, None)
    pol, channel = result.edges.polarity[m.idx], result.edges.channel[m.idx]
    meas = channel == 0
    err = m.err - np.where(pol > 0, m.err[meas & (pol > 0)].mean(), m.err[meas & (pol < 0)].mean())
    order = np.flatnonzero(truth.channel == 0)
    previous_us = dict(zip(order[1:].tolist(), np.diff(truth.time[order]).tolist(), strict=True))
    long = meas & np.array([2300 <= previous_us.get(j, 0) <= 2900 for j in m.jdx.tolist()])
    assert long.sum() > 100
    for sign in (1, -1):
        sel = long & (pol == sign)
        assert abs(err[sel].mean()) < 4 * err[sel].std() / np.sqrt(sel.sum()) + 0.1 * e.crlb_ns * 1e-9
    assert np.all(np.abs(err[meas]) < 6 * result.edges.sigma[m.idx][meas])


def test_readme_wiring_level_and_steady_clock_render(tmp_path, capsys):
    """`pintime synth --level readme --no-wander`: README's 47 kΩ / 1 kΩ divider into a 10 kΩ line input
    gives 5 V · 0.0190 = 0.095 V, 0.034 FS on the default card's 2 Vrms input; a number is a step in FS."""
    assert with_level(sc.PROFILES["default"], "readme").step_fs == pytest.approx(0.0335, abs=1e-4)
    assert with_level(sc.PROFILES["default"], 0.25).step_fs == pytest.approx(0.25)
    assert with_steady_clock(sc.PROFILES["noisy"]).wander_adev_1s == 0.0
    with pytest.raises(PintimeError, match="the level must be a step between 0 and 1 of full scale"):
        with_level(sc.PROFILES["default"], 1.5)
    edges = tmp_path / "e.edges.csv"
    edges.write_text("cycle,channel,level\n100000,0,1\n200000,0,0\n")
    wav = tmp_path / "w.wav"
    assert main(["synth", str(edges), "-o", str(wav), "--f-cpu-hz", "1e6", "--rate", "48000", "--channels",
                 "1", "--level", "readme", "--no-wander"]) == 0
    assert "step 0.0335 FS" in capsys.readouterr().out
    assert main(["synth", str(edges), "-o", str(wav), "--f-cpu-hz", "1e6", "--level", "loud", "--force"]) == 2
