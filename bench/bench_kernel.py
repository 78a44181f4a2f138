"""Benchmark of the kernel program's figures through the sound-card model: accuracy and coverage over seeds.

Builds and simulates program kernel (``make sim PROGRAMS=kernel`` into a scratch BUILD), renders the run
with ``pintime synth`` for each profile and seed, validates every capture with each edge method against
simavr's exact edges (``pintime validate --json``: the ``kernel`` rows, firmware/kernel/KERNEL.md §4), and
prints per profile and method:

- the misses per seed — figures whose truth lies outside their 95 % CI — against chance (honest CIs miss
  5 %; the figures of one capture share its data, so their count spreads more than a binomial);
- the per-thread scheduler cost's largest error and widest CI in cycles: "resolved to the cycle" means both
  far below one cycle;
- the largest error of the scheduler's other figures in units of their CI half-width.

A stereo render holds the measurement pin and the clock reference, so only the scheduler's figures are
there (7 per capture).

Usage: ``python bench/bench_kernel.py [--f-cpu-hz 1000000] [--reps 20] [--ticks 20] [--profiles default
paper] [--methods template inflection] [--seeds 5] [--json build/bench/kernel.json] [--short]``;
``--short`` runs 3 repetitions of 4 ticks, one profile, method and seed, and only checks that every figure
is produced (CI).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from figures import check_short
from pintime.estimate import estimators as est

ROOT = Path(__file__).resolve().parents[1]
PINTIME = ROOT / ".venv" / "bin" / "pintime"
PER_THREAD = "scheduler per thread"


def timed(command: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def check(result: dict) -> dict:
    """Misses, the per-thread cost's error and CI in cycles, the others' errors in CI half-widths."""
    rows = result["kernel"]
    per_thread = next(r for r in rows if r["name"] == PER_THREAD)
    others = [r for r in rows if r["name"] != PER_THREAD and r["ci95_half_us"]]
    return {"figures": len(rows), "outside_ci": [r["name"] for r in rows if r["within_ci95"] is False],
            "per_thread_error_cycles": per_thread["mean_cycles"] - per_thread["truth_cycles"],
            "per_thread_ci_cycles": per_thread["ci95_half_cycles"],
            "per_thread_rounds_to_truth": (round(per_thread["mean_cycles"])
                                           == round(per_thread["truth_cycles"])),
            "max_error_over_ci": max(abs(r["mean_us"] - r["truth_us"]) / r["ci95_half_us"] for r in others)}


def coverage_over_seeds(entries: list[dict]) -> dict:
    """Misses per seed of one profile and method, against chance."""
    misses = np.array([len(e["outside_ci"]) for e in entries])
    checked = entries[0]["figures"]
    chance = est.coverage(np.ones(checked, dtype=bool))
    spread = float(np.std(misses, ddof=1) / np.sqrt(len(misses))) if len(misses) > 1 else float("nan")
    return {"profile": entries[0]["profile"], "method": entries[0]["method"], "seeds": len(entries),
            "checked_per_seed": checked, "misses_per_seed": misses.tolist(),
            "misses_mean": float(np.mean(misses)), "misses_mean_se": spread, "chance_mean": chance.expected,
            "worst_per_thread_error_cycles": max(abs(e["per_thread_error_cycles"]) for e in entries),
            "widest_per_thread_ci_cycles": max(e["per_thread_ci_cycles"] for e in entries)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--f-cpu-hz", type=int, default=1_000_000)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--ticks", type=int, default=20)
    p.add_argument("--profiles", nargs="+", default=["default", "paper"])
    p.add_argument("--methods", nargs="+", default=["template", "inflection"])
    p.add_argument("--seeds", type=int, default=5, help="renders per profile (seeds 1 … N)")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--short", action="store_true", help="a small run that checks the figures only")
    args = p.parse_args()
    if args.short:
        args.reps, args.ticks, args.profiles, args.methods, args.seeds = 3, 4, ["default"], ["template"], 1
    report: dict = {"f_cpu_hz": args.f_cpu_hz, "reps": args.reps, "ticks": args.ticks, "seeds": args.seeds,
                    "captures": [], "coverage": []}
    with tempfile.TemporaryDirectory(prefix="bench_kernel_") as tmp:
        build = Path(tmp)
        report["simulate_s"] = timed(["make", "-s", "-C", str(ROOT), f"BUILD={build}",
                                      f"F_CPU={args.f_cpu_hz}", f"KERNEL_REPS={args.reps}",
                                      f"KERNEL_TICKS={args.ticks}",
                                      "PROGRAMS=kernel", "sim"])
        sim = build / "sim"
        print(f"simulated in {report['simulate_s']:.1f} s", flush=True)
        for profile in args.profiles:
            for seed in range(1, args.seeds + 1):
                wav = build / f"kernel-{profile}.wav"
                synth_s = timed([str(PINTIME), "synth", str(sim / "kernel.edges.csv"), "-o", str(wav),
                                 "--profile", profile, "--seed", str(seed), "--force"])
                for method in args.methods:
                    out = build / f"{profile}-{method}.out.json"
                    entry = {"profile": profile, "seed": seed, "method": method, "synth_s": synth_s}
                    entry["validate_s"] = timed([str(PINTIME), "validate", str(wav), "--truth",
                                                 str(sim / "kernel.json"), "--method", method,
                                                 "--json", str(out)])
                    entry.update(check(json.loads(out.read_text())))
                    report["captures"].append(entry)
                    print(json.dumps(entry), flush=True)
    for profile in args.profiles:
        for method in args.methods:
            done = [e for e in report["captures"] if e["profile"] == profile and e["method"] == method]
            c = coverage_over_seeds(done)
            report["coverage"].append(c)
            print(f"kernel {profile}/{method}: {c['misses_mean']:.2f} ± {c['misses_mean_se']:.2f} of "
                  f"{c['checked_per_seed']} figures outside their 95 % CI per seed over {c['seeds']} seeds "
                  f"(chance {c['chance_mean']:.2f}); per-thread cost: worst error "
                  f"{c['worst_per_thread_error_cycles']:.2g} cycles, widest CI ± "
                  f"{c['widest_per_thread_ci_cycles']:.2g} cycles", flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if args.short:
        figures = ["simulate_s", "synth_s", "validate_s", "per_thread_error_cycles", "per_thread_ci_cycles",
                   "per_thread_rounds_to_truth", "max_error_over_ci", "chance_mean"]
        rows = [{"simulate_s": report["simulate_s"], "chance_mean": report["coverage"][0]["chance_mean"]}
                | entry for entry in report["captures"]]
        return check_short("bench_kernel", rows, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
