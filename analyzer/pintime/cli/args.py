"""Argument helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TypeVar

from pintime.capture.wav import DEFAULT_REFERENCE, Channels
from pintime.errors import PintimeError

T = TypeVar("T", int, float)


# What an MCU clock can be (a 32 kHz watch crystal divided down to a 10 GHz core), and the least target of
# a plan (1 fs; no sound card locates edges to less): beyond these the arithmetic of a plan or a rendering
# under- or overflows, and no measurement is meant.
F_CPU_RANGE_HZ = (1e3, 1e10)
TARGET_RANGE_NS = (1e-6, 1e12)
TARGET_RANGE_CYCLES = (1e-6, 1e12)
ROUTINE_RANGE_CYCLES = (1.0, 1e9)
# a pin step of one LSB of 24-bit PCM (less renders as nothing) to full scale
LEVEL_RANGE_FS = (2.0 ** -24, 1.0)


def number(text: str, name: str, kind: Callable[[str], T], within: tuple[float, float] | None = None) -> T:
    """``text`` as ``kind`` (int or float), finite, and within the closed range ``within`` when given; a
    one-line error naming the option ``name`` otherwise."""
    kind_name = "an integer" if kind is int else "a number"
    try:
        value = kind(text)
    except ValueError:
        raise PintimeError(f"{name} must be {kind_name}, got '{text}'") from None
    if not math.isfinite(value):
        raise PintimeError(f"{name} must be a finite number, got '{text}'")
    if within is not None and not within[0] <= value <= within[1]:
        raise PintimeError(f"{name} must be from {within[0]:g} to {within[1]:g}, got '{text}'")
    return value


def add_channel_arguments(parser: argparse.ArgumentParser) -> None:
    """``--channel`` and ``--reference``: which WAV channels hold the pin and the reference (:func:`channels`
    reads them)."""
    parser.add_argument("--channel", metavar="N", default="0",
                        help="WAV channel of the measurement pin, numbered from 0 (default: 0, left)")
    parser.add_argument("--reference", metavar="N|none", default=None,
                        help="WAV channel of the 1 s clock reference, or none (default: 1 when the file has "
                             "two channels or more, none when it is mono)")


def channels(args: argparse.Namespace) -> Channels:
    """The WAV channels of the measurement pin and of the reference that ``--channel`` and ``--reference``
    name (the reference's default: :data:`pintime.capture.wav.DEFAULT_REFERENCE`)."""
    measurement = number(args.channel, "--channel", int)
    if args.reference is None:
        return measurement, DEFAULT_REFERENCE
    if args.reference.strip().lower() == "none":
        return measurement, None
    return measurement, number(args.reference, "--reference", int)
