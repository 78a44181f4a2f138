"""Benchmark of ``pintime measure``'s wait after the END frame: from the END frame recorded to the results
printed (issue 40 item 5: ≤ 2 s at every rate).

A fake PortAudio card (this file's :class:`Card`: sounddevice's calls that ``pintime.record`` makes) plays
a synthesized capture into ``pintime measure``, run in this process as a user runs it: the run at
``--fast`` times real time up to ``LEAD_S`` before its END frame, then at real time, then the idle pin (the
last frame held) at real time until the recording stops. The wait is what ``measure`` itself reports: the
audio recorded after the END frame before the recording stopped (at real time: seconds), plus the time the
results took after it. The CPU time of its worker processes (locating, display) is printed beside it: on a
shared machine the wall times include waiting for a core.

Cases (captures rendered if missing, seed 1, under build/captures/): the Table 1 run through the default
profile (192 kHz 24-bit stereo) and through ``laptop-48k`` (48 kHz 16-bit stereo: ``measure`` records
two channels, the rate set for the card here), and the 984 s Table 2 run (default profile). ``--short``:
the 8.8 s user example (default profile), all at real time.

Usage: ``python bench/bench_live.py [--cases table1-default …] [--fast 8] [--json FILE] [--short]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import soundfile as sf
from bench_edges import SIM
from figures import finish
from pintime import record as rec
from pintime.capture.edgelist import read_edge_list
from pintime.cli import main as pintime_main
from pintime.soundcard.model import PROFILES
from pintime.soundcard.synth import synthesize

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 2.0
LEAD_S = 20.0  # the last seconds before the END frame played at real time (the live analysis caught up)
TAIL_S = 120.0  # the idle pin after the run, at most (the recording stops at the END frame)
BLOCK_FRAMES = 4096
QUEUED_S = 60.0  # the recorder's queue: played faster than real time, a loaded machine's writer falls behind
CASES = {"table1-default": ("table1", "default"), "table1-laptop-48k": ("table1", "laptop-48k"),
         "table2-default": ("table2", "default"), "user_example-default": ("user_example", "default")}
INPUTS = {"user_example": ["--elf", str(SIM.parent / "firmware" / "user_example.elf")],
          "table2": ["--visits", str(SIM / "table2.visits.csv")]}  # what each program's analysis reads
NOTE = re.compile(r"the recording stopped ([\d.]+) s of audio after the END frame, then the results took "
                  r"([\d.]+) s")


class PortAudioError(Exception):
    pass


class Card:
    """sounddevice's device queries and InputStream for one stereo input at ``rate_hz``, playing
    ``samples``: at ``fast`` × real time to frame ``real_from``, then at real time, then their last frame
    held, at real time (the idle pin), until the stream closes."""

    PortAudioError = PortAudioError

    def __init__(self, samples: np.ndarray, rate_hz: int, fast: float, real_from: int):
        self.samples, self.rate_hz, self.fast, self.real_from = samples, rate_hz, fast, real_from

    def query_devices(self, device: object = None, kind: object = None) -> dict:
        return {"index": 0, "name": "bench card (hw:9,0)", "hostapi": 0, "max_input_channels": 2,
                "default_samplerate": float(self.rate_hz)}

    def query_hostapis(self, index: int) -> dict:
        return {"name": "ALSA"}

    def check_input_settings(self, device: int, channels: int, dtype: str, samplerate: int) -> None:
        if samplerate != self.rate_hz:
            raise PortAudioError("Invalid sample rate")

    def InputStream(self, **kwargs: object) -> Stream:  # noqa: N802 (sounddevice's name)
        return Stream(self, kwargs["callback"])  # type: ignore[arg-type]


class Status:
    input_overflow = False
    input_underflow = False


class Stream:
    """The card's stream: its blocks called back from a thread of its own, paced as :class:`Card` says."""

    def __init__(self, card: Card, callback: object):
        self.card, self.callback = card, callback
        self.samplerate = card.rate_hz
        self.closing = threading.Event()
        self.thread = threading.Thread(target=self.play, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def play(self) -> None:
        card, block_s = self.card, BLOCK_FRAMES / self.card.rate_hz
        due = time.monotonic()
        idle = np.repeat(card.samples[-1:], BLOCK_FRAMES, axis=0)  # the last frame held: the idle pin, no
        # steps (a block repeated would step where it starts again: edges after the END frame at 48 kHz)
        blocks = [card.samples[n0:n0 + BLOCK_FRAMES] for n0 in range(0, len(card.samples), BLOCK_FRAMES)]
        for k, block in enumerate(blocks + [idle] * round(TAIL_S / block_s)):
            due += block_s / (card.fast if (k + 1) * BLOCK_FRAMES <= card.real_from else 1.0)
            if self.closing.wait(max(0.0, due - time.monotonic())):
                return
            self.callback(block, len(block), None, Status())  # type: ignore[operator]

    def close(self) -> None:
        self.closing.set()
        self.thread.join()


def rendered(program: str, profile: str) -> Path:
    """``build/captures/<program>-<profile>.wav`` (the Makefile's synth-captures), rendered if missing."""
    wav = ROOT / "build" / "captures" / f"{program}-{profile}.wav"
    edges = SIM / f"{program}.edges.csv"
    if not wav.exists() or wav.stat().st_mtime < edges.stat().st_mtime:
        print(f"rendering {wav.relative_to(ROOT)} …", flush=True)
        wav.parent.mkdir(parents=True, exist_ok=True)
        synthesize(edges, wav, PROFILES[profile], 1, force=True)
    return wav


def end_s(program: str) -> float:
    """Where the run's last edge (its END frame's) falls in simavr's time (s): the capture's, within its
    preroll and its card's ppm."""
    meas = read_edge_list(SIM / f"{program}.edges.csv").on(0)
    return float(meas.time[-1]) / 1e6  # the runs are at 1 MHz: cycles are µs


def measure_once(name: str, fast: float) -> dict:
    """One ``pintime measure`` of the case ``name``: the wait after END and what it is made of."""
    program, profile = CASES[name]
    wav = rendered(program, profile)
    samples, rate_hz = sf.read(wav, dtype="int32")
    real_from = max(0, int((end_s(program) - LEAD_S) * rate_hz))
    card = Card(samples, rate_hz, fast, real_from)
    saved = rec.load_backend, rec.SAMPLE_RATE_HZ, rec.MAX_QUEUED_S
    rec.load_backend, rec.SAMPLE_RATE_HZ = (lambda: card), rate_hz  # type: ignore[assignment,return-value]
    rec.MAX_QUEUED_S = QUEUED_S
    err = io.StringIO()
    try:
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(err), \
                contextlib.redirect_stdout(io.StringIO()):
            code = pintime_main(["measure", "-o", str(Path(tmp) / "take.wav"), *INPUTS.get(program, [])])
    finally:
        rec.load_backend, rec.SAMPLE_RATE_HZ, rec.MAX_QUEUED_S = saved
    found = NOTE.search(err.getvalue())
    if code != 0 or found is None:
        raise SystemExit(f"bench_live: {name}: measure exited {code} without the END frame's note:\n"
                         f"{err.getvalue()[-2000:]}")
    after_s, results_s = float(found[1]), float(found[2])
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"case": name, "rate_hz": rate_hz, "seconds": len(samples) / rate_hz,
            "after_end_s": after_s, "results_s": results_s, "wait_s": after_s + results_s,
            "workers_cpu_s": children.ru_utime + children.ru_stime}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), help="default: the three of the issue")
    parser.add_argument("--fast", type=float, default=8.0, help="the run's pace before its last LEAD_S")
    parser.add_argument("--json", type=Path, default=ROOT / "build" / "bench" / "live.json")
    parser.add_argument("--short", action="store_true", help="the user example, at real time")
    args = parser.parse_args()
    names = ["user_example-default"] if args.short else (args.cases or ["table1-default", "table1-laptop-48k",
                                                                        "table2-default"])
    rows, cpu_before = [], 0.0
    for name in names:
        row = measure_once(name, 1.0 if args.short else args.fast)
        row["workers_cpu_s"], cpu_before = row["workers_cpu_s"] - cpu_before, row["workers_cpu_s"]
        rows.append(row)
        print(f"{name}: {row['seconds']:.0f} s at {row['rate_hz']} Hz: the results {row['wait_s']:.2f} s "
              f"after the END frame ({row['after_end_s']:.2f} s of audio recorded after it, then "
              f"{row['results_s']:.2f} s), {row['wait_s'] / TARGET_S:.2f}× the {TARGET_S:g} s target; the "
              f"workers' CPU {row['workers_cpu_s']:.1f} s over the whole take", flush=True)
    return finish("bench_live", rows, args.json, args.short, ["after_end_s", "results_s", "wait_s",
                                                              "workers_cpu_s"])


if __name__ == "__main__":
    sys.exit(main())
