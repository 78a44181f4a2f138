"""``pintime compare OLD.json NEW.json``: each estimate's change between two results of one program."""

from __future__ import annotations

import argparse
import json

from pintime.compare import compare, comparison_json, format_comparison
from pintime.files import read_json, refuse_overwrite, write_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("The change's 95 % CI adds the two CIs' half-widths in quadrature (docs/measure.md). "
                     "Results of different programs or clocks are refused.")
    parser.add_argument("old", metavar="OLD.json", help="`pintime analyze --json` result before the change")
    parser.add_argument("new", metavar="NEW.json", help="`pintime analyze --json` result after it")
    parser.add_argument("--json", metavar="FILE", help="also write the comparison as JSON")


def print_comparison(old: dict, new: dict, names: tuple[str, str], json_path: str | None) -> None:
    """Compare NEW with OLD, print the table, write ``json_path`` if given (``pintime measure --baseline``
    calls this too)."""
    c = compare(old, new, names)
    if json_path:
        write_text(json_path, json.dumps(comparison_json(c), indent=2) + "\n")
    print(format_comparison(c))


def run(args: argparse.Namespace) -> int:
    refuse_overwrite([args.json], [args.old, args.new])
    old, new = (read_json(p, "analyze result") for p in (args.old, args.new))
    print_comparison(old, new, (args.old, args.new), args.json)
    return 0
