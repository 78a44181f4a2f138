"""``pintime report``: one Markdown report from ``pintime validate --json`` results."""

from __future__ import annotations

import argparse
from pathlib import Path

from pintime.files import refuse_overwrite
from pintime.validate.report import write_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="+", help="`pintime validate --json` files")
    parser.add_argument("-o", "--output", required=True, help="the Markdown report to write")
    parser.add_argument("--figures", help="directory whose PNGs (any depth) the report shows")


def run(args: argparse.Namespace) -> int:
    output = Path(args.output)
    refuse_overwrite([output], args.results)
    path = write_report([Path(p) for p in args.results], output,
                        None if args.figures is None else Path(args.figures))
    print(f"report: {path}")
    return 0
