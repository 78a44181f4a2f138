"""Benchmark of the edge locator at every common sound-card format: per-edge error against simavr's exact
edges next to the Cramér–Rao bound, for rate × word length × channels × card profile.

The first ``--duration-s`` of the table1 run (``make sim``: RUN frame, calibration train, the first
repetitions) is rendered by the sound-card model (``pintime.soundcard``) at each rate (44.1, 48, 96 and
192 kHz), 16 and 24 bits, mono (the measurement pin alone) and stereo (pin and 1 s reference), for each
profile, with its filters scaled to the rate (:func:`pintime.soundcard.formats.with_format`); the template
locator runs on each capture and its edges are compared with the exact ones by
:func:`pintime.validate.edgecheck.errors_of` (as ``bench_edges.py`` does). A mono capture has no
reference, so the exact edges' time unit (1/F_CPU) seeds the time map.

Columns: ``RMS`` per-edge error about each channel's and polarity's mean and a 20 ms time map (the card
clock's wander included), ``CRLB`` the RMS of the edges' Cramér–Rao bounds, ``locator`` the locator's own
RMS error with the wander separated out, both ÷ CRLB; ``train``: whether the template was learned from
the calibration train or blind; ``matched``/``exact``: measurement-channel edges located and matched
against those the exact list has in the capture. A case that fails prints why instead.

Usage: ``python bench/bench_rates.py [--duration-s 12] [--profiles …] [--rates …] [--json FILE] [--short]``
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from figures import finish
from pintime.capture.edgelist import read_edge_list
from pintime.errors import PintimeError
from pintime.locate.shape.train import find_train
from pintime.locate.stream.capture_edges import locate_capture
from pintime.soundcard import model as sc
from pintime.soundcard.formats import with_format
from pintime.soundcard.synth import PREROLL_S, synthesize
from pintime.validate.edgecheck import errors_of
from pintime.validate.edgematch import match_stretches

ROOT = Path(__file__).resolve().parents[1]
SIM = ROOT / "build" / "sim"
RATES_HZ = (44100, 48000, 96000, 192000)
BITS = (16, 24)
CHANNELS = (1, 2)
PROFILES = ("default", "laptop-48k", "usb-96k")
SEED = 1
# --short: two cases the firmware's train can teach (≥ 96 kHz), formats unlike the profiles' own, on 3 s
SHORT_CASES = (("default", 96000, 16, 1), ("usb-96k", 192000, 24, 2))
SHORT_DURATION_S = 3.0


def excerpt(duration_s: float, train_us: float | None) -> tuple[Path, float]:
    """The table1 edges of the first ``duration_s`` (and the run's JSON) under build/bench/rates/; F_CPU.

    ``train_us``: the calibration train's edges re-spaced to this period and every later measurement edge
    moved by what that adds (what firmware with a slower train would give; the reference is unchanged).
    """
    sim = json.loads((SIM / "table1.json").read_text())
    f_cpu_hz = float(sim["f_cpu_hz"])
    directory = ROOT / "build" / "bench" / "rates"
    directory.mkdir(parents=True, exist_ok=True)
    rows = np.loadtxt(SIM / "table1.edges.csv", delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    name = f"table1-{duration_s:g}s"
    if train_us is not None:
        name += f"-train{train_us:g}us"
        meas = np.flatnonzero(rows[:, 1] == 0)
        idx = meas[find_train(rows[meas, 0], 2 * rows[meas, 2] - 1)]
        period = round(train_us * 1e-6 * f_cpu_hz)
        first = rows[idx[0], 0]
        moved = period * (len(idx) - 1) + first - rows[idx[-1], 0]
        later = (rows[:, 1] == 0) & (rows[:, 0] > rows[idx[-1], 0])
        rows[idx, 0] = first + period * np.arange(len(idx))
        rows[later, 0] += moved
        rows = rows[np.argsort(rows[:, 0], kind="stable")]
    rows = rows[rows[:, 0] < duration_s * f_cpu_hz]
    path = directory / f"{name}.edges.csv"
    path.write_text("cycle,channel,level\n" + "".join(f"{c},{ch},{lv}\n" for c, ch, lv in rows))
    path.with_name(f"{name}.json").write_text(json.dumps(sim))
    return path, f_cpu_hz


def run_case(edges: Path, f_cpu_hz: float, duration_s: float, name: str, rate_hz: int, bits: int,
             channels: int) -> dict:
    """Render one case, locate its edges with the template method and compare them with the exact ones."""
    profile = with_format(sc.get_profile(name), rate_hz, bits, channels)
    wav = edges.parent / f"{edges.name.removesuffix('.edges.csv')}-{name}-{rate_hz}-{bits}-{channels}.wav"
    row: dict = dict(profile=name, rate_hz=rate_hz, bits=bits, channels=channels)
    synthesize(edges, wav, profile, SEED, duration_s=duration_s + PREROLL_S, force=True)
    truth = read_edge_list(edges)
    # a mono capture has no reference to scale the exact edges by: their nominal unit seeds the time map
    truth = replace(truth, unit_s=1.0 / f_cpu_hz)
    started = time.process_time()
    try:
        result = locate_capture(wav, "template")
        e = errors_of(result, truth)
    except PintimeError as err:
        return row | dict(failure=str(err).replace(str(wav), wav.name))
    row["seconds"] = time.process_time() - started
    row["train"] = result.train is not None
    row["exact"] = int(np.count_nonzero(truth.channel == 0))
    row["matched"] = int(np.count_nonzero(result.edges.channel[match_stretches(result.edges, truth, None).idx]
                                          == 0))
    figures = e.to_json()
    return row | {k: figures[k] for k in ("rms_ns", "crlb_ns", "locator_rms_ns", "locator_rms_se_ns",
                                          "max_ns", "bias_rise_ns", "bias_fall_ns")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=12.0, help="length of each capture (default 12)")
    parser.add_argument("--profiles", nargs="+", default=list(PROFILES))
    parser.add_argument("--rates", nargs="+", type=int, default=list(RATES_HZ))
    parser.add_argument("--train-us", type=float, default=None,
                        help="re-space the calibration train to this period (default: the firmware's)")
    parser.add_argument("--json", type=Path, default=ROOT / "build" / "bench" / "rates.json")
    parser.add_argument("--short", action="store_true", help="two cases on the first 3 s (checks figures)")
    args = parser.parse_args()
    duration_s = SHORT_DURATION_S if args.short else args.duration_s
    cases = SHORT_CASES if args.short else [(p, r, b, c) for p in args.profiles for r in args.rates
                                            for b in BITS for c in CHANNELS]
    edges, f_cpu_hz = excerpt(duration_s, args.train_us)
    print(f"{'profile':<11} {'rate':>6} {'bits':>4} {'ch':>2} {'RMS ns':>8} {'CRLB ns':>8} {'RMS/CRLB':>8} "
          f"{'locator/CRLB':>13} {'max ns':>8} {'train':>5} {'matched/exact':>13} {'time s':>6}", flush=True)
    rows = []
    for name, rate_hz, bits, channels in cases:
        row = run_case(edges, f_cpu_hz, duration_s, name, rate_hz, bits, channels)
        rows.append(row)
        head = f"{name:<11} {rate_hz:>6} {bits:>4} {channels:>2}"
        if "failure" in row:
            print(f"{head} FAILED: {row['failure']}", flush=True)
            continue
        own = "—" if row["locator_rms_ns"] is None else \
            f"{row['locator_rms_ns'] / row['crlb_ns']:.2f}±{row['locator_rms_se_ns'] / row['crlb_ns']:.2f}"
        print(f"{head} {row['rms_ns']:>8.4g} {row['crlb_ns']:>8.3g} {row['rms_ns'] / row['crlb_ns']:>8.3g} "
              f"{own:>13} {row['max_ns']:>8.4g} {('blind', 'yes')[row['train']]:>5} "
              f"{row['matched']:>6}/{row['exact']:<6} {row['seconds']:>6.1f}", flush=True)
    print(f"{duration_s:g} s of table1 per case, seed {SEED}, template method; RMS and max about each "
          "channel's and polarity's mean and a 20 ms time map (clock wander included); locator/CRLB: the "
          "locator's own RMS (wander separated out) / CRLB ± its standard error."
          + ("" if args.train_us is None else f" Calibration train re-spaced to {args.train_us:g} µs."))
    return finish("bench_rates", rows, args.json, args.short,
                  ["rms_ns", "crlb_ns", "locator_rms_ns", "max_ns", "matched"])


if __name__ == "__main__":
    raise SystemExit(main())
