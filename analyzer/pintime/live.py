"""The live part of ``pintime measure``: the recording located as it is written, its END frame watched
for, and its prefix analysed for the display.

The recorder's writing thread calls :meth:`Live.watch` after every block. When the analysis thread is
idle and ``step_s`` more of audio are written, the WAV is flushed and the thread has the *locating*
worker process (:mod:`pintime.liveworker`) locate the blocks those frames complete, locate the rest as if
the recording ended there, and look for an END frame in its last seconds; an END frame ends the recording
(``watch`` says so at its next call). Every ``period_s`` of audio, when the *showing* worker is idle, the
locating one pickles that location and the showing one runs the whole pipeline on it
(:func:`pintime.pipeline.analyze` with the edges located already; before the edge shape is learned, on a
copy of the prefix), at a lower priority; its lines update the display: one line per estimate (technique,
function, block or kernel figure: the rows ``pintime compare`` compares), with its repetitions, mean and
95 % CI in µs and cycles. A calibration train after the first (the board reset) is announced once (the
figures go on as ``analyze`` computes them, over every run); no frame in the first ``silence_s`` of audio
is announced once, and the recording goes on. At the end, :meth:`Live.results` runs the command's final
analysis in the locating worker, where the location is: only the blocks not yet complete are located then.

Workers are processes, not threads: a thread would hold the interpreter lock that PortAudio's callback
needs, for as long as any of the analysis's Python code runs, and the card would overflow.
"""

from __future__ import annotations

import json
import multiprocessing
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.pool import AsyncResult
from pathlib import Path
from typing import TextIO, TypeVar

import soundfile as sf

from pintime.files import read_json, sidecar_path
from pintime.liveworker import analyse_prefix, start_locating, start_showing, step

T = TypeVar("T")
U = TypeVar("U")
COPY_FRAMES = 1 << 18  # the prefix is copied in blocks this long (2 MB of int32 stereo)
END_REASON = "END frame"


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
    """The analysis thread, its two workers and the recorder's ``watch`` (see the module's docstring)."""

    def __init__(self, wav: Path, samplerate_hz: int, inputs: tuple[str | None, str | None], display: Display,
                 warn: Callable[[str], None], step_s: float, period_s: float, silence_s: float):
        self.wav, self.inputs, self.display, self.warn = wav, inputs, display, warn  # inputs: ELF, visits
        self.rate_hz, self.step_s, self.period_s, self.silence_s = samplerate_hz, step_s, period_s, silence_s
        self.work = tempfile.TemporaryDirectory(prefix="pintime-live-")
        self.wake = threading.Condition()
        self.pending: int | None = None  # frames flushed for the thread to locate
        self.busy = False
        self.closing = False
        self.flushed = 0
        self.searched_s = 0.0  # the END frame is looked for after this (s of audio)
        self.ended_at_s: float | None = None  # wall clock when a step found the END frame
        self.end_s: float | None = None  # where in the recording the END frame ends (s)
        self.runs_told = 0  # new runs announced
        self.silence_told = False
        self.given_up: str | None = None  # why the take is located in full at its end
        self.steps: list[tuple[float, float]] = []  # (audio seconds, seconds) of each locating step
        self.timings: list[tuple[float, float]] = []  # (audio seconds, analysis seconds) of each display
        self.shown_frames = 0
        self.showing: AsyncResult | None = None  # the display's analysis under way
        spawn = multiprocessing.get_context("spawn")
        self.locating = ProcessPoolExecutor(1, spawn, initializer=start_locating,
                                             initargs=(str(wav), inputs[1]))
        self.shower = spawn.Pool(1, initializer=start_showing)  # (a pool's terminate ends an analysis)
        self.thread = threading.Thread(target=self._loop, name="pintime-live", daemon=True)
        self.thread.start()

    def watch(self, out: sf.SoundFile, frames: int) -> str | None:
        """The recorder's watch: hands a prefix to an idle thread; END_REASON once an END frame is seen."""
        if self.ended_at_s is not None:
            return END_REASON
        with self.wake:
            if not self.busy and frames - self.flushed >= self.step_s * self.rate_hz:
                out.flush()
                self.flushed = self.pending = frames
                self.busy = True
                self.wake.notify()
        return None

    def stop(self, frames: int, ended: bool) -> None:
        """Stop the thread (after the step it is making) and the display: after the END frame (``ended``)
        at once once the display has shown an analysis; else after its last one, of the whole recording
        (its ``frames``) where none was shown since the last step."""
        with self.wake:
            self.closing = True
            self.wake.notify()
        self.thread.join()
        if not (ended and self.timings):
            if self.showing is None and self.shown_frames < frames:
                self._step(frames, show=True)
            if self.showing is not None:
                self.showing.wait()
                self._collect_shown()
        self.shower.terminate()

    def results(self, task: Callable[[T], U], argument: T) -> U:
        """``task(argument)`` run by the locating worker (:func:`pintime.liveworker.finished` gives it the
        recording's location there), once the recording is closed."""
        return self.locating.submit(task, argument).result()

    def close(self) -> None:
        """Stop the workers and remove the prefix copies and snapshots (after :meth:`stop`)."""
        self.shower.terminate()
        self.shower.join()
        self.locating.shutdown()
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
                self._step(frames)
            except Exception as err:  # noqa: BLE001 — the recording must go on whatever the analysis does
                self.warn(f"live analysis stopped ({type(err).__name__}: {err}); the recording goes on and "
                          "is analysed at its end")
                return
            finally:
                with self.wake:
                    self.busy = False

    def _step(self, frames: int, show: bool = False) -> None:
        """One locating step on the first ``frames`` frames; the display's analysis started when due (or
        ``show``): of the step's snapshot, or, where there is none (the edge shape not learned yet, or the
        take located in full at its end), of a copy of the prefix once ``silence_s`` is recorded."""
        seconds = frames / self.rate_hz
        self._collect_shown()
        due = self.showing is None and frames - self.shown_frames >= self.period_s * self.rate_hz
        snapshot = Path(self.work.name) / "snapshot.pickle"
        found = self.locating.submit(step, frames, self.searched_s,
                                     str(snapshot) if show or due else None).result()
        self.steps.append((seconds, found.took_s))
        self.searched_s, self.given_up = seconds, found.given_up
        if show or (due and (found.snapshot or seconds >= self.silence_s)):
            self.shown_frames = frames
            self.showing = self._show(frames, snapshot if found.snapshot else None)
        if found.end_s is not None:
            self.end_s, self.ended_at_s = found.end_s, time.monotonic()

    def _show(self, frames: int, snapshot: Path | None) -> AsyncResult:
        """The display's analysis of the first ``frames`` frames: of the locating worker's ``snapshot``,
        or (None: none yet) of a copy of them."""
        wav = self.wav
        if snapshot is None:
            wav = Path(self.work.name) / "prefix.wav"
            copy_prefix(self.wav, frames, wav)
        return self.shower.apply_async(analyse_prefix, (str(wav), None if snapshot is None else str(snapshot),
                                                        *self.inputs, frames / self.rate_hz))

    def _collect_shown(self) -> None:
        """The display's last analysis, once done, on the display."""
        if self.showing is None or not self.showing.ready():
            return
        report, self.showing = self.showing.get(), None
        seconds = self.shown_frames / self.rate_hz
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

    def _maybe_silent(self, seconds: float, why: str) -> None:
        if seconds >= self.silence_s and not self.silence_told:
            self.silence_told = True
            self.warn(f"no frame decoded in the first {seconds:.0f} s ({why}): check the input (line in, not "
                      "mic; the right device), its gain, and the wiring (D22 = PA0 to left, D11 = PB5 to "
                      "right); the recording goes on")
