"""Hostile options and headers (issue 41, items 7, 10, 11, 13): every numeric option at and beyond the
edges of its range, --ladder on captures that are none, a stale ``data`` header, and the reasons given for
a resampled file, a float file's level and a name a run's truth would take."""

from __future__ import annotations

import shutil
import struct

import numpy as np
import pytest
import soundfile as sf
from pintime.capture.wav import open_wav
from support import CAPTURES, EXAMPLE_WAV, SIM, assert_fails, run_cli

ABSURD = ["nan", "inf", "-inf", "1e-300", "1e300", "-1", "0"]
IN_RANGE = {("--seed", "0"), ("--channel", "0")}  # of those, the values an option takes

# (command before the option, option, a value inside its range): every numeric option of plan and synth,
# and analyze's channels; each absurd value must give one error line (or a result), never a traceback
PLAN = ["plan", "--profile", "default"]
OPTIONS = [
    (PLAN + ["--target-ns", "1"], "--f-cpu-hz", "1e6"),
    (PLAN + ["--target-ns", "1"], "--routine-cycles", "100"),
    (PLAN + ["--resolve-cycle"], "--f-cpu-hz", "1e6"),
    (PLAN, "--target-ns", "1"),
    (PLAN, "--target-cycles", "1"),
    (PLAN + ["--target-ns", "1"], "--rate", "48000"),
    (["synth", "EDGES", "-o", "OUT", "--duration-s", "0.05"], "--f-cpu-hz", "1e6"),
    (["synth", "EDGES", "-o", "OUT", "--f-cpu-hz", "1e6"], "--duration-s", "0.05"),
    (["synth", "EDGES", "-o", "OUT", "--duration-s", "0.05"], "--seed", "1"),
    (["synth", "EDGES", "-o", "OUT", "--duration-s", "0.05"], "--level", "0.1"),
    (["synth", "EDGES", "-o", "OUT", "--duration-s", "0.05"], "--rate", "48000"),
    (["analyze", "SHORT"], "--channel", "0"),
    (["analyze", "SHORT"], "--reference", "1"),
    (["record", "-o", "OUT", "--device", "none-such"], "--seconds", "1"),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory, make_sim):
    d = tmp_path_factory.mktemp("options")
    audio, rate = sf.read(EXAMPLE_WAV, dtype="int32", frames=int(3.3 * 192000))
    sf.write(d / "short.wav", audio, rate, subtype="PCM_24")
    shutil.copy(SIM / "table1.edges.csv", d / "run.edges.csv")
    shutil.copy(SIM / "table1.json", d / "run.json")
    return d


def _argv(template: list[str], files, out) -> list:
    names = {"EDGES": files / "run.edges.csv", "SHORT": files / "short.wav", "OUT": out}
    return [names.get(a, a) for a in template]


@pytest.mark.parametrize(("before", "option", "fine"), OPTIONS, ids=[o[1] + " " + o[0][0] for o in OPTIONS])
@pytest.mark.parametrize("value", ABSURD)
def test_every_numeric_option_at_its_edges(tmp_path, files, before, option, fine, value):
    """nan, ±inf, 1e±300, −1, 0: a one-line error naming the option or what it is for, exit 2; never a
    traceback (ZeroDivisionError, OverflowError before) nor a result of an absurd value (synth's
    --f-cpu-hz 1e300 put every edge in one sample)."""
    out = tmp_path / "out.wav" if before[0] in ("synth", "record") else tmp_path / "out.json"
    code, _, lines = run_cli(_argv(before, files, out) + [f"{option}={value}"])  # "-inf" is no option
    if (option, value) in IN_RANGE:
        assert code == 0, lines
    else:
        assert code == 2 and len(lines) == 1 and lines[0].startswith("pintime: error: "), (code, lines)


@pytest.mark.parametrize(("before", "option", "fine"), [o for o in OPTIONS if o[0][0] == "plan"],
                         ids=[o[1] for o in OPTIONS if o[0][0] == "plan"])
def test_a_value_inside_the_range_still_plans(tmp_path, before, option, fine):
    code, printed, lines = run_cli(before + [option, fine])
    assert code == 0 and "repetitions" in printed.lower(), lines


def test_the_range_ends_are_inside_it(tmp_path):
    """The edges of the ranges themselves are accepted: 1 kHz and 10 GHz, 1 fs."""
    for argv in (PLAN + ["--f-cpu-hz", "1e3", "--target-ns", "1e-6"],
                 PLAN + ["--f-cpu-hz", "1e10", "--resolve-cycle"],
                 PLAN + ["--routine-cycles", "1", "--target-cycles", "1e-6"]):
        code, _, lines = run_cli(argv)
        assert code in (0, 2) and all("Traceback" not in line for line in lines), lines
        assert code == 0 or "repetitions: no plan" in lines[0], lines


# --- 10: --ladder on a capture that is not one -----------------------------------------------------------


def test_ladder_on_a_mono_capture_is_refused():
    wav = CAPTURES / "table1-laptop-48k.wav"
    line = assert_fails(["analyze", wav, "--ladder"], wav)
    assert "both channels" in line and "has 1" in line


@pytest.mark.parametrize("command", ["analyze", "edges"])
def test_ladder_on_a_pin_and_reference_capture_is_refused(files, command):
    """A table1 capture: the pin on the left, the 1 s reference on the right, one step size each: no
    ladder. Before, exit 0, numpy RuntimeWarnings, the reference's edges given to PA1, and in validate a
    Differential 1000× 39.7 standard errors off."""
    wav = files / "short.wav"
    line = assert_fails([command, wav, "--ladder"], wav)
    assert "no resistor ladder found" in line


# --- 11: a data chunk declared shorter than the file ----------------------------------------------------


def _data_length(data: bytes, length: int) -> bytes:
    at = data.find(b"data")
    return data[:at + 4] + struct.pack("<I", length) + data[at + 8:]


def test_a_stale_data_header_is_refused(tmp_path, files):
    """6.39 s held, 5.0 s declared: the trailing audio was ignored without a word."""
    whole = (files / "short.wav").read_bytes()
    at = whole.find(b"data")
    held = struct.unpack("<I", whole[at + 4:at + 8])[0]
    wav = tmp_path / "stale.wav"
    wav.write_bytes(_data_length(whole, held // 2 - (held // 2) % 6))
    line = assert_fails(["analyze", wav], wav)
    assert "header left stale" in line and "1.650 s" in line


def test_chunks_after_the_data_are_no_stale_header(tmp_path, files):
    """A LIST chunk (and its pad byte) after the audio is what the format allows: read as before."""
    wav = tmp_path / "tagged.wav"
    wav.write_bytes((files / "short.wav").read_bytes() + b"LIST" + struct.pack("<I", 5) + b"INFOx\x00")
    assert open_wav(wav).frames == int(3.3 * 192000)


# --- 13: the reasons given ---------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["176.4 kHz", "+500 ppm"])
def test_a_resampled_file_is_refused_with_resampling_named(tmp_path, how):
    """192 → 176.4 kHz, or a stretch by resample_poly: the train's edges are not one shape, or ring beyond
    pintime's edge shape; either way the reason names resampling (it named a nonlinear input alone)."""
    from scipy.signal import resample_poly

    x, _ = sf.read(EXAMPLE_WAV, dtype="float64", frames=int(3.3 * 192000))
    up, down, rate = (147, 160, 176400) if how == "176.4 kHz" else (2001, 2000, 192000)
    wav = tmp_path / "resampled.wav"
    sf.write(wav, np.clip(resample_poly(x, up, down, axis=0), -1, 1 - 2.0 ** -23), rate, subtype="PCM_24")
    line = assert_fails(["analyze", wav], wav)
    assert "resampl" in line  # "… or a resampled file", or "… record … without resampling"


def test_a_float_file_above_full_scale_is_not_called_clipped(tmp_path, files):
    """Float samples hold any level: 3× full scale is no clipping (it was refused as clipped)."""
    x, rate = sf.read(files / "short.wav", dtype="float64")
    wav = tmp_path / "loud.wav"
    sf.write(wav, (3.0 * x).astype(np.float32), rate, subtype="FLOAT")
    code, printed, lines = run_cli(["analyze", wav])
    assert not any("clipped" in line for line in lines), lines
    assert code == 0 and "Direct (1×)" in printed, lines


def test_a_float_file_scaled_far_down_is_refused_naming_its_level(tmp_path, files):
    """×1e-8 (steps of 5e-9 FS, −166 dBFS): refused as no card's level, naming the scaling and the cure
    (it was refused as an AC coupling that leaves 610× the noise)."""
    x, rate = sf.read(files / "short.wav", dtype="float64")
    wav = tmp_path / "faint.wav"
    sf.write(wav, (1e-8 * x).astype(np.float32), rate, subtype="FLOAT")
    line = assert_fails(["analyze", wav], wav)
    assert "below one step of a 24-bit converter" in line and "scaled down" in line
    assert "AC coupling" not in line


def test_synth_beside_an_edge_list_names_the_truth_it_would_take(tmp_path):
    """``synth -o d/sq.wav`` beside ``d/sq.edges.csv`` (no d/sq.json): the sidecar would take the name the
    run's truth has; refused as that, not as overwriting a file that is not there."""
    edges = tmp_path / "sq.edges.csv"
    rows = "".join(f"{1000 + k * 500},0,{1 - k % 2}\n" for k in range(40))
    edges.write_text("cycle,channel,level\n" + rows)
    line = assert_fails(["synth", edges, "-o", tmp_path / "sq.wav", "--f-cpu-hz", "1e6"], "sq.json")
    assert "refusing to take a name that belongs with the input" in line and "overwrite" not in line
