"""The live part of ``pintime measure``: the recording's prefix analysed again and again while it grows.

The recorder's writing thread calls :meth:`Live.watch` after every block. When the analysis thread is
idle and ``period_s`` more of audio are written, the WAV is flushed (its header then counts the frames so
far) and the thread copies that prefix, with the gaps its sidecar lists, into a private WAV and runs the
whole pipeline on it (:func:`pintime.pipeline.analyze`), exactly as ``pintime analyze`` would, in a worker
process (a thread would hold the interpreter lock that PortAudio's callback needs, for as long as any of
the analysis's Python code runs, and the card would overflow). Each
analysis updates the display: one line per estimate (technique, function, block or kernel figure: the
rows ``pintime compare`` compares), with its repetitions, mean and 95 % CI in µs and cycles. An END frame
in the prefix ends the recording (``watch`` says so at its next call); a calibration train after the first
(the board reset) is announced once (the figures go on as ``analyze`` computes them, over every run); no
frame in the first ``silence_s`` of audio is announced once, and the recording goes on.

A prefix analysis costs what ``analyze`` costs on that much audio, so each one takes longer than the one
before; the thread never queues one behind another, so the display lags by at most one analysis.
"""

from __future__ import annotations

import json
import multiprocessing
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import soundfile as sf

from pintime.compare import ROWS, Row
from pintime.edges import MEASUREMENT_CHANNEL
from pintime.errors import PintimeError
from pintime.files import read_json, sidecar_path
from pintime.frames import frame_end
from pintime.pipeline import Analysis, analyze, summary_json
from pintime.signals import stop_signals

COPY_FRAMES = 1 << 18  # the prefix is copied in blocks this long (2 MB of int32 stereo)
END_REASON = "END frame"


def live_lines(a: Analysis, seconds: float, took_s: float) -> list[str]:
    """The display for one analysis: a header, then one line per estimate."""
    result = summary_json(a)
    f_cpu_mhz = a.run["f_cpu_hz"] / 1e6
    head = (f"live, {seconds:.1f} s recorded: {result['run']['program']}, {len(a.decode.frames)} frames "
            f"decoded (this analysis took {took_s:.1f} s)")
    try:
        rows = ROWS[result["run"]["program"]](result)
    except (KeyError, TypeError):  # the program's estimates are not there yet (too few repetitions)
        rows = []
    return [head, *(_row_line(r, f_cpu_mhz) for r in rows)]


def _row_line(r: Row, f_cpu_mhz: float) -> str:
    half = "—" if r.half_us is None else f"{r.half_us:.2g}"
    half_cycles = "—" if r.half_us is None else f"{r.half_us * f_cpu_mhz:.2g}"
    return (f"  {r.name:<26} {r.count:>5} reps  {r.mean_us:>12.4f} ± {half:<8} µs  "
            f"{r.mean_us * f_cpu_mhz:>11.3f} ± {half_cycles:<8} cycles")


class Display:
    """The live lines on ``stream``: rewritten in place on a terminal (ANSI cursor-up, no curses), else
    each update printed after the one before."""

    def __init__(self, stream: TextIO):
        self.stream, self.shown = stream, 0
        self.in_place = stream.isatty()

    def show(self, lines: list[str]) -> None:
        if self.in_place and self.shown:
            self.stream.write(f"\x1b[{self.shown}F\x1b[J")  # up to the first line shown, clear below
        self.stream.write("\n".join(lines) + "\n")
        self.stream.flush()
        self.shown = len(lines)

    def message(self, line: str) -> None:
        """A line that stays (a warning): printed, the live lines printed again under it."""
        self.shown = 0
        self.stream.write(line + "\n")
        self.stream.flush()


def copy_prefix(wav: Path, frames: int, to: Path) -> None:
    """The first ``frames`` frames of ``wav`` (bit for bit) into ``to``, with a sidecar listing the gaps
    ``wav``'s sidecar lists up to there."""
    with sf.SoundFile(wav) as src, sf.SoundFile(to, "w", samplerate=src.samplerate, channels=src.channels,
                                                subtype=src.subtype, format="WAV") as dst:
        left = frames
        while left > 0:
            block = src.read(min(COPY_FRAMES, left), dtype="int32")
            if not len(block):
                break
            dst.write(block)
            left -= len(block)
    gaps = read_json(sidecar_path(wav), "recording's sidecar").get("gaps", [])
    sidecar_path(to).write_text(json.dumps({"gaps": [g for g in gaps if g["frame"] <= frames]}))


class Live:
    """The analysis thread and the recorder's ``watch`` (see the module's docstring)."""

    def __init__(self, wav: Path, samplerate_hz: int, elf: str | None, display: Display,
                 warn: Callable[[str], None], period_s: float, silence_s: float):
        self.wav, self.elf, self.display, self.warn = wav, elf, display, warn
        self.rate_hz, self.period_s, self.silence_s = samplerate_hz, period_s, silence_s
        self.work = tempfile.TemporaryDirectory(prefix="pintime-live-")
        self.wake = threading.Condition()
        self.pending: int | None = None  # frames flushed for the thread to analyse
        self.busy = False
        self.closing = False
        self.flushed = 0
        self.ended_at_s: float | None = None  # wall clock when an analysis found the END frame
        self.end_s: float | None = None  # where in the recording the END frame ends (s)
        self.runs_told = 0  # new runs announced
        self.silence_told = False
        self.timings: list[tuple[float, float]] = []  # (audio seconds, analysis seconds) of each analysis
        self.worker = ProcessPoolExecutor(1, multiprocessing.get_context("spawn"),
                                          initializer=_ignore_stop_signals)
        self.thread = threading.Thread(target=self._loop, name="pintime-live", daemon=True)
        self.thread.start()

    def watch(self, out: sf.SoundFile, frames: int) -> str | None:
        """The recorder's watch: hands a prefix to an idle thread; END_REASON once an END frame is seen."""
        if self.ended_at_s is not None:
            return END_REASON
        with self.wake:
            if not self.busy and frames - self.flushed >= self.period_s * self.rate_hz:
                out.flush()
                self.flushed = self.pending = frames
                self.busy = True
                self.wake.notify()
        return None

    def close(self) -> None:
        """Stop the thread (after the analysis it is running) and remove the prefix copies."""
        with self.wake:
            self.closing = True
            self.wake.notify()
        self.thread.join()
        self.worker.shutdown()
        self.work.cleanup()

    def _loop(self) -> None:
        while True:
            with self.wake:
                while self.pending is None and not self.closing:
                    self.wake.wait()
                if self.closing or self.pending is None:
                    return
                frames, self.pending = self.pending, None
            try:
                self._analyse(frames)
            except Exception as err:  # noqa: BLE001 — the recording must go on whatever the analysis does
                self.warn(f"live analysis stopped ({type(err).__name__}: {err}); the recording goes on and "
                          "is analysed at its end")
                return
            finally:
                with self.wake:
                    self.busy = False

    def _analyse(self, frames: int) -> None:
        prefix = Path(self.work.name) / "prefix.wav"
        copy_prefix(self.wav, frames, prefix)
        seconds = frames / self.rate_hz
        report = self.worker.submit(analyse_prefix, str(prefix), self.elf, seconds).result()
        if report.lines is None:  # not yet analysable (no edges, no calibration train…), or no frame
            self._maybe_silent(seconds, report.why)
            return
        self.timings.append((seconds, report.took_s))
        for start_s in report.cal_s[1 + self.runs_told:]:
            self.runs_told += 1
            self.display.message(f"pintime: a new run began at {start_s:.3f} s (a calibration train after "
                                 "the first: the board was reset?); the figures hold the repetitions of "
                                 "every run, as `pintime analyze` counts them")
        self.display.show(report.lines)
        if report.end_s is not None:
            self.end_s, self.ended_at_s = report.end_s, time.monotonic()

    def _maybe_silent(self, seconds: float, why: str) -> None:
        if seconds >= self.silence_s and not self.silence_told:
            self.silence_told = True
            self.warn(f"no frame decoded in the first {seconds:.0f} s ({why}): check the input (line in, not "
                      "mic; the right device), its gain, and the wiring (D22 = PA0 to left, D11 = PB5 to "
                      "right); the recording goes on")


@dataclass(frozen=True)
class PrefixReport:
    """What the worker process found in a prefix: the live lines (None: nothing to show, and ``why``), the
    calibration trains' starts and the END frame's end (s), and how long the analysis took."""

    lines: list[str] | None
    why: str = ""
    cal_s: tuple[float, ...] = ()
    end_s: float | None = None
    took_s: float = 0.0


def analyse_prefix(prefix: str, elf: str | None, seconds: float) -> PrefixReport:
    """The worker's task: the whole pipeline on a prefix copy (in a process of its own, so that it never
    holds the interpreter lock the recorder's PortAudio callback needs)."""
    start = time.monotonic()
    try:
        a = analyze(prefix, elf=elf, progress=False)
    except PintimeError as err:
        return PrefixReport(None, str(err))
    if not a.decode.frames:
        return PrefixReport(None, "no frame decoded")
    took_s = time.monotonic() - start
    times_s = a.edges.on(MEASUREMENT_CHANNEL).time
    ends = [f for f in a.decode.frames if f.kind == "end"]
    return PrefixReport(live_lines(a, seconds, took_s), "",
                        tuple(float(times_s[f.start]) for f in a.decode.frames if f.kind == "cal"),
                        float(times_s[frame_end(ends[-1])]) if ends else None, took_s)


def _ignore_stop_signals() -> None:
    """The worker's start: Ctrl-C reaches the whole process group; the recorder handles it."""
    for s in stop_signals():
        signal.signal(s, signal.SIG_IGN)
