"""Argument helpers shared by the subcommands."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

from pintime.capture.wav import DEFAULT_REFERENCE, Channels
from pintime.errors import PintimeError

T = TypeVar("T", int, float)


def number(text: str, name: str, kind: Callable[[str], T]) -> T:
    """``text`` as ``kind`` (int or float); a one-line error naming the option ``name`` otherwise."""
    try:
        return kind(text)
    except ValueError:
        kind_name = "an integer" if kind is int else "a number"
        raise PintimeError(f"{name} must be {kind_name}, got '{text}'") from None


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
