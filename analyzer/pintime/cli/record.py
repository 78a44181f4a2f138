"""``pintime record -o CAPTURE.wav --seconds N``: a capture from a real sound card."""

from __future__ import annotations

import argparse
import sys

from pintime import record as rec
from pintime.cli.args import number
from pintime.errors import PintimeError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("Left = measurement pin (D22), right = clock reference (D11); see the README's wiring. "
                     "Exit status 1 when frames were lost or the device stopped delivering.")
    parser.add_argument("-o", "--output", metavar="CAPTURE.wav",
                        help="output WAV (192 kHz, 24-bit, stereo); CAPTURE.json sidecar next to it")
    parser.add_argument("--seconds", metavar="N", help="how long to record (Ctrl-C stops earlier)")
    parser.add_argument("--device", metavar="ID|NAME", default=None,
                        help="input device: its number or words of its name (default: the system's default)")
    parser.add_argument("--list-devices", action="store_true", help="list the input devices and exit")
    parser.add_argument("--force", action="store_true", help="overwrite an existing CAPTURE.wav")


def _warn(message: str) -> None:
    print(f"pintime: warning: {message}", file=sys.stderr)


def list_devices(backend: object) -> None:
    """One line per input device: number, name, host API, channels, default rate, 192 kHz stereo or not."""
    devices = rec.input_devices(backend)
    if not devices:
        raise PintimeError("PortAudio finds no input device: is the sound card connected?")
    for dev in devices:
        ok = "yes" if rec.supports_capture(backend, dev) is None else "no"
        print(f"{dev.index:3d}  {dev.name}  [{dev.host_api}]  {dev.max_input_channels} in, "
              f"default {dev.default_samplerate_hz:.0f} Hz, 192 kHz stereo: {ok}")


def run(args: argparse.Namespace) -> int:
    if args.list_devices:
        list_devices(rec.load_backend())
        return 0
    if args.output is None or args.seconds is None:
        raise PintimeError("give -o CAPTURE.wav and --seconds N (or --list-devices)")
    seconds = number(args.seconds, "--seconds", float)
    result = rec.record(args.output, seconds, args.device, args.force,
                    progress=sys.stderr.isatty(), warn=_warn)
    how = "" if not result.interrupted else \
        " (stopped by Ctrl-C)" if result.stopped_by == "SIGINT" else f" (stopped by {result.stopped_by})"
    print(f"{result.wav_path}: {result.seconds:.2f} s from {result.device.name} [{result.device.host_api}]"
          f"{how}; sidecar {result.sidecar_path}")
    for message in rec.warnings_after(result):
        _warn(message)
    if result.stalled:
        _warn(f"the device stopped delivering audio after {result.seconds:.2f} s; the file holds what came")
    return 1 if result.gaps or result.stalled else 0
