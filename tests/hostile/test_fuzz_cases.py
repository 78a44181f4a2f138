"""``pintime edges`` on a fixed few of the fuzz cases (tests/fuzzcase.py; ``tools/fuzz_edges.py`` runs many),
and one regression test per class of failure the fuzzing found and the analyzer no longer has (issue 37)."""

from __future__ import annotations

import fuzzcase
import numpy as np
import pytest
import render
import soundfile as sf
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
