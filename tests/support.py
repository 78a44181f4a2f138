"""What more than one test file uses: the repository's paths, whether `make sim` has run, private builds,
running ``pintime`` in-process, the fake sound card of ``pintime record`` and an independent VCD reader.

Test files import helpers from here only, never from each other (pytest.ini puts tests/ on ``sys.path``).
"""

from __future__ import annotations

import contextlib
import io
import json
import signal
import subprocess
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from pintime.cli import main

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
SIM = BUILD / "sim"  # `make sim`'s outputs: <program>.json (written last), .edges.csv, .vcd, the harness
CAPTURES = ROOT / "captures"  # the committed example WAVs (captures/README.md)
EXAMPLE_WAV = CAPTURES / "table1-default.wav"
GUARD_S = 300  # no single command may take longer: a hang is a failure, not a stuck suite (generous: a
# busy 2-core machine runs a command several times slower than a quiet one)


# --- `make sim` -------------------------------------------------------------------------------------------

SIM_PROGRAMS = ("table1", "table2", "user_example", "micro", "kernel")  # the Makefile's PROGRAMS


def sim_missing() -> list[str]:
    """The summaries `make sim` writes last (one per program) that are not there: its other outputs
    (edge lists, VCDs, the harness, table2's visits and blocks) are complete when these exist."""
    return [f"build/sim/{p}.json" for p in SIM_PROGRAMS if not (SIM / f"{p}.json").exists()]


def require_sim() -> Path:
    """``build/sim``, or skip the calling test with the one message every test gives for it. Use it
    through the ``make_sim`` fixture (tests/conftest.py): ``pytestmark = pytest.mark.usefixtures("make_sim")``
    for a whole file, or a ``make_sim`` argument for one test or fixture."""
    missing = sim_missing()
    if missing:
        pytest.skip(f"no simavr run ({', '.join(missing)} missing): run `make sim` (`make test` does)")
    return SIM


# --- private builds -----------------------------------------------------------------------------------------


def make_build(build: Path, *targets: str, **variables: object) -> Path:
    """``make -C ROOT BUILD=build VAR=value … targets`` (quiet; raises on failure); returns ``build``."""
    settings = [f"{name}={value}" for name, value in variables.items()]
    subprocess.run(["make", "-s", "-C", str(ROOT), f"BUILD={build}", *settings, *targets],
                   check=True, capture_output=True, text=True)
    return build


# --- pintime in-process -------------------------------------------------------------------------------------


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail with TimeoutError if the block runs longer than ``seconds`` (SIGALRM: main thread, POSIX)."""
    def expire(signum, frame):
        raise TimeoutError(f"took more than {seconds} s")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_cli(argv: list, guard_s: int = GUARD_S) -> tuple[int, str, list[str]]:
    """Run ``pintime ARGV`` in-process: (exit code, stdout, stderr lines including any warning printed);
    ``guard_s``: the time it may take (a recording at real-time pace takes its length)."""
    out, err = io.StringIO(), io.StringIO()
    with deadline(guard_s), warnings.catch_warnings(record=True) as caught, \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        warnings.simplefilter("always")
        code = main([str(a) for a in argv])
    lines = err.getvalue().splitlines() + [f"warning: {w.message}" for w in caught]
    return code, out.getvalue(), lines


def assert_fails(argv: list, names: Path | str) -> str:
    """``pintime ARGV`` exits 2 with exactly one stderr line, ``pintime: error: …`` naming ``names``."""
    code, _, lines = run_cli(argv)
    assert code == 2, f"exit {code}, stderr {lines}"
    assert len(lines) == 1 and lines[0].startswith("pintime: error: "), lines
    assert str(names) in lines[0], lines[0]
    return lines[0]


def run_json(capsys, tmp_path: Path, *argv: str) -> dict:
    """``pintime ARGV --json tmp_path/out.json`` succeeds; its JSON (what it printed is discarded)."""
    out = tmp_path / "out.json"
    assert main([*argv, "--json", str(out)]) == 0
    capsys.readouterr()
    return json.loads(out.read_text())


def fails_with(capsys, argv: list[str], message: str) -> None:
    """The command exits 2 with one line on stderr containing ``message``."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pintime: error: ") and message in err, err


def pyvcd_edges(path: Path) -> list[tuple[int, int, int]]:
    """(time, channel, level) of every 0↔1 change of the two pins after their first value, by pyvcd."""
    from vcd.reader import TokenKind, tokenize

    channel_of, level, now, rows = {}, {}, 0, []
    with open(path, "rb") as f:
        for token in tokenize(f):
            if token.kind is TokenKind.VAR and token.var.reference.endswith(("_PA0", "_PB5")):
                channel_of[token.var.id_code] = 0 if token.var.reference.endswith("PA0") else 1
            elif token.kind is TokenKind.CHANGE_TIME:
                now = token.time_change
            elif token.kind is TokenKind.CHANGE_SCALAR and token.scalar_change.id_code in channel_of:
                ident, value = token.scalar_change.id_code, token.scalar_change.value
                if value in ("0", "1"):
                    if level.get(ident, value) != value:
                        rows.append((now, channel_of[ident], int(value)))
                    level[ident] = value
    return rows


def rows_of(edges) -> list[tuple[int, int, int]]:
    """(time, channel, level) of each edge in time order across channels, as a VCD lists them."""
    o = edges.time_order()
    return [(int(t), int(c), 1 if p > 0 else 0) for t, c, p in zip(edges.time[o], edges.channel[o],
                                                                    edges.polarity[o], strict=True)]


class FakePortAudioError(Exception):
    pass


class Status:
    def __init__(self, input_overflow: bool = False):
        self.input_overflow = input_overflow
        self.input_underflow = False


class FakeStream:
    """Calls back with the backend's samples block by block: all inside ``start()``, or, with the backend's
    ``pace`` (1: real time, 4: four times faster), from a thread of its own as a card does; then, with
    the backend's ``tail_s``, that long of the last block repeated at real time (the card goes on recording
    the idle pin), or until the stream is closed."""

    def __init__(self, backend, device, samplerate, channels, dtype, blocksize, callback):
        assert (channels, dtype) == (2, "int32")
        self.backend, self.samplerate = backend, samplerate
        self.blocksize, self.callback = blocksize, callback
        self.closing = threading.Event()
        self.thread = None

    def start(self):
        if self.backend.pace is None and not self.backend.tail_s:
            self.play()
        else:
            self.thread = threading.Thread(target=self.play, daemon=True)
            self.thread.start()

    def play(self):
        b = self.backend
        period_s = None if b.pace is None else self.blocksize / self.samplerate / b.pace  # else: at once
        start = time.monotonic()
        for i, n0 in enumerate(range(0, len(b.samples), self.blocksize)):
            if self.closing.is_set():
                return
            if period_s is not None:
                time.sleep(max(0.0, start + (i + 1) * period_s - time.monotonic()))
            block = b.samples[n0:n0 + self.blocksize]
            self.callback(block, len(block), None, Status(input_overflow=i in b.overflow_blocks))
            if i == b.interrupt_after_block:  # Ctrl-C (or a kill) now; the stream closes before another block
                signal.raise_signal(b.stop_signal)
                return
        last = b.samples[-self.blocksize:]
        for _ in range(round(b.tail_s * self.samplerate / self.blocksize)):
            if self.closing.wait(self.blocksize / self.samplerate):
                return
            self.callback(last, len(last), None, Status())

    def close(self):
        self.closing.set()
        if self.thread is not None:
            self.thread.join()
        self.backend.closed = True


class FakeBackend:
    """sounddevice's device queries and InputStream, over a fixed device list and a sample array."""

    PortAudioError = FakePortAudioError
    HOSTAPIS = ("ALSA", "JACK Audio Connection Kit")

    def __init__(self, samples, overflow_blocks=(), interrupt_after_block=None, stop_signal=signal.SIGINT,
                 pace=None, tail_s=0.0):
        self.samples, self.pace, self.tail_s = samples, pace, tail_s
        self.overflow_blocks = set(overflow_blocks)
        self.interrupt_after_block = interrupt_after_block
        self.stop_signal = stop_signal
        self.closed = False
        self.busy = False
        self.devices = [
            {"name": "HDA Intel PCH: ALC892 Analog (hw:0,0)", "hostapi": 0, "max_input_channels": 2,
             "default_samplerate": 44100.0, "rates": (44100, 48000, 96000, 192000)},
            {"name": "HDMI 0 (hw:0,3)", "hostapi": 0, "max_input_channels": 0,
             "default_samplerate": 48000.0, "rates": (48000,)},
            {"name": "USB Audio CODEC (hw:1,0)", "hostapi": 0, "max_input_channels": 2,
             "default_samplerate": 48000.0, "rates": (44100, 48000)},
            {"name": "pulse", "hostapi": 0, "max_input_channels": 32,
             "default_samplerate": 44100.0, "rates": (44100, 48000, 96000, 192000)},
        ]

    def query_devices(self, device=None, kind=None):
        if device is None and kind is None:
            return [dict(d, index=i) for i, d in enumerate(self.devices)]
        if device is None:
            device = 0
        if isinstance(device, str):
            found = [i for i, d in enumerate(self.devices)
                     if device.lower() in d["name"].lower() and d["max_input_channels"] > 0]
            if len(found) != 1:
                raise ValueError(f"No input device matching {device!r}")
            device = found[0]
        if not 0 <= device < len(self.devices):
            raise FakePortAudioError(f"Error querying device {device}")
        return dict(self.devices[device], index=device)

    def query_hostapis(self, index):
        return {"name": self.HOSTAPIS[index]}

    def check_input_settings(self, device, channels, dtype, samplerate):
        if samplerate not in self.devices[device]["rates"]:
            raise FakePortAudioError("Error opening InputStream: Invalid sample rate [PaErrorCode -9997]")

    def InputStream(self, **kwargs):  # sounddevice's name
        if self.busy:
            raise FakePortAudioError("Error opening InputStream: Device unavailable [PaErrorCode -9985]")
        return FakeStream(self, **kwargs)


def kernel_capture(sim: Path, wav: Path, reps: int, *synth_args: str) -> Path:
    """``wav``: the kernel run through the sound-card model (``pintime synth`` with ``synth_args``), ending
    150 ms after repetition ``reps − 1``'s last KERNEL frame (RUN, CAL and ``reps`` repetitions)."""
    from pintime.capture.edgelist import read_edge_list
    from pintime.frames import decode_frames

    meas = read_edge_list(sim / "kernel.edges.csv").on(0)
    frames = decode_frames(meas.time, meas.polarity).of_kind("kernel")
    last = [f for f in frames if f.fields["rep"] == reps - 1][-1]
    duration_s = meas.time[last.group[-1]] / 1e6 + 0.2  # 1 MHz; 50 ms of it is synth's preroll
    assert main(["synth", str(sim / "kernel.edges.csv"), "-o", str(wav), *synth_args,
                 "--duration-s", f"{duration_s:.3f}"]) == 0
    return wav
