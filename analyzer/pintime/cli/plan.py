"""``pintime plan CAPTURE|--profile P``: repetitions each technique needs for a wanted 95 % CI, with the
template and the count methods, and the MCU time they take (:mod:`pintime.estimate.plan`).

From a WAV capture: its own techniques (Table 1, the §5 system, your functions, Table 2's unknowns), each
with its spread over its repetitions with the template method (the edge noise and clock wander fitted to
them are reported) and the count method's model at the capture's tick, each repetition's MCU time
measured from frame to frame. From a card profile: the profile's
Cramér–Rao bound times the template locator's measured efficiency, its clock's Allan deviation (white
frequency noise: q = σ_y(1 s)² · 1 s), the nominal tick, and the paper's Table 1 techniques around a routine
of ``--routine-cycles``.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import numpy as np

from pintime.capture.sniff import sniff
from pintime.cli.args import add_channel_arguments, channels, number
from pintime.errors import PintimeError
from pintime.estimate.plan import (
    Card,
    Technique,
    format_plan,
    measure_template_noise,
    plan,
    plan_json,
    template_terms,
)
from pintime.estimate.shared import shared_half_us
from pintime.estimate.slowclock import design
from pintime.estimate.table1 import PAPER_TABLE1, overdetermined_design
from pintime.files import refuse_overwrite, write_text
from pintime.pipeline import Analysis, analyze, refuse_unused_elf
from pintime.programs.base import LinearEstimate
from pintime.soundcard.formats import with_format
from pintime.soundcard.model import PROFILES, get_profile, step_response

# The template locator's per-edge error over the Cramér–Rao bound, the worst measured (docs/results.md:
# 1.30–1.54× on the modelled cards at 192 kHz)
TEMPLATE_OVER_CRLB = 1.54
EPSILON_CYCLES = 1  # every pulse's constant: the edges' one-cycle `out` (docs/design.md §5)
INIT_CYCLES = 37  # the §5 system's init routine (firmware/FORMAT.md)
MIN_REPETITIONS = 10  # a technique's spread is measured from this many repetitions at least


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("capture", nargs="?", default=None, help="WAV capture to plan from")
    parser.add_argument("--profile", default=None,
                        help=f"plan from a sound-card profile instead: {', '.join(PROFILES)}")
    parser.add_argument("--rate", metavar="HZ", default=None,
                        help="the profile's sample rate (default: its own)")
    parser.add_argument("--f-cpu-hz", metavar="F", default="1000000",
                        help="with --profile: the MCU clock (default: 1000000, as in the paper)")
    parser.add_argument("--routine-cycles", metavar="C", default="100",
                        help="with --profile: the measured routine's cycles (default: 100, Table 1's ref100)")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--target-ns", metavar="X", help="wanted 95 %% CI half-width in ns")
    target.add_argument("--target-cycles", metavar="X", help="wanted 95 %% CI half-width in MCU cycles")
    target.add_argument("--resolve-cycle", action="store_true",
                        help="a 95 %% CI of ±0.5 cycle: the estimate rounds to its whole number of cycles")
    parser.add_argument("--elf", metavar="FILE", default=None,
                        help="user programs: the firmware ELF, to name the measured functions")
    parser.add_argument("--json", metavar="FILE", help="also write the plan as JSON")
    add_channel_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if (args.capture is None) == (args.profile is None):
        raise PintimeError("plan needs a WAV capture or --profile NAME (one of them)")
    refuse_overwrite([args.json], [args.capture, args.elf])
    if args.capture is not None:
        if args.rate is not None:
            raise PintimeError("--rate applies to --profile: a capture has its own rate")
        techniques, card, f_cpu_hz = from_capture(args)
    else:
        techniques, card, f_cpu_hz = from_profile(args)
    if args.resolve_cycle:
        target_us = 0.5e6 / f_cpu_hz
    elif args.target_ns is not None:
        target_us = number(args.target_ns, "--target-ns", float) * 1e-3
    else:
        target_us = number(args.target_cycles, "--target-cycles", float) * 1e6 / f_cpu_hz
    if not target_us > 0 or not np.isfinite(target_us):
        raise PintimeError("the target CI half-width must be a positive number")
    rows = plan(techniques, card, target_us)
    if args.json:
        write_text(args.json, json.dumps(plan_json(rows, card, target_us, f_cpu_hz), indent=2) + "\n")
    print(format_plan(rows, card, target_us, f_cpu_hz))
    return 0


def from_capture(args: argparse.Namespace) -> tuple[list[Technique], Card, float]:
    """The capture analysed by both methods: template edges' σ, the tick, every technique in it."""
    if sniff(args.capture) != "wav":
        raise PintimeError(f"{args.capture}: plan needs a WAV capture (a sound card's edges and rate), or "
                           "--profile for a card not yet recorded")
    template = analyze(args.capture, "template", elf=args.elf, channels=channels(args))
    count = analyze(args.capture, "count", elf=args.elf, channels=channels(args))
    refuse_unused_elf(count, args.elf)
    return techniques_of(template, count)


def techniques_of(template: Analysis, count: Analysis) -> tuple[list[Technique], Card, float]:
    """The plan's card and techniques from one capture analysed by both methods: the template's edge noise
    and clock wander measured from its techniques' spreads, the count method's tick and edge offsets."""
    assert count.slow_clock is not None  # the count method always has its model
    measured = [m for m in linear_estimates(template) if m[-1].count >= MIN_REPETITIONS]
    sigma, wander = float("nan"), float("nan")  # a Table 2 capture plans from measured spreads alone
    if measured:
        sigma, wander = measure_template_noise([template_terms(x, e) for _, _, _, x, e, _ in measured],
                                               [est.std_us for *_, est in measured],
                                               [est.count for *_, est in measured])
    card = Card(sigma, wander, count.slow_clock.tick_us, f"capture {count.path}")
    spans = frame_spans_us(count)
    template_std = {label: e.std_us for label, *_, e in measured}
    # the errors shared by every repetition (the learned template's, rounding's): their CI half-width, a
    # floor under the plan (0 without draws)
    shared = {label: shared_half_us(e, template.template_draws) for label, *_, e in measured}
    techniques = [Technique(label, technique, spans[key], x, edges, std_us={"template": template_std[label]},
                            shared_half_us={"template": shared[label]})
                  for label, technique, key, x, edges, e in linear_estimates(count)
                  if e.count >= MIN_REPETITIONS and label in template_std]
    techniques += spread_techniques(template, count)
    if not techniques:
        raise PintimeError(f"{count.path}: no technique with {MIN_REPETITIONS} repetitions or more decoded: "
                           "too few to measure a spread from (plan from a longer capture, or --profile)")
    return techniques, card, float(count.run["f_cpu_hz"])


def linear_estimates(a: Analysis) -> list[LinearEstimate]:
    """Every linear per-repetition estimate of a capture (:meth:`pintime.programs.base.Program.
    linear_estimates`)."""
    return a.program.linear_estimates(a.result)


def frame_spans_us(a: Analysis) -> dict[tuple[str, int], float]:
    """Median MCU time from a frame's SYNC to the next frame's, per (technique, size) as Table 1 keys them
    and ("user", function); a last frame of its kind counts to its own last edge."""
    technique_of = {"line": "line_fit", "overdet": "overdet"}
    spans: dict[tuple[str, int], list[float]] = defaultdict(list)
    frames, time_us = a.decode.frames, a.time_us
    for i, f in enumerate(frames):
        last = frames[i + 1].start if i + 1 < len(frames) else (f.group[-1] if len(f.group) else f.start)
        end = time_us[last]
        if f.kind == "user":
            key = ("user", f.fields["function"])
        else:
            key = (technique_of.get(f.kind, f.kind), f.fields.get("n", f.fields.get("m", 1)))
        spans[key].append(float(end - time_us[f.start]))
    return {k: float(np.median(v)) for k, v in spans.items()}


def spread_techniques(template: Analysis, count: Analysis) -> list[Technique]:
    """The program's estimates planned from their measured spread alone (Table 2's unknowns,
    :meth:`pintime.programs.base.Program.spread_estimates`), each with its spread over repetitions by each
    method."""
    rep_us, counted = count.program.spread_estimates(count.result, count.decode.frames, count.time_us)
    _, templated = template.program.spread_estimates(template.result, template.decode.frames,
                                                     template.time_us)
    return [Technique(label, technique, rep_us, std_us={"template": u.std_us, "count": v.std_us},
                      shared_half_us={"template": shared_half_us(u, template.template_draws)})
            for (label, technique, u), (_, _, v) in zip(templated, counted, strict=True)
            if min(u.count, v.count) >= MIN_REPETITIONS]


def from_profile(args: argparse.Namespace) -> tuple[list[Technique], Card, float]:
    """A profile's card (Cramér–Rao bound × the locator's efficiency) and the paper's Table 1 techniques
    around a routine of ``--routine-cycles``, their widths exact and their frames unknown."""
    rate_hz = None if args.rate is None else number(args.rate, "--rate", int)
    profile = with_format(get_profile(args.profile), rate_hz, None, None)
    f_cpu_hz = number(args.f_cpu_hz, "--f-cpu-hz", float)
    routine = number(args.routine_cycles, "--routine-cycles", float)
    if not f_cpu_hz > 0 or not routine > 0:
        raise PintimeError("--f-cpu-hz and --routine-cycles must be positive")
    fs = profile.samplerate_hz
    card = Card(TEMPLATE_OVER_CRLB * crlb_s(profile) * 1e6, profile.wander_adev_1s ** 2 * 1e6, 1e6 / fs,
                f"profile {profile.name} at {fs} Hz, {profile.bits}-bit")
    t, eps = routine * 1e6 / f_cpu_hz, EPSILON_CYCLES * 1e6 / f_cpu_hz
    techniques = []
    for technique, n, label, *_ in PAPER_TABLE1:
        calls = {"direct": [1], "executing": [n], "differential": [1, 2] * n,
                 "line_fit": list(range(1, n + 1))}[technique]
        techniques.append(_nominal(label, technique, design(technique, n), np.array(calls) * t + eps))
    x = overdetermined_design(20)  # T_e, T_i (Table 1's init routine), ε
    techniques.append(_nominal("§5 system T_e", "overdetermined", x,
                               x @ np.array([t, INIT_CYCLES * 1e6 / f_cpu_hz, eps])))
    return techniques, card, f_cpu_hz


def _nominal(label: str, technique: str, x: np.ndarray, widths_us: np.ndarray) -> Technique:
    """A technique whose pulses are known by their widths alone: edges of one repetition, pulses back to
    back (the offsets between pulses are unknown, so the count model takes them as independent)."""
    edges = np.column_stack([np.zeros(len(widths_us)), widths_us]).ravel()
    return Technique(label, technique, float(np.sum(widths_us)), x, edges[None, :], offsets_measured=False,
                     rep_is_pulses=True)


def crlb_s(profile) -> float:
    """RMS over sub-sample phases of the Cramér–Rao bound (s) of one edge of the profile's step in its
    white noise and quantization (docs/design.md §10): σ² / (A² Σₙ s′(nT − τ)²)."""
    fs = profile.samplerate_hz
    noise = (0.0 if profile.noise_dbfs is None else 10 ** (profile.noise_dbfs / 20)) ** 2
    noise += (2.0 ** (1 - profile.bits)) ** 2 / 12  # rounding to the word length
    n = np.arange(-256, 257)
    h = 1e-3 / fs
    bounds = []
    for tau in np.linspace(0, 1, 8, endpoint=False):
        t = (n - tau) / fs
        slope = (step_response(profile, t + h) - step_response(profile, t - h)) / (2 * h)
        bounds.append(noise / (profile.step_fs ** 2 * np.sum(slope ** 2)))
    return float(np.sqrt(np.mean(bounds)))
