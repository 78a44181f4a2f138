"""Where results go, hostile (issue 41, items 5, 6, 8, 9): outputs aimed at a symlink, a FIFO or a device,
a FIFO where a sidecar belongs, and a stop signal while figures or a capture are written. A link is
followed, a FIFO or a device is written through (or refused, for a capture and its sidecar), nothing
hangs, and a signal leaves each file whole or absent, never a part."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import soundfile as sf
from support import BUILD, EXAMPLE_WAV, GUARD_S, ROOT, SIM, assert_fails, run_cli

pytestmark = pytest.mark.usefixtures("make_sim")
EDGES = SIM / "table1.edges.csv"

# commands that write a result (write_text): the analysis JSON, a CFG's JSON, the plan JSON
WRITERS = {
    "analyze --json": lambda out: ["analyze", EDGES, "--json", out],
    "cfg --json": lambda out: ["cfg", BUILD / "firmware" / "table2.elf", "--json", out],
    "plan --json": lambda out: ["plan", "--profile", "default", "--target-ns", "1", "--json", out],
}


def _read_fifo(fifo: Path, got: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(fifo, "rb") as f:
            got.append(f.read())
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


@pytest.mark.parametrize("writer", WRITERS)
def test_an_output_through_a_symlink_writes_its_target(tmp_path, writer):
    """The link stays a link; the file it names gets the result (it was replaced by a regular file)."""
    target = tmp_path / "target.out"
    target.write_text("old")
    link = tmp_path / "link.out"
    link.symlink_to(target)
    code, _, lines = run_cli(WRITERS[writer](link))
    assert code == 0, lines
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() not in ("", "old")
    assert not list(tmp_path.glob(".*.part"))


@pytest.mark.parametrize("writer", WRITERS)
def test_an_output_into_a_fifo_is_written_through(tmp_path, writer):
    """A FIFO stays a FIFO; its reader gets the whole result."""
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    time.sleep(0.1)  # the reader opens its end first
    code, _, lines = run_cli(WRITERS[writer](fifo))
    reader.join(GUARD_S)
    assert code == 0, lines
    assert stat.S_ISFIFO(fifo.stat().st_mode) and got and len(got[0]) > 10


@pytest.mark.parametrize("writer", WRITERS)
def test_an_output_into_a_fifo_nobody_reads_is_refused_not_waited_on(tmp_path, writer):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    line = assert_fails(WRITERS[writer](fifo), fifo)
    assert "nobody reads" in line and stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.parametrize("writer", WRITERS)
def test_an_output_into_a_device_is_written_through(writer):
    """/dev/null stays the device (as root, /dev/full and /dev/stdout were replaced by regular files)."""
    code, _, lines = run_cli(WRITERS[writer](Path("/dev/null")))
    assert code == 0, lines
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_device_that_takes_nothing_is_a_clear_error():
    """/dev/full: no space, one line, the device untouched."""
    line = assert_fails(WRITERS["analyze --json"](Path("/dev/full")), "/dev/full")
    assert "No space" in line and stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_synth_refuses_a_fifo_for_the_capture(tmp_path):
    """A capture and its sidecar are files analysed later: a FIFO is no place for them."""
    fifo = tmp_path / "capture.wav"
    os.mkfifo(fifo)
    line = assert_fails(["synth", EDGES, "-o", fifo, "--duration-s", "0.1", "--force"], fifo)
    assert "not a regular file" in line


def test_a_fifo_as_the_captures_sidecar_does_not_hang(tmp_path):
    """``X.json`` beside ``X.wav`` is a FIFO: read_gaps opened it and waited for a writer forever."""
    wav = tmp_path / "x.wav"
    audio, rate = sf.read(EXAMPLE_WAV, dtype="int32", frames=48000)
    sf.write(wav, audio, rate, subtype="PCM_24")
    os.mkfifo(tmp_path / "x.json")
    line = assert_fails(["analyze", wav], tmp_path / "x.json")
    assert "not a regular file" in line


# --- stop signals -------------------------------------------------------------------------------------------


def _start(*argv: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pintime.cli", *argv], cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def _kill_when(proc: subprocess.Popen, ready, timeout_s: float = GUARD_S * 3) -> bool:
    """SIGTERM to ``proc`` as soon as ``ready()`` holds (False: it ended first)."""
    end = time.monotonic() + timeout_s
    while proc.poll() is None and time.monotonic() < end:
        if ready():
            proc.send_signal(signal.SIGTERM)
            return True
        time.sleep(0.005)
    return False


def _whole_png(path: Path) -> bool:
    data = path.read_bytes()
    return data.startswith(b"\x89PNG\r\n\x1a\n") and data.endswith(b"IEND\xaeB`\x82")


@pytest.mark.parametrize("nth", [0, 1, 2])
def test_sigterm_while_figures_are_written_leaves_none_in_part(tmp_path, nth):
    """SIGTERM as the (nth+1)-th figure's temporary file appears: the figures written are whole PNGs, the
    one in progress is absent, no temporary file is left, exit 143 (before: 0-byte PNGs, 3 of 10 tries)."""
    plots = tmp_path / "plots"
    proc = _start("analyze", str(EXAMPLE_WAV), "--plots", str(plots), cwd=tmp_path)
    killed = _kill_when(proc, lambda: len(list(plots.glob("*.png"))) >= nth and any(plots.glob(".*.part")))
    _, err = proc.communicate(timeout=GUARD_S)
    assert killed, "the figures were all written before the signal"
    assert proc.returncode == 128 + signal.SIGTERM and b"stopped by SIGTERM" in err, err
    assert not list(plots.glob(".*.part"))
    assert all(_whole_png(p) for p in plots.glob("*.png"))


def test_sigterm_during_synth_leaves_no_part(tmp_path):
    """SIGTERM while the WAV is rendered: no hidden ``.….wav.XXXX.part`` left (it was, 53-196 MB), no
    capture, no sidecar."""
    shutil.copy(EDGES, tmp_path / "run.edges.csv")
    shutil.copy(SIM / "table1.json", tmp_path / "run.json")
    proc = _start("synth", "run.edges.csv", "-o", "out.wav", cwd=tmp_path)
    killed = _kill_when(proc, lambda: any(p.stat().st_size > 0 for p in tmp_path.glob(".out.wav.*.part")))
    _, err = proc.communicate(timeout=GUARD_S)
    assert killed and proc.returncode == 128 + signal.SIGTERM, err
    assert not list(tmp_path.glob(".*.part")) and not (tmp_path / "out.wav").exists()
    assert (ROOT / "captures").is_dir()  # the run was from a copy: nothing of the repository touched
