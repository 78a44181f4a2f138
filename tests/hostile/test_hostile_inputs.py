"""Inputs a hostile user gives: a pipe, an undecodable file name, a sidecar of another take or a damaged
one. Each ends in one `pintime: error:` line and exit 2, or in the right result; none hangs or prints a
traceback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from pintime.capture.gaps import read_gaps
from support import EXAMPLE_WAV


def _pintime(*argv: str | bytes, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pintime.cli", *argv], cwd=cwd, capture_output=True,
                          timeout=120, check=False)


def _one_error_line(proc: subprocess.CompletedProcess, *words: str) -> None:
    lines = proc.stderr.decode(errors="replace").splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("pintime: error: "), lines
    assert all(w in lines[0] for w in words), lines[0]


def test_a_pipe_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "live.wav")
    _one_error_line(_pintime("analyze", "live.wav", cwd=tmp_path), "not a regular file")


def test_an_undecodable_file_name_is_read_and_printed_as_it_is(tmp_path):
    name = b"caf\xe9.wav"
    os.symlink(EXAMPLE_WAV, os.path.join(os.fsencode(tmp_path), name))
    proc = _pintime("analyze", name, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    capture, program = proc.stdout.splitlines()[:2]
    assert capture.split(None, 1) == [b"capture:", name] and program.split()[:2] == [b"program:", b"table1,"]


def _copy_with_sidecar(tmp_path: Path, gaps: list) -> Path:
    wav = tmp_path / "take.wav"
    wav.write_bytes(EXAMPLE_WAV.read_bytes())
    (tmp_path / "take.json").write_text(json.dumps({"gaps": gaps}))
    return wav


@pytest.mark.parametrize(("gaps", "words"), [
    ([{"frame": 10**26, "frames_lost": 5, "cause": "x"}], ("beyond the end", "another recording")),
    ([{"frame": 1_300_000, "frames_lost": None, "cause": "x"}], ("beyond the end",)),  # 6.8 s
    ([{"frame": 1000, "frames_lost": -5, "cause": "x"}], ("frames_lost > 0",)),
    ([{"frame": 1000, "frames_lost": 0, "cause": "x"}], ("frames_lost > 0",)),
])
def test_a_gap_list_that_cannot_be_this_recordings_is_refused(tmp_path, gaps, words):
    _copy_with_sidecar(tmp_path, gaps)
    _one_error_line(_pintime("analyze", "take.wav", cwd=tmp_path), "take.json", *words)


def test_a_gap_listed_twice_is_one_gap(tmp_path):
    gap = {"frame": 1000, "frames_lost": 7, "cause": "input overflow"}
    gaps = read_gaps(_copy_with_sidecar(tmp_path, [gap, gap]))
    assert gaps is not None and len(gaps.gaps) == 1


def test_two_sidecars_that_disagree_are_refused(tmp_path):
    wav = _copy_with_sidecar(tmp_path, [{"frame": 1000, "frames_lost": 7, "cause": "x"}])
    (tmp_path / "links").mkdir()
    link = tmp_path / "links" / "take.wav"
    link.symlink_to(wav)
    (tmp_path / "links" / "take.json").write_text(json.dumps({"gaps": []}))
    _one_error_line(_pintime("analyze", "links/take.wav", cwd=tmp_path), "list different recording gaps")


def test_output_to_a_full_disk_is_one_line(tmp_path):
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([sys.executable, "-m", "pintime.cli", "analyze", str(EXAMPLE_WAV)],
                              cwd=tmp_path, stdout=full, stderr=subprocess.PIPE, timeout=120, check=False)
    _one_error_line(proc, "cannot write the output", "No space left on device")


def test_swapped_channels_are_named(tmp_path):
    """The reference named as the measurement pin: its 1 s square wave is recognised, and the message says
    the channels look swapped and which options undo it (analyze and edges alike)."""
    for command in ("analyze", "edges"):
        proc = _pintime(command, str(EXAMPLE_WAV), "--channel", "1", "--reference", "0", cwd=tmp_path)
        _one_error_line(proc, "holds a 1 s square wave", "look swapped", "--channel 0 --reference 1")


@pytest.mark.parametrize("sign", [1, -1])
def test_a_pin_recorded_on_both_channels_is_read_as_mono(tmp_path, sign):
    """A mono input recorded as two identical channels (or one inverted): channel 1, the reference by
    default, holds the pin's own edges. The capture is read without a reference, to the same results as its
    left channel alone, and the clock line and the JSON say why. Named as the reference (``--reference 1``),
    that channel is refused with the reason and how to read the capture without it."""
    x, rate = sf.read(EXAMPLE_WAV, dtype="float64")
    sf.write(tmp_path / "twice.wav", np.column_stack([x[:, 0], sign * x[:, 0]]), rate, subtype="PCM_24")
    sf.write(tmp_path / "left.wav", x[:, 0], rate, subtype="PCM_24")
    runs = {name: _pintime("analyze", f"{name}.wav", "--json", f"{name}.out.json", cwd=tmp_path)
            for name in ("twice", "left")}
    assert all(proc.returncode == 0 for proc in runs.values()), [p.stderr for p in runs.values()]
    printed = runs["twice"].stdout.decode().splitlines()
    clock_line = next(line for line in printed if line.startswith("clock:"))
    assert "(no reference channel: the right channel repeats the measurement pin" in clock_line
    out = {name: json.loads((tmp_path / f"{name}.out.json").read_text()) for name in runs}
    assert out["twice"]["clock"]["reference_ignored"].startswith("the right channel repeats")
    assert out["left"]["clock"]["reference_ignored"] is None
    for section in ("table1", "overdetermined", "frames"):
        assert out["twice"][section] == out["left"][section]
    proc = _pintime("analyze", "twice.wav", "--reference", "1", cwd=tmp_path)
    _one_error_line(proc, "the reference channel holds the measurement pin's own edges", "--reference none")


def test_a_pin_on_the_right_channel_alone_is_named(tmp_path):
    """The pin recorded on the right channel, the left one silent: the message says where the edges are
    and which options read them."""
    x, rate = sf.read(EXAMPLE_WAV, dtype="float64")
    sf.write(tmp_path / "right.wav", np.column_stack([np.zeros(len(x)), x[:, 0]]), rate, subtype="PCM_24")
    proc = _pintime("analyze", "right.wav", cwd=tmp_path)
    _one_error_line(proc, "no edges on the measurement (left) channel", "the right channel has edges",
                    "--channel 1 --reference none")


def test_a_nonlinear_input_is_named(tmp_path):
    """The recorded samples bent by y + 0.01·y² (second harmonic −52 dB at full scale): rising and falling
    edges differ in shape, the train's template leaves several times the noise with nothing before its
    edges; the message names a nonlinear input, not a resampler's long ringing (it did: "the response rings
    beyond the ±48 samples", beside "1.0× the noise before their edges")."""
    x, rate = sf.read(EXAMPLE_WAV, dtype="float64")
    sf.write(tmp_path / "bent.wav", np.clip(x + 0.01 * x * x, -1.0, 1.0 - 2.0 ** -23), rate, subtype="PCM_24")
    proc = _pintime("analyze", "bent.wav", cwd=tmp_path)
    _one_error_line(proc, "not one shape", "nonlinear input", "lower level")
    assert b"rings beyond" not in proc.stderr


def test_no_train_says_what_to_check(tmp_path):
    """A capture that starts after the run's train (its first 5 s cut off): no train, and its edges are
    learned from all of them together (pintime.locate.shape.dense), but the RUN frame that opens the run is
    gone; the message says why."""
    x, rate = sf.read(EXAMPLE_WAV, dtype="int32")
    sf.write(tmp_path / "late.wav", x[5 * rate:], rate, subtype="PCM_24")
    proc = _pintime("analyze", "late.wav", cwd=tmp_path)
    _one_error_line(proc, "no RUN frame", "start before the run", "--channel")


def test_a_vcd_with_a_second_pa0_signal_is_refused(tmp_path, make_sim):
    """A second 1-bit `…_PA0` in another scope (a data-direction bit, say) is not merged into the pin."""
    text = (make_sim / "table1.vcd").read_bytes()[:20_000]
    declared = b'$var wire 1 " reference_PB5 $end'
    assert declared in text
    (tmp_path / "two.vcd").write_bytes(text.replace(
        declared, declared + b"\n$scope module porta $end\n$var wire 1 # ddr_PA0 $end\n$upscope $end"))
    _one_error_line(_pintime("analyze", "two.vcd", cwd=tmp_path), "two signals end in _PA0", "ambiguous")


def test_another_methods_biased_estimates_are_flagged_against_the_template_methods(tmp_path, make_sim):
    """48 kHz, 16-bit mono: Table 1's Differential pulses are 4.8 samples long and each edge's neighbour
    lies inside the threshold method's levels, which biases every repetition alike (80.9 µs with a CI of
    ± 0.001 µs, truth 100, exit 0 before). The estimates are now checked against the template method's on
    the same capture, and those beyond both CIs are said, and listed in the JSON."""
    wav = tmp_path / "t48.wav"
    assert _pintime("synth", str(make_sim / "table1.edges.csv"), "-o", str(wav), "--rate", "48000",
                    "--bits", "16", "--channels", "1", "--seed", "3", "--duration-s", "30",
                    cwd=tmp_path).returncode == 0
    proc = _pintime("analyze", str(wav), "--method", "threshold", "--json", str(tmp_path / "t.json"),
                    cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "estimates of the threshold method differ from the template method's" in proc.stdout.decode()
    check = json.loads((tmp_path / "t.json").read_text())["template_check"]
    flagged = {d["where"]: d for d in check["disagree"]}
    differential = next(d for where, d in flagged.items() if where.startswith("table1 / Differential"))
    assert abs(differential["template_us"] - 100) < 0.01 and differential["method_us"] < 90
    proc = _pintime("analyze", str(wav), "--json", str(tmp_path / "template.json"), cwd=tmp_path)
    assert "template_check" not in json.loads((tmp_path / "template.json").read_text())


def test_edges_the_threshold_method_cannot_place_are_counted_not_guessed(tmp_path, make_sim):
    """A 16-bit laptop input at 0.005 FS: many windows do not cross the middle of their levels near the
    detection. The threshold method gives them no position (before: an extrapolated one, or NaN, and a
    traceback 'edge times must be non-decreasing'); they are left out and counted, in analyze and edges."""
    wav = tmp_path / "low.wav"
    assert _pintime("synth", str(make_sim / "table1.edges.csv"), "-o", str(wav), "--profile", "laptop-48k",
                    "--bits", "16", "--channels", "1", "--level", "0.005", "--seed", "3", "--duration-s", "8",
                    cwd=tmp_path).returncode == 0
    proc = _pintime("analyze", str(wav), "--method", "threshold", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "the threshold method could not place" in proc.stdout.decode()
    proc = _pintime("edges", str(wav), "--method", "threshold", "--csv", str(tmp_path / "e.csv"),
                    cwd=tmp_path)
    assert proc.returncode == 0 and "the threshold method could not place" in proc.stderr.decode()
    assert "nan" not in (tmp_path / "e.csv").read_text()


def test_a_recording_with_automatic_gain_control_is_refused_naming_it(tmp_path, make_sim):
    """A laptop input with automatic gain control. Swinging the gain ±30 % at 1 Hz over 30 s of table1, its
    AC coupling was learned as one 232 Hz corner (two, 100 and 300 Hz, without it), the noise as 0.03 FS,
    and analyze gave Differential 1000× as 100.015 ± 0.006 µs (truth 100.0000), exit 0. The step height
    along the calibration train, steady on every card, shows it: here ±15 % at 1 Hz gives one error line,
    exit 2, naming AGC; the same capture without it is located."""
    wav = tmp_path / "laptop.wav"
    assert _pintime("synth", str(make_sim / "table1.edges.csv"), "-o", str(wav), "--profile", "laptop-48k",
                    "--bits", "16", "--channels", "1", "--seed", "3", "--duration-s", "6",
                    cwd=tmp_path).returncode == 0
    x, rate_hz = sf.read(wav, dtype="float64")
    agc = tmp_path / "agc.wav"
    sf.write(agc, x * (1 + 0.15 * np.sin(2 * np.pi * np.arange(len(x)) / rate_hz)), rate_hz, subtype="PCM_16")
    _one_error_line(_pintime("edges", str(agc), "--csv", str(tmp_path / "agc.csv"), cwd=tmp_path),
                    "automatic gain control", "along the calibration train")
    assert not (tmp_path / "agc.csv").exists()
    proc = _pintime("edges", str(wav), "--csv", str(tmp_path / "e.csv"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()


def test_pin_edges_too_small_for_the_cards_noise_are_not_blamed_on_gain_control(tmp_path, make_sim):
    """`laptop-48k` at 0.001 FS (23× its noise): the pin's edges are below what detection finds (30× the
    step strength's noise); the steps it found were noise, 1.6× the noise high and anything but steady, and
    the refusal named automatic gain control. It now says what they are and what to do."""
    wav = tmp_path / "faint.wav"
    assert _pintime("synth", str(make_sim / "table1.edges.csv"), "-o", str(wav), "--profile", "laptop-48k",
                    "--bits", "16", "--channels", "1", "--seed", "3", "--duration-s", "10",
                    "--level", "0.001", cwd=tmp_path).returncode == 0
    proc = _pintime("analyze", str(wav), cwd=tmp_path)
    _one_error_line(proc, "noise, not a pin's edges", "raise the recording level")
    assert "automatic gain control" not in proc.stderr.decode()


def _square_wave_under_agc(tmp_path: Path, cycles: np.ndarray, depth: float) -> tuple[Path, Path]:
    """A square wave toggling at ``cycles`` (1 MHz) rendered by the `default` card at 48 kHz 16-bit mono,
    steady clock, and the same with its gain swinging ±``depth`` at 1 Hz: the two WAVs."""
    source = tmp_path / "wave.edges.csv"
    source.write_text("cycle,channel,level\n" + "".join(f"{c},0,{1 - k % 2}\n" for k, c in enumerate(cycles)))
    wav = tmp_path / "square.wav"
    assert _pintime("synth", str(source), "-o", str(wav), "--rate", "48000", "--bits", "16", "--channels",
                    "1", "--f-cpu-hz", "1000000", "--no-wander", "--seed", "1", cwd=tmp_path).returncode == 0
    x, rate_hz = sf.read(wav, dtype="float64")
    agc = tmp_path / "agc.wav"
    sf.write(agc, x * (1 + depth * np.sin(2 * np.pi * np.arange(len(x)) / rate_hz)), rate_hz,
             subtype="PCM_16")
    return wav, agc


def test_any_signal_recorded_with_automatic_gain_control_is_refused_naming_it(tmp_path):
    """Without a calibration train (`pintime edges` on any digital signal) the AGC went unseen too: an
    irregular square wave with the gain swinging ±30 % at 1 Hz gave 1619 edges for 1500 and its noise as
    0.004 FS, exit 0. The isolated edges' step height shows it; the same signal without it is located."""
    cycles = 1000 + np.cumsum(np.random.default_rng(5).uniform(3000, 20000, 600)).round().astype(np.int64)
    wav, agc = _square_wave_under_agc(tmp_path, cycles, 0.3)
    _one_error_line(_pintime("edges", str(agc), "--csv", str(tmp_path / "agc.csv"), cwd=tmp_path),
                    "automatic gain control", "step height")
    proc = _pintime("edges", str(wav), "--csv", str(tmp_path / "e.csv"), cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr.decode().startswith("600 edges"), proc.stderr.decode()


@pytest.mark.parametrize(("depth", "words"), [
    (0.1, ("the periodic signal's step height changes by up to", "automatic gain control")),
    (0.3, ("the signal's swing changes along the recording", "automatic gain control")),
])
def test_a_square_wave_recorded_with_automatic_gain_control_is_refused_naming_it(tmp_path, depth, words):
    """A 1 kHz square wave (24 samples between edges at 48 kHz: no edge alone, learned as one period) under
    a gain swinging at 1 Hz. ±10 % had been located with the period's fit taking the gain's change as noise,
    every σ ~10² times too large; it is refused: each edge's gain against the period's strays. ±30 % had
    been refused as "the 600 edges … do not determine it", with a RuntimeWarning on stderr; the refusal now
    names the swing's change and AGC, on one line. Without the AGC every edge is located."""
    wav, agc = _square_wave_under_agc(tmp_path, 1000 + 500 * np.arange(12_000), depth)
    _one_error_line(_pintime("edges", str(agc), "--csv", str(tmp_path / "agc.csv"), cwd=tmp_path), *words)
    proc = _pintime("edges", str(wav), "--csv", str(tmp_path / "e.csv"), cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr.decode().startswith("12000 edges"), proc.stderr.decode()


def _bent_after_the_filter(tmp_path: Path, cubic: float) -> str:
    """The example capture's measurement channel bent by y + cubic·y³ after recording, as an input stage
    that bends after the card's anti-alias filter would."""
    x, rate = sf.read(EXAMPLE_WAV, dtype="float64")
    x[:, 0] += cubic * x[:, 0] ** 3
    sf.write(tmp_path / "bent.wav", x, rate, subtype="PCM_24")
    return "bent.wav"


def test_an_input_bent_after_the_filter_is_refused(tmp_path):
    """y + 0.003·y³ (third harmonic −62 dB at full scale): each edge's shape changes with the level the AC
    coupling leaves before it, which moves it by 0.12 ns RMS, half its σ; the overdetermined T_e read
    0.30 ns off (0.03·y³: 3.1 ns, ten CIs), with exit status 0. Now refused, the bend named and measured."""
    proc = _pintime("analyze", _bent_after_the_filter(tmp_path, 0.003), cwd=tmp_path)
    _one_error_line(proc, "shape changes with the recorded level", "record at a lower level")
    found = re.search(r"y = x ([+-][0-9.e-]+)·x³ ± ([0-9.e-]+)", proc.stderr.decode())
    assert found and abs(float(found[1]) - 0.003) <= 3 * float(found[2]), found  # the applied bend, in 3 SE


def test_a_slight_bend_is_said_and_measured(tmp_path):
    """y + 0.001·y³: the edges move by 0.04 ns RMS with their level, below a quarter of their σ: analysed,
    and the output says the CIs do not hold it; the JSON gives the bend found (a₃ within 3 SE of 0.001)."""
    proc = _pintime("analyze", _bent_after_the_filter(tmp_path, 0.001), "--json", "bent-result.json",
                    cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert b"The CIs do NOT hold this: the edges' shape changes with the recorded level" in proc.stdout
    bend = json.loads((tmp_path / "bent-result.json").read_text())["input_bend"]
    assert bend["significant"] and abs(bend["cubic_per_fs2"] - 0.001) <= 3 * bend["cubic_se_per_fs2"]
    assert 0 < bend["shift_rms_ns"] < 0.25 * bend["sigma_ns"]


def test_a_linear_capture_shows_no_bend(tmp_path):
    """The example capture as recorded: its bend's a₃ within 3 standard errors of 0, nothing said."""
    proc = _pintime("analyze", EXAMPLE_WAV, "--json", "result.json", cwd=tmp_path)
    assert proc.returncode == 0 and b"shape changes" not in proc.stdout
    bend = json.loads((tmp_path / "result.json").read_text())["input_bend"]
    assert not bend["significant"] and abs(bend["cubic_per_fs2"]) < 3 * bend["cubic_se_per_fs2"]
