"""Benchmark of the micro-benchmarks (program micro) through the sound-card model: accuracy and coverage.

Renders `make sim`'s micro run (build/sim/micro.edges.csv) with ``pintime synth`` for each profile and seed,
validates every capture against simavr's exact edges (``pintime validate --json``) and reports:

- every benchmark rounds to its truth's whole cycles, and the largest error in cycles;
- the coverage of the 95 % CIs over seeds: the benchmarks outside their CI per seed (honest CIs miss 5 %,
  1.75 of 35), their mean over seeds ± its standard error against that, and the spread of the errors in
  units of their standard errors (honest: a Student t's, √((n − 1)/(n − 3)) for n repetitions);
- the locator's own deterministic error: each profile rendered once more without any random or additive
  effect (``Profile.quiet``), its errors in units of the noisy captures' mean CI half-widths, per kind of
  benchmark (the interrupt entry and return pulses are 6–7 cycles, about one sample at 192 kHz, wide).

Usage: ``python bench/bench_micro.py [--profiles default paper] [--seeds 8] [--json FILE] [--short]``;
``--short`` renders 12 s of one profile once and only checks that every figure is produced (CI).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import scipy.special
from figures import check_short
from pintime.soundcard.model import get_profile
from pintime.soundcard.synth import synthesize

ROOT = Path(__file__).resolve().parents[1]
PINTIME = ROOT / ".venv" / "bin" / "pintime"
SIM = ROOT / "build" / "sim"
CHANCE = 0.05  # the share of honest 95 % CIs that miss


def validate(wav: Path, out: Path) -> tuple[dict, float]:
    """``pintime validate`` of one capture: its JSON and the seconds it took."""
    t0 = time.perf_counter()
    subprocess.run([str(PINTIME), "validate", str(wav), "--truth", str(SIM / "micro.json"),
                    "--json", str(out)], check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text()), time.perf_counter() - t0


def summarize_capture(result: dict) -> dict:
    """One capture's figures: misses, rounding, largest error, errors in standard errors per benchmark."""
    rows = result["micro"]
    z, honest = {}, []
    for r in rows:
        t = float(scipy.special.stdtrit(r["count"] - 1, 0.975))
        z[r["name"]] = r["error_us"] / (r["ci95_half_us"] / t) if r["ci95_half_us"] else 0.0
        honest.append((r["count"] - 1) / (r["count"] - 3))  # a Student t's variance, n − 1 degrees
    return {"outside_ci": result["micro_coverage"]["outside"], "benchmarks": len(rows),
            "rounds_to_truth": all(round(r["mean_cycles"]) == round(r["truth_cycles"]) for r in rows),
            "max_error_cycles": max(abs(r["mean_cycles"] - r["truth_cycles"]) for r in rows),
            "error_se": z, "error_se_var_honest": float(np.mean(honest)),
            "half_us": {r["name"]: r["ci95_half_us"] for r in rows},
            "errors_us": {r["name"]: r["error_us"] for r in rows},
            "kinds": {r["name"]: r["kind"] for r in rows}}


def coverage(captures: list[dict]) -> dict:
    """Misses per seed against chance, and the spread of the errors in standard errors."""
    misses = np.array([c["outside_ci"] for c in captures], dtype=float)
    n = captures[0]["benchmarks"]
    z = np.array([v for c in captures for v in c["error_se"].values()])
    se = float(np.std(misses, ddof=1) / np.sqrt(misses.size)) if misses.size > 1 else float("nan")
    return {"seeds": len(captures), "misses_mean": float(misses.mean()), "misses_mean_se": se,
            "chance_mean": CHANCE * n, "coverage": 1 - float(misses.mean()) / n,
            "error_se_rms": float(np.sqrt(np.mean(z ** 2))),
            "error_se_rms_honest": float(np.sqrt(np.mean([c["error_se_var_honest"] for c in captures])))}


def locator_bias(quiet: dict, noisy: list[dict]) -> dict:
    """The quiet render's errors over the noisy captures' mean CI half-width, largest per kind."""
    by_kind: dict[str, float] = defaultdict(float)
    for name, error in quiet["errors_us"].items():
        half = float(np.mean([c["half_us"][name] for c in noisy]))
        by_kind[quiet["kinds"][name]] = max(by_kind[quiet["kinds"][name]], abs(error) / half)
    return dict(by_kind)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profiles", nargs="+", default=["default", "paper"])
    p.add_argument("--seeds", type=int, default=8, help="renders per profile (seeds 1 … N)")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--short", action="store_true", help="a small run that checks the figures only")
    args = p.parse_args()
    duration_s = None
    if args.short:
        args.profiles, args.seeds, duration_s = ["default"], 1, 12.0
    edges = SIM / "micro.edges.csv"
    report: dict = {"seeds": args.seeds, "captures": [], "coverage": {}, "locator_bias": {}}
    with tempfile.TemporaryDirectory(prefix="bench_micro_") as tmp:
        for profile in args.profiles:
            noisy = []
            for seed in range(1, args.seeds + 1):
                wav = Path(tmp) / f"micro-{profile}-{seed}.wav"
                t0 = time.perf_counter()
                synthesize(edges, wav, profile, seed=seed, duration_s=duration_s)
                synth_s = time.perf_counter() - t0
                result, validate_s = validate(wav, Path(tmp) / f"{profile}-{seed}.v.json")
                entry = summarize_capture(result)
                noisy.append(entry)
                report["captures"].append({"profile": profile, "seed": seed, "synth_s": synth_s,
                                           "validate_s": validate_s} | entry)
                print(f"{profile} seed {seed}: {entry['outside_ci']} of {entry['benchmarks']} outside their "
                      f"95 % CI, all round to the truth: {entry['rounds_to_truth']}, largest error "
                      f"{entry['max_error_cycles']:.2e} cycles", flush=True)
                wav.unlink()
            c = coverage(noisy)
            report["coverage"][profile] = c
            print(f"coverage {profile}: {c['misses_mean']:.2f} ± {c['misses_mean_se']:.2f} outside per seed "
                  f"over {c['seeds']} seeds (chance {c['chance_mean']:.2f}), coverage "
                  f"{100 * c['coverage']:.1f} %; errors' RMS in standard errors {c['error_se_rms']:.2f} "
                  f"(honest: {c['error_se_rms_honest']:.2f}, Student t)", flush=True)
            wav = Path(tmp) / f"micro-{profile}-quiet.wav"
            synthesize(edges, wav, get_profile(profile).quiet(), seed=1, duration_s=duration_s)
            quiet, _ = validate(wav, Path(tmp) / f"{profile}-quiet.v.json")
            bias = locator_bias(summarize_capture(quiet), noisy)
            report["locator_bias"][profile] = bias
            print(f"locator's own error on {profile} (quiet render), largest per kind in CI half-widths: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in bias.items()), flush=True)
            wav.unlink()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if args.short:
        figures = ["synth_s", "validate_s", "outside_ci", "rounds_to_truth", "max_error_cycles",
                   "coverage", "error_se_rms", "bias.entry", "bias.call"]
        rows = [e | report["coverage"][e["profile"]] | {"bias": report["locator_bias"][e["profile"]]}
                for e in report["captures"]]
        return check_short("bench_micro", rows, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
