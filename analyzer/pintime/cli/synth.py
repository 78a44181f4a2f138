"""``pintime synth EDGES.csv -o CAPTURE.wav``: the sound-card model as a command."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pintime.cli.args import F_CPU_RANGE_HZ, LEVEL_RANGE_FS, number
from pintime.errors import PintimeError
from pintime.soundcard.formats import (
    OUTPUT_BITS,
    OUTPUT_CHANNELS,
    README_LEVEL,
    with_format,
    with_level,
    with_steady_clock,
)
from pintime.soundcard.model import PROFILES, get_profile
from pintime.soundcard.synth import synthesize


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = "profiles: " + "; ".join(f"{p.name} = {p.description}" for p in PROFILES.values())
    parser.add_argument("edges", metavar="EDGES.csv", help="edge list from the simavr harness")
    parser.add_argument("-o", "--output", metavar="CAPTURE.wav", required=True,
                        help="output WAV (the profile's rate, bits and channels unless --rate, --bits, "
                             "--channels say otherwise); CAPTURE.json sidecar next to it")
    parser.add_argument("--profile", default="default",
                        help=f"sound-card profile: {', '.join(PROFILES)} (default: default)")
    parser.add_argument("--rate", metavar="HZ", default=None,
                        help="sample rate: 44100, 48000, 88200, 96000, 176400 or 192000 (default: the "
                             "profile's; the card's filters scale with it)")
    parser.add_argument("--bits", type=int, choices=OUTPUT_BITS, default=None,
                        help="PCM word length (default: the profile's)")
    parser.add_argument("--channels", type=int, choices=OUTPUT_CHANNELS, default=None,
                        help="1: the measurement pin alone (mono); 2: pin left, reference right "
                             "(default: the profile's)")
    parser.add_argument("--level", metavar="FS", default=None,
                        help="pin step as a fraction of full scale (peak), or 'readme' for README's 47 kΩ / "
                             "1 kΩ divider (default: the profile's wiring)")
    parser.add_argument("--no-wander", action="store_true",
                        help="switch the card clock's wander off (to separate the locator's error from it)")
    parser.add_argument("--seed", default="0", help="random seed, a non-negative integer (default: 0)")
    parser.add_argument("--f-cpu-hz", metavar="F", default=None,
                        help="MCU clock; default: f_cpu_hz from the simulation JSON next to EDGES.csv")
    parser.add_argument("--duration-s", metavar="S", default=None,
                        help="record only the first S seconds (default: the whole run)")
    parser.add_argument("--locked-clock", action="store_true",
                        help="the card's clock locked to the MCU's: exactly nominal rate, no wander")
    parser.add_argument("--ladder", action="store_true",
                        help="record the four signal pins through a resistor ladder, PA0 (weight 2) + PA2 "
                             "(1) left, PA1 (2) + PA3 (1) right, instead of PA0 and the reference "
                             "(docs/ladder.md)")
    parser.add_argument("--force", action="store_true",
                        help="overwrite an existing CAPTURE.wav and its sidecar")
    parser.add_argument("--plot", metavar="DIR", default=None,
                        help="also write PNGs: a rendered edge per filter kind, a drooping pulse")


def run(args: argparse.Namespace) -> int:
    rate_hz = None if args.rate is None else number(args.rate, "--rate", int)
    profile = with_format(get_profile(args.profile), rate_hz, args.bits, args.channels)
    if args.level is not None:
        profile = with_level(profile, README_LEVEL if args.level == README_LEVEL
                             else number(args.level, "--level", float, LEVEL_RANGE_FS))
    if args.no_wander:
        profile = with_steady_clock(profile)
    if args.locked_clock:
        profile = profile.locked()
    seed = number(args.seed, "--seed", int)
    f_cpu_hz = None if args.f_cpu_hz is None else number(args.f_cpu_hz, "--f-cpu-hz", float, F_CPU_RANGE_HZ)
    duration_s = None if args.duration_s is None else number(args.duration_s, "--duration-s", float)
    result = synthesize(args.edges, args.output, profile, seed, f_cpu_hz, duration_s,
                        progress=sys.stderr.isatty(), force=args.force, ladder=args.ladder)
    ladder = ", resistor ladder" if args.ladder else ""
    print(f"{result.wav_path}: {result.n_samples / profile.samplerate_hz:.2f} s, profile {profile.name} "
          f"({profile.samplerate_hz} Hz, {profile.bits}-bit, {('mono', 'stereo')[profile.channels - 1]}), "
          f"step {profile.step_fs:.3g} FS, seed {seed}{ladder}, rendered in {result.render_s:.1f} s; "
          f"sidecar {result.sidecar_path}")
    if result.clipped_samples:
        print(f"pintime: warning: {result.clipped_samples} samples clipped at full scale", file=sys.stderr)
    if args.plot:
        from pintime.plots.soundcard import write_plots  # matplotlib only when asked

        try:
            paths = write_plots(Path(args.plot), profile)
        except OSError as err:
            raise PintimeError(f"{args.plot}: cannot write the plots ({err})") from None
        for path in paths:
            print(f"plot: {path}")
    return 0
