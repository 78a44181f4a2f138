"""Benchmark of the sound-card model: rendering speed (× real time) and peak memory vs capture length.

The table1 edge list from the simavr harness (``make sim``) is tiled to 1, 3 and 10 minutes (each copy
shifted by a whole number of seconds, so the 1 s reference stays a clean square wave) and rendered with
``pintime synth`` in a fresh process per run, so each run's peak resident memory is its own. Memory must
grow with the number of edges only, not with the number of samples (the renderer streams in blocks).

Usage: ``python bench/bench_synth.py [--edges build/sim/table1.edges.csv] [--json build/bench/synth.json]
[--short]``; ``--short`` renders 3 and 6 s instead and only checks that every figure is produced (CI).
Target (docs/design.md §12): a 10-minute capture in well under a minute. CPU time is reported next to
wall time: on a shared machine the wall time says more about the neighbours than about the renderer.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from figures import check_short

CHILD = """
import json, resource, sys, time
from pintime.soundcard.synth import synthesize
t0 = time.perf_counter()
r = synthesize(sys.argv[1], sys.argv[2], sys.argv[3], 1, f_cpu_hz=float(sys.argv[4]), force=True)
use = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall_s": time.perf_counter() - t0, "capture_s": r.n_samples / 192000,
                  "cpu_s": use.ru_utime + use.ru_stime, "peak_rss_mb": use.ru_maxrss / 1024}))
"""


def tile(edges_csv: Path, f_cpu_hz: float, minutes: float, out: Path) -> int:
    """Write ``edges_csv`` repeated to ``minutes`` of MCU time; returns the number of edges."""
    rows = np.loadtxt(edges_csv, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    period = (int(rows[-1, 0] // f_cpu_hz) + 1) * int(f_cpu_hz)  # whole seconds: reference stays in phase
    for ch in (0, 1):  # every copy must end low on each channel (the reference ends high after a run)
        last = np.flatnonzero(rows[:, 1] == ch)
        if len(last) and rows[last[-1], 2] == 1:
            rows = np.delete(rows, last[-1], axis=0)
    copies = int(np.ceil(minutes * 60 * f_cpu_hz / period))
    tiled = np.concatenate([rows + [k * period, 0, 0] for k in range(copies)])
    tiled = tiled[tiled[:, 0] < minutes * 60 * f_cpu_hz]
    np.savetxt(out, tiled, fmt="%d", delimiter=",", header="cycle,channel,level", comments="")
    return len(tiled)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=Path, default=Path("build/sim/table1.edges.csv"))
    parser.add_argument("--json", type=Path, default=Path("build/bench/synth.json"))
    parser.add_argument("--profiles", default="default,wide-filter,noisy")
    parser.add_argument("--short", action="store_true", help="seconds, not minutes: check the figures only")
    args = parser.parse_args()
    sim = json.loads(args.edges.with_name(args.edges.name.replace(".edges.csv", ".json")).read_text())
    f_cpu_hz = float(sim["f_cpu_hz"])
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        sizes_min = (0.05, 0.1) if args.short else (1, 3, 10)
        for minutes in sizes_min:
            edges = Path(tmp) / f"tiled{minutes}.edges.csv"
            n_edges = tile(args.edges, f_cpu_hz, minutes, edges)
            for profile in args.profiles.split(",") if minutes == sizes_min[-1] else ["default"]:
                wav = Path(tmp) / "capture.wav"
                child = subprocess.run([sys.executable, "-c", CHILD, str(edges), str(wav), profile,
                                        str(f_cpu_hz)], check=False, capture_output=True, text=True)
                if child.returncode:
                    sys.exit(f"bench_synth: rendering failed:\n{child.stderr}")
                out = child.stdout
                run = json.loads(out) | {"profile": profile, "minutes": minutes, "edges": n_edges}
                run["x_real_time"] = run["capture_s"] / run["wall_s"]
                run["x_real_time_cpu"] = run["capture_s"] / run["cpu_s"]  # on one core, if unshared
                results.append(run)
                print(f"{minutes:4g} min  {profile:12s} {n_edges:9d} edges  wall {run['wall_s']:5.1f} s "
                      f"({run['x_real_time']:5.1f}× real time)  cpu {run['cpu_s']:5.1f} s "
                      f"({run['x_real_time_cpu']:5.1f}×)  peak RSS {run['peak_rss_mb']:4.0f} MB", flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    if args.short:
        return check_short("bench_synth", results, ["edges", "wall_s", "x_real_time", "cpu_s",
                                                    "x_real_time_cpu", "peak_rss_mb"])
    ten = [r for r in results if r["minutes"] == 10]
    ok = all(r["wall_s"] < 60 for r in ten)
    print(f"10-minute captures: {max(r['wall_s'] for r in ten):.1f} s at most "
          f"({'meets' if ok else 'MISSES'} the < 60 s target); results in {args.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
