"""Benchmark of ``pintime edges`` on digital signals that are not pintime runs: no calibration train.

Nine signals are rendered by the sound-card model from exact edge lists (1 MHz cycles, the card's clock
steady, mono, seed 1): *irregular* (1500 edges 3–20 ms apart), *uart* (400 bytes at 1200 baud, 5–30 ms apart)
and *pps* (100 ms high every second, 60 s), none evenly spaced, so the edge shape is learned blind
(``pintime.locate.shape.blind``); *uart9600*, the same bytes at 9600 baud, whose edges (4.6–5 samples apart at
44.1–48 kHz, 20 at 192 kHz) are never alone, so the shape is learned from all of them together
(``pintime.locate.shape.dense``), as are those of *uartstream* (3000 bytes at 9600 baud back to back: the
shape's fit and each edge's centroid disagree, and every σ is enlarged by that much) and *servo* (50 Hz pulses
sweeping 1 → 2 → 1 ms every 2 s, 20 s: its rises are periodic, its falls are not); and 10 s of three periodic
signals whose edges are too close for that, so their whole period is folded
(``pintime.locate.shape.periodic``): *square1k* (1 kHz), *pwm490* (490 Hz, 25 %: Arduino's analogWrite(64))
and *square2k5* (2.5 kHz, 9–10 samples apart at 44.1–48 kHz). Each capture goes through ``pintime edges
--csv``; each edge's error is taken about a straight line in the exact time with an offset per polarity (the
card's clock ratio and offset, the pin's fall − rise delay), and compared with the σ pintime gives: RMS/σ
(target ≤ 1.5) and the worst edge in its own σ (≤ 6), beside the RMS in ns. Where the card's delta-sigma
modulator ripple stands above the noise, a non-periodic signal's error keeps it (docs/results.md, "Any digital
signal"): no blind learning can see it.

Usage: ``python bench/bench_signals.py [--json FILE] [--short]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from figures import finish
from pintime.cli import main as pintime
from pintime.soundcard import model as sc
from pintime.soundcard.formats import with_format, with_level, with_steady_clock
from pintime.soundcard.synth import synthesize

ROOT = Path(__file__).resolve().parents[1]
F_CPU = 1_000_000
SEED = 1
# (profile, rate, bits, level): the harsh cases beside the favourable ones
CARDS = [("default", 44100, 16, None), ("default", 44100, 16, "readme"), ("default", 48000, 24, None),
         ("default", 192000, 24, None), ("paper", 192000, 24, None), ("wide-filter", 48000, 16, None),
         ("wide-filter", 192000, 24, None), ("noisy", 44100, 16, None), ("laptop-48k", 48000, 16, None),
         ("laptop-48k", 48000, 16, "readme"), ("minphase-48k", 48000, 16, None), ("usb-96k", 96000, 24, None),
         ("usb-96k", 48000, 16, "readme")]
# periodic signals too dense for an edge's shape to be learned alone (pintime.locate.shape.periodic): a 1 kHz
# square wave, Arduino's analogWrite(64) PWM (490 Hz, 25 %), a 2.5 kHz square wave; (period, high) cycles
PERIODIC = {"square1k": (1000, 500), "pwm490": (2041, 510), "square2k5": (400, 200)}
PERIODIC_S = 10.0
UART_BAUD = {"uart": 1200, "uart9600": 9600, "uartstream": 9600}
# bytes sent, and the pause before each (cycles, uniform): uartstream's come back to back
UART_BYTES = {"uart": (400, 5000, 30000), "uart9600": (400, 5000, 30000), "uartstream": (3000, 0, 0)}
SERVO_PULSES = 1000
SHORT_CARDS = [("default", 48000, 24, None)]


def signal(kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Cycles and levels (1 high, 0 low) of each edge of the signal ``kind``."""
    rng = np.random.default_rng(5)
    if kind == "irregular":
        cycles = np.round(1000 + np.cumsum(rng.uniform(3000, 20000, 1500))).astype(np.int64)
        return cycles, 1 - np.arange(len(cycles)) % 2
    if kind in PERIODIC:  # a timer's output: period and high time whole cycles
        period, high = PERIODIC[kind]
        rises = 1000 + period * np.arange(int(PERIODIC_S * F_CPU / period))
        return np.sort(np.concatenate([rises, rises + high])), 1 - np.arange(2 * len(rises)) % 2
    if kind == "servo":  # 50 Hz, the pulse sweeping 1 → 2 → 1 ms every 2 s: periodic edge by edge only
        rises = 1000 + 20000 * np.arange(SERVO_PULSES)
        width = np.round(1000 + 1000 * (1 - np.abs(2 * (np.arange(SERVO_PULSES) % 100) / 100 - 1)))
        cycles = np.column_stack([rises, rises + width]).ravel().astype(np.int64)
        return cycles, 1 - np.arange(len(cycles)) % 2
    if kind == "pps":
        rises = 1000 + F_CPU * np.arange(60)
        cycles = np.sort(np.concatenate([rises, rises + 100_000]))
        return cycles, 1 - np.arange(len(cycles)) % 2
    bit_cycles, t, level, out = F_CPU / UART_BAUD[kind], 1000.0, 1, []  # idle high, start, 8 data, stop
    count, low, high = UART_BYTES[kind]
    for _ in range(count):
        t += float(rng.uniform(low, high))
        for k, b in enumerate([0, *rng.integers(0, 2, 8), 1]):
            if b != level:
                out.append((round(t + k * bit_cycles), b))
                level = b
        t += 10 * bit_cycles
    return np.array([c for c, _ in out]), np.array([b for _, b in out])


def run_case(directory: Path, kind: str, card: tuple) -> dict:
    profile, rate_hz, bits, level = card
    cycles, levels = signal(kind)
    source = directory / f"{kind}.edges.csv"
    source.write_text("cycle,channel,level\n" + "".join(f"{c},0,{v}\n" for c, v in zip(cycles, levels,
                                                                                        strict=True)))
    model = with_steady_clock(with_format(sc.PROFILES[profile], rate_hz, bits, 1))
    if level:
        model = with_level(model, level)
    name = f"{kind}-{profile}-{rate_hz}-{bits}-{level or 'profile'}"
    wav = synthesize(source, directory / f"{name}.wav", model, SEED, F_CPU, force=True).wav_path
    out = directory / f"{name}.csv"
    row: dict = dict(signal=kind, profile=profile, rate_hz=rate_hz, bits=bits, level=level or "profile")
    if pintime(["edges", str(wav), "--csv", str(out)]) != 0:
        return row | dict(found=0, edges=len(cycles))
    found = np.genfromtxt(out, delimiter=",", names=True)
    if len(found) != len(cycles):
        return row | dict(found=len(found), edges=len(cycles))
    design = np.column_stack([np.ones(len(cycles)), cycles, found["polarity"] < 0])
    residual = found["time_s"] - design @ np.linalg.lstsq(design, found["time_s"], rcond=None)[0]
    z = residual / found["sigma_s"]
    rms_s = float(np.sqrt(np.mean(residual ** 2)))
    return row | dict(found=len(found), edges=len(cycles), rms_ns=rms_s * 1e9,
                      median_sigma_ns=float(np.median(found["sigma_s"]) * 1e9),
                      rms_sigma=float(np.sqrt(np.mean(z ** 2))), max_sigma=float(np.max(np.abs(z))))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=ROOT / "build" / "bench" / "signals.json")
    parser.add_argument("--short", action="store_true", help="one card (checks the figures)")
    args = parser.parse_args()
    directory = ROOT / "build" / "bench" / "signals"
    directory.mkdir(parents=True, exist_ok=True)
    print(f"{'signal':<10} {'profile':<13} {'rate':>6} {'bits':>4} {'level':<8} {'edges':>11} {'RMS ns':>8} "
          f"{'σ ns':>7} {'RMS/σ':>6} {'max/σ':>6}", flush=True)
    rows = []
    for kind in ("irregular", *UART_BAUD, "pps", "servo", *PERIODIC):
        for card in SHORT_CARDS if args.short else CARDS:
            row = run_case(directory, kind, card)
            rows.append(row)
            head = (f"{kind:<10} {row['profile']:<13} {row['rate_hz']:>6} {row['bits']:>4} {row['level']:<8} "
                    f"{row['found']:>5}/{row['edges']:<5}")
            print(head if "rms_ns" not in row else
                  f"{head} {row['rms_ns']:>8.3g} {row['median_sigma_ns']:>7.3g} {row['rms_sigma']:>6.2f} "
                  f"{row['max_sigma']:>6.1f}", flush=True)
    print(f"Mono, steady clock, seed {SEED}; `pintime edges` (the edge shape learned blind, or a periodic "
          "signal's period folded); errors about a line in the exact time with an offset per polarity; σ: "
          "the median of pintime's. Targets RMS/σ ≤ 1.5, max/σ ≤ 6, except the modulator ripple no blind "
          "learning of a non-periodic signal sees (docs/results.md).")
    return finish("bench_signals", rows, args.json, args.short,
                  ["rms_ns", "median_sigma_ns", "rms_sigma", "max_sigma"])


if __name__ == "__main__":
    raise SystemExit(main())
