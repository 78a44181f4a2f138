"""A recording whose level changes during the take (the input's gain moved, a card's automatic gain
control): the edge detector's threshold follows it (pintime.locate.detect.blockdetect), every edge on either
side is located against simavr truth, and the change is reported.

Before: the threshold stayed at half the first edges' strength. At 0.55× the level the edges' strength
stood at the threshold: runs split, edges located twice, 189 of 281 frames rejected; below half no edge
was detected after the change, and the analysis used the first 15 s alone, exit 0, saying nothing.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from pintime.capture.edgelist import read_edge_list
from pintime.cli import main
from pintime.errors import PintimeError
from pintime.locate.stream.capture_edges import locate_capture
from pintime.soundcard import model as sc
from pintime.soundcard.formats import README_LEVEL, with_format, with_level
from pintime.soundcard.synth import synthesize
from pintime.validate.edgematch import match_stretches
from support import SIM

RUN_CYCLES = 15_000_000  # the first 15 s of the table1 run at 1 MHz: three 5.5 s blocks at 48 kHz


@pytest.fixture(scope="module")
def run(tmp_path_factory, make_sim) -> tuple[Path, Path]:
    """The run's edge list and its render: `laptop-48k` at 48 kHz 16-bit mono, README's level."""
    directory = tmp_path_factory.mktemp("level")
    lines = (make_sim / "table1.edges.csv").read_text().splitlines()
    csv = directory / "table1.edges.csv"
    csv.write_text("\n".join([lines[0]] + [r for r in lines[1:] if int(r.split(",")[0]) < RUN_CYCLES]) + "\n")
    (directory / "table1.json").write_text((SIM / "table1.json").read_text())
    card = replace(with_level(with_format(sc.PROFILES["laptop-48k"], 48000, 16, 1), README_LEVEL),
                   wander_adev_1s=0.0)
    return csv, synthesize(csv, directory / "steady.wav", card, seed=3).wav_path


@pytest.fixture(scope="module")
def steady_noise(run) -> float:
    """The noise learned from the render as it is, at one level."""
    return locate_capture(run[1]).noise_rms[0]


@pytest.mark.parametrize(("change_s", "gain"), [(10.0, 1.0), (10.0, 0.55), (10.0, 0.45), (10.0, 0.3),
                                                (10.0, 1.6), (6.0, 0.7), (4.0, 1.3), (3.5, 0.4), (5.0, 2.0),
                                                (3.5, 2.0)])
def test_edge_detection_follows_a_change_of_the_recordings_level(run, steady_noise, tmp_path, capsys,
                                                                 change_s, gain):
    """At 3.5-6 s the change falls inside the span the edge shape, the noise and the coupling are learned
    from (the first 8 s), after the calibration train (0.1-2.9 s): they are learned again before it (learned
    across 0.4× at 5 s, Differential 1000× read 6 ns off on a 40 s capture, 1.2× its CI). 0.4× at 3.5 s and
    2× at 3.5 or 5 s had failed in the learning itself, refused for misleading reasons ("rings beyond ±48
    samples", "no calibration train", "steps 2.1× the noise"): the jump is now found in the recorded
    samples' step strength (learnspan.level_jump) and the capture learned again before it."""
    csv, steady = run
    x, rate = sf.read(steady, dtype="float64")
    x[int(change_s * rate):] *= gain
    wav = tmp_path / "changed.wav"
    sf.write(wav, x, rate, subtype="PCM_16")
    result = locate_capture(wav)
    if gain == 1.0:
        assert result.level_changes == ()
    else:
        assert len(result.level_changes) == 1
        after_s, channel, level = result.level_changes[0]
        assert channel == 0 and level == pytest.approx(gain, rel=0.02)
        assert change_s - 0.5 < after_s < change_s  # the middle of the last stretch of edges before it
        assert result.learn_span_s[1] <= change_s
    assert result.noise_rms[0] == pytest.approx(steady_noise, rel=0.05)
    truth = replace(read_edge_list(csv), unit_s=1e-6)  # mono: no reference, cycles at 1 MHz
    m = match_stretches(result.edges, truth, None)
    # an edge whose window the change cuts, its samples at two gains, is no edge's shape (at 6 s, 4 samples
    # after one: 0.8 µs, 57σ off); the gain applied after the coupling also scales its droop, a transient the
    # restoration carries for ten time constants of the slowest corner (at 10 s ×1.6: edges 2.5 ms after it
    # 8.7σ off; a known limit, docs/results.md); capture seconds of the exact edges from the matched ones
    capture_s = np.polyval(np.polyfit(truth.time[m.jdx], result.edges.time[m.idx], 1), truth.time)
    settle_s = 10 / (2 * np.pi * min(result.highpass[0].corners_hz()))
    beside = (capture_s > change_s - 0.001) & (capture_s < change_s + settle_s)
    z = np.abs(m.err - np.mean(m.err)) / result.edges.sigma[m.idx]
    assert np.max(z[~beside[m.jdx]]) <= 6
    found = np.zeros(len(truth.time), bool)
    found[m.jdx] = True
    assert np.all(found[(capture_s > result.learn_span_s[0]) & ~beside & (truth.channel == 0)])
    assert main(["analyze", str(wav), "--json", str(tmp_path / "summary.json")]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [c["level"] for c in summary["level_changes"]] == [c[2] for c in result.level_changes]
    assert ("the recording's level changed" in capsys.readouterr().out) == (gain != 1.0)
    if gain >= 0.5:
        assert summary["frames"]["rejected"] == 0


def test_a_level_that_fell_during_a_pause_is_found_from_the_next_edges(run, tmp_path):
    """The gain lowered to 0.3× while the pin was quiet (no edge from 8 to 11 s): the first block after
    the pause holds no step at the old threshold, and nothing located to follow the level from. Its own
    strongest steps, many and alternating in sign, set the threshold (BlockDetector._fallen)."""
    csv, _ = run
    rows = csv.read_text().splitlines()
    kept, level = [rows[0]], None
    for row in rows[1:]:
        cycle, channel, after = row.split(",")
        if channel == "0" and (8_000_000 <= int(cycle) < 11_000_000 or after == level):
            continue  # the pause, and the edge after it that would repeat the pin's level
        level = after if channel == "0" else level
        kept.append(row)
    paused = tmp_path / "table1.edges.csv"
    paused.write_text("\n".join(kept) + "\n")
    (tmp_path / "table1.json").write_text((SIM / "table1.json").read_text())
    card = replace(with_level(with_format(sc.PROFILES["laptop-48k"], 48000, 16, 1), README_LEVEL),
                   wander_adev_1s=0.0)
    x, rate = sf.read(synthesize(paused, tmp_path / "paused.wav", card, seed=3).wav_path, dtype="float64")
    x[int(9.5 * rate):] *= 0.3
    sf.write(tmp_path / "fell.wav", x, rate, subtype="PCM_16")
    result = locate_capture(tmp_path / "fell.wav")
    assert [round(level, 2) for *_, level in result.level_changes] == [0.3]
    truth = replace(read_edge_list(paused), unit_s=1e-6)
    m = match_stretches(result.edges, truth, None)
    assert np.max(np.abs(m.err - np.mean(m.err)) / result.edges.sigma[m.idx]) <= 6
    pin = truth.channel == 0
    assert len(m.jdx) == np.count_nonzero(pin & (truth.time * truth.unit_s > result.learn_span_s[0]))


def test_a_level_change_along_the_calibration_train_is_refused_naming_it(run, tmp_path):
    """The gain moved to 0.7× at 2 s, within the calibration train (0.1-2.9 s): no whole train lies before
    it to learn from, so the capture is refused as before (the step height changes along the train), and
    the message now also says where the level changed and to set the gain before the run starts."""
    _, steady = run
    x, rate = sf.read(steady, dtype="float64")
    x[int(2.0 * rate):] *= 0.7
    sf.write(tmp_path / "agc.wav", x, rate, subtype="PCM_16")
    with pytest.raises(PintimeError, match=r"changes by up to \d+% along the calibration train.*the "
                                           r"recording's level changed 0\.7× at 1\.\d\d s.*set the input "
                                           r"gain before the run starts"):
        locate_capture(tmp_path / "agc.wav")

