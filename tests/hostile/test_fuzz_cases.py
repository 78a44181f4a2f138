"""``pintime edges`` on a fixed few of the fuzz cases (tests/fuzzcase.py; ``tools/fuzz_edges.py`` runs many),
and one regression test per class of failure the fuzzing found and the analyzer no longer has (issue 37)."""

from __future__ import annotations

import fuzzcase
import numpy as np
import pytest
import render
import soundfile as sf
from scipy import signal
from support import run_cli

# seeds whose cases are quick (≤ 3 s of audio at 48 kHz or less) and cover the families: located cases
# meet every requirement; refused ones refuse in one line, never naming a calibration train
SEEDS = {
    6: "located",  # PWM at 96 kHz through soft clipping and hum
    11: "located",  # LTC at 44.1 kHz through a one-pole coupling, DC offset
    19: "located",  # a square wave re-phased every second, float at −68 dBFS, inverted
}


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_fuzz_case(tmp_path, seed):
    case = fuzzcase.draw(seed)
    wav, csv = tmp_path / "case.wav", tmp_path / "case.csv"
    truth, _, _ = fuzzcase.write_case(case, wav)
    code, _, lines = run_cli(["edges", wav, "--csv", csv])
    assert not any("calibration train" in line for line in lines), lines
    if SEEDS[seed] == "refused":
        assert code == 2 and len(lines) == 1 and lines[0].startswith("pintime: error: "), lines
        return
    assert code == 0, lines
    rows = np.loadtxt(csv, delimiter=",", skiprows=1, ndmin=2)
    score = fuzzcase.score(rows, truth, case.rate_hz, sf.info(str(wav)).frames)
    assert not score.failures, (case.describe(), score)


@pytest.mark.parametrize("gain_change", [0.0, 0.2])
def test_a_square_wave_without_frames_is_never_called_a_calibration_train(tmp_path, gain_change):
    """Evenly spaced alternating edges are learned as pintime's calibration train is (their line gives each
    its place), but a capture without pintime frames has no train: located, the summary names a square
    wave; refused (automatic gain control, ±20 % at 0.5 Hz), so does the error."""
    rate, seconds = 48000, 2.0
    edges = 30.3 + np.arange(int(seconds * rate / 240.37) - 1) * 240.37  # 100 Hz
    wav = render.write(tmp_path / "square.wav", edges, rate, seconds)
    if gain_change:
        x, _ = sf.read(wav)
        gain = 1 + gain_change * np.sin(np.pi * np.arange(len(x)) / rate)
        sf.write(wav, x * gain, rate, subtype="PCM_16")
    code, _, lines = run_cli(["edges", wav, "--csv", tmp_path / "square.csv"])
    assert code == (2 if gain_change else 0), lines
    assert not any("calibration train" in line for line in lines), lines
    assert any("square wave" in line for line in lines), lines


def test_a_code_whose_falls_are_slower_than_its_rises_is_located(tmp_path):
    """LTC-like, each fall 3× slower than the rise (a pull-up's RC, a distorted falling edge): its falls
    peak a third as high in the difference, and one threshold for both polarities missed them, the grid
    then taken from the signal's plateaus (96 kHz; the fuzz's LTC at 44.1 kHz through a PC input: 0.8 samples
    of scatter, 14 % of the edges missing)."""
    seconds, rate = 2.5, 96000
    truth = render.biphase_mark(seconds, rate)
    n = int(seconds * rate)
    rise = 25e-6 * rate
    x = render.level(truth[0::2], 0, n, rise, np.ones(len(truth[0::2]))) \
        - render.level(truth[1::2], 0, n, 3 * rise, np.ones(len(truth[1::2])))
    b, a = signal.butter(1, 20 / (rate / 2), "highpass")
    x = signal.lfilter(b, a, 0.3 * (x - 0.5)) + np.random.default_rng(5).normal(0, 3e-4, n)
    wav, csv = tmp_path / "slowfall.wav", tmp_path / "slowfall.csv"
    sf.write(wav, x, rate, subtype="PCM_16")
    code, _, lines = run_cli(["edges", wav, "--csv", csv])
    assert code == 0, lines
    score = fuzzcase.score(np.loadtxt(csv, delimiter=",", skiprows=1, ndmin=2), truth, rate, n)
    assert score.missing == 0 and score.spurious == 0 and score.beyond_4sigma <= 0.01, score


@pytest.mark.parametrize("snr_db", [40, 60, 80])
def test_a_soft_clipped_pwm_is_located_with_sigma_that_holds_its_error_or_refused(tmp_path, snr_db):
    """A 200 Hz PWM (30 % duty) at 192 kHz through a 20 Hz coupling and a soft clipper (tanh, drive 3)
    after it: the clipper makes the edges' shape change with where they fall between samples, which blind
    learning takes for moves of the edges. It was located with σ 6-660× too small (80-99 % of the edges
    beyond 4σ); now either located with σ that holds the error (the error the edges' phase explains about
    their period's line widens every σ) or refused in one line (the shape leaves more than the noise)."""
    chain = [("highpass", {"corner_hz": 20.0, "poles": 1}), ("softclip", {"drive": 3.0}),
             ("noise", {"snr_db": float(snr_db)})]
    case = fuzzcase.Case(1, "pwm", 192000, "PCM_24", 2.5, 0.3, "mono",
                         {"ppm": 10.0, "jitter_s": 0.0, "period_s": 5e-3, "duty": 0.3}, chain)
    wav, csv = tmp_path / "softclip.wav", tmp_path / "softclip.csv"
    truth, _, clipped = fuzzcase.write_case(case, wav)
    assert not clipped  # soft clipping only: no sample at full scale
    code, _, lines = run_cli(["edges", wav, "--csv", csv])
    if code:
        assert code == 2 and len(lines) == 1 and "not one shape" in lines[0], lines
        return
    score = fuzzcase.score(np.loadtxt(csv, delimiter=",", skiprows=1, ndmin=2), truth, case.rate_hz,
                           sf.info(str(wav)).frames)
    assert score.missing == 0 and score.spurious == 0, score
    assert score.beyond_4sigma <= fuzzcase.BEYOND_4SIGMA, score
    assert 1 / fuzzcase.SIGMA_RATIO <= score.sigma_ratio <= fuzzcase.SIGMA_RATIO, score
