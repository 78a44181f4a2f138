"""Lost audio a hostile user's capture hides: no sidecar, no reference channel, a cut where the clock comes
from, a signal that is no pintime capture. Each ends in the right result or one `pintime: error:` line
(exit 2), never in a silently wrong number."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import soundfile as sf
from pintime.soundcard import model as sc
from pintime.soundcard.formats import with_format
from pintime.soundcard.synth import synthesize
from support import EXAMPLE_WAV, assert_fails, run_cli

F_CPU = 1_000_000


def test_a_mono_capture_that_lost_its_whole_calibration_train_is_refused(tmp_path):
    """Without a reference the clock comes from the calibration train alone (a part of it is enough:
    tests/pipeline/test_gaps_from_data.py); with 0.005-2.9 s lost, the whole train and its CAL header with
    it, there is no clock: one line naming the train, not a result on a guessed clock."""
    audio, rate = sf.read(EXAMPLE_WAV, dtype="int32")
    wav = tmp_path / "mono.wav"
    sf.write(wav, np.concatenate([audio[:int(0.005 * rate)], audio[int(2.9 * rate):]])[:, :1], rate,
             subtype="PCM_24")
    line = assert_fails(["analyze", wav, "--reference", "none"], wav)
    assert "calibration train" in line


def test_inserted_audio_in_a_stereo_capture_is_found_by_both_checks(tmp_path):
    """200 samples repeated (a buffer handed over twice) at 4.6 s, stereo, no sidecar: found by the
    reference's phase and the frames' timing alike, printed as inserted (a negative loss)."""
    audio, rate = sf.read(EXAMPLE_WAV, dtype="int32")
    at = int(4.6 * rate)
    wav = tmp_path / "twice.wav"
    sf.write(wav, np.concatenate([audio[:at], audio[at - 200:at], audio[at:]]), rate, subtype="PCM_24")
    code, printed, _ = run_cli(["analyze", wav])
    assert code == 0 and "-1041.67 µs between" in printed and "[reference+frames]" in printed, printed


def test_edges_of_a_signal_without_frames_says_lost_audio_was_not_checked(tmp_path):
    """`pintime edges` on a square wave (any digital signal: no frames, no reference): the edges, and a line
    saying lost audio could not be checked, since only a pintime capture's frames and reference show it."""
    half_cycles, n = 4987, 400
    source = tmp_path / "square.edges.csv"
    source.write_text("cycle,channel,level\n"
                      + "".join(f"{1000 + k * half_cycles},0,{1 - k % 2}\n" for k in range(n)))
    card = replace(with_format(sc.PROFILES["default"], 44100, 16, 1), wander_adev_1s=0.0)
    wav = synthesize(source, tmp_path / "recorded.wav", card, 1, F_CPU).wav_path
    code, _, lines = run_cli(["edges", wav, "--csv", tmp_path / "found.csv"])
    assert code == 0
    said = "no pintime frame decoded: lost or inserted audio not checked"
    assert any(line.startswith(said) for line in lines), lines
