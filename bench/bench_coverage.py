"""Benchmark of the 95 % CIs: do they hold the simavr truth?

The first ``--duration-s`` of the table1 run (``make sim``) is rendered at README's 47 kΩ / 1 kΩ divider
(or the profile's own level), 48 kHz mono, the card's clock wander on, and analysed as a user would, with
no reference channel (``pintime analyze --reference none``). The truth is the same analysis of the exact
edges (every repetition of the firmware is cycle-exact). Two kinds of case:

- ``laptop-48k`` at 24 bits (README's 0.067 FS) and ``minphase-48k`` at 16 bits (its own 0.46 FS, where the
  template's error is most of the Differential's), seeds 1 … ``--variants``: the learned template's shared
  error (``template_sigma_us``, docs/design.md §11) beside the repetitions';
- ``default``, ``usb-96k`` and ``wide-filter`` at 16 bits, with less analog noise than one LSB (no
  dither): the levels' rounding, the same in every repetition (``quantization_sigma_us``). What moves it is
  where the pin's levels lie between the codes, which the noise seeds do not change: seed 1, and the
  divider's ratio 1 + 0.0007·k for k = 1 … ``--variants`` (a resistor's tolerance moves it far more).

Per Table 1 row and overdetermined unknown, over the variants:

- ``z_reps``: the error in standard errors of the repetitions alone (what a CI from their spread holds);
- ``z``: in the standard error the CI is built from (the repetitions', and the shared errors');
- ``inside``: CIs that hold the truth; ``shared_sigma_ns``: the shared errors' mean σ.

Target: about 95 % of the CIs hold their truth, and ``z`` has an RMS near 1 (or below: the rounding's
draws take the levels alike in every window, the largest sharing), on every row. Rows of a pulse's whole
width (Direct, Executing N×, the overdetermined ε) hold the modelled pin's fall−rise offset (−2.5 ns),
which a real pin has and simavr's truth lacks: shown, but not counted (at the profile's level it is
several standard errors).

Usage: ``python bench/bench_coverage.py [--duration-s 40] [--variants 8] [--profiles P …] [--json FILE]
[--short]``
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from bench_rates import excerpt
from figures import check_short
from pintime.capture.wav import DEFAULT_CHANNELS
from pintime.pipeline import analyze, summary_json
from pintime.programs.truth import shared_sigma_us
from pintime.soundcard import model as sc
from pintime.soundcard.formats import README_LEVEL, with_format, with_level
from pintime.soundcard.synth import synthesize

RATE_HZ = 48000
# (profile, bits, README's level or the profile's own, what varies: "seeds" of the noise, or "levels" of
# the divider)
CASES = [("laptop-48k", 24, True, "seeds"), ("minphase-48k", 16, False, "seeds"),
         ("default", 16, True, "levels"), ("usb-96k", 16, True, "levels"),
         ("wide-filter", 16, True, "levels")]
LEVEL_STEP = 7e-4  # the divider's ratio 1 + LEVEL_STEP·k: ≈ 0.8 LSB of a 16-bit step at README's level
KEYS = ["z_rms", "z_reps_rms", "inside", "total", "shared_sigma_ns"]
PIN_OFFSET_ROWS = ("Direct", "Executing", "Overdet. epsilon")  # widths holding the pin's fall−rise offset


def estimates(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Table 1 rows and overdetermined unknowns of an ``analyze`` JSON, by label."""
    out = {r["label"]: r for r in summary["table1"]}
    for name, e in (summary.get("overdetermined") or {}).items():
        if isinstance(e, dict) and "mean_us" in e:
            out[f"Overdet. {name}"] = e
    return out


def run(name: str, bits: int, readme: bool, varies: str, duration_s: float,
        variants: int) -> list[dict[str, Any]]:
    """Per row of one case: each variant's error, its z with and without the shared errors, and whether
    the CI holds."""
    edges, _ = excerpt(duration_s, None)
    truth = estimates(summary_json(analyze(edges)))
    profile = with_format(sc.get_profile(name), RATE_HZ, bits, 1)
    profile = with_level(profile, README_LEVEL) if readme else profile
    per_row: dict[str, list[tuple[float, float, float, bool, float]]] = {}
    for k in range(1, variants + 1):
        seed, card = (k, profile) if varies == "seeds" else (
            1, replace(profile, attenuator_ratio=profile.attenuator_ratio * (1 + LEVEL_STEP * k)))
        wav = edges.parent / f"{edges.name.removesuffix('.edges.csv')}-coverage-{name}-{k}.wav"
        synthesize(edges, wav, card, seed, force=True)
        found = estimates(summary_json(analyze(wav, "template", channels=(DEFAULT_CHANNELS[0], None))))
        for label, e in found.items():
            if label not in truth or e["count"] < 2:
                continue
            error = e["mean_us"] - truth[label]["mean_us"]
            se_reps = e["std_us"] / np.sqrt(e["count"])
            shared = shared_sigma_us(e)  # the template's and any rounding's
            inside = e["ci95_us"][0] <= truth[label]["mean_us"] <= e["ci95_us"][1]
            per_row.setdefault(label, []).append((error, error / np.hypot(se_reps, shared), error / se_reps,
                                                  inside, shared))
        wav.unlink()
    rows = []
    for label, values in per_row.items():
        error, z, z_reps, inside, sigma = (np.array(v) for v in zip(*values, strict=True))
        rows.append({"case": f"{name} {bits}-bit {'README' if readme else 'profile'} level", "label": label,
                     "errors_ns": (error * 1e3).tolist(),
                     "z_rms": float(np.sqrt(np.mean(z ** 2))),
                     "z_reps_rms": float(np.sqrt(np.mean(z_reps ** 2))),
                     "inside": int(np.count_nonzero(inside)), "total": len(values),
                     "shared_sigma_ns": float(np.mean(sigma) * 1e3)})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=40.0)
    parser.add_argument("--variants", type=int, default=8, help="seeds, or divider ratios, per case")
    parser.add_argument("--profiles", nargs="+", help="only the cases of these profiles")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--short", action="store_true", help="6 s, 1 variant: every figure produced")
    args = parser.parse_args()
    duration_s, variants = (6.0, 1) if args.short else (args.duration_s, args.variants)
    rows = []
    for name, bits, readme, varies in CASES:
        if args.profiles and name not in args.profiles:
            continue
        print(f"CI coverage: {name} at {'README' if readme else 'its own'} level, {RATE_HZ} Hz, {bits}-bit "
              f"mono, wander on, no reference channel, the first {duration_s:g} s of table1, "
              f"{variants} {varies}")
        case = run(name, bits, readme, varies, duration_s, variants)
        print(f"{'estimate':<22} {'inside':>7} {'z RMS':>6} {'z RMS reps alone':>17} {'shared σ (ns)':>14}")
        for r in case:
            print(f"{r['label']:<22} {r['inside']:>3}/{r['total']:<3} {r['z_rms']:>6.2f} "
                  f"{r['z_reps_rms']:>17.2f} {r['shared_sigma_ns']:>14.3f}")
        counted = [r for r in case if not r["label"].startswith(PIN_OFFSET_ROWS)]
        inside, total = sum(r["inside"] for r in counted), sum(r["total"] for r in counted)
        print(f"all but the whole widths ({', '.join(PIN_OFFSET_ROWS)}: they hold the pin's fall−rise "
              f"offset, simavr's truth does not): {inside}/{total} CIs hold their truth "
              f"({inside / total:.1%}; honest: 95 %)\n", flush=True)
        rows += case
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=1))
    return check_short("bench_coverage", rows, KEYS) if args.short else 0


if __name__ == "__main__":
    raise SystemExit(main())
