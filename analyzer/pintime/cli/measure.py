"""``pintime measure -o TAKE.wav``: record, watch the estimates settle, get ``analyze``'s results at END."""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pintime import record as rec
from pintime.capture.wav import WAV_MAX_BYTES
from pintime.cli import analyze as analyze_cli
from pintime.cli.args import number
from pintime.cli.compare import print_comparison
from pintime.compare import run_of
from pintime.errors import PintimeError
from pintime.files import read_json, refuse_overwrite
from pintime.live import Display, Live
from pintime.liveworker import finished

STEP_S = 0.25  # recorded seconds between the starts of two locating steps (at least): END is seen this late
PERIOD_S = 2.0  # recorded seconds between the starts of two live analyses for the display (at least)
SILENCE_S = 10.0  # default --silence-s
MAX_SECONDS = WAV_MAX_BYTES // (rec.CHANNELS * 3 * rec.SAMPLE_RATE_HZ)  # the 4 GiB WAV limit: 62 min


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("Start it, then press RESET: live estimates on stderr, and at the END frame (or "
                     "Ctrl-C) exactly what `pintime analyze TAKE.wav` prints. See docs/measure.md.")
    parser.add_argument("-o", "--output", metavar="TAKE.wav", required=True,
                        help="the recording (192 kHz, 24-bit, stereo), TAKE.json sidecar next to it")
    parser.add_argument("--device", metavar="ID|NAME", default=None,
                        help="input device: its number or words of its name (pintime record --list-devices)")
    parser.add_argument("--elf", metavar="FILE", default=None, help="the firmware ELF (as for analyze)")
    parser.add_argument("--visits", metavar="FILE", default=None,
                        help="table2: simavr's per-pulse visits (as for analyze)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON (as analyze)")
    parser.add_argument("--plots", metavar="DIR", help="write the figures (as analyze)")
    parser.add_argument("--baseline", metavar="OLD.json",
                        help="an earlier result of the same program: print each estimate's change from it")
    parser.add_argument("--seconds", metavar="N", default=str(MAX_SECONDS),
                        help=f"stop after N s if no END frame came (default {MAX_SECONDS}: the WAV limit)")
    parser.add_argument("--silence-s", metavar="N", default=str(SILENCE_S),
                        help=f"warn when no frame is decoded after N s of audio (default {SILENCE_S:g})")
    parser.add_argument("--force", action="store_true", help="overwrite an existing TAKE.wav")


def _warn(message: str) -> None:
    print(f"pintime: warning: {message}", file=sys.stderr)


def _ending(result: rec.RecordResult) -> str:
    if result.ended_by is not None:
        return f"ended by the {result.ended_by}"
    if result.interrupted:
        return "stopped by Ctrl-C" if result.stopped_by == "SIGINT" else f"stopped by {result.stopped_by}"
    return "the device stopped delivering" if result.stalled else "--seconds reached without an END frame"


def _record(args: argparse.Namespace, display: Display) -> tuple[rec.RecordResult, Live]:
    """The recording, with the live analysis watching it (stopped; its workers closed by the caller)."""
    live = Live(Path(args.output), rec.SAMPLE_RATE_HZ, (args.elf, args.visits), display,
                display_warn(display), STEP_S, PERIOD_S, number(args.silence_s, "--silence-s", float))
    try:
        result = rec.record(args.output, number(args.seconds, "--seconds", float), args.device, args.force,
                            warn=display_warn(display), watch=live.watch)
    except BaseException:
        live.close()
        raise
    live.stop(result.frames, result.ended_by is not None)
    return result, live


def display_warn(display: Display) -> Callable[[str], None]:
    """A warn callback printing between the live lines."""
    return lambda message: display.message(f"pintime: warning: {message}")


def _analysis_args(args: argparse.Namespace, json_path: str | None) -> argparse.Namespace:
    """The arguments ``pintime analyze TAKE.wav`` gets: the same parser, so the same defaults."""
    parser = argparse.ArgumentParser()
    analyze_cli.add_arguments(parser)
    given = {"--elf": args.elf, "--visits": args.visits, "--plots": args.plots, "--json": json_path}
    return parser.parse_args([args.output, *(word for option, value in given.items() if value
                                             for word in (option, value))])


@dataclass(frozen=True)
class Results:
    """What ``pintime analyze`` printed on the take (stdout), its exit status, and why the take was
    located in full (None: from the live location)."""

    printed: str
    code: int
    located_again: str | None


def final_results(args: argparse.Namespace) -> Results:
    """The locating worker's task at the end (:meth:`pintime.live.Live.results`): ``pintime analyze``'s
    run with ``args`` on the closed take, from the location made while it was recorded."""
    located, why = finished()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = analyze_cli.run(args, located)
    return Results(printed.getvalue(), code, why)


def run(args: argparse.Namespace) -> int:
    refuse_overwrite([args.json, args.plots], [args.output, args.elf, args.visits, args.baseline])
    baseline = None if args.baseline is None else read_json(args.baseline, "baseline result")
    if baseline is not None:
        run_of(baseline, args.baseline)  # a result at all: said before the recording, not after it
    result, live = _record(args, Display(sys.stderr))
    try:
        return _report(args, result, live, baseline)
    finally:
        live.close()


def _report(args: argparse.Namespace, result: rec.RecordResult, live: Live, baseline: dict | None) -> int:
    """After the recording: what ended it, the recorder's warnings, then ``analyze``'s results (and the
    comparison with ``baseline``)."""
    ended = time.monotonic()
    print(f"pintime: {result.wav_path}: {result.seconds:.2f} s, {_ending(result)}; sidecar "
          f"{result.sidecar_path}", file=sys.stderr)
    for message in rec.warnings_after(result):
        _warn(message)
    if result.frames == 0:
        raise PintimeError(f"{result.wav_path}: nothing recorded")
    with tempfile.TemporaryDirectory(prefix="pintime-measure-") as tmp:
        json_path = args.json or (str(Path(tmp) / "result.json") if baseline is not None else None)
        results = live.results(final_results, _analysis_args(args, json_path))
        sys.stdout.write(results.printed)
        if results.located_again is not None:
            print(f"pintime: the take was located again in full at its end: {results.located_again}",
                  file=sys.stderr)
        _timing_note(live, result.seconds, ended)
        if baseline is not None and json_path is not None:
            print()
            print_comparison(baseline, read_json(json_path, "result"), (args.baseline, str(result.wav_path)),
                             None)
    code = results.code
    return 1 if code == 0 and (result.gaps or result.stalled) else code


def _timing_note(live: Live, stopped_s: float, ended: float) -> None:
    """How long the locating steps and the display's analyses took, how much audio came after the END frame
    before the recording stopped (at real time: the wait), and how long the results took (stderr)."""
    steps = "" if not live.steps else (f"{len(live.steps)} locating steps (the last, at "
                                       f"{live.steps[-1][0]:.1f} s, took {live.steps[-1][1]:.2f} s), ")
    last = "" if not live.timings else (f" (the last, of {live.timings[-1][0]:.1f} s of audio, took "
                                        f"{live.timings[-1][1]:.2f} s)")
    after = "" if live.end_s is None else f"{stopped_s - live.end_s:.2f} s of audio after the END frame, " \
        "then "
    took_s = time.monotonic() - ended
    print(f"pintime: {steps}{len(live.timings)} live analyses{last}; the recording stopped {after}the "
          f"results took {took_s:.2f} s", file=sys.stderr)
