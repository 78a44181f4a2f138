"""Benchmark of ``pintime analyze`` on the Table 1 captures: speed on one core, stage by stage.

Target: the whole analysis (decode, detect, learn, locate, clock, frames, estimators, Table 1) of a
Table 1 capture at ≥ 100× real time on one core with the template method. Reported per capture: the
in-process analysis (``pintime.pipeline.analyze``, best of ``--repeat`` runs) as × real time and as
the ratio to merely decoding the same WAV with soundfile; the command (``pintime analyze``, with Python's
start-up and imports) likewise; and where the in-process time goes. Stages are measured by wrapping the
pipeline's functions with timers, each stage *exclusive* of the stages it calls (reading the WAV inside
the learning pass counts as ``decode``: pintime's own 16/24-bit PCM reader), on the thread that runs it
(the next block is read in a second thread), so the stages add up to the total. Times are CPU seconds
(user + system) of the process doing the work, so other jobs on a shared machine do not count. Beside
them, the command's wall time: what one waits for (the reading thread overlaps; other jobs count).

Captures: ``build/captures/table1-<profile>.wav`` (rendered if missing, seed 1; ``--short``: the 3 s
capture of ``bench_edges.py --short``): ``paper`` and ``default`` (192 kHz 24-bit stereo) and ``laptop-48k``
(48 kHz 16-bit stereo, where both edges of every Table 1 pulse share one window and are fitted jointly).
Every BLAS is held to one thread.

Usage: ``python bench/bench_analyze.py [--profiles paper default] [--repeat 2] [--json FILE] [--short]``
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads
    os.environ[_var] = "1"

import argparse  # noqa: E402
import functools  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import soundfile as sf  # noqa: E402
from bench_edges import SIM, capture, decode_s, short_edges  # noqa: E402
from figures import finish  # noqa: E402
from pintime import clock, pipeline  # noqa: E402
from pintime.capture import wav as wav_reader  # noqa: E402
from pintime.locate.detect import blockdetect  # noqa: E402
from pintime.locate.stream import capture_edges as locate  # noqa: E402
from pintime.programs import table1 as table1_program  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PINTIME = ROOT / ".venv" / "bin" / "pintime"
TARGET_X_REAL_TIME = 100.0
# stage → (owner, attribute) of the function whose time it is; the importing modules' names are patched
STAGES: dict[str, tuple[Any, str]] = {
    "decode": (wav_reader._PcmFile, "read"),  # the captures are 24-bit PCM
    "learn": (locate, "learn_capture"),
    "detect": (blockdetect.BlockDetector, "steps"),
    "locate": (locate, "_locate_block"),
    "clock": (clock, "calibrate"),
    "frames": (pipeline, "decode_between_gaps"),
    "table1": (table1_program, "build_table1"),
}


class StageTimer:
    """Exclusive CPU time per stage: a stage's time less that of the timed stages it called, each measured
    on its own thread (the next block is read in a second thread while this one is located)."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(STAGES, 0.0)
        self.calls = dict.fromkeys(STAGES, 0)
        self._open = threading.local()  # per thread: per open stage, time spent in timed stages it called

    def wrap(self, name: str, function: Callable) -> Callable:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            inner = self._open.__dict__.setdefault("inner", [])
            self.calls[name] += 1
            inner.append(0.0)
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.thread_time() - started
                self.seconds[name] += elapsed - inner.pop()
                if inner:
                    inner[-1] += elapsed
        return timed

    def __enter__(self) -> StageTimer:
        self._saved = {name: getattr(owner, attr) for name, (owner, attr) in STAGES.items()}
        for name, (owner, attr) in STAGES.items():
            setattr(owner, attr, self.wrap(name, self._saved[name]))
        return self

    def __exit__(self, *exc: object) -> None:
        for name, (owner, attr) in STAGES.items():
            setattr(owner, attr, self._saved[name])


def analyze_once(wav: Path) -> tuple[float, dict[str, float]]:
    """CPU time of one in-process analysis and its stages."""
    with StageTimer() as timer:
        started = time.process_time()
        pipeline.analyze(wav, "template")
        total = time.process_time() - started
    idle = [name for name, calls in timer.calls.items() if not calls]
    if idle:  # the pipeline no longer goes through these functions: its time would hide under "other"
        raise SystemExit(f"bench_analyze: stages {', '.join(idle)} never ran: update STAGES")
    return total, {**timer.seconds, "other": total - sum(timer.seconds.values())}


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def command_s(wav: Path) -> tuple[float, float]:
    """CPU and wall time of ``pintime analyze`` as a user runs it (a fresh Python: start-up and imports
    too)."""
    cpu, wall = children_cpu_s(), time.perf_counter()
    subprocess.run([str(PINTIME), "analyze", str(wav)], check=True, stdout=subprocess.DEVNULL)
    return children_cpu_s() - cpu, time.perf_counter() - wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", help="default: paper default laptop-48k "
                        "(--short: default-steady)")
    parser.add_argument("--repeat", type=int, default=2, help="runs per capture; the fastest counts")
    parser.add_argument("--json", type=Path, default=ROOT / "build" / "bench" / "analyze.json")
    parser.add_argument("--short", action="store_true", help="a 3 s capture only (checks the figures)")
    args = parser.parse_args()
    edges = short_edges() if args.short else SIM / "table1.edges.csv"
    profiles = args.profiles or (["default-steady"] if args.short else ["paper", "default", "laptop-48k"])
    wavs = {profile: capture(profile, edges) for profile in profiles}  # rendered first if missing
    rows = []
    print(f"{'profile':<15} {'capture s':>9} {'analyze s':>9} {'×RT':>6} {'×decode':>7} {'command s':>9} "
          f"{'×RT':>6} {'wall s':>6} {'×RT':>6}  stages (CPU s, exclusive)")
    for profile, wav in wavs.items():
        duration_s = sf.info(str(wav)).duration
        decode = min(decode_s(wav) for _ in range(args.repeat))
        total, stages = min((analyze_once(wav) for _ in range(args.repeat)), key=lambda run: run[0])
        runs = [command_s(wav) for _ in range(args.repeat)]
        command, wall = min(cpu for cpu, _ in runs), min(wall for _, wall in runs)
        row = dict(profile=profile, capture_s=duration_s, decode_s=decode, analyze_s=total,
                   x_real_time=duration_s / total, x_decode=total / decode, command_s=command,
                   command_x_real_time=duration_s / command, command_wall_s=wall,
                   command_wall_x_real_time=duration_s / wall, stages_s=stages)
        rows.append(row)
        split = " ".join(f"{name} {seconds:.2f}" for name, seconds in stages.items())
        print(f"{profile:<15} {duration_s:>9.1f} {total:>9.2f} {row['x_real_time']:>6.1f} "
              f"{row['x_decode']:>7.2f} {command:>9.2f} {row['command_x_real_time']:>6.1f} {wall:>6.2f} "
              f"{row['command_wall_x_real_time']:>6.1f}  {split}", flush=True)
    print(f"Times are CPU s on one core; ×RT = capture length / analysis time (target ≥ "
          f"{TARGET_X_REAL_TIME:g} in-process, template method); ×decode = analysis time / time soundfile "
          "takes to decode the same WAV; command: `pintime analyze` including Python start-up and imports; "
          "wall: the command's wall time (a shared machine's other jobs count).")
    return finish("bench_analyze", rows, args.json, args.short,
                  ["capture_s", "decode_s", "analyze_s", "x_real_time", "x_decode", "command_s",
                   "command_x_real_time", "command_wall_s", "command_wall_x_real_time",
                   *(f"stages_s.{name}" for name in [*STAGES, "other"])])


if __name__ == "__main__":
    raise SystemExit(main())
