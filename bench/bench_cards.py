"""Benchmark of the edge locator on every modelled sound card, at the profile's own wiring and at README's:
per-edge error against simavr's exact edges, its ratio to the Cramér–Rao bound, the worst edge in its own σ,
and the bias of the long pulses' edges (AC-coupling droop), with the card clock's wander off and on.

The first ``--duration-s`` of the table1 run (``make sim``) is rendered by the sound-card model for each
profile at each rate (44.1, 48, 96, 192 kHz) as 16-bit mono and 24-bit stereo, with the pin step of the
profile's own divider (``level`` "profile", the most favourable) and of README's 47 kΩ / 1 kΩ divider
(``level`` "readme", ≈0.034 FS on a 2 Vrms input), the clock's wander switched off
(:func:`pintime.soundcard.formats.with_steady_clock`); each profile's own format is rendered once more with
its wander on. The template locator runs on each capture; its edges are matched to the exact ones
(:mod:`pintime.validate.edgematch`). A mono capture has no reference: the exact edges'
time unit is scaled by the clock the locator learned from the calibration train (the capture's own).

Columns: ``RMS`` per-edge error about each channel's and polarity's mean and a straight line (steady
clock: the exact map) or the 20 ms time map (wander on), ``CRLB`` the RMS of the edges' bounds, their
ratio; ``max/σ`` the worst edge's error in its own reported σ (σ honest: ≲ 5); ``bend z`` the input's bend
found from the edges' shape (:mod:`pintime.locate.shape.bend`) in its standard errors (5: a bend); ``long ±``
the mean error (ns) of the measurement edges after a 2.3–2.9 ms interval (Table 1's overdetermined pulses:
droop bias) less that of all edges of their polarity, rising/falling, and its standard error; ``HP Hz`` the
AC- coupling corners the locator learned.

Usage: ``python bench/bench_cards.py [--duration-s 8] [--profiles …] [--rates …] [--json FILE] [--short]``
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from bench_rates import excerpt
from figures import finish
from pintime.capture.edgelist import read_edge_list
from pintime.edges import Edges
from pintime.errors import PintimeError
from pintime.locate.shape.train import find_train
from pintime.locate.stream.capture_edges import CaptureEdges, locate_capture
from pintime.soundcard import model as sc
from pintime.soundcard.formats import README_LEVEL, with_format, with_level, with_steady_clock
from pintime.soundcard.synth import synthesize
from pintime.validate.edgematch import match_stretches

ROOT = Path(__file__).resolve().parents[1]
RATES_HZ = (44100, 48000, 96000, 192000)
FORMATS = ((16, 1), (24, 2))  # (bits, channels): a laptop's mono 16-bit, an interface's stereo 24-bit
LEVELS = ("profile", README_LEVEL)
LONG_US = (2300.0, 2900.0)  # Table 1's overdetermined pulses: 2.4-2.8 ms
SEED = 1
SHORT_CASES = (("laptop-48k", 48000, 16, 1, README_LEVEL, False), ("noisy", 44100, 16, 1, "profile", False),
               ("default", 96000, 24, 2, "profile", True))
SHORT_DURATION_S = 3.0


def truth_on_capture_clock(result: CaptureEdges, truth: Edges, f_cpu_hz: float) -> Edges:
    """The exact edges with the time unit of the capture's own clock: the locator's calibration-train
    period against the exact one (the nominal 1/F_CPU without a train; a reference channel, if any, is
    what the matching follows anyway)."""
    if result.train is None:
        return replace(truth, unit_s=1.0 / f_cpu_hz)
    meas = truth.channel == 0
    idx = find_train(truth.time[meas], truth.polarity[meas])
    if idx is None:
        return replace(truth, unit_s=1.0 / f_cpu_hz)
    t = truth.time[meas][idx].astype(np.float64)
    period_units = (t[-1] - t[0]) / (len(t) - 1)
    return replace(truth, unit_s=result.train.period_samples / result.info.samplerate_hz / period_units)


def per_edge(result: CaptureEdges, truth: Edges, steady: bool) -> dict:
    """Per-edge figures of the matched edges: RMS error and CRLB (ns), the worst |error|/σ, the edges
    beyond 6 σ, and the mean error of the measurement edges after a LONG_US interval per polarity (ns,
    with standard errors).

    Errors are taken about each channel's and polarity's mean and, with a ``steady`` clock, about one
    straight line through (exact, located) times with an offset per channel and polarity — the exact map
    then — or else about the 20 ms time map of
    :mod:`pintime.validate.edgematch`, which follows the wander (and, at a capture's last edges, which it
    alone determines, takes part of their error: 25σ on the last edge of a steady 192 kHz capture that is
    0.05 ns off the line)."""
    m = match_stretches(result.edges, truth, None)
    pol = result.edges.polarity[m.idx]
    channel = result.edges.channel[m.idx]
    t = truth.time.astype(np.float64) * (truth.unit_s or 1.0)  # its unit set by truth_on_capture_clock
    err = m.err
    group = 2 * channel.astype(np.int64) + (pol < 0)
    if steady:  # one line, with an offset per channel and polarity (a card may sample its channels apart)
        located = result.edges.time[m.idx]
        design = np.column_stack([group == g for g in np.unique(group)] + [t[m.jdx] - t[m.jdx][0]])
        err = located - design @ np.linalg.lstsq(design.astype(np.float64), located, rcond=None)[0]
    mean = np.bincount(group, err, 4) / np.maximum(np.bincount(group, minlength=4), 1)
    err = err - mean[group]
    z = np.abs(err) / result.edges.sigma[m.idx]
    previous = np.full(len(t), np.nan)
    meas = np.flatnonzero(truth.channel == 0)
    previous[meas[1:]] = np.diff(t[meas]) * 1e6
    long = (channel == 0) & (previous[m.jdx] >= LONG_US[0]) & (previous[m.jdx] <= LONG_US[1])
    bend = result.bend  # the input's bend found (locate/shape/bend.py): a linear card's within a few σ of 0
    out: dict = {"rms_ns": float(np.sqrt(np.mean(err ** 2)) * 1e9),
                 "bend_z": None if bend is None else bend.cubic_per_fs2 / bend.cubic_se_per_fs2,
                 "crlb_ns": float(np.sqrt(np.mean(result.crlb_s[m.idx] ** 2)) * 1e9),
                 "max_sigma": float(np.max(z)), "beyond_6_sigma": int(np.count_nonzero(z > 6)),
                 "matched": int(len(m.idx))}
    for name, sign in (("rise", 1), ("fall", -1)):
        sel = long & (pol == sign)
        n = int(np.count_nonzero(sel))
        out[f"long_{name}_ns"] = float(np.mean(err[sel]) * 1e9) if n else None
        out[f"long_{name}_se_ns"] = float(np.std(err[sel]) / np.sqrt(n) * 1e9) if n > 1 else None
        out[f"long_{name}_edges"] = n
    return out


def run_case(edges: Path, f_cpu_hz: float, name: str, rate_hz: int, bits: int, channels: int, level: str,
             wander: bool) -> dict:
    """Render one case, locate its edges with the template method and compare them with the exact ones."""
    profile = with_format(sc.get_profile(name), rate_hz, bits, channels)
    if level != "profile":
        profile = with_level(profile, level)
    if not wander:
        profile = with_steady_clock(profile)
    tag = f"{name}-{rate_hz}-{bits}-{channels}-{level}-{'w' if wander else 's'}"
    wav = edges.parent / f"{edges.name.removesuffix('.edges.csv')}-{tag}.wav"
    row: dict = dict(profile=name, rate_hz=rate_hz, bits=bits, channels=channels, level=level,
                     step_fs=profile.step_fs, wander=wander)
    # the whole excerpt, every edge settled: no pulse cut by the file's end
    synthesize(edges, wav, profile, SEED, force=True)
    started = time.process_time()
    try:
        result = locate_capture(wav, "template")
        truth = truth_on_capture_clock(result, read_edge_list(edges), f_cpu_hz)
        row |= per_edge(result, truth, not wander)
    except PintimeError as err:
        return row | dict(failure=str(err).replace(str(wav), wav.name))
    row["seconds"] = time.process_time() - started
    row["train"] = result.train is not None
    row["highpass_hz"] = [list(h.corners_hz()) for h in result.highpass][0]
    row["exact"] = int(np.count_nonzero(truth.channel < channels))
    return row


def _pm(value: float | None, se: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}±{se or 0:.2f}"


def error_header(long: bool = True) -> str:
    """The column heads of :func:`error_columns`."""
    out = f"{'RMS ns':>8} {'CRLB ns':>8} {'/CRLB':>6} {'max/σ':>6} {'bend z':>6}"
    return out + (f" {'long rise ns':>12} {'long fall ns':>12}" if long else "")


def error_columns(row: dict, long: bool = True) -> str:
    """A located case's figures (:func:`per_edge`): RMS, CRLB, their ratio, the worst edge in its σ and,
    with ``long``, the long pulses' mean error rising and falling."""
    out = (f"{row['rms_ns']:>8.4g} {row['crlb_ns']:>8.3g} {row['rms_ns'] / row['crlb_ns']:>6.2f} "
           f"{row['max_sigma']:>6.1f} {'—' if row['bend_z'] is None else format(row['bend_z'], '+.1f'):>6}")
    if long:
        out += (f" {_pm(row['long_rise_ns'], row['long_rise_se_ns']):>12} "
                f"{_pm(row['long_fall_ns'], row['long_fall_se_ns']):>12}")
    return out


def case_line(head: str, row: dict, long: bool) -> str:
    """One case of a benchmark whose cases are located or refused: ``head``, then the figures
    (:func:`error_columns`) or the refusal's reason."""
    if row["outcome"] == "refused":
        return f"{head} {row['reason'][:100]}…"
    return f"{head} {error_columns(row, long)}"


def locate_case(wav: Path, edges: Path, f_cpu_hz: float) -> dict:
    """A case of a benchmark whose cases are located or refused: the capture ``wav`` (rendered from the
    edge list ``edges``) located with the template method, and its per-edge figures (:func:`per_edge`),
    or why it was refused."""
    try:
        result = locate_capture(wav, "template")
    except PintimeError as err:
        return dict(outcome="refused", reason=str(err).replace(f"{wav}: ", ""))
    truth = truth_on_capture_clock(result, read_edge_list(edges), f_cpu_hz)
    return dict(outcome="located", **per_edge(result, truth, True))


def finish_cases(name: str, rows: list[dict], json_path: Path, short: bool) -> int:
    """:func:`figures.finish` of a benchmark whose cases are located or refused (:func:`case_line`): a
    refused case has its reason instead of figures, so only the located ones are checked for them."""
    located = [r for r in rows if r["outcome"] == "located"]
    return finish(name, rows, json_path, short, ["rms_ns", "crlb_ns", "max_sigma"], located)


def print_row(row: dict) -> None:
    head = (f"{row['profile']:<11} {row['rate_hz']:>6} {row['bits']:>4} {row['channels']:>2} "
            f"{row['step_fs']:>6.3f} {('off', 'on')[row['wander']]:>6}")
    if "failure" in row:
        print(f"{head} FAILED: {row['failure']}", flush=True)
        return
    corners = ",".join(f"{c:.0f}" for c in row["highpass_hz"]) or "—"
    print(f"{head} {error_columns(row)} {corners:>8} {row['matched']:>6}/{row['exact']:<6} "
          f"{row['seconds']:>5.1f}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=8.0, help="length of each capture (default 8)")
    parser.add_argument("--profiles", nargs="+", default=list(sc.PROFILES))
    parser.add_argument("--rates", nargs="+", type=int, default=list(RATES_HZ))
    parser.add_argument("--formats", nargs="+", default=[f"{b}x{c}" for b, c in FORMATS],
                        help="BITSxCHANNELS to render (default: 16x1 24x2)")
    parser.add_argument("--json", type=Path, default=ROOT / "build" / "bench" / "cards.json")
    parser.add_argument("--short", action="store_true", help="three cases on the first 3 s (checks figures)")
    args = parser.parse_args()
    duration_s = SHORT_DURATION_S if args.short else args.duration_s
    if args.short:
        cases = list(SHORT_CASES)
    else:
        formats = [tuple(int(v) for v in f.split("x")) for f in args.formats]
        cases = [(p, r, b, c, lv, False) for p in args.profiles for r in args.rates for b, c in formats
                 for lv in LEVELS]
        cases += [(p, sc.PROFILES[p].samplerate_hz, sc.PROFILES[p].bits, sc.PROFILES[p].channels, lv, True)
                  for p in args.profiles for lv in LEVELS]
    edges, f_cpu_hz = excerpt(duration_s, None)
    print(f"{'profile':<11} {'rate':>6} {'bits':>4} {'ch':>2} {'stepFS':>6} {'wander':>6} {error_header()} "
          f"{'HP Hz':>8} {'matched/exact':>13} {'s':>5}", flush=True)
    rows = []
    for case in cases:
        rows.append(run_case(edges, f_cpu_hz, *case))
        print_row(rows[-1])
    print(f"{duration_s:g} s of table1 per case, seed {SEED}, template method; RMS about each channel's and "
          "polarity's mean and a line (wander off) or a 20 ms time map (on); long: edges after a 2.3-2.9 ms "
          "interval less their polarity's mean.")
    return finish("bench_cards", rows, args.json, args.short, ["rms_ns", "crlb_ns", "max_sigma", "matched"])


if __name__ == "__main__":
    raise SystemExit(main())
