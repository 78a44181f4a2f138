"""The work of ``pintime measure``'s two worker processes (:mod:`pintime.live` starts them; processes, not
threads, so that none holds the interpreter lock the recorder's PortAudio callback needs).

The *locating* worker holds the recording's location as it grows
(:class:`pintime.locate.stream.growing.GrowingCapture`): at each :func:`step` it locates the blocks the
frames written complete, locates the rest as if the recording ended there (a copy: :meth:`snapshot`) and
decodes the frames of its last seconds for an END frame; at the end it hands the location on to
``pintime analyze``'s own pipeline (:func:`finished`), so that only the last blocks are located then.
The *showing* worker, at a lower priority, analyses a snapshot for the live display (:func:`analyse_prefix`):
the whole pipeline, ``analyze``'s on that much audio, with the edges located already.
"""

from __future__ import annotations

import os
import pickle
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pintime.compare import ROWS, Row
from pintime.edges import MEASUREMENT_CHANNEL
from pintime.errors import PintimeError
from pintime.frames import ScaledTimes, decode_frames, frame_end
from pintime.locate.stream.capture_edges import CaptureEdges
from pintime.locate.stream.growing import GrowingCapture
from pintime.pipeline import Analysis, analyze, summary_json
from pintime.signals import stop_signals

SHOW_NICENESS = 10  # the showing worker yields the CPU to the locating one (END found late waits on it)
END_LOOKBACK_S = 2.0  # the END search begins this long before the last step's end: a frame it cut is whole
US_PER_S = 1e6  # the END search's time base: the capture's clock taken for the MCU's (within its ppm, far
# inside the frames' timing tolerances); the results' analysis calibrates the clock

_growing: GrowingCapture | None = None  # the locating worker's recording


def start_locating(wav: str, visits: str | None) -> None:
    """The locating worker's start: the recording ``wav``, nothing located yet; Table 2's ``visits`` file
    read now, for the analysis at the end (:mod:`pintime.table2.ahead`)."""
    global _growing
    _ignore_stop_signals()
    _growing = GrowingCapture(wav)
    if visits is not None:
        from pintime.table2.ahead import read_ahead  # Table 2's modules: for its captures only

        read_ahead(Path(visits))


def start_showing() -> None:
    """The showing worker's start, at a lower priority; SIGTERM ends it (how its pool is stopped)."""
    _ignore_stop_signals(keep=signal.SIGTERM)
    os.nice(SHOW_NICENESS)


@dataclass(frozen=True)
class Step:
    """What a locating step found: how much is located for good (s), where an END frame ends (s, None:
    none), whether the snapshot was written for the display, why the take is located in full at the
    end (None: it is not), and how long the step took (s)."""

    located_s: float
    end_s: float | None
    snapshot: bool
    given_up: str | None
    took_s: float


def step(frames: int, since_s: float, snapshot_to: str | None) -> Step:
    """The locating worker's step on the first ``frames`` frames written: located, searched for an END
    frame from ``since_s`` (less END_LOOKBACK_S), the snapshot pickled to ``snapshot_to`` when asked."""
    started = time.monotonic()
    assert _growing is not None
    _growing.grow(frames)
    try:
        located = _growing.snapshot()
    except PintimeError:  # (a clipped edge in the last blocks) the analysis at the end says it
        located = None
    if located is not None and snapshot_to is not None:
        Path(snapshot_to).write_bytes(pickle.dumps(located, pickle.HIGHEST_PROTOCOL))
    end_s = None if located is None else end_frame_s(located, since_s - END_LOOKBACK_S)
    return Step(_growing.located_s, end_s, located is not None and snapshot_to is not None,
                _growing.given_up, time.monotonic() - started)


def end_frame_s(located: CaptureEdges, since_s: float) -> float | None:
    """Where the last END frame among the measurement channel's edges after ``since_s`` ends (s), or
    None."""
    meas = located.edges.on(MEASUREMENT_CHANNEL)
    first = int(np.searchsorted(meas.time, since_s))
    time_s = meas.time[first:]
    ends = decode_frames(ScaledTimes(time_s, US_PER_S), meas.polarity[first:], None).of_kind("end")
    return float(time_s[frame_end(ends[-1])]) if ends else None


def finished() -> tuple[CaptureEdges | None, str | None]:
    """The locating worker's location of the closed recording, or None and why it is located in full."""
    assert _growing is not None
    return _growing.finish(), _growing.given_up


@dataclass(frozen=True)
class PrefixReport:
    """What the showing worker found in a prefix: the live lines (None: nothing to show, and ``why``), the
    calibration trains' starts (s), and how long the analysis took."""

    lines: list[str] | None
    why: str = ""
    cal_s: tuple[float, ...] = ()
    took_s: float = 0.0


def analyse_prefix(wav: str, snapshot: str | None, elf: str | None, visits: str | None,
                   seconds: float) -> PrefixReport:
    """The showing worker's task: the whole pipeline on the recording's first ``seconds`` (with the ``elf``
    and the ``visits`` given), from the locating worker's pickled ``snapshot`` of them, or (None) on
    ``wav``, a copy of them."""
    start = time.monotonic()
    try:
        located = None if snapshot is None else pickle.loads(Path(snapshot).read_bytes())
        a = analyze(wav, visits=visits, elf=elf, progress=False, located=located)
    except PintimeError as err:
        return PrefixReport(None, str(err))
    if not a.decode.frames:
        return PrefixReport(None, "no frame decoded")
    took_s = time.monotonic() - start
    times_s = a.edges.on(MEASUREMENT_CHANNEL).time
    return PrefixReport(live_lines(a, seconds, took_s), "",
                        tuple(float(times_s[f.start]) for f in a.decode.frames if f.kind == "cal"), took_s)


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


def _ignore_stop_signals(keep: signal.Signals | None = None) -> None:
    """A worker's start: Ctrl-C reaches the whole process group; the recorder handles it (all the stop
    signals but ``keep``)."""
    for s in stop_signals():
        if s != keep:
            signal.signal(s, signal.SIG_IGN)
