"""A recording located while it is written (pintime.locate.stream.growing) gives, byte for byte, the edges
``locate_capture`` finds in the whole file, and so ``analyze`` the same results: the file written as the
recorder writes it (a flush, then more frames after the flushed ones before they are read), grown at
uneven steps, most of its blocks located before its end; at 192 kHz stereo, at 48 kHz mono, and with a
change of the level inside the learning span (learned again before it)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from pintime.cli import main
from pintime.locate.stream.capture_edges import CaptureEdges, locate_capture
from pintime.locate.stream.growing import GrowingCapture
from pintime.locate.stream.learnspan import BLOCK_FRAMES
from pintime.pipeline import analyze, summary_json

FACTS = ("method", "inverted", "noise_rms", "method_rms_s", "train_refused", "learn_span_s", "skipped_s",
         "unplaced", "at_file_ends", "level_changes")


@pytest.fixture(scope="module")
def renders(tmp_path_factory, make_sim) -> dict[str, Path]:
    """The first seconds of the Table 1 run through two cards: 192 kHz stereo, 48 kHz mono."""
    directory = tmp_path_factory.mktemp("growing")
    edges = make_sim / "table1.edges.csv"
    wavs = {"default": directory / "default.wav", "mono48": directory / "mono48.wav"}
    assert main(["synth", str(edges), "-o", str(wavs["default"]), "--seed", "2", "--duration-s", "24"]) == 0
    assert main(["synth", str(edges), "-o", str(wavs["mono48"]), "--profile", "laptop-48k", "--channels", "1",
                 "--seed", "2", "--duration-s", "40"]) == 0
    return wavs


def written(source: Path, to: Path, steps_s: list[float], ahead_frames: int = 3000,
            snapshots: list | None = None) -> GrowingCapture:
    """``source`` written into ``to`` as the recorder writes (its sidecar first): at each step, flushed,
    ``ahead_frames`` more written, then grown to what was flushed (and, into ``snapshots``, the frames
    flushed and the location as if the recording ended there); closed; the growth it made."""
    samples, rate = sf.read(source, dtype="int32", always_2d=True)
    subtype = sf.info(source).subtype
    to.with_suffix(".json").write_text(json.dumps({"gaps": [], "finished": False}))
    growing = GrowingCapture(to)
    with sf.SoundFile(to, "w", rate, samples.shape[1], subtype, format="WAV") as out:
        at = 0
        for step_s in steps_s:
            flushed = min(len(samples), round(step_s * rate))
            out.write(samples[at:flushed])
            out.flush()
            at = min(len(samples), flushed + ahead_frames)
            out.write(samples[flushed:at])
            growing.grow(flushed)
            if snapshots is not None:
                snapshots.append((flushed, growing.snapshot()))
        out.write(samples[at:])
    return growing


def assert_same(grown: CaptureEdges | None, whole: CaptureEdges) -> None:
    assert grown is not None
    for field in ("time", "channel", "polarity", "sigma"):
        assert getattr(grown.edges, field).tobytes() == getattr(whole.edges, field).tobytes(), field
    for fact in FACTS:
        assert getattr(grown, fact) == getattr(whole, fact), fact
    assert grown.info == whole.info


@pytest.mark.parametrize("card", ["default", "mono48"])
def test_a_recording_located_as_it_is_written_gives_the_whole_files_edges(renders, tmp_path, card):
    wav = tmp_path / "take.wav"
    seconds = sf.info(renders[card]).duration
    steps_s = list(np.arange(0.7, seconds, 1.9)) + [seconds - 0.4]  # uneven against the blocks
    growing = written(renders[card], wav, steps_s)
    rate = sf.info(wav).samplerate
    assert growing.given_up is None
    assert growing.located_s > seconds - 2 * BLOCK_FRAMES / rate  # all but the last blocks located ahead
    grown = growing.finish()
    whole = locate_capture(wav, steps=False)
    assert_same(grown, whole)
    again = GrowingCapture(wav)  # the same, grown once more: the analysis on it is analyze's
    again.grow(sf.info(wav).frames)
    assert summary_json(analyze(wav, progress=False, located=again.finish())) == summary_json(
        analyze(wav, progress=False))


def test_a_snapshot_is_the_location_of_the_recording_cut_where_it_was_taken(renders, tmp_path):
    """Mid-way, the blocks located for good and the rest located as the file's last give what
    ``locate_capture`` gives on a file of just the frames written so far."""
    snapshots: list = []
    written(renders["default"], tmp_path / "take.wav", [10.0, 13.3, 17.9], snapshots=snapshots)
    samples, rate = sf.read(renders["default"], dtype="int32")
    for flushed, snapshot in snapshots:
        cut = tmp_path / f"cut{flushed}.wav"
        sf.write(cut, samples[:flushed], rate, subtype="PCM_24")
        expected = locate_capture(cut, steps=False)
        assert_same(replace(snapshot, info=replace(snapshot.info, path=cut)), expected)


def test_a_change_of_the_level_in_the_learning_span_is_learned_again_before(renders, tmp_path):
    """0.7× at 6 s, inside the first 8 s the edge shape is learned from: the pass located up to it stops
    and is learned again before it, as the whole file's location does."""
    x, rate = sf.read(renders["mono48"], dtype="float64")
    x[int(6.0 * rate):] *= 0.7
    changed = tmp_path / "changed.wav"
    sf.write(changed, x, rate, subtype="PCM_16")
    growing = written(changed, tmp_path / "take.wav", [3.0, 9.0, 14.0, 15.5, 21.0, 30.0, 39.0])
    whole = locate_capture(tmp_path / "take.wav", steps=False)
    assert len(whole.level_changes) == 1 and whole.learn_span_s[1] <= 6.0
    assert_same(growing.finish(), whole)


def test_a_recording_shorter_than_its_learning_is_located_whole(renders, tmp_path):
    short = tmp_path / "short.wav"
    x, rate = sf.read(renders["default"], dtype="int32")
    sf.write(short, x[: int(5 * rate)], rate, subtype="PCM_24")
    growing = written(short, tmp_path / "take.wav", [1.0, 2.0, 4.0])
    assert growing.finish() is None and "ended before" in (growing.given_up or "")


def test_a_gap_listed_after_learning_locates_the_whole_file(renders, tmp_path):
    """The learning keeps trains and windows off the listed gaps: one listed later may change it."""
    wav = tmp_path / "take.wav"
    growing = written(renders["default"], wav, [11.0, 14.0])
    sidecar = wav.with_suffix(".json")
    sidecar.write_text(json.dumps({"gaps": [{"frame": 192000 * 13, "frames_lost": 4096, "cause": "x"}]}))
    assert growing.finish() is None and "gaps" in (growing.given_up or "")
