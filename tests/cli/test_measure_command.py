"""``pintime measure`` without hardware: the fake PortAudio of tests/support.py plays synthesized captures
into the recorder, at real-time pace or faster, while the live analysis watches the growing WAV.

What is checked: the results printed at the end are, to the last character, what ``pintime analyze``
prints on the WAV measure saved; the live lines appear during the run; END stops the recording by
itself; gaps, a board reset, silence, Ctrl-C and SIGTERM are reported and leave a complete WAV and sidecar.
"""

from __future__ import annotations

import io
import json
import signal

import numpy as np
import pytest
import soundfile as sf
from pintime import record as rec
from pintime.cli import main
from pintime.live import Display
from pintime.pipeline import analyze
from support import EXAMPLE_WAV, SIM, FakeBackend, require_sim, run_cli

FS = 192000
TAIL_S = 120  # after the run, the card records the idle pin this long (at real time) unless END stops it
END_MARGIN_S = 0.3  # the user capture goes on this long after the END frame's last edge
GUARD_S = 240  # a measurement at real-time pace takes its length, and the analyses a loaded machine's time


def int32_samples(wav) -> np.ndarray:
    """A WAV's samples as PortAudio delivers them (int32, 24 bits left-justified)."""
    samples, rate = sf.read(wav, dtype="int32")
    assert rate == FS
    return samples


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    """A fake stream that has played everything stops delivering: called a stall after 0.5 s, not 5 s; the
    queue holds the whole of a capture fed at once."""
    monkeypatch.setattr(rec, "STALL_S", 0.5)
    monkeypatch.setattr(rec, "MAX_QUEUED_S", 100.0)


@pytest.fixture(scope="module")
def table1() -> np.ndarray:
    return int32_samples(EXAMPLE_WAV)  # 6 s: RUN, CAL and Table 1 frames, no END


@pytest.fixture(scope="module")
def user(tmp_path_factory) -> np.ndarray:
    """The whole user example run (RUN … END), through the sound-card model."""
    from pintime.capture.edgelist import read_edge_list

    require_sim()
    edges = SIM / "user_example.edges.csv"
    end_s = float(read_edge_list(edges).on(0).time[-1]) / 1e6 + END_MARGIN_S  # 1 MHz: µs
    wav = tmp_path_factory.mktemp("user") / "user.wav"
    assert main(["synth", str(edges), "-o", str(wav), "--profile", "default", "--seed", "5",
                 "--duration-s", f"{end_s:.3f}"]) == 0
    return int32_samples(wav)


def measure(monkeypatch, tmp_path, samples, *argv, **fake):
    """``pintime measure -o tmp_path/take.wav ARGV`` fed ``samples``: (exit code, stdout, stderr lines)."""
    backend = FakeBackend(samples, **fake)
    monkeypatch.setattr(rec, "load_backend", lambda: backend)
    code, out, err = run_cli(["measure", "-o", tmp_path / "take.wav", *argv], GUARD_S)
    assert backend.closed
    return code, out, err


def analyze_output(tmp_path, *argv) -> str:
    code, out, _ = run_cli(["analyze", tmp_path / "take.wav", *argv])
    assert code == 0
    return out


def live_lines(err: list[str]) -> list[str]:
    return [line for line in err if line.startswith("live, ")]


def test_user_run_stops_at_end_and_prints_what_analyze_prints(monkeypatch, tmp_path, user):
    """Real-time pace: live lines while recording, the END frame ends it, then analyze's very output."""
    elf = SIM.parent / "firmware" / "user_example.elf"
    code, out, err = measure(monkeypatch, tmp_path, user, "--elf", elf, "--json", tmp_path / "m.json", pace=1,
                             tail_s=TAIL_S)
    assert code == 0, err
    assert any("ended by the END frame" in line for line in err), err
    assert any("s of audio after the END frame, then the results took" in line for line in err), err
    live = live_lines(err)
    assert live and all("user" in line for line in live)
    assert any(line.strip().startswith("mac16 ") and " reps " in line for line in err)
    recorded = sf.read(tmp_path / "take.wav", dtype="int32")[0]
    # END is seen within a locating step of its recording: before or after the fed capture's last 0.3 s
    kept = min(len(recorded), len(user))
    assert kept > len(user) - END_MARGIN_S * FS
    np.testing.assert_array_equal(recorded[:kept], user[:kept])
    assert len(recorded) < len(user) + TAIL_S * FS / 2  # END stopped it, not the end of the fake's tail
    assert out == analyze_output(tmp_path, "--elf", elf, "--json", tmp_path / "a.json")
    assert json.loads((tmp_path / "m.json").read_text()) == json.loads((tmp_path / "a.json").read_text())


def test_baseline_compares_with_an_earlier_result(monkeypatch, tmp_path, user):
    """Fed at once, then the idle tail at real time: END found, and the take compared with the last one."""
    code, out, err = measure(monkeypatch, tmp_path, user, "--json", tmp_path / "m.json", tail_s=TAIL_S)
    assert code == 0, err
    (tmp_path / "again").mkdir()
    code, out, err = measure(monkeypatch, tmp_path / "again", user, "--baseline", tmp_path / "m.json",
                             tail_s=TAIL_S)
    assert code == 0, err
    table, comparison = out.split("\n\nprogram user, F_CPU 1000000 Hz; change = new − old", 1)
    assert table + "\n" == analyze_output(tmp_path / "again")
    rows = comparison.splitlines()[3:]
    assert len(rows) == 3 and all(r.endswith("no change the CIs can see") for r in rows), rows


def test_table1_fed_at_once_prints_what_analyze_prints(monkeypatch, tmp_path, table1):
    """Faster than real time (every block queued at once); no END in this excerpt: the stall ends it."""
    code, out, err = measure(monkeypatch, tmp_path, table1)
    assert code == 1  # the device stopped delivering: said, and the status says so
    assert any("the device stopped delivering" in line for line in err), err
    assert live_lines(err)
    assert out == analyze_output(tmp_path)
    np.testing.assert_array_equal(sf.read(tmp_path / "take.wav", dtype="int32")[0], table1)


def test_overflow_gap_is_reported_and_analysed_alike(monkeypatch, tmp_path, table1):
    code, out, err = measure(monkeypatch, tmp_path, table1, overflow_blocks=[40])
    assert code == 1
    assert any("frames lost at 0.853 s: input overflow" in line for line in err), err
    assert any("THIS RECORDING HAS 1 GAP(S)" in line for line in err)
    assert "cut by 1 recording gap(s)" in out
    assert out == analyze_output(tmp_path)


def test_board_reset_starts_a_new_run(monkeypatch, tmp_path, user):
    """3.5 s of a run, then the board reset: the whole run again from its RUN frame to its END."""
    reset = np.concatenate([user[: int(3.5 * FS)], user])
    code, out, err = measure(monkeypatch, tmp_path, reset, tail_s=TAIL_S)
    assert code == 0 and any("ended by the END frame" in line for line in err), err
    assert any("a new run began at" in line and "board was reset" in line for line in err), err
    assert out == analyze_output(tmp_path)
    a = analyze(tmp_path / "take.wav", progress=False)
    first, second = (a.edges.on(0).time[f.start] for f in a.decode.frames if f.kind == "cal")
    assert second - first == pytest.approx(3.5, abs=1e-4)  # the copy of the run begins 3.5 s in
    told = [line for line in err if "a new run began at" in line]
    assert len(told) == 1 and f"a new run began at {second:.3f} s" in told[0], told  # the reset, once


def test_silence_is_named_and_the_recording_goes_on(monkeypatch, tmp_path):
    silent = np.zeros((6 * FS, 2), dtype=np.int32)
    code, out, err = measure(monkeypatch, tmp_path, silent, "--silence-s", "2")
    told = [line for line in err if "no frame decoded in the first" in line]
    assert len(told) == 1 and "the recording goes on" in told[0] and "wiring" in told[0] and "gain" in told[0]
    assert sf.info(tmp_path / "take.wav").frames == 6 * FS  # recorded to the end all the same
    assert code == 2 and err[-1].startswith("pintime: error: ")  # analyze's own one-line error on silence
    assert out == ""


@pytest.fixture
def stop_handlers():
    """SIGINT and SIGTERM as Python starts them, restored after the test."""
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    for s, handler in previous.items():
        signal.signal(s, handler)


@pytest.mark.parametrize("stop,said", [(signal.SIGINT, "stopped by Ctrl-C"), (signal.SIGTERM,
                                                                             "stopped by SIGTERM")])
def test_a_stop_signal_leaves_a_complete_take_and_analyses_it(monkeypatch, tmp_path, table1, stop, said,
                                                              stop_handlers):
    blocks = 200  # 4.3 s: past the calibration train
    code, out, err = measure(monkeypatch, tmp_path, table1, interrupt_after_block=blocks - 1,
                             stop_signal=stop, pace=4)
    assert any(said in line for line in err), err
    frames = blocks * rec.BLOCK_FRAMES
    np.testing.assert_array_equal(sf.read(tmp_path / "take.wav", dtype="int32")[0], table1[:frames])
    sidecar = json.loads((tmp_path / "take.json").read_text())
    assert sidecar["finished"] is True and sidecar["interrupted"] is True and sidecar["frames"] == frames
    assert code == 0 and out == analyze_output(tmp_path)


def test_a_result_named_as_the_takes_sidecar_is_refused_before_recording(monkeypatch, tmp_path, table1):
    monkeypatch.setattr(rec, "load_backend", lambda: FakeBackend(table1[:FS]))
    code, out, err = run_cli(["measure", "-o", tmp_path / "take.wav", "--json", tmp_path / "take.json"])
    assert code == 2 and len(err) == 1 and err[0].startswith("pintime: error: ") and "take.json" in err[0]
    assert not (tmp_path / "take.wav").exists()


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_live_lines_are_rewritten_in_place_on_a_terminal():
    shown = Terminal()
    display = Display(shown)
    display.show(["live, 2.0 s", "  a", "  b"])
    display.show(["live, 4.0 s", "  a"])
    display.message("pintime: warning: w")
    display.show(["live, 6.0 s"])
    assert shown.getvalue() == ("live, 2.0 s\n  a\n  b\n" "\x1b[3F\x1b[Jlive, 4.0 s\n  a\n"
                                "pintime: warning: w\nlive, 6.0 s\n")
    piped = io.StringIO()
    Display(piped).show(["x"])
    Display(piped).show(["y"])
    assert piped.getvalue() == "x\ny\n"  # not a terminal: each update after the one before


@pytest.mark.parametrize("argv", [["--help"], ["measure", "--help"], ["compare", "--help"]])
def test_help(capsys, argv):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 0 and "measure" in capsys.readouterr().out
