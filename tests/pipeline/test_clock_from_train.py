"""The clock from the calibration train (pintime.clock.calibrate_from_train), for captures with no reference
channel: against the exact simavr edges, against the reference on a rendered card, and end to end."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import soundfile as sf
from pintime import pipeline
from pintime.capture.edgelist import read_edge_list
from pintime.cli import main
from pintime.clock import calibrate, calibrate_from_train
from pintime.edges import MEASUREMENT_CHANNEL, Edges
from pintime.errors import PintimeError
from pintime.locate.stream.capture_edges import locate_capture
from pintime.soundcard.model import get_profile
from support import EXAMPLE_WAV, run_cli

CAPTURE = EXAMPLE_WAV


def _seconds(edges: Edges, f_cpu_hz: float, ppm: float = 0.0) -> Edges:
    """Exact cycle edges as a capture clock running ``ppm`` fast would time them (seconds)."""
    return Edges(edges.time / f_cpu_hz * (1 + ppm * 1e-6), edges.channel, edges.polarity, edges.sigma, 1.0,
                 "test")


def _measurement_only(edges: Edges) -> Edges:
    return edges.on(MEASUREMENT_CHANNEL)


@pytest.fixture(scope="module")
def exact(make_sim) -> Edges:
    return read_edge_list(make_sim / "table1.edges.csv")


@pytest.mark.parametrize("ppm", [0.0, -43.7, 181.0])
def test_train_gives_the_card_clock_rate_of_exact_edges(exact, ppm):
    clock = calibrate_from_train(_measurement_only(_seconds(exact, 1e6, ppm)))
    assert clock.source == "calibration train"
    assert clock.rate_ppm == pytest.approx(ppm, abs=1e-6)
    assert clock.fit.n_edges == 1000  # FORMAT.md §6: the whole train


def test_train_agrees_with_the_reference_on_a_rendered_card():
    """Both clocks from one located capture (the default card: its rate error and wander): the rates agree
    within their combined uncertainty and the card's own wander between the train's second and the
    reference's whole capture (its Allan deviation at 1 s, a few of them)."""
    edges = locate_capture(CAPTURE).edges
    ref, train = calibrate(edges), calibrate_from_train(_measurement_only(edges))
    assert ref.rate_ppm is not None and train.rate_ppm is not None
    sigma = np.hypot(ref.rate_ppm_sigma, train.rate_ppm_sigma)
    wander_ppm = get_profile("default").wander_adev_1s * 1e6
    assert abs(train.rate_ppm - ref.rate_ppm) < 4 * sigma + 3 * wander_ppm


def test_analysis_without_reference_matches_the_one_with_it(monkeypatch):
    both = pipeline.analyze(CAPTURE)
    monkeypatch.setattr(pipeline, "locate_capture", lambda *a, **k: replace(
        locate_capture(*a, **k), edges=_measurement_only(both.edges)))
    alone = pipeline.analyze(CAPTURE)
    assert alone.clock.source == "calibration train" and alone.cal_ppm is None
    assert len(alone.decode.frames) == len(both.decode.frames)
    rows = {(r.technique, r.n): r for r in both.result.rows}
    for r in alone.result.rows:
        twin = rows[(r.technique, r.n)]
        # widths of ≤ 21 ms: a rate difference of ≲ 0.01 ppm moves them by ≲ 0.2 ps
        assert r.estimate.mean_us == pytest.approx(twin.estimate.mean_us, abs=1e-6)


def test_no_reference_and_no_train_is_a_clear_error(exact):
    cal_end = 1000 + 200  # past the RUN and CAL frames' edges: repetitions only
    meas = _measurement_only(_seconds(exact, 1e6))
    cut = Edges(meas.time[cal_end:], meas.channel[cal_end:], meas.polarity[cal_end:], meas.sigma[cal_end:],
                1.0, "test")
    with pytest.raises(PintimeError, match="no reference channel .* calibration train"):
        calibrate_from_train(cut)


def test_cycle_source_without_reference_is_a_clear_error(exact):
    with pytest.raises(PintimeError, match="time unit is unknown"):
        calibrate_from_train(_measurement_only(exact))


@pytest.fixture(scope="module")
def mono48(make_sim, tmp_path_factory):
    """A laptop-class recording: the default card at 48 kHz, 16 bits, the pin alone, 8 s."""
    wav = tmp_path_factory.mktemp("mono") / "mono48.wav"
    assert main(["synth", str(make_sim / "table1.edges.csv"), "-o", str(wav), "--profile", "default",
                 "--rate", "48000", "--bits", "16", "--channels", "1", "--duration-s", "8"]) == 0
    return wav


def test_a_48_khz_16_bit_mono_recording_gives_table1(mono48):
    """The clock comes from the train, every frame decodes, and the line fit 1×–20× is 100 µs within 2 ns
    (the paper's: 1 ns)."""
    a = pipeline.analyze(mono48)
    assert a.clock.source == "calibration train"
    assert (a.decode.rejected, a.decode.incomplete) == (0, 1) and len(a.decode.frames) > 30
    line20 = next(r for r in a.result.rows if r.technique == "line_fit" and r.n == 20)
    assert abs(line20.estimate.mean_us - 100.0) < 0.002


def test_validate_matches_a_mono_capture_on_the_exact_edges(mono48, make_sim, tmp_path):
    """With no reference to scale the exact cycles by, the time map follows the measurement edges from the
    first one (the clocks differ by ppm: a nominal scale drifts past the matching tolerance in a second)."""
    out = tmp_path / "v.json"
    assert main(["validate", str(mono48), "--truth", str(make_sim / "table1.json"), "--json", str(out)]) == 0
    template = json.loads(out.read_text())["edges"]["template"]
    assert template["matched"] == template["located"] > 10_000
    assert template["rms_ns"] < 5 * template["crlb_ns"]


def test_reference_none_on_a_stereo_capture(capsys, tmp_path):
    out = tmp_path / "r.json"
    assert main(["analyze", str(CAPTURE), "--reference", "none", "--json", str(out)]) == 0
    assert "(no reference channel)" in capsys.readouterr().out
    assert json.loads(out.read_text())["clock"]["source"] == "calibration train"


def _table1(path) -> dict:
    a = pipeline.analyze(path, channels=(0, None))
    return {(r.technique, r.n): r.estimate.mean_us for r in a.result.rows}, a


@pytest.fixture(scope="module")
def mono_example(tmp_path_factory) -> tuple[np.ndarray, int, dict]:
    """The example capture's pin channel, its rate, and its Table 1 (µs by technique and n)."""
    audio, rate = sf.read(CAPTURE, dtype="float64")
    path = tmp_path_factory.mktemp("mono") / "prompt.wav"
    sf.write(path, audio[:, :1], rate, subtype="PCM_24")
    return audio[:, :1], rate, _table1(path)[0]


def test_a_recording_that_starts_long_before_the_run_is_analysed(tmp_path, mono_example):
    """20 s of the card's idle input before the board's first frame (recording started, then the board
    reset): the edge shape is learned from the seconds after the first edge, not the first 8 s of silence
    (before, "no edges on the measurement channel in the first 8.0 s"), and Table 1 is the one of the
    capture without the lead-in: the same edges, in blocks cut elsewhere."""
    audio, rate, prompt = mono_example
    idle = audio[:1] + np.random.default_rng(0).normal(0, 1e-6, (20 * rate, 1))
    late = tmp_path / "late.wav"
    sf.write(late, np.concatenate([idle, audio]), rate, subtype="PCM_24")
    rows, a = _table1(late)
    assert rows.keys() == prompt.keys() and a.skipped_s is None
    for key, mean_us in rows.items():
        assert mean_us == pytest.approx(prompt[key], abs=1e-4), key


def test_a_recording_that_begins_inside_an_earlier_run_analyses_the_run_after_the_reset(tmp_path,
                                                                                        mono_example):
    """The end of an earlier run (its last 2.9 s of frames, no RUN frame, no train), 2.5 s idle, then the
    board reset and a whole run: the learning span moves to that run's calibration train, the earlier run's
    edges are left out and said to be (they would learn the shape blind and mix two runs' frames), and
    Table 1 is the whole run's."""
    audio, rate, prompt = mono_example
    idle = audio[:1] + np.random.default_rng(0).normal(0, 1e-6, (int(2.5 * rate), 1))
    reset = tmp_path / "reset.wav"
    sf.write(reset, np.concatenate([audio[int(3.5 * rate):], idle, audio]), rate, subtype="PCM_24")
    rows, a = _table1(reset)
    tail_s = len(audio) / rate - 3.5
    assert a.skipped_s is not None and a.skipped_s[0] < 0.1 and tail_s < a.skipped_s[1] < tail_s + 2.5 + 0.1
    assert rows.keys() == prompt.keys()
    for key, mean_us in rows.items():
        assert mean_us == pytest.approx(prompt[key], abs=1e-4), key
    code, printed, lines = run_cli(["analyze", reset, "--reference", "none"])
    assert code == 0 and not lines and "s left out: they come before the calibration train" in printed
