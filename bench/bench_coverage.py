"""Benchmark of the 95 % CIs at README's wiring level: do they hold the simavr truth?

The first ``--duration-s`` of the table1 run (``make sim``) is rendered by profile ``laptop-48k`` at README's
47 kΩ / 1 kΩ divider (0.067 FS), 48 kHz, 24-bit mono, the card's clock wander on, seeds 1 … ``--seeds``, and
analysed as a user would, with no reference channel (``pintime analyze --reference none``). The truth is
the same analysis of the exact edges (every repetition of the firmware is cycle-exact). Per Table 1 row
and overdetermined unknown, over the seeds:

- ``z_reps``: the error in standard errors of the repetitions alone (what a CI from their spread holds);
- ``z``: in the standard error the CI is built from, the learned template's shared error
  (``template_sigma_us``, docs/design.md §11) beside the repetitions';
- ``inside``: CIs that hold the truth; ``template_sigma_ns``: that error's mean σ.

Target: about 95 % of the CIs hold their truth, and ``z`` has an RMS near 1, on every row.

Usage: ``python bench/bench_coverage.py [--duration-s 40] [--seeds 8] [--json FILE] [--short]``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from bench_rates import excerpt
from figures import check_short
from pintime.capture.wav import DEFAULT_CHANNELS
from pintime.pipeline import analyze, summary_json
from pintime.soundcard import model as sc
from pintime.soundcard.formats import README_LEVEL, with_format, with_level
from pintime.soundcard.synth import synthesize

PROFILE, RATE_HZ, BITS = "laptop-48k", 48000, 24
KEYS = ["z_rms", "z_reps_rms", "inside", "total", "template_sigma_ns"]


def estimates(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Table 1 rows and overdetermined unknowns of an ``analyze`` JSON, by label."""
    out = {r["label"]: r for r in summary["table1"]}
    for name, e in (summary.get("overdetermined") or {}).items():
        if isinstance(e, dict) and "mean_us" in e:
            out[f"Overdet. {name}"] = e
    return out


def run(duration_s: float, seeds: int) -> list[dict[str, Any]]:
    """Per row: each seed's error, its z with and without the template term, and whether the CI holds."""
    edges, _ = excerpt(duration_s, None)
    truth = estimates(summary_json(analyze(edges)))
    profile = with_level(with_format(sc.get_profile(PROFILE), RATE_HZ, BITS, 1), README_LEVEL)
    per_row: dict[str, list[tuple[float, float, float, bool, float]]] = {}
    for seed in range(1, seeds + 1):
        wav = edges.parent / f"{edges.name.removesuffix('.edges.csv')}-coverage-{seed}.wav"
        synthesize(edges, wav, profile, seed, force=True)
        found = estimates(summary_json(analyze(wav, "template", channels=(DEFAULT_CHANNELS[0], None))))
        for label, e in found.items():
            if label not in truth or e["count"] < 2:
                continue
            error = e["mean_us"] - truth[label]["mean_us"]
            se_reps = e["std_us"] / np.sqrt(e["count"])
            se = float(np.hypot(se_reps, e["template_sigma_us"]))
            inside = e["ci95_us"][0] <= truth[label]["mean_us"] <= e["ci95_us"][1]
            per_row.setdefault(label, []).append((error, error / se, error / se_reps, inside,
                                                  e["template_sigma_us"]))
    rows = []
    for label, values in per_row.items():
        error, z, z_reps, inside, sigma = (np.array(v) for v in zip(*values, strict=True))
        rows.append({"label": label, "errors_ns": (error * 1e3).tolist(),
                     "z_rms": float(np.sqrt(np.mean(z ** 2))),
                     "z_reps_rms": float(np.sqrt(np.mean(z_reps ** 2))),
                     "inside": int(np.count_nonzero(inside)), "total": len(values),
                     "template_sigma_ns": float(np.mean(sigma) * 1e3)})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=40.0)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--short", action="store_true", help="6 s, 1 seed: every figure produced")
    args = parser.parse_args()
    duration_s, seeds = (6.0, 1) if args.short else (args.duration_s, args.seeds)
    print(f"CI coverage: {PROFILE} at README's level, {RATE_HZ} Hz, {BITS}-bit mono, wander on, no reference "
          f"channel, the first {duration_s:g} s of table1, seeds 1…{seeds}")
    rows = run(duration_s, seeds)
    print(f"{'estimate':<22} {'inside':>7} {'z RMS':>6} {'z RMS reps alone':>17} {'template σ (ns)':>16}")
    for r in rows:
        print(f"{r['label']:<22} {r['inside']:>3}/{r['total']:<3} {r['z_rms']:>6.2f} "
              f"{r['z_reps_rms']:>17.2f} {r['template_sigma_ns']:>16.3f}")
    inside, total = sum(r["inside"] for r in rows), sum(r["total"] for r in rows)
    print(f"all: {inside}/{total} CIs hold their truth ({inside / total:.1%}; honest: 95 %)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=1))
    return check_short("bench_coverage", rows, KEYS) if args.short else 0


if __name__ == "__main__":
    raise SystemExit(main())
