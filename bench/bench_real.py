"""Benchmark of ``pintime edges`` on real recordings of signals without pintime's calibration train: the
development set of six LTC takes (a Zoom F6 recorder, 48 kHz mono, 24-bit PCM and 32-bit float; ISC
licence, see its README), scored against what is known of them, not against anything pintime learned.

Every edge of LTC lies on the source's half-bit grid (1/3840 s at 24 fps). Each take's located edges are
cut into 0.1 s stretches; in each, the times are fitted by ``t = t0 + k·cell + δ·[falling]`` (``k`` whole,
cell, t0 and δ free: the source's grid wanders by µs over half a second), twice, the second time without
the edges beyond 5 robust deviations of the first. Printed per take:

- grid edges: edges within a quarter cell of a grid cell; *missing*: bit-boundary cells (a biphase-mark
  bit has an edge at its start, whatever its value) without an edge; *spurious*: edges off the grid or a
  second edge in one cell;
- MAD-σ: the robust deviation of the residuals about the grid (ns), pintime's beside the peer method's on
  the same file (mid-level crossings with linear interpolation between the two samples around them, a
  Schmitt trigger at ±¼ of the local swing about the local mid-level), and their ratio (target ≤ 0.5);
- beyond 4σ: the share of pintime's edges further than 4 of their own σ from the grid (target ≤ 1 %);
- σ/scatter: pintime's median σ over its MAD-σ (target within 3× either way);
- the command's wall and CPU time and peak memory (targets for a 15 s take: 10 s, 500 MB).

Usage: ``python bench/bench_real.py [DIR] [--json FILE] [--short]`` (DIR default: ``../shared/realdata``
from the repository's root; absent, the benchmark says so and exits 0). ``--short``: the first take only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = ROOT.parent / "shared" / "realdata"
CELL_S = 1 / 3840  # LTC's half-bit at 24 fps (80 bits a frame)
STRETCH_S = 0.1
CLIP_MAD = 5.0
ON_GRID = 0.25  # of a cell
SCHMITT = 0.25  # of the local swing, either side of its mid-level
SWING_S = 1e-3  # the local swing's window (max − min)
SYNC = np.array([0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1], np.int8)  # an LTC frame's last 16 bits
MIN_STRETCH_EDGES = 20
TARGETS = {"mad_ratio": 0.5, "beyond_4sigma": 0.01, "sigma_ratio": 3.0, "wall_s_per_15s": 10.0,
           "peak_mb": 500.0}


def peer_crossings(x: np.ndarray, rate_hz: int) -> tuple[np.ndarray, np.ndarray]:
    """Mid-level crossings with linear interpolation: times (s) and polarities. The mid-level and swing
    are the local max/min's over SWING_S; a crossing counts once the signal has gone SCHMITT of the swing
    beyond the mid-level on its far side (a Schmitt trigger), and its time is the last mid-level crossing
    before that, interpolated between its two samples."""
    from scipy.ndimage import maximum_filter1d, minimum_filter1d

    size = max(3, int(SWING_S * rate_hz))
    hi, lo = maximum_filter1d(x, size), minimum_filter1d(x, size)
    mid, swing = (hi + lo) / 2, hi - lo
    d = x - mid
    state, last, times, pols = 0, -1, [], []
    for n in range(1, len(x)):
        if (d[n - 1] < 0) != (d[n] < 0):
            last = n
        level = 1 if d[n] > SCHMITT * swing[n] else -1 if d[n] < -SCHMITT * swing[n] else 0
        if level and level != state:
            if state and last > 0:
                a, b = d[last - 1], d[last]
                times.append((last - 1 + a / (a - b)) / rate_hz)
                pols.append(level)
            state = level
    return np.array(times), np.array(pols)


def cells(t_s: np.ndarray) -> np.ndarray:
    """Each edge's half-bit cell, counted from the first edge by its spacings to the one before."""
    return np.concatenate([[0], np.cumsum(np.rint(np.diff(t_s) / CELL_S))]).astype(np.int64)


def ltc_frames(t_s: np.ndarray) -> np.ndarray:
    """The start times (s) of the LTC frames the edges hold, decoded: a bit starts at every boundary
    cell (an edge at each, of one parity of cell), is 1 if the cell after it holds an edge too, and a
    frame ends with the sync word."""
    k = cells(t_s)
    have = np.zeros(k[-1] + 2, bool)
    have[k] = True
    parity = int(np.argmax([have[p::2].mean() for p in (0, 1)]))
    bounds = np.arange(parity, k[-1] + 1, 2)
    bits = have[bounds + 1].astype(np.int8)
    match = np.flatnonzero(np.all(np.lib.stride_tricks.sliding_window_view(bits, len(SYNC)) == SYNC,
                                  axis=1))
    starts = bounds[np.minimum(match + len(SYNC), len(bounds) - 1)]  # the next frame's first bit
    first = {int(c): t for c, t in zip(k, t_s, strict=True)}
    return np.array([first[int(c)] for c in starts if int(c) in first])


def grid_score(t_s: np.ndarray, polarity: np.ndarray, bounds_s: np.ndarray) -> dict:
    """Residuals about the half-bit grid in each stretch between ``bounds_s`` (t0, cell and the falling
    edges' offset fitted per stretch, twice, the second time without the edges beyond CLIP_MAD robust
    deviations), and the grid's cells found, missing and spurious."""
    resid = np.full(len(t_s), np.nan)
    found = missing = spurious = 0
    for lo, hi in zip(bounds_s[:-1], bounds_s[1:], strict=True):
        sel = np.flatnonzero((t_s >= lo - CELL_S / 2) & (t_s < hi - CELL_S / 2))
        if len(sel) < MIN_STRETCH_EDGES:
            continue
        t, fall = t_s[sel], (polarity[sel] < 0).astype(float)
        k = np.rint((t - t[0]) / CELL_S)
        design = np.column_stack([np.ones(len(t)), k, fall])
        use = np.ones(len(t), bool)
        for _ in range(2):
            coef = np.linalg.lstsq(design[use], t[use], rcond=None)[0]
            r = t - design @ coef
            mad = 1.4826 * np.median(np.abs(r[use] - np.median(r[use])))
            use = np.abs(r) <= CLIP_MAD * max(mad, 1e-12)
        at = (t - coef[0] - coef[2] * fall) / coef[1]
        off = np.abs(at - np.rint(at)) > ON_GRID
        resid[sel] = r
        taken, count = np.unique(np.rint(at[~off]), return_counts=True)
        found += len(taken)
        spurious += int(off.sum() + np.sum(count - 1))
        parity = int(np.argmax([np.isin(np.arange(taken[0] + p, taken[-1] + 1, 2), taken).mean()
                                for p in (0, 1)]))  # the bit boundaries: every cell of one parity
        missing += int(np.sum(~np.isin(np.arange(taken[0] + parity, taken[-1] + 1, 2), taken)))
    ok = np.isfinite(resid)
    mad = 1.4826 * float(np.median(np.abs(resid[ok] - np.median(resid[ok]))))
    return {"resid": resid, "mad_s": mad, "grid_edges": found, "missing": missing, "spurious": spurious}


def run_pintime(wav: Path, csv: Path) -> tuple[str, float, float, float]:
    """``pintime edges`` on ``wav`` in a child process: its stderr, wall time (s), CPU time (s, user +
    system: what a loaded machine's wall time hides), peak memory (MB, the child's own maximum resident
    set)."""
    start = time.perf_counter()
    command = [str(Path(sys.executable).parent / "pintime"), "edges", str(wav), "--csv", str(csv)]
    with subprocess.Popen(command,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as child:
        err = child.stderr.read() if child.stderr else ""
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    text = err.strip().splitlines()
    if child.returncode:
        raise RuntimeError(f"{wav.name}: pintime edges failed: {text[-1] if text else child.returncode}")
    return "\n".join(text), wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def take(wav: Path, out_dir: Path) -> dict:
    """One take's figures."""
    csv = out_dir / (wav.stem + ".csv")
    if csv.exists():
        csv.unlink()
    summary, wall, cpu, peak_mb = run_pintime(wav, csv)
    rows = np.loadtxt(csv, delimiter=",", skiprows=1, ndmin=2)
    t, pol, sigma = rows[:, 0], rows[:, 2], rows[:, 3]
    x, rate = sf.read(wav, dtype="float64", always_2d=True)
    peer_t, peer_pol = peer_crossings(x[:, 0], rate)
    duration = len(x) / rate
    out = {"take": wav.stem, "seconds": duration, "edges": len(t), "peer_edges": len(peer_t),
           "wall_s": wall, "cpu_s": cpu, "peak_mb": peak_mb,
           "summary": summary.splitlines()[0] if summary else ""}
    frames = ltc_frames(t)
    for name, bounds in (("0.1s", np.arange(t[0], t[-1] + STRETCH_S, STRETCH_S)), ("frame", frames)):
        mine, peer = grid_score(t, pol, bounds), grid_score(peer_t, peer_pol, bounds)
        ok = np.isfinite(mine["resid"])
        out[name] = {"grid_edges": mine["grid_edges"], "missing": mine["missing"],
                     "spurious": mine["spurious"], "mad_ns": mine["mad_s"] * 1e9,
                     "peer_mad_ns": peer["mad_s"] * 1e9, "peer_missing": peer["missing"],
                     "peer_spurious": peer["spurious"], "mad_ratio": mine["mad_s"] / peer["mad_s"],
                     "beyond_4sigma": float(np.mean(np.abs(mine["resid"][ok]) > 4 * sigma[ok])),
                     "sigma_ratio": float(np.median(sigma)) / mine["mad_s"]}
    out["frames"] = len(frames)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir", nargs="?", default=str(DEFAULT_DIR), help="the takes' directory")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--short", action="store_true", help="the first take only")
    args = parser.parse_args()
    takes = sorted(Path(args.dir).glob("*.wav"))
    if not takes:
        print(f"bench_real: no recordings in {args.dir} (the development set is not here): skipped")
        return 0
    out_dir = ROOT / "build" / "bench" / "real"
    out_dir.mkdir(parents=True, exist_ok=True)
    results = [take(wav, out_dir) for wav in (takes[:1] if args.short else takes)]
    print("real LTC takes (Zoom F6, 48 kHz mono): pintime edges scored about the source's half-bit grid")
    for name, what in (("0.1s", "fitted per 0.1 s"), ("frame", "fitted per LTC frame (decoded sync words)")):
        print(f"\n{what}:")
        print(f"{'take':<14}{'s':>4}{'edges':>7}{'grid':>7}{'miss':>5}{'spur':>5}{'MAD ns':>8}{'peer':>8}"
              f"{'p.miss':>7}{'p.spur':>7}{'ratio':>7}{'>4σ':>7}{'σ/scat':>7}{'wall s':>7}{'cpu s':>6}"
              f"{'MB':>5}")
        for r in results:
            f = r[name]
            print(f"{r['take']:<14}{r['seconds']:>4.0f}{r['edges']:>7}{f['grid_edges']:>7}{f['missing']:>5}"
                  f"{f['spurious']:>5}{f['mad_ns']:>8.4g}{f['peer_mad_ns']:>8.4g}{f['peer_missing']:>7}"
                  f"{f['peer_spurious']:>7}{f['mad_ratio']:>7.3f}{f['beyond_4sigma']:>7.2%}"
                  f"{f['sigma_ratio']:>7.2f}{r['wall_s']:>7.2f}{r['cpu_s']:>6.2f}{r['peak_mb']:>5.0f}")
    per_15 = [15.0 * r["cpu_s"] / r["seconds"] for r in results]
    print(f"\nCPU time per 15 s of audio: {min(per_15):.2f}–{max(per_15):.2f} s; peak memory "
          f"{min(r['peak_mb'] for r in results):.0f}–{max(r['peak_mb'] for r in results):.0f} MB")
    print(f"targets: MAD ratio ≤ {TARGETS['mad_ratio']}, beyond 4σ ≤ {TARGETS['beyond_4sigma']:.0%}, "
          f"σ/scatter within {TARGETS['sigma_ratio']:.0f}× either way, ≤ {TARGETS['wall_s_per_15s']:.0f} s "
          f"and ≤ {TARGETS['peak_mb']:.0f} MB for 15 s of audio")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
