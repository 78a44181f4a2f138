"""The ``pintime`` command line: one subcommand per module, bad input → one line on stderr, exit 2."""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
from collections.abc import Callable
from types import ModuleType

from pintime.errors import PintimeError
from pintime.signals import handled, stop_signals

OUTPUT_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # stdout that cannot take what is printed
# a kill, the terminal closing, Ctrl-Break, where the platform has them (SIGINT raises already)
RAISED_SIGNALS = stop_signals(("SIGTERM", "SIGHUP", "SIGBREAK"))


class Stopped(BaseException):
    """A stop signal, raised where the program is, as Ctrl-C's KeyboardInterrupt is."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


# Each subcommand's module is imported only when that subcommand runs (or its --help is asked for): the
# sound-card model's scipy.signal, the CFG tools and the recorder are seconds of start-up `analyze` never
# needs. Each provides ``add_arguments(parser)`` and ``run(args) -> int``.
def _synth() -> ModuleType:
    from pintime.cli import synth
    return synth


def _analyze() -> ModuleType:
    from pintime.cli import analyze
    return analyze


def _validate() -> ModuleType:
    from pintime.cli import validate
    return validate


def _edges() -> ModuleType:
    from pintime.cli import edges
    return edges


def _cfg() -> ModuleType:
    from pintime.cli import cfg
    return cfg


def _plan() -> ModuleType:
    from pintime.cli import plan
    return plan


def _report() -> ModuleType:
    from pintime.cli import report
    return report


def _record() -> ModuleType:
    from pintime.cli import record
    return record


def _measure() -> ModuleType:
    from pintime.cli import measure
    return measure


def _compare() -> ModuleType:
    from pintime.cli import compare
    return compare


# subcommand → (its module's loader, help line)
COMMANDS: dict[str, tuple[Callable[[], ModuleType], str]] = {
    "synth": (_synth, "render an edge list into the WAV a sound card would record"),
    "analyze": (_analyze, "print Table 1, Table 2 or your functions' times from a capture"),
    "validate": (_validate, "compare a capture's estimates with the simavr truth"),
    "edges": (_edges, "every edge of a capture: time, channel, polarity, uncertainty"),
    "plan": (_plan, "repetitions each technique needs for a wanted CI, and the MCU time they take"),
    "cfg": (_cfg, "basic blocks of a compiled AVR function with their cycle costs (Table 2)"),
    "report": (_report, "one Markdown report from `pintime validate --json` results"),
    "record": (_record, "record a capture from a real sound card (192 kHz, 24-bit, stereo)"),
    "measure": (_measure, "record and analyse at once: live estimates, the full results at the END frame"),
    "compare": (_compare, "each estimate's change between two `analyze --json` results, and its CI"),
}


# subcommand → the examples its --help ends with (tests/unit/test_docs.py parses each)
EXAMPLES: dict[str, tuple[str, ...]] = {
    "synth": ("pintime synth build/sim/table1.edges.csv -o t1.wav --duration-s 60",
              "pintime synth build/sim/table1.edges.csv -o mono48.wav --profile laptop-48k --channels 1"),
    "analyze": ("pintime analyze captures/table1-default.wav",
                "pintime analyze my.wav --elf build/firmware/user.elf --json my.json --plots figures",
                "pintime analyze captures/table1-default.wav --method inflection"),
    "validate": ("pintime validate t1.wav --truth build/sim/table1.json",
                 "pintime validate t1.wav --truth build/sim/table1.json --json t1.validate.json"),
    "edges": ("pintime edges square.wav --csv square.csv --vcd square.vcd",
              "pintime edges captures/table1-default.wav --method inflection --csv edges.csv"),
    "plan": ("pintime plan t1.wav --target-ns 1",
             "pintime plan --profile default --rate 48000 --resolve-cycle"),
    "cfg": ("pintime cfg build/firmware/table2.elf",),
    "report": ("pintime report out/*.json -o report.md --figures figures",),
    "record": ("pintime record --list-devices",
               "pintime record -o my.wav --seconds 200 --device 2"),
    "measure": ("pintime measure -o take.wav --device 2 --elf build/firmware/user.elf --json new.json",
                "pintime measure -o take.wav --device 2 --baseline old.json"),
    "compare": ("pintime compare old.json new.json",
                "pintime compare old.json new.json --json change.json"),
}


def _epilog(name: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES.get(name, ()))


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser. Only the subcommand ``argv`` names (its first word that is one) gets its
    arguments, and only its module is imported; None: every subcommand's."""
    parser = argparse.ArgumentParser(
        prog="pintime",
        description="Measure execution times of microcontroller code to the cycle from a GPIO pin "
        "recorded by a sound card (Moreno & Fischmeister's method, and better edge timing).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    named = None if argv is None else next((a for a in argv if a in COMMANDS), "")
    for name, (load, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:] + ".",
                           epilog=_epilog(name), formatter_class=argparse.RawDescriptionHelpFormatter)
        if named is None or name == named:
            module = load()
            module.add_arguments(p)
            p.set_defaults(run=module.run)
    return parser


def one_line(message: str) -> str:
    """``message`` with every character that is not printable (a newline, U+0085 NEL quoted from a damaged
    file…) written as its escape: an error is one line, whatever the file it quotes holds."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)


def _stop(signum: int, frame: object) -> None:
    """A stop signal (RAISED_SIGNALS) while a command runs: raised where it is, as Ctrl-C's
    KeyboardInterrupt is, so every ``finally`` runs and a temporary file is removed, no part of a result
    left (their default action ends the process at once)."""
    raise Stopped(signum)


def reconfigure_output(platform: str) -> None:
    """stdout and stderr print a file name's undecodable bytes back as they were; on Windows (``platform``
    ``win32``) they write UTF-8, since a redirected stream's ANSI code page cannot hold σ or ε."""
    utf8 = {"encoding": "utf-8"} if platform == "win32" else {}
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="surrogateescape", **utf8)


def main(argv: list[str] | None = None) -> int:
    reconfigure_output(sys.platform)
    args = build_parser(sys.argv[1:] if argv is None else argv).parse_args(argv)
    try:
        with handled(RAISED_SIGNALS, _stop):
            code = int(args.run(args))
        sys.stdout.flush()  # a full disk or a closed pipe is found here, not at exit
        return code
    except Stopped as stopped:
        print(f"pintime: stopped by {signal.Signals(stopped.signum).name}", file=sys.stderr)
        return 128 + stopped.signum
    except PintimeError as err:
        print(f"pintime: error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pintime: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of the output went away (`pintime analyze X | head`): no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nor one at exit, flushing stdout
        return 141  # 128 + SIGPIPE, as a shell reports a command a closed pipe stopped
    except OSError as err:  # the output itself cannot be written (a full disk): what was printed is partial
        if err.errno not in OUTPUT_ERRNOS:
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"pintime: error: cannot write the output ({err.strerror or err})", file=sys.stderr)
        return 2
