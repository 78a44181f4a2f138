"""Benchmark of WAV edge location: per-edge error against simavr truth next to the Cramér–Rao bound, for
each method, and speed (CPU time, so other jobs on a shared machine do not count: × real time, and
relative to merely decoding the WAV with soundfile).

Captures: the full table1 run (``make sim``) rendered by the sound-card model with the ``paper`` and
``default`` profiles (``build/captures/table1-<profile>.wav``, rendered here if missing, seed 1), and the
same cards with a steady clock (``-steady``: no wander, all else equal). ``RMS`` is about a
piecewise-linear time map (``pintime.validate.edgecheck``, knots every 20 ms): what absolute time stamps
see, the
profiles' clock wander included (faster than that map follows). ``locator`` is the edge locator's own
error, the wander separated out from the exact and located times alone (phase bias plus the intercept of
the error's structure function); on the steady rows both must agree. ``adev``: the card clock's Allan
deviation at 1 s, as measured from the errors. Targets (docs/design.md §12): template locator RMS ≤ 1.5× CRLB;
analysis ≥ 100× real time.

Usage: ``python bench/bench_edges.py [--profiles paper default …] [--json FILE] [--short]``
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import soundfile as sf
from figures import finish
from pintime.capture.edgelist import read_edge_list
from pintime.locate.locators.methods import METHODS
from pintime.locate.stream.capture_edges import BLOCK_FRAMES, locate_capture
from pintime.soundcard import model as sc
from pintime.soundcard.synth import synthesize
from pintime.validate.edgecheck import errors_of

ROOT = Path(__file__).resolve().parents[1]
SIM = ROOT / "build" / "sim"
SHORT_CYCLES = 3_000_000  # --short: the first 3 s at 1 MHz (RUN, CAL, the first frames)


def short_edges() -> Path:
    """The first seconds of the table1 edge list (and its JSON) under build/bench/short/."""
    directory = ROOT / "build" / "bench" / "short"
    directory.mkdir(parents=True, exist_ok=True)
    lines = (SIM / "table1.edges.csv").read_text().splitlines()
    keep = [lines[0]] + [row for row in lines[1:] if int(row.split(",")[0]) < SHORT_CYCLES]
    (directory / "table1.edges.csv").write_text("\n".join(keep) + "\n")
    (directory / "table1.json").write_text((SIM / "table1.json").read_text())
    return directory / "table1.edges.csv"


def capture(name: str, edges: Path) -> Path:
    """``table1-<name>.wav`` beside the captures of ``edges``; ``<profile>-steady``: no clock wander."""
    folder = ROOT / "build" / "captures" if edges.parent == SIM else edges.parent
    wav = folder / f"table1-{name}.wav"
    if not wav.exists() or wav.stat().st_mtime < edges.stat().st_mtime:
        print(f"rendering {wav.relative_to(ROOT)} …", flush=True)
        base = name.removesuffix("-steady")
        profile = sc.PROFILES[base] if base == name else replace(sc.PROFILES[base], wander_adev_1s=0.0)
        synthesize(edges, wav, profile, 1, force=True)  # stale: re-rendered
    return wav


def decode_s(wav: Path) -> float:
    """CPU time to read every sample of ``wav`` with soundfile, in the analyzer's block size."""
    started = time.process_time()
    with sf.SoundFile(str(wav)) as f:
        while len(f.read(BLOCK_FRAMES, dtype="float32")):
            pass
    return time.process_time() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", help="default: paper, default and their -steady clocks "
                        "(--short: default-steady)")
    parser.add_argument("--json", type=Path, default=ROOT / "build" / "bench" / "edges.json")
    parser.add_argument("--short", action="store_true", help="the first 3 s only (checks the figures)")
    args = parser.parse_args()
    edges = short_edges() if args.short else SIM / "table1.edges.csv"
    profiles = args.profiles or (["default-steady"] if args.short else
                                 ["paper", "default", "paper-steady", "default-steady"])
    truth = read_edge_list(edges)
    rows = []
    print(f"{'profile':<15} {'method':<10} {'RMS ns':>9} {'CRLB ns':>8} {'RMS/CRLB':>8} {'locator/CRLB':>13} "
          f"{'rise ns':>8} {'fall ns':>8} {'max ns':>9} {'adev 1s':>8} {'edges':>7} {'time s':>7} {'×RT':>6} "
          f"{'×decode':>7}")
    for profile in profiles:
        wav = capture(profile, edges)
        decode = decode_s(wav)
        duration_s = sf.info(str(wav)).duration
        for method in METHODS:
            started = time.process_time()
            result = locate_capture(wav, method)
            elapsed = time.process_time() - started
            e = errors_of(result, truth)
            row = dict(profile=profile, method=method, seconds=elapsed, capture_s=duration_s, decode_s=decode,
                       x_real_time=duration_s / elapsed, x_decode=elapsed / decode, **e.to_json())
            rows.append(row)
            own = "—" if e.locator_rms_ns is None or e.locator_rms_se_ns is None else \
                f"{e.locator_rms_ns / e.crlb_ns:.3f}±{e.locator_rms_se_ns / e.crlb_ns:.3f}"
            adev = "—" if e.clock_adev_1s is None else f"{e.clock_adev_1s:.2g}"
            print(f"{profile:<15} {method:<10} {e.rms_ns:>9.4g} {e.crlb_ns:>8.3g} "
                  f"{e.rms_ns / e.crlb_ns:>8.3g} {own:>13} "
                  f"{e.bias_rise_ns:>+8.3g} {e.bias_fall_ns:>+8.3g} "
                  f"{e.max_ns:>9.4g} {adev:>8} {e.matched:>7} {elapsed:>7.2f} "
                  f"{row['x_real_time']:>6.3g} {row['x_decode']:>7.1f}", flush=True)
    print("RMS and max are about each channel's and polarity's mean and a 20 ms time map (clock wander "
          "included); locator/CRLB: the locator's own per-edge RMS (wander separated out) / CRLB, ± its "
          "standard error; ×decode = analysis time / soundfile decoding time.")
    return finish("bench_edges", rows, args.json, args.short,
                  ["rms_ns", "crlb_ns", "locator_rms_ns", "bias_rise_ns", "bias_fall_ns", "max_ns", "matched",
                   "seconds", "x_real_time", "x_decode"])


if __name__ == "__main__":
    raise SystemExit(main())
