"""Benchmark of the edge locator behind ADC decimation filters as datasheets specify them: band edges,
stopband attenuation, linear or minimum phase.

A card's decimation filter is the one part of its response pintime cannot ask for, and the chips differ:
sharp and slow roll-off, linear and minimum ("short delay", "low latency") phase, half-band stages that let
some aliasing through, narrow transition bands. The `default` card (its coupling, noise, clock and levels)
is rendered with each filter of ``FILTERS`` instead of its own, the first ``--duration-s`` of the table1
run, steady clock, seed 1, at 48 kHz 24-bit stereo, 48 and 44.1 kHz 16-bit mono, 96 kHz 24-bit mono and
192 kHz 24-bit stereo. The template locator runs on each capture; its edges are matched to simavr's exact
ones as in ``bench_cards.py`` (RMS about each polarity's mean and one straight line: the exact map of a
steady clock, its ratio to the Cramér–Rao bound, the worst edge in its own σ, the long pulses' bias).
A filter whose response rings beyond the template's ±48 samples must be refused with a one-line error
naming the cause, never located with errors many times their σ: ``outcome`` is ``located`` or
``refused``, and a located case is judged by the targets of ``bench_cards.py`` (RMS/CRLB ≤ 1.5, max/σ ≤ 6).

Usage: ``python bench/bench_decimation.py [--duration-s 4] [--json FILE] [--short]``
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from bench_cards import case_line, error_header, finish_cases, locate_case
from bench_rates import excerpt
from pintime.soundcard import model as sc
from pintime.soundcard.decimation import DecimationFilter
from pintime.soundcard.formats import with_format, with_steady_clock
from pintime.soundcard.synth import synthesize

ROOT = Path(__file__).resolve().parents[1]
# passband and stopband edges / fs, stopband attenuation (dB), minimum phase: the kinds chips offer
FILTERS = (
    DecimationFilter("sharp 0.4535/0.546 100 dB", 0.4535, 0.546, 100.0),  # AKM sharp roll-off
    DecimationFilter("slow 0.274/0.70 80 dB", 0.274, 0.70, 80.0),  # a slow roll-off
    DecimationFilter("sharp 0.4535/0.546 100 dB min", 0.4535, 0.546, 100.0, True),  # short delay, sharp
    DecimationFilter("slow 0.274/0.70 80 dB min", 0.274, 0.70, 80.0, True),  # short delay, slow
    DecimationFilter("0.45/0.55 90 dB min", 0.45, 0.55, 90.0, True),  # low latency
    DecimationFilter("0.454/0.583 65 dB", 0.454, 0.583, 65.0),  # a budget ADC's aliasing stopband
    DecimationFilter("half-band 0.45/0.55 60 dB", 0.45, 0.55, 60.0),  # −6 dB at fs/2: aliasing
    DecimationFilter("0.40/0.50 90 dB", 0.40, 0.50, 90.0),  # narrow passband, no aliasing
    DecimationFilter("0.45/0.505 100 dB", 0.45, 0.505, 100.0),  # narrow transition band
    DecimationFilter("0.45/0.50 100 dB", 0.45, 0.50, 100.0),  # narrower: rings beyond the template
)
FORMATS = ((48000, 24, 2), (48000, 16, 1), (44100, 16, 1), (96000, 24, 1), (192000, 24, 2))
SEED = 1
SHORT_DURATION_S = 3.2  # the RUN and CAL frames and the first repetitions
SHORT_CASES = (FILTERS[2], FILTERS[-1])


def run_case(edges: Path, f_cpu_hz: float, spec: DecimationFilter, rate_hz: int, bits: int,
             channels: int) -> dict:
    """Render, locate and compare one case."""
    row: dict = dict(filter=spec.name, rate_hz=rate_hz, bits=bits, channels=channels)
    card = replace(sc.PROFILES["default"], decimation=spec)
    card = with_steady_clock(with_format(card, rate_hz, bits, channels))
    tag = "-".join(spec.name.replace("/", "_").split())
    wav = synthesize(edges, edges.parent / f"decimation-{tag}-{rate_hz}-{bits}-{channels}.wav", card, SEED,
                     force=True).wav_path
    return row | locate_case(wav, edges, f_cpu_hz)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=4.0, help="length of each capture (default 4)")
    parser.add_argument("--json", type=Path, default=ROOT / "build" / "bench" / "decimation.json")
    parser.add_argument("--short", action="store_true",
                        help="two filters, 48 kHz 16-bit, 3.2 s (checks figures)")
    args = parser.parse_args()
    duration_s = SHORT_DURATION_S if args.short else args.duration_s
    edges, f_cpu_hz = excerpt(duration_s, None)
    print(f"{'filter':<31} {'rate':>6} {'bits':>4} ch  outcome   {error_header()}", flush=True)
    rows = []
    for spec in SHORT_CASES if args.short else FILTERS:
        for rate_hz, bits, channels in FORMATS[1:2] if args.short else FORMATS:
            row = run_case(edges, f_cpu_hz, spec, rate_hz, bits, channels)
            rows.append(row)
            head = f"{spec.name:<31} {rate_hz:>6} {bits:>4} {channels:>2}  {row['outcome']:<9}"
            print(case_line(head, row, long=True), flush=True)
    print(f"{duration_s:g} s of table1, the `default` card with each decimation filter, steady clock, seed "
          f"{SEED}; template method; RMS about each polarity's mean and one line (the exact map); long: "
          "edges after a 2.3-2.9 ms interval less their polarity's mean.")
    return finish_cases("bench_decimation", rows, args.json, args.short)


if __name__ == "__main__":
    raise SystemExit(main())
