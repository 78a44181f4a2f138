"""Benchmark of the edge locator behind real, shipped sample-rate converters: libsoxr and libsamplerate.

A recording made through an operating system's mixer at a rate the card does not run at passes a
sample-rate converter. The first ``--duration-s`` of the table1 run is rendered by the ``default`` card at
96 kHz, 24-bit mono, clock wander off; libsoxr (``soxr``: quality LQ, HQ, VHQ) and libsamplerate
(``samplerate``: sinc_fastest, sinc_medium, sinc_best) convert it to 48 and 44.1 kHz, written as 24- and
16-bit PCM. On each the template locator runs; its edges are matched to simavr's exact ones as in
``bench_cards.py`` (RMS about each polarity's mean and one straight line: the exact map of a steady clock,
its ratio to the Cramér–Rao bound, the worst edge in its own σ). A converter whose step response rings
beyond the template's ±48 samples (the sharp ones at 44.1–48 kHz) must be refused with a one-line error
naming the cause, never located with errors many times their σ: ``outcome`` is ``located`` or
``refused``, and a located case is judged by the targets of ``bench_cards.py`` (RMS/CRLB ≤ 1.5, max/σ ≤ 6).

Usage: ``python bench/bench_resamplers.py [--duration-s 4] [--json FILE] [--short]``
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import samplerate
import soundfile as sf
import soxr
from bench_cards import case_line, error_header, finish_cases, locate_case
from bench_rates import excerpt
from pintime.soundcard import model as sc
from pintime.soundcard.formats import with_format, with_steady_clock
from pintime.soundcard.synth import synthesize

ROOT = Path(__file__).resolve().parents[1]
SOURCE_HZ = 96000
RATES_HZ = (48000, 44100)
BITS = (24, 16)
SEED = 1
SHORT_DURATION_S = 3.2  # the RUN and CAL frames and the first repetitions


def with_soxr(x: np.ndarray, rate_hz: int, quality: str) -> np.ndarray:
    return soxr.resample(x, SOURCE_HZ, rate_hz, quality=quality)


def with_libsamplerate(x: np.ndarray, rate_hz: int, kind: str) -> np.ndarray:
    return samplerate.resample(x, rate_hz / SOURCE_HZ, kind)


def converters() -> dict[str, Callable[[np.ndarray, int], np.ndarray]]:
    """Name → function(samples at SOURCE_HZ, output rate) of every converter tried."""
    out: dict[str, Callable[[np.ndarray, int], np.ndarray]] = {}
    for quality in ("LQ", "HQ", "VHQ"):
        out[f"soxr {quality}"] = functools.partial(with_soxr, quality=quality)
    for kind in ("sinc_fastest", "sinc_medium", "sinc_best"):
        out[f"libsamplerate {kind}"] = functools.partial(with_libsamplerate, kind=kind)
    return out


def run_case(edges: Path, f_cpu_hz: float, x: np.ndarray, name: str, convert: Callable, rate_hz: int,
             bits: int) -> dict:
    """Convert, write, locate and compare one case."""
    row: dict = dict(converter=name, rate_hz=rate_hz, bits=bits)
    wav = edges.parent / f"resampled-{name.replace(' ', '-')}-{rate_hz}-{bits}.wav"
    sf.write(wav, np.clip(convert(x, rate_hz), -1.0, 1.0 - 2.0 ** -23), rate_hz, subtype=f"PCM_{bits}")
    return row | locate_case(wav, edges, f_cpu_hz)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=4.0, help="length of each capture (default 4)")
    parser.add_argument("--json", type=Path, default=ROOT / "build" / "bench" / "resamplers.json")
    parser.add_argument("--short", action="store_true", help="two converters, 48 kHz, 3.2 s (checks figures)")
    args = parser.parse_args()
    duration_s = SHORT_DURATION_S if args.short else args.duration_s
    edges, f_cpu_hz = excerpt(duration_s, None)
    card = with_steady_clock(with_format(sc.PROFILES["default"], SOURCE_HZ, 24, 1))
    source = synthesize(edges, edges.parent / f"resampler-source-{duration_s:g}s.wav",
                        card, SEED, force=True).wav_path
    x = sf.read(source, dtype="float64")[0]
    cases = converters()
    if args.short:
        cases = {k: cases[k] for k in ("soxr LQ", "soxr HQ")}
    print(f"{'converter':<27} {'rate':>6} {'bits':>4}  outcome   {error_header(long=False)}", flush=True)
    rows = []
    for name, convert in cases.items():
        for rate_hz in RATES_HZ[:1] if args.short else RATES_HZ:
            for bits in BITS:
                row = run_case(edges, f_cpu_hz, x, name, convert, rate_hz, bits)
                rows.append(row)
                head = f"{name:<27} {rate_hz:>6} {bits:>4}  {row['outcome']:<9}"
                print(case_line(head, row, long=False), flush=True)
    print(f"{duration_s:g} s of table1, `default` card at {SOURCE_HZ} Hz 24-bit mono, steady clock, seed "
          f"{SEED}, then each converter; template method; RMS about each polarity's mean and one line (the "
          "exact map).")
    return finish_cases("bench_resamplers", rows, args.json, args.short)


if __name__ == "__main__":
    raise SystemExit(main())
