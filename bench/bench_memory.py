"""Benchmark of the whole ``pintime analyze`` command: speed with start-up included, and peak memory.

Targets (issue 13): the command, as a user runs it (a fresh Python: imports, numba's cache, the analysis,
printing), at ≥ 100× real time and ≤ 2× the time soundfile takes to merely decode the same WAV, on the
171 s Table 1 capture; its peak resident memory ≤ 500 MB for any capture, shown on a one-hour one.

Captures (rendered if missing, seed 1):

- ``build/captures/table1-default.wav``: the Table 1 run, default profile (192 kHz, 24-bit, stereo).
- ``build/bench/hour/table1-hour.wav``: one hour of Table 1 runs back to back (the run repeated every
  177 s, the 1 Hz reference continuing through), default profile at 96 kHz 24-bit stereo
  (2.1 GB; at 192 kHz the hour would pass a RIFF WAV's 4 GB). Table 1 is the densest program (3800 edges/s),
  so this is the most per-edge results an hour can hold: 13.7 million edges.
- ``build/bench/table2/table2-48k16.wav``: the 984 s Table 2 run, default profile at 48 kHz 16-bit mono
  (its Table 2 joins every pulse with simavr's block counts: the largest tables any program keeps; and
  at 16 bits the card is quieter than one LSB, so the rounding's draws run too).

``--short``: the 3 s capture of ``bench_edges.py --short`` and a 30 s repetition of it (checks the figures).

Wall times are medians of ``--repeat`` runs (the command is mostly single-threaded; on a shared machine
the wall time includes waiting for a core, so the CPU time, user + system, is printed too). Peak memory is
the command's maximum resident set size (``wait4``'s ru_maxrss of that child alone). The soundfile decode
is ``soundfile.read`` of the whole file as float32 in a fresh process, timed the same way.

Usage: ``python bench/bench_memory.py [--repeat 3] [--json FILE] [--short] [--no-hour]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import soundfile as sf
from bench_edges import SIM, capture, short_edges
from figures import finish
from pintime.soundcard.formats import with_format
from pintime.soundcard.model import PROFILES
from pintime.soundcard.synth import synthesize

ROOT = Path(__file__).resolve().parents[1]
PINTIME = ROOT / ".venv" / "bin" / "pintime"
PYTHON = ROOT / ".venv" / "bin" / "python"
TARGET_X_REAL_TIME = 100.0
TARGET_X_DECODE = 2.0
TARGET_PEAK_MB = 500.0
HOUR_S = 3600.0
HOUR_RATE_HZ = 96000
DECODE = "import sys, soundfile; soundfile.read(sys.argv[1], dtype='float32')"


def repeated_edges(edges_csv: Path, out_csv: Path, total_s: float) -> Path:
    """An edge list of the run in ``edges_csv`` repeated every whole number of reference periods (the first
    past the run's end: 177 s for Table 1) for ``total_s`` seconds
    (at the run's F_CPU): the measurement channel's edges shifted per repetition, the reference's square
    wave continued at its period (so that its phase never jumps). The run's JSON is copied beside it."""
    sim = json.loads(edges_csv.with_name(edges_csv.name.removesuffix(".edges.csv") + ".json").read_text())
    total_cycles = int(total_s * sim["f_cpu_hz"])
    lines = edges_csv.read_text().splitlines()
    rows = [tuple(int(v) for v in row.split(",")) for row in lines[1:]]
    pin = [r for r in rows if r[1] == 0]
    pin = pin[:len(pin) - (pin[-1][2] == 1)]  # ends low (an excerpt may stop after a rising edge)
    ref = [r for r in rows if r[1] == 1]
    assert pin[0][2] == 1
    half_cycles = ref[1][0] - ref[0][0]
    spacing = (rows[-1][0] // (2 * half_cycles) + 1) * 2 * half_cycles  # whole reference periods
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_csv.with_suffix(".tmp")
    with open(tmp, "w") as f:
        f.write(lines[0] + "\n")
        ref_cycle, ref_level, k = ref[0][0], ref[0][2], 0
        for start in range(0, total_cycles - rows[-1][0], spacing):
            end = start + spacing
            for cycle, _, level in pin:
                while ref_cycle < min(start + cycle, end):  # the reference's edges before this one
                    f.write(f"{ref_cycle},1,{ref_level}\n")
                    k += 1
                    ref_cycle, ref_level = ref[0][0] + k * half_cycles, ref_level ^ 1
                f.write(f"{start + cycle},0,{level}\n")
        while ref_cycle < end:
            f.write(f"{ref_cycle},1,{ref_level}\n")
            k += 1
            ref_cycle, ref_level = ref[0][0] + k * half_cycles, ref_level ^ 1
    tmp.replace(out_csv)
    out_csv.with_name(out_csv.name.removesuffix(".edges.csv") + ".json").write_text(json.dumps(sim))
    return out_csv


def table2_capture() -> Path:
    """The Table 2 run at 48 kHz 16-bit mono, default profile, seed 1 (rendered once)."""
    edges = SIM / "table2.edges.csv"
    wav = ROOT / "build" / "bench" / "table2" / "table2-48k16.wav"
    if not wav.exists() or wav.stat().st_mtime < edges.stat().st_mtime:
        print(f"rendering {wav.relative_to(ROOT)} …", flush=True)
        wav.parent.mkdir(parents=True, exist_ok=True)
        synthesize(edges, wav, with_format(PROFILES["default"], 48000, 16, 1), 1, force=True)
    return wav


def long_capture(edges_csv: Path, folder: Path, name: str, total_s: float, rate_hz: int) -> Path:
    """``folder/name.wav``: ``total_s`` of repeated runs, default profile at ``rate_hz`` (rendered once)."""
    wav = folder / f"{name}.wav"
    if not wav.exists() or wav.stat().st_mtime < edges_csv.stat().st_mtime:
        print(f"rendering {wav.relative_to(ROOT)} ({total_s:g} s) …", flush=True)
        repeated = repeated_edges(edges_csv, folder / f"{name}-runs.edges.csv", total_s)
        synthesize(repeated, wav, with_format(PROFILES["default"], rate_hz), 1, force=True)
    return wav


# Run by a fresh, small Python: the command's own rusage. A child forked from this process would carry this
# process's resident set into its ru_maxrss (Linux records the pre-exec memory's high-water mark), and this
# process may hold a whole rendered capture.
SPAWN = ("import os, sys, time; t = time.perf_counter(); pid = os.fork()\n"
         "if pid == 0:\n"
         "    os.dup2(os.open(os.devnull, os.O_WRONLY), 1); os.execv(sys.argv[1], sys.argv[1:])\n"
         "_, status, u = os.wait4(pid, 0)\n"
         "print(os.waitstatus_to_exitcode(status), time.perf_counter() - t, u.ru_utime + u.ru_stime, "
         "u.ru_maxrss / 1024)")


def run_child(argv: list[str]) -> tuple[float, float, float]:
    """Wall s, CPU s (user + system) and peak RSS (MB) of one command, its output discarded."""
    out = subprocess.run([str(PYTHON), "-c", SPAWN, *argv], capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout  # a synthesized capture names its source edges from here
    code, wall, cpu, peak = out.split()
    if int(code):
        raise SystemExit(f"bench_memory: {' '.join(argv)} exited {code}")
    return float(wall), float(cpu), float(peak)


def measure(wav: Path, repeat: int) -> dict[str, Any]:
    """The command and the bare decode, ``repeat`` times each, interleaved: medians."""
    command, decode = [], []
    for _ in range(repeat):
        command.append(run_child([str(PINTIME), "analyze", str(wav)]))
        decode.append(run_child([str(PYTHON), "-c", DECODE, str(wav)]))
    duration_s = sf.info(str(wav)).duration
    wall, cpu = (statistics.median(c[k] for c in command) for k in (0, 1))
    decode_wall, decode_cpu = (statistics.median(d[k] for d in decode) for k in (0, 1))
    return dict(capture=str(wav.relative_to(ROOT)), capture_s=duration_s,
                wav_mb=wav.stat().st_size / 1e6, command_s=wall, command_cpu_s=cpu,
                decode_s=decode_wall, decode_cpu_s=decode_cpu,
                x_real_time=duration_s / wall, x_decode=wall / decode_wall,
                x_real_time_cpu=duration_s / cpu, x_decode_cpu=cpu / decode_cpu,
                peak_mb=max(c[2] for c in command), decode_peak_mb=max(d[2] for d in decode))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per capture (medians)")
    parser.add_argument("--json", type=Path, default=ROOT / "build" / "bench" / "memory.json")
    parser.add_argument("--short", action="store_true", help="3 s and 30 s captures (checks the figures)")
    parser.add_argument("--no-hour", action="store_true", help="skip the one-hour capture")
    args = parser.parse_args()
    if args.short:
        edges = short_edges()
        wavs = [capture("default", edges),
                long_capture(edges, edges.parent, "table1-repeated", 30.0, HOUR_RATE_HZ)]
    else:
        wavs = [capture("default", SIM / "table1.edges.csv"), table2_capture()]
        if not args.no_hour:
            wavs.append(long_capture(SIM / "table1.edges.csv", ROOT / "build" / "bench" / "hour",
                                     "table1-hour", HOUR_S, HOUR_RATE_HZ))
    print(f"{'capture':<40} {'length s':>8} {'command s':>9} {'decode s':>8} {'×RT':>6} {'×decode':>7}   "
          f"{'CPU s':>6} {'decode':>6} {'×RT':>6} {'×decode':>7}   {'peak MB':>7}")
    rows = []
    for wav in wavs:
        row = measure(wav, args.repeat)
        rows.append(row)
        print(f"{row['capture']:<40} {row['capture_s']:>8.1f} {row['command_s']:>9.2f} "
              f"{row['decode_s']:>8.2f} {row['x_real_time']:>6.1f} {row['x_decode']:>7.2f}   "
              f"{row['command_cpu_s']:>6.2f} {row['decode_cpu_s']:>6.2f} {row['x_real_time_cpu']:>6.1f} "
              f"{row['x_decode_cpu']:>7.2f}   {row['peak_mb']:>7.0f}", flush=True)
    print(f"command: `pintime analyze CAPTURE` in a fresh process, start-up included (wall s, then CPU s = "
          f"user + system, medians of {args.repeat}); ×RT = capture length / command (target ≥ "
          f"{TARGET_X_REAL_TIME:g} on the 171 s capture); ×decode = command / soundfile's bare decode of "
          f"the same file in a fresh process "
          f"(target ≤ {TARGET_X_DECODE:g}); peak MB = the command's maximum RSS (target ≤ "
          f"{TARGET_PEAK_MB:g}, any length). {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}.")
    return finish("bench_memory", rows, args.json, args.short,
                  ["capture_s", "command_s", "command_cpu_s", "decode_s", "decode_cpu_s", "x_real_time",
                   "x_decode", "x_real_time_cpu", "x_decode_cpu", "peak_mb"])


if __name__ == "__main__":
    sys.exit(main())
