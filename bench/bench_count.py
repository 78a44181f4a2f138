"""Benchmark of the count method (edges on whole samples, Beilner's slow-clock model) and of ``pintime plan``.

(a) **Coverage.** The table1 run (``make sim``) is rendered by the ``default`` card model at 192 kHz for
each seed and analysed with ``--method count``; every Table 1 row and §5 unknown is compared with the same
estimator on simavr's exact edges (every repetition of the exact run is the same, so their mean is the
truth). Per row: how often the truth lies in the model's 95 % CI (Beilner's independent widths) and in the
repetitions' Student-t CI; the std ratio (repetitions / model). Target: line fit 1×–20× inside its CI, the
CIs' coverage 95 ± 3 %.

(b) **Plan agreement.** Each seed's capture is planned from (``pintime plan``'s σ per technique: the
template method's measured spread, the count method's slow-clock model) with a target that needs
``--plan-reps`` repetitions; the plan is followed on the next seed's
capture: its first R repetitions of the technique give a Student-t CI (the per-repetition estimate by
least squares on the technique's design, as the estimators compute it), whose half-width is compared with
the planned one. Target: within ±25 %. Beside it, what a plan from the ``default`` profile alone (Beilner's
independent widths for the count method, Cramér–Rao bound × 1.54 for the template) predicts, not judged.

Usage: ``python bench/bench_count.py [--seeds 30] [--plan-reps 50] [--json FILE] [--short]``
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from figures import check_short
from pintime.cli.plan import from_profile, techniques_of
from pintime.estimate.plan import half_width_us, repetitions, technique_std_us
from pintime.pipeline import Analysis, analyze, summary_json
from pintime.soundcard.model import get_profile
from pintime.soundcard.synth import synthesize

ROOT = Path(__file__).resolve().parents[1]
SIM = ROOT / "build" / "sim"
OUT = ROOT / "build" / "bench" / "count"
SHORT_DURATION_S = 30.0


def render(seed: int, duration_s: float | None) -> Path:
    wav = OUT / f"table1-default-{seed}-{duration_s or 'all'}.wav"
    synthesize(SIM / "table1.edges.csv", wav, get_profile("default"), seed, None, duration_s, force=True)
    return wav


def _profile_args() -> argparse.Namespace:
    return argparse.Namespace(profile="default", rate=None, f_cpu_hz="1000000", routine_cycles="100")


def coverage_rows(found: dict, truth: dict) -> list[dict]:
    """Per Table 1 row and §5 unknown of one capture: error, inside the model's and the repetitions' CI."""
    slow = found["slow_clock"]
    exact = {(r["technique"], r["n"]): r["mean_us"] for r in truth["table1"]}
    rows = [(r["label"], r, exact[(r["technique"], r["n"])]) for r in slow["table1"]]
    rows += [(f"§5 system {k}", m, truth["overdetermined"][k]["mean_us"])
             for k, m in (slow["overdetermined"] or {}).items()]
    out = []
    for label, m, t in rows:
        lo, hi = m["model_ci95_us"]
        rlo, rhi = m["ci95_us"]
        out.append({"label": label, "error_us": m["mean_us"] - t, "model_inside": bool(lo <= t <= hi),
                    "reps_inside": bool(rlo <= t <= rhi), "std_ratio": m["std_ratio"],
                    "model_half_us": (hi - lo) / 2})
    return out


def pulse_edges(a: Analysis) -> dict[str, np.ndarray]:
    """Each technique's repetitions (edges from each one's first, µs) by the plan's label."""
    out = {row.label: a.result.pulse_edges_us((row.technique, row.n)) for row in a.result.rows}
    if a.result.overdetermined_m is not None:
        out["§5 system T_e"] = a.result.pulse_edges_us(("overdet", a.result.overdetermined_m))
    return out


def followed(x: np.ndarray, edges_us: np.ndarray, r: int) -> float:
    """The Student-t 95 % CI half-width of the first ``r`` repetitions of a technique of design ``x``."""
    e = edges_us[:r]
    per_rep = (np.linalg.pinv(x) @ (e[:, 1::2] - e[:, 0::2]).T)[0]
    return half_width_us(float(np.std(per_rep, ddof=1)), r)


def plan_rows(planned: tuple, profile: tuple, following: dict[str, dict[str, np.ndarray]],
              plan_reps: int) -> list[dict]:
    """Plan from one capture; follow it on the next (``following``: per method, its techniques' edges)."""
    techniques, card, _ = planned
    prof = {t.label: t for t in profile[0]}
    out = []
    for t in techniques:
        if t.design is None:
            continue
        for method in ("template", "count"):
            std = technique_std_us(t, method, card)
            r = repetitions(std, half_width_us(std, plan_reps))  # the repetitions' spread alone …
            assert r is not None  # … has no floor
            edges = following[method].get(t.label)
            if edges is None or len(edges) < r:
                continue
            planned_half = half_width_us(std, r)
            achieved = followed(t.design, edges, r)
            row = {"label": t.label, "method": method, "repetitions": r, "planned_half_us": planned_half,
                   "achieved_half_us": achieved, "ratio": achieved / planned_half}
            if t.label in prof:
                row["profile_ratio"] = achieved / half_width_us(technique_std_us(prof[t.label], method,
                                                                                 profile[1]), r)
            out.append(row)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--plan-reps", type=int, default=50)
    parser.add_argument("--json", type=Path, default=ROOT / "build" / "bench" / "count.json")
    parser.add_argument("--short", action="store_true", help="2 seeds of 30 s, 8 repetitions planned")
    args = parser.parse_args()
    seeds = 2 if args.short else args.seeds
    duration = SHORT_DURATION_S if args.short else None
    plan_reps = 8 if args.short else args.plan_reps
    OUT.mkdir(parents=True, exist_ok=True)
    truth = summary_json(analyze(SIM / "table1.edges.csv"))
    profile = from_profile(_profile_args())
    cover: list[dict] = []
    agreement: list[dict] = []
    previous = None
    start = time.perf_counter()
    for seed in range(1, seeds + 1):
        wav = render(seed, duration)
        template, count = analyze(wav, "template"), analyze(wav, "count")
        cover += [{"seed": seed, **r} for r in coverage_rows(summary_json(count), truth)]
        if previous is not None:
            following = {"template": pulse_edges(template), "count": pulse_edges(count)}
            agreement += [{"seed": seed, **r} for r in plan_rows(previous, profile, following, plan_reps)]
        previous = techniques_of(template, count)
        print(f"seed {seed}: {time.perf_counter() - start:.0f} s", flush=True)
    result = summarize(cover, agreement)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    report(result)
    if args.short:
        plans = {f"{m}_{k}": v for m, s in result["plan"].items() for k, v in s.items()}
        summary = {**result["coverage"], **plans}
        return check_short("bench_count", [summary], ["model", "reps", "line20_model_inside",
                                                      "template_median_ratio", "template_within_25pct",
                                                      "count_median_ratio", "count_within_25pct",
                                                      "count_profile_median_ratio"])
    return 0


def summarize(cover: list[dict], agreement: list[dict]) -> dict:
    by_label: dict[str, list[dict]] = defaultdict(list)
    for r in cover:
        by_label[r["label"]].append(r)
    per_row = [{"label": k, "captures": len(v),
                "model_coverage": float(np.mean([r["model_inside"] for r in v])),
                "reps_coverage": float(np.mean([r["reps_inside"] for r in v])),
                "std_ratio_mean": float(np.mean([r["std_ratio"] for r in v])),
                "error_rms_us": float(np.sqrt(np.mean([r["error_us"] ** 2 for r in v]))),
                "model_half_us": float(np.mean([r["model_half_us"] for r in v]))}
               for k, v in by_label.items()]
    line20 = by_label["Line fitting 1×–20×"]
    plans: dict[str, list[dict]] = defaultdict(list)
    for r in agreement:
        plans[r["method"]].append(r)
    plan_summary = {m: {"cases": len(v), "median_ratio": float(np.median([r["ratio"] for r in v])),
                        "within_25pct": float(np.mean([abs(r["ratio"] - 1) <= 0.25 for r in v])),
                        "profile_median_ratio": float(np.median([r["profile_ratio"] for r in v
                                                                 if "profile_ratio" in r]))}
                    for m, v in plans.items()}
    return {"coverage": {"model": float(np.mean([r["model_inside"] for r in cover])),
                         "reps": float(np.mean([r["reps_inside"] for r in cover])), "cis": len(cover),
                         "line20_model_inside": float(np.mean([r["model_inside"] for r in line20])),
                         "line20_reps_inside": float(np.mean([r["reps_inside"] for r in line20]))},
            "rows": per_row, "plan": plan_summary, "plan_rows": agreement, "captures": cover}


def report(result: dict) -> None:
    c = result["coverage"]
    print(f"\n(a) --method count, {c['cis']} CIs: coverage of the model's 95 % CI {c['model']:.1%}, of the "
          f"repetitions' {c['reps']:.1%} (target 95 ± 3 %); line fit 1×–20× inside its model CI in "
          f"{c['line20_model_inside']:.0%} of captures, its repetitions' CI in "
          f"{c['line20_reps_inside']:.0%}")
    print(f"{'row':<24} {'n':>3} {'model cov.':>10} {'reps cov.':>10} {'σ reps/model':>13} "
          f"{'RMS error µs':>13} {'model ±µs':>10}")
    for r in result["rows"]:
        print(f"{r['label']:<24} {r['captures']:>3} {r['model_coverage']:>10.0%} {r['reps_coverage']:>10.0%} "
              f"{r['std_ratio_mean']:>13.2f} {r['error_rms_us']:>13.2e} {r['model_half_us']:>10.2e}")
    print("\n(b) plan followed on the next seed's capture: achieved / planned CI half-width")
    for m, s in result["plan"].items():
        print(f"  {m:<9} {s['cases']} cases: median {s['median_ratio']:.3f}, within ±25 %: "
              f"{s['within_25pct']:.0%}; a plan from the profile alone: median "
              f"{s['profile_median_ratio']:.3f}")


if __name__ == "__main__":
    raise SystemExit(main())
