"""Benchmark of lost and inserted audio found from the data (``pintime.lost_audio``): seeded random gaps in
a Table 1 capture, with and without the recording's sidecar listing them, with and without the 1 s
reference channel; how many are found, how well placed, and whether any Table 1 result moved.

A table1 capture (the first ``--duration-s`` of ``make sim``'s run, rendered by the sound-card model at
48 kHz, 24 bits, stereo, profile ``default``) is cut at seeded random places: audio lost (1 to 10⁵ samples,
log-uniform) or inserted (1 to 10³ samples, a copy of the audio just before, as a recorder that hands a
buffer over twice). Each cut capture is analysed as a stereo and as a mono recording (the measurement
channel alone, ``--reference none``), without sidecar and, for lost audio, with a sidecar listing the gap
as ``pintime record`` writes it. Figures per case:

- ``found``: a discontinuity found in the data spans the cut (within the locator's guard) — found, not
  merely listed; ``refused``: the analysis stopped with a one-line error (e.g. the only calibration train
  of a mono capture cut);
- ``position``: distance in samples from the cut to the interval it was placed in (0: inside), and that
  interval's width (how precisely the data places it);
- ``shifted``: Table 1 rows (and the overdetermined T_e, T_i, ε) whose 95 % CI does not hold the uncut
  capture's mean (the result moved by more than the uncertainty it claims), and the largest move in units of
  the CI's half-width (``worst``);
- ``false``: discontinuities found away from the cut (``twins``: of those, the ambiguous twin of a class of
  only two repetitions, which the short capture has).

Target (docs/design.md §12): every cut found, no result shifted beyond its CI.

Usage: ``python bench/bench_gaps.py [--duration-s 12] [--trials 6] [--json FILE] [--short]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf
from bench_rates import excerpt
from figures import check_short
from pintime.errors import PintimeError
from pintime.files import sidecar_path
from pintime.locate.stream.capture_edges import gap_guard_s
from pintime.pipeline import analyze, summary_json
from pintime.soundcard import model as sc
from pintime.soundcard.formats import with_format
from pintime.soundcard.synth import PREROLL_S, synthesize

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "build" / "bench" / "gaps"
SEED = 1
RATE_HZ = 48000
MAX_LOST_SAMPLES = 100_000
MAX_INSERTED_SAMPLES = 1000
INSERTED_EVERY = 3  # every third cut inserts audio rather than losing it
MARGIN_S = 0.3  # cuts start at least this far from either end of the capture
SHORT_DURATION_S, SHORT_TRIALS = 8.0, 1
VARIANTS = (("stereo", False), ("stereo", True), ("mono", False), ("mono", True))  # (channels, sidecar)


def base_capture(duration_s: float) -> Path:
    """The uncut table1 capture (48 kHz, 24-bit, stereo), rendered once per duration."""
    edges, _ = excerpt(duration_s, None)
    wav = WORK / f"table1-{duration_s:g}s-48k.wav"
    if not wav.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        profile = with_format(sc.get_profile("default"), RATE_HZ, 24, 2)
        synthesize(edges, wav, profile, SEED, duration_s=duration_s + PREROLL_S, force=True)
    return wav


def draw_cuts(rng: np.random.Generator, frames: int, trials: int) -> list[tuple[int, int]]:
    """(file frame, samples): lost (> 0) or inserted (< 0) audio at a seeded random place."""
    cuts = []
    for n in range(trials):
        inserted = n % INSERTED_EVERY == INSERTED_EVERY - 1
        largest = MAX_INSERTED_SAMPLES if inserted else MAX_LOST_SAMPLES
        size = int(round(10 ** rng.uniform(0, np.log10(largest))))
        margin = int(MARGIN_S * RATE_HZ)
        at = int(rng.integers(margin, frames - margin - size))
        cuts.append((at, -size if inserted else size))
    return cuts


def write_cut(samples: np.ndarray, at: int, size: int, channels: str, sidecar: bool, path: Path,
              subtype: str) -> None:
    """The capture with ``size`` samples lost at ``at`` (or ``-size`` inserted), and its sidecar."""
    if size > 0:
        cut = np.concatenate([samples[:at], samples[at + size:]])
    else:
        cut = np.concatenate([samples[:at], samples[at + size:at], samples[at:]])  # the last -size again
    sf.write(path, cut if channels == "stereo" else cut[:, :1], RATE_HZ, subtype=subtype)
    side = sidecar_path(path)
    if sidecar:
        side.write_text(json.dumps({"what": "bench_gaps", "gaps": [
            {"frame": at, "frames_lost": size, "cause": "input overflow"}]}))
    elif side.exists():
        side.unlink()


def table1_means(summary: dict[str, Any]) -> dict[str, tuple[float, float, float]]:
    """Each Table 1 row's (and the overdetermined unknowns') mean and 95 % CI (rows of one repetition, which
    have none, left out)."""
    rows = {r["label"]: (r["mean_us"], *r["ci95_us"]) for r in summary["table1"]}
    for name, e in (summary.get("overdetermined") or {}).items():
        if isinstance(e, dict):
            rows[f"Overdet. {name}"] = (e["mean_us"], *e["ci95_us"])
    return {label: row for label, row in rows.items() if None not in row}


def judge(summary: dict[str, Any], uncut: dict[str, tuple[float, float, float]], at: int, size: int,
          guard_s: float) -> dict[str, Any]:
    """Found, placed, shifted and false figures of one analysed cut capture."""
    lo_s, hi_s = at / RATE_HZ, (at + max(-size, 0)) / RATE_HZ  # where the file's discontinuity is
    found = (summary["recording_gaps"] or {}).get("found_in_data", [])
    hits = [g for g in found if g["start_s"] - guard_s <= hi_s and g["end_s"] + guard_s >= lo_s]
    others = [g for g in found if g not in hits]
    row: dict[str, Any] = {"found": bool(hits), "false": len(others),
                           "twins": sum(1 for g in others if g["ambiguous"])}
    if hits:
        g = min(hits, key=lambda g: g["end_s"] - g["start_s"])
        row["position_error_samples"] = max(g["start_s"] - hi_s, lo_s - g["end_s"], 0.0) * RATE_HZ
        row["interval_samples"] = (g["end_s"] - g["start_s"]) * RATE_HZ
        row["found_by"] = "+".join(g["found_by"])
    means = table1_means(summary)
    row["shifted"] = [label for label, (mean, _, _) in uncut.items()
                      if label in means and not means[label][1] <= mean <= means[label][2]]
    row["worst"] = max((abs(means[label][0] - mean) / (0.5 * (means[label][2] - means[label][1]))
                        for label, (mean, _, _) in uncut.items() if label in means), default=0.0)
    row["rows_lost"] = [label for label in uncut if label not in means]
    return row


def run(duration_s: float, trials: int) -> list[dict[str, Any]]:
    wav = base_capture(duration_s)
    samples, _ = sf.read(wav, dtype="int32")
    subtype = sf.info(wav).subtype
    guard_s = gap_guard_s(RATE_HZ)
    mono = WORK / "uncut-mono.wav"
    sf.write(mono, samples[:, :1], RATE_HZ, subtype=subtype)
    uncut = {"stereo": table1_means(summary_json(analyze(wav))),
             "mono": table1_means(summary_json(analyze(mono, channels=(0, None))))}
    rows = []
    cuts = draw_cuts(np.random.default_rng(SEED), len(samples), trials)
    for (at, size) in cuts:
        for channels, sidecar in VARIANTS:
            if sidecar and size < 0:
                continue  # a recorder lists audio it lost, never audio it inserted
            path = WORK / f"cut-{channels}.wav"
            write_cut(samples, at, size, channels, sidecar, path, subtype)
            row: dict[str, Any] = {"at_s": at / RATE_HZ, "samples": size, "channels": channels,
                                   "sidecar": sidecar}
            try:
                a = analyze(path, channels=(0, None) if channels == "mono" else (0, 1))
            except PintimeError as err:
                rows.append(row | {"refused": str(err).replace(str(path), path.name), "found": False})
                print(f"{channels:<6} {('no', 'yes')[sidecar]:>7} {size:>+7d} {at / RATE_HZ:>8.3f} refused: "
                      f"{rows[-1]['refused']}", flush=True)
                continue
            rows.append(row | judge(summary_json(a), uncut[channels], at, size, guard_s))
            print_row(rows[-1])
    return rows


def print_row(r: dict[str, Any]) -> None:
    place = ("—" if not r["found"] else
             f"{r['position_error_samples']:.0f} in {r['interval_samples']:.0f} ({r['found_by']})")
    print(f"{r['channels']:<6} {('no', 'yes')[r['sidecar']]:>7} {r['samples']:>+7d} {r['at_s']:>8.3f} "
          f"{('NO', 'yes')[r['found']]:>5} {place:>28} {len(r['shifted']):>7} {r['false']:>5}", flush=True)


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (channels, sidecar, lost/inserted): counts and the worst figures."""
    out = []
    for channels, sidecar in VARIANTS:
        for kind in ("lost", "inserted"):
            sel = [r for r in rows if r["channels"] == channels and r["sidecar"] == sidecar
                   and (r["samples"] > 0) == (kind == "lost")]
            if not sel:
                continue
            placed = [r for r in sel if r["found"]]
            out.append({
                "channels": channels, "sidecar": sidecar, "kind": kind, "cuts": len(sel),
                "worst_shift_ci": max((r["worst"] for r in placed if "worst" in r), default=0.0),
                "found": len(placed), "refused": sum(1 for r in sel if "refused" in r),
                "position_error_max_samples": max((r["position_error_samples"] for r in placed), default=0.0),
                "interval_median_samples": float(np.median([r["interval_samples"] for r in placed]))
                if placed else 0.0,
                "shifted": sum(1 for r in sel if r.get("shifted")),
                "false": sum(r.get("false", 0) for r in sel), "twins": sum(r.get("twins", 0) for r in sel)})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=12.0, help="length of the capture (default 12)")
    parser.add_argument("--trials", type=int, default=6, help="cuts (default 6), each in every variant")
    parser.add_argument("--json", type=Path, default=ROOT / "build" / "bench" / "gaps.json")
    parser.add_argument("--short", action="store_true", help=f"{SHORT_TRIALS} cuts of an "
                        f"{SHORT_DURATION_S:g} s capture (checks figures)")
    args = parser.parse_args()
    duration_s, trials = (SHORT_DURATION_S, SHORT_TRIALS) if args.short else (args.duration_s, args.trials)
    print(f"{'chan':<6} {'sidecar':>7} {'samples':>7} {'at s':>8} {'found':>5} "
          f"{'position error in interval':>28} {'shifted':>7} {'false':>5}", flush=True)
    rows = run(duration_s, trials)
    summary = summarise(rows)
    print(f"\n{duration_s:g} s table1 capture, 48 kHz 24-bit, profile default, seed {SEED}; lost 1–"
          f"{MAX_LOST_SAMPLES} samples, inserted 1–{MAX_INSERTED_SAMPLES}; positions and intervals in "
          "samples; worst: the largest move of a result from the uncut one, in half-widths of its 95 % CI")
    print(f"{'chan':<6} {'sidecar':>7} {'kind':<8} {'found':>9} {'refused':>7} {'pos. err max':>12} "
          f"{'interval median':>15} {'shifted':>7} {'worst':>6} {'false':>5} {'twins':>5}")
    for s in summary:
        print(f"{s['channels']:<6} {('no', 'yes')[s['sidecar']]:>7} {s['kind']:<8} "
              f"{s['found']:>4}/{s['cuts']:<4} {s['refused']:>7} {s['position_error_max_samples']:>12.0f} "
              f"{s['interval_median_samples']:>15.0f} {s['shifted']:>7} {s['worst_shift_ci']:>6.2f} "
              f"{s['false']:>5} {s['twins']:>5}")
    every = all(s["found"] == s["cuts"] for s in summary)
    moved = sum(s["shifted"] for s in summary)
    print(f"every cut found: {('no', 'yes')[every]}; analyses with a Table 1 result beyond its CI: {moved}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"cuts": rows, "summary": summary}, indent=2) + "\n")
    if args.short:
        return check_short("bench_gaps", summary, ["cuts", "found", "refused", "position_error_max_samples",
                                                   "interval_median_samples", "shifted", "false"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
