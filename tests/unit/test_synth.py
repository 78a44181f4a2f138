"""The sound-card model (pintime.soundcard.model, pintime.soundcard.synth): rendered edges sit where the
model says.

Edge times are never whole numbers of samples (docs/design.md §10 test trap): F_CPU = 16 MHz gives 83⅓ cycles
per sample, and every capture starts at a random fraction of a sample.
"""

from __future__ import annotations

import filecmp
import json
from dataclasses import replace

import numpy as np
import pytest
import soundfile as sf
from pintime.errors import PintimeError
from pintime.soundcard import model as sc
from pintime.soundcard.synth import synthesize
from scipy.optimize import least_squares

FS = sc.SAMPLE_RATE_HZ
F_CPU = 16_000_000
QUIET = replace(sc.PROFILES["default"].quiet(), name="quiet", clock_ppm=0.0)
QUIET_WIDE = replace(sc.PROFILES["wide-filter"].quiet(), name="quiet-wide", clock_ppm=0.0)
DC_COUPLED = replace(QUIET, name="dc-coupled", ac_coupling_hz=(), digital_highpass_hz=None)


def write_edges(directory, rows, name="e"):
    path = directory / f"{name}.edges.csv"
    path.write_text("cycle,channel,level\n" + "".join(f"{c},{ch},{lv}\n" for c, ch, lv in rows))
    return path


def render(tmp_path, rows, profile, seed=1, name="e"):
    csv = write_edges(tmp_path, rows, name)
    result = synthesize(csv, tmp_path / f"{name}-capture.wav", profile, seed, f_cpu_hz=F_CPU)
    samples, rate = sf.read(result.wav_path, dtype="float64")
    assert rate == profile.samplerate_hz
    return samples, result


def fit_edge(samples, t_guess_s, profile, polarity, half_window=90):
    """Least-squares fit of amplitude, offset and time of the model's own step response to one edge.

    Returns the fitted edge time in card seconds from the first sample.
    """
    n_mid = int(np.argmax(np.abs(np.diff(samples))))
    n = np.arange(max(n_mid - half_window, 0), min(n_mid + half_window, len(samples)))
    y = samples[n]

    def residual(params):
        amplitude, offset, shift_samples = params
        t = n / FS - t_guess_s - shift_samples / FS
        return amplitude * sc.step_response(profile, t, polarity) + offset - y

    amp0 = polarity * (y.max() - y.min())
    fit = least_squares(residual, [amp0, 0.0, 0.0], xtol=1e-14, ftol=1e-15, gtol=1e-15)
    return t_guess_s + fit.x[2] / FS


def edge_fit_error_s(tmp_path, profile, cycle, level):
    samples, result = render(tmp_path, [(cycle, 0, level)], profile, name=f"edge{level}")
    truth_s = cycle / F_CPU - result.start_s  # card seconds after the first sample (ppm 0, no wander)
    fitted = fit_edge(samples[:, 0], truth_s + 1e-6, profile, 1 if level else -1)
    return fitted - truth_s


@pytest.mark.parametrize("profile", [QUIET, QUIET_WIDE], ids=["sharp", "wide"])
@pytest.mark.parametrize("level", [1, 0], ids=["rising", "falling"])
@pytest.mark.parametrize("cycle", [3_200_007, 3_200_031, 3_200_050])
def test_isolated_edge_sits_at_its_input_time(tmp_path, profile, level, cycle):
    # 38400.084, .372 and .6 samples after cycle 0, plus the capture's random start fraction
    error_s = edge_fit_error_s(tmp_path, profile, cycle, level)
    assert abs(error_s) < 0.1e-9


def test_table_interpolation_error_is_far_below_0_1_ns():
    rng = np.random.default_rng(7)
    for profile in (QUIET, QUIET_WIDE, sc.PROFILES["noisy"]):
        for polarity in (1, -1):
            table = sc.lowpass_table(profile, polarity)
            x = rng.uniform(0, table.support_samples, 1500)
            error = np.abs(table(x) - sc.lowpass_step_direct(profile, x, polarity)).max()
            fine = np.linspace(0, table.support_samples, 100_001)
            max_slope = np.abs(np.gradient(table(fine), fine)).max()  # per sample
            assert error / max_slope / FS < 0.01e-9  # amplitude error as a time error at the steepest point


def test_rise_fall_asymmetry_is_the_configured_one(tmp_path):
    skewed = replace(QUIET, name="skewed", rise_delay_s=9e-9, fall_delay_s=4e-9,
                     rise_time_s=6e-9, fall_time_s=2e-9)
    symmetric = replace(QUIET, name="symmetric", rise_delay_s=0.0, fall_delay_s=0.0,
                        rise_time_s=4e-9, fall_time_s=4e-9)
    errors = {}
    for level in (1, 0):
        samples, result = render(tmp_path, [(3_200_007, 0, level)], skewed, name=f"asym{level}")
        truth_s = 3_200_007 / F_CPU - result.start_s
        errors[level] = fit_edge(samples[:, 0], truth_s, symmetric, 1) - truth_s  # one template for both
    measured = errors[0] - errors[1]  # the symmetric template's own ramp centre (2 ns) cancels here
    assert skewed.asymmetry_s() == pytest.approx(-7e-9)
    assert measured == pytest.approx(skewed.asymmetry_s(), abs=0.1e-9)


def test_clock_offset_shows_up_as_exactly_the_configured_slope(tmp_path):
    ppm = 37.5
    card = replace(DC_COUPLED, name="ppm", clock_ppm=ppm)
    period = 1_672_593  # cycles: 0.10453706 s = 20071.1 samples
    rows = [(1_000_003 + k * period, 0, (k + 1) % 2) for k in range(400)]  # 41 s of toggles
    samples, result = render(tmp_path, rows, card, name="ppm")
    left = samples[:, 0]
    truth, fitted = [], []
    rate = FS * (1 + ppm * 1e-6)
    for cycle, _, _ in rows[::8]:  # rising edges, spread over the whole capture
        t_s = cycle / F_CPU
        guess_card_s = (t_s - result.start_s) * rate / FS
        n0 = int(guess_card_s * FS) - 200
        window = left[n0 : n0 + 400]
        fitted.append(n0 / FS + fit_edge(window, guess_card_s - n0 / FS + 1e-6, card, 1))
        truth.append(t_s)
    slope = np.polyfit(np.array(truth) - truth[0], np.array(fitted) - fitted[0], 1)[0]
    assert slope == pytest.approx(1 + ppm * 1e-6, abs=1e-10)


def test_noise_level_and_dc_offset_are_the_configured_ones(tmp_path):
    noisy = replace(DC_COUPLED, name="noise", noise_dbfs=-80.0, dc_offset_fs=0.01)
    samples, _ = render(tmp_path, [(F_CPU, 0, 1)], noisy, name="noise")  # 1 s of silence first
    quiet = samples[: FS // 2]
    for channel in (0, 1):
        assert quiet[:, channel].std() == pytest.approx(1e-4, rel=0.02)
        assert quiet[:, channel].mean() == pytest.approx(0.01, abs=4 * 1e-4 / np.sqrt(len(quiet)))
    assert abs(np.corrcoef(quiet[:, 0], quiet[:, 1])[0, 1]) < 0.02  # independent per channel


def test_steps_beyond_full_scale_clip_at_the_24_bit_rails(tmp_path):
    loud = replace(DC_COUPLED, name="loud", attenuator_ratio=0.85)  # 5 V → 4.25 V: 1.5 FS
    assert loud.step_fs == pytest.approx(1.5, rel=0.01)
    csv = write_edges(tmp_path, [(F_CPU // 10, 0, 1), (F_CPU // 5, 0, 0)])
    result = synthesize(csv, tmp_path / "loud.wav", loud, 1, f_cpu_hz=F_CPU)
    codes, _ = sf.read(result.wav_path, dtype="int32")
    codes = codes[:, 0] >> 8
    assert codes.max() == 2**23 - 1
    assert result.clipped_samples == np.count_nonzero(codes == 2**23 - 1) > 1000


def test_default_profile_stays_well_below_full_scale(tmp_path):
    # a burst of short pulses after a long high (worst case for step + droop + Gibbs overshoot)
    rows = [(F_CPU // 20, 0, 1), (F_CPU // 2, 0, 0)]
    rows += [(F_CPU // 2 + 400 * 16 * k + 1, 0, k % 2) for k in range(1, 40)]
    for name in sc.PROFILES:
        samples, result = render(tmp_path, rows, sc.PROFILES[name], name=name)
        assert result.clipped_samples == 0
        assert np.abs(samples).max() < 0.85


def test_wav_round_trips_through_soundfile_at_24_bits(tmp_path):
    samples, result = render(tmp_path, [(F_CPU // 10, 0, 1), (F_CPU // 10 + 77, 1, 1)], sc.PROFILES["paper"])
    info = sf.info(result.wav_path)
    assert (info.samplerate, info.channels, info.subtype, info.format) == (192000, 2, "PCM_24", "WAV")
    assert info.frames == result.n_samples
    codes, _ = sf.read(result.wav_path, dtype="int32")
    assert np.all(codes & 0xFF == 0)  # 24 significant bits
    assert np.array_equal((codes >> 8) / 2**23, samples)


def test_same_seed_same_bytes_different_seed_different_bytes(tmp_path):
    rows = [(1_000_003 + k * 1_234_567, k % 2, 1 - (k // 2) % 2) for k in range(8)]
    csv = write_edges(tmp_path, rows)
    paths = [tmp_path / name for name in ("a.wav", "b.wav", "c.wav")]
    for path, seed in zip(paths, (5, 5, 6), strict=True):
        synthesize(csv, path, "noisy", seed, f_cpu_hz=F_CPU)
    assert filecmp.cmp(paths[0], paths[1], shallow=False)
    assert not filecmp.cmp(paths[0], paths[2], shallow=False)


def test_sidecar_names_the_source_and_leaks_nothing(tmp_path):
    csv = write_edges(tmp_path, [(1_000_003, 0, 1)], name="table9")
    (tmp_path / "table9.json").write_text(json.dumps({"f_cpu_hz": F_CPU, "revision": 0x0AEDC0DE}))
    result = synthesize(csv, tmp_path / "cap.wav", "wide-filter", 3)  # F_CPU from the simulation JSON
    sidecar = json.loads(result.sidecar_path.read_text())
    assert result.sidecar_path == tmp_path / "cap.json"
    assert sidecar["source_edges"] == str(csv)
    assert (sidecar["firmware_revision"], sidecar["profile"], sidecar["seed"]) == (
        0x0AEDC0DE, "wide-filter", 3)
    assert set(sidecar) == {"what", "source_edges", "firmware_revision", "profile", "seed", "pintime_version"}


@pytest.mark.parametrize("kwargs, message", [
    ({"profile": "bogus"}, "valid: default, paper, wide-filter, noisy"),
    ({"seed": -1}, "non-negative"),
    ({"f_cpu_hz": None}, "F_CPU unknown"),
    ({"wav": "e.edges.csv"}, "refusing to overwrite"),
    # its sidecar would be e.json, the name of the simulation JSON (not there: none is overwritten)
    ({"wav": "e.wav"}, "refusing to take a name that belongs with the input"),
    ({"wav": "out.flac"}, ".wav"),
    ({"wav": "a-file/out.wav"}, "cannot write"),  # its folder is a file
    ({"edges": "missing.edges.csv"}, "edge list not found"),
    ({"duration_s": 1e-9}, "at least one sample"),
])
def test_bad_arguments_give_one_clear_error(tmp_path, kwargs, message):
    csv = write_edges(tmp_path, [(1_000_003, 0, 1)])
    (tmp_path / "a-file").write_text("")
    args = {"profile": "default", "seed": 0, "f_cpu_hz": F_CPU, "wav": "out.wav", "edges": csv.name,
            "duration_s": None} | kwargs
    with pytest.raises(PintimeError, match=message):
        synthesize(tmp_path / args["edges"], tmp_path / args["wav"], args["profile"], args["seed"],
                   args["f_cpu_hz"], args["duration_s"])


def test_cli_renders_and_plots(tmp_path, capsys):
    from pintime.cli import main

    csv = write_edges(tmp_path, [(1_000_003, 0, 1), (2_000_011, 0, 0)])
    code = main(["synth", str(csv), "-o", str(tmp_path / "cli.wav"), "--f-cpu-hz", str(F_CPU),
                 "--profile", "noisy", "--seed", "9", "--plot", str(tmp_path / "plots")])
    assert code == 0
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["droop.png", "edge-sharp.png",
                                                                      "edge-wide.png"]
    assert main(["synth", str(csv), "-o", str(tmp_path / "x.wav"), "--profile", "nope"]) == 2
    assert "valid: default" in capsys.readouterr().err


def allan_deviation(phase_s, step_s, tau_s):
    """Overlapping Allan deviation at ``tau_s`` from time-error samples every ``step_s``."""
    m = round(tau_s / step_s)
    second_diff = phase_s[2 * m :] - 2 * phase_s[m:-m] + phase_s[: -2 * m]
    return np.sqrt(np.mean(second_diff**2) / (2 * tau_s**2))


def test_clock_wander_has_the_configured_allan_deviation_at_1_s():
    from pintime.soundcard.synth import wander_phase

    t = np.arange(0, 4000, 0.01)
    phase = wander_phase(t, 2e-8, np.random.default_rng(3))
    assert allan_deviation(phase, 0.01, 1.0) == pytest.approx(2e-8, rel=0.1)
    assert allan_deviation(phase, 0.01, 10.0) == pytest.approx(2e-8 / np.sqrt(10), rel=0.25)  # white FM
    assert np.all(wander_phase(t, 0.0, np.random.default_rng(3)) == 0)


def test_right_channel_delay_and_inversion(tmp_path):
    card = replace(QUIET, name="two-adcs", right_delay_s=1.3e-6, inverted=True)
    samples, result = render(tmp_path, [(3_200_007, 0, 1), (3_200_007, 1, 1)], card, name="skew")
    truth_s = 3_200_007 / F_CPU - result.start_s
    left = fit_edge(samples[:, 0], truth_s, card, 1)
    right = fit_edge(samples[:, 1], truth_s, replace(card, right_delay_s=0.0), 1)
    assert right - left == pytest.approx(1.3e-6, abs=0.1e-9)
    # a rising pin edge comes out as a falling step (ringing stays within 10 % above zero)
    assert samples[:, 0].min() < -0.9 * card.step_fs and samples[:, 0].max() < 0.1 * card.step_fs


def test_dc_coupled_step_has_the_attenuated_pin_swing(tmp_path):
    samples, _ = render(tmp_path, [(F_CPU // 10, 0, 1)], DC_COUPLED, name="dc")
    assert samples[-100:, 0] == pytest.approx(5.0 * (3.9 / 13.9) / 2.83, abs=2**-23)
    assert np.all(samples[:1000] == 0)


def test_mains_hum_has_the_configured_frequency_and_level(tmp_path):
    hummy = replace(DC_COUPLED, name="hum", hum_hz=50.0, hum_dbfs=(-60.0, -70.0))
    samples, _ = render(tmp_path, [(F_CPU, 0, 1)], hummy, name="hum")
    quiet = samples[:FS // 2, 0]  # 0.5 s: 25 cycles of 50 Hz
    t = np.arange(len(quiet)) / FS
    for harmonic, level_dbfs in ((1, -60.0), (3, -70.0)):
        basis = np.exp(-2j * np.pi * 50.0 * harmonic * t)
        assert 2 * abs(np.mean(quiet * basis)) == pytest.approx(10 ** (level_dbfs / 20), rel=1e-3)


def test_duration_cuts_the_recording(tmp_path):
    csv = write_edges(tmp_path, [(F_CPU // 10, 0, 1), (3 * F_CPU, 0, 0)])
    result = synthesize(csv, tmp_path / "short.wav", "default", 0, F_CPU, duration_s=0.25)
    assert result.n_samples == sf.info(result.wav_path).frames == 48_000


def test_timing_noise_of_fitted_edges_matches_the_cramer_rao_bound(tmp_path):
    # docs/design.md §10: σ_τ² ≥ σ²/Σₙ s′(nT−τ)²; with amplitude and offset fitted too, the bound comes from
    # the 3×3 Fisher information. A least-squares fit of the true response is efficient here. DC-coupled, so
    # earlier edges leave only a constant (the fitted offset).
    sigma = 10 ** (-90 / 20)
    card = replace(DC_COUPLED, name="cr", noise_dbfs=-90.0)
    period = 1_234_567  # 0.0772 s between edges
    rows = [(1_000_003 + k * period, 0, (k + 1) % 2) for k in range(80)]
    samples, result = render(tmp_path, rows, card, name="cr")
    errors, bounds = [], []
    for cycle, _, level in rows:
        polarity = 1 if level else -1
        truth_s = cycle / F_CPU - result.start_s
        n0 = int(truth_s * FS) - 40
        t = (n0 + np.arange(160)) / FS
        local = truth_s - n0 / FS
        errors.append(fit_edge(samples[n0 : n0 + 160, 0], local + 1e-6, card, polarity) - local)
        h = 1e-9  # derivative by a central difference on the continuous response, not on the samples
        response = sc.step_response(card, t - truth_s, polarity)
        slope = (sc.step_response(card, t - truth_s + h, polarity)
                 - sc.step_response(card, t - truth_s - h, polarity)) / (2 * h)
        jac = np.stack([card.step_fs * slope, response, np.ones_like(t)], axis=1)
        bounds.append(np.sqrt(np.linalg.inv(jac.T @ jac)[0, 0]) * sigma)
    measured, bound = np.std(errors), np.mean(bounds)
    assert 0.1e-9 < bound < 1e-9  # ≈ T·σ/A: 0.35 ns at −90 dBFS, 0.5 FS (docs/design.md §10)
    assert measured == pytest.approx(bound, rel=0.3)  # 80 edges: the std itself is known to ±8 %


def test_renderer_with_jitter_matches_the_response_at_the_jittered_instants():
    from pintime.soundcard.synth import _Channel

    card = replace(DC_COUPLED, name="jitter")
    positions = np.array([100.37, 1000.81, 1500.5])  # card samples of the ramp starts
    polarity = np.array([1, -1, 1])
    jitter = np.random.default_rng(4).standard_normal(2000) * 300e-12 * FS  # the noisy profile's 300 ps
    rendered, _ = _Channel(positions, polarity, card).render(0, 2000, jitter)
    n = np.arange(2000)
    delays = np.array([card.delay_s(p) for p in polarity]) * FS
    exact = sum(p * card.step_fs * sc.step_response(card, (n + jitter - pos + d) / FS, p)
                for p, pos, d in zip(polarity, positions, delays, strict=True))
    # first-order jitter: the neglected d″j²/2 stays ~1e-7 of the step (about one 24-bit LSB)
    assert np.abs(rendered - exact).max() < 3e-7 * card.step_fs
    no_jitter, _ = _Channel(positions, polarity, card).render(0, 2000, None)
    assert np.abs(rendered - no_jitter).max() > 3e-5 * card.step_fs  # the jitter does show (s′·j)


def test_crosstalk_leaks_the_other_channel_at_the_configured_level(tmp_path):
    leaky = replace(DC_COUPLED, name="leaky", crosstalk_db=-60.0)
    samples, _ = render(tmp_path, [(F_CPU // 10, 1, 1)], leaky, name="leak")  # an edge on the right only
    assert samples[-1, 1] == pytest.approx(leaky.step_fs, abs=2**-23)
    assert samples[-1, 0] == pytest.approx(1e-3 * leaky.step_fs, abs=2**-23)


@pytest.mark.parametrize("spec, oversampling", [(sc.SHARP, 64), (sc.WIDE, 32)], ids=["sharp", "wide"])
def test_decimation_filter_meets_its_datasheet_band_edges(spec, oversampling):
    from scipy import signal

    taps = sc.decimation_fir(spec, oversampling)
    assert np.allclose(taps, taps[::-1])  # linear phase
    freqs_fs = np.linspace(0, oversampling / 2, 100_001)
    _, response = signal.freqz(taps, worN=freqs_fs, fs=oversampling)
    gain_db = 20 * np.log10(np.abs(response) + 1e-300)
    assert np.abs(gain_db[freqs_fs <= spec.passband_fs]).max() < 0.01
    assert gain_db[freqs_fs >= spec.stopband_fs].max() < 0.1 - spec.attenuation_db


def test_rendered_edges_carry_the_clock_wander(tmp_path):
    from pintime.soundcard.synth import wander_phase

    card = replace(DC_COUPLED, name="wander", wander_adev_1s=5e-8)
    rows = [(1_000_003 + k * 8_000_017, 0, (k + 1) % 2) for k in range(20)]  # every 0.5 s for 10 s
    samples, result = render(tmp_path, rows, card, seed=11, name="wander")
    truth_s = np.array([c for c, _, _ in rows]) / F_CPU
    # the renderer's wander stream is the second of the seed's six (white-box: the exact expected phase)
    stream = np.random.default_rng(np.random.SeedSequence(11).spawn(6)[1])
    wander_s = wander_phase(truth_s - result.start_s, card.wander_adev_1s, stream)
    shifts = []
    for (_, _, level), t_s in zip(rows, truth_s, strict=True):
        local_s = t_s - result.start_s
        n0 = int(local_s * FS) - 40
        fitted = fit_edge(samples[n0 : n0 + 160, 0], local_s - n0 / FS + 1e-6, card, 1 if level else -1)
        shifts.append(fitted - (local_s - n0 / FS))
    assert np.ptp(wander_s) > 5e-9  # tens of ns over 10 s: visible
    assert np.abs(np.array(shifts) - wander_s).max() < 0.1e-9


PC_LINE = replace(sc.PROFILES["pc-line-44k"].quiet(), name="pc-line-quiet", clock_ppm=0.0)


def _undershoot(samples, start):
    """Depth (fraction of the step) and time (ms) of the deepest point after the rising edge at ``start``."""
    after = samples[start:start + 200]
    k = int(np.argmin(after))
    return -after[k] / PC_LINE.step_fs, k / PC_LINE.samplerate_hz * 1e3


def test_pc_line_coupling_has_the_measured_shape():
    # the real chain (docs/design.md §10): 10-90 % of the peak in 1.44 samples, a zero crossing within half a
    # millisecond, an undershoot of 0.4 of the step near 1.2-1.3 ms
    fs = PC_LINE.samplerate_hz
    t = np.arange(-1e-3, 5e-3, 1e-7)
    y = sc.step_response(PC_LINE, t)
    top = y.max()
    rise = (t[np.argmax(y >= 0.9 * top)] - t[np.argmax(y >= 0.1 * top)]) * fs
    assert rise == pytest.approx(1.44, abs=0.02)
    mid_s = t[np.argmax(y >= 0.5 * top)]  # after the decimation filter's delay
    crossing_ms = (t[np.argmax((t > t[np.argmax(y)]) & (y < 0))] - mid_s) * 1e3
    assert 0.38 < crossing_ms < 0.5
    assert y.min() == pytest.approx(-0.40, abs=0.01)
    assert 1.1 < (t[np.argmin(y)] - mid_s) * 1e3 < 1.35


def test_pc_line_rendered_edge_follows_the_step_response(tmp_path):
    card = replace(PC_LINE, coupling_drift=0.0)
    samples, result = render(tmp_path, [(1_600_000, 0, 1)], card)
    n = np.arange(len(samples))
    truth_s = 1_600_000 / F_CPU - result.start_s
    expected = card.step_fs * sc.step_response(card, n / card.samplerate_hz - truth_s)
    assert np.max(np.abs(samples - expected)) < 1e-4 * card.step_fs + 2 ** -15


def test_pc_line_coupling_drifts_by_its_fraction(tmp_path):
    # a rising edge every 2 s over a drift period: the undershoot moves ±coupling_drift of itself
    card = replace(PC_LINE, coupling_drift_period_s=20.0)
    rows = [(c, 0, lv) for k in range(10)
            for c, lv in ((k * 32_000_000 + 1_000, 1), (k * 32_000_000 + 800_000, 0))]
    samples, result = render(tmp_path, rows, card)
    starts = [int((k * 2.0 - result.start_s) * card.samplerate_hz) + 30 for k in range(10)]
    depth = np.array([_undershoot(samples, s)[0] for s in starts])
    assert depth.max() / 0.402 - 1 == pytest.approx(0.1, abs=0.03)
    assert depth.min() / 0.402 - 1 == pytest.approx(-0.1, abs=0.03)
