"""``pintime validate CAPTURE --truth build/sim/<program>.json``: a capture's estimates against simavr truth.

The capture's program checks its estimates (:meth:`pintime.programs.base.Program.check`) against the same
analysis of the exact simavr edges (the edge list next to the truth JSON, ``<prefix>.edges.csv``). Per-edge
errors of WAV captures come from :mod:`pintime.validate.edgecheck`; the result is a
:class:`pintime.validate.validation.Validation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from pintime.capture.sniff import sniff
from pintime.capture.wav import DEFAULT_CHANNELS, Channels
from pintime.errors import PintimeError
from pintime.files import read_json
from pintime.lost_audio import cut_spans
from pintime.pipeline import Analysis, summary_json
from pintime.programs.registry import program_of_truth
from pintime.validate import edgecheck
from pintime.validate.edgecheck import EdgeErrors
from pintime.validate.validation import Validation


def read_truth(path: Path) -> tuple[dict[str, Any], Path]:
    """The simavr truth JSON and the exact edge list beside it."""
    truth = read_json(path, "simavr truth JSON")
    if not {"f_cpu_hz", "revision", "program"} <= truth.keys():
        raise PintimeError(f"{path}: not a simavr truth JSON (needs f_cpu_hz, revision, program)")
    if not all(type(truth[k]) is int and truth[k] >= 0 for k in ("f_cpu_hz", "revision")) \
            or truth["f_cpu_hz"] == 0 or not isinstance(truth["program"], str) or not truth["program"]:
        raise PintimeError(f"{path}: truth needs a positive integer f_cpu_hz, an integer revision and a "
                           "program name")
    edges = path.with_name(path.name.removesuffix(".json") + ".edges.csv")
    if not edges.exists():
        raise PintimeError(f"{path}: exact edge list {edges} not found (run `make sim`)")
    return truth, edges


def check_same_run(a: Analysis, truth: dict[str, Any], truth_path: Path) -> None:
    if a.run["revision"] != truth["revision"]:
        raise PintimeError(f"{a.path}: firmware revision {a.run['revision']:08x} differs from the truth's "
                           f"{int(truth['revision']):08x} ({truth_path})")
    if a.run["f_cpu_hz"] != truth["f_cpu_hz"] or a.program is not program_of_truth(truth["program"]):
        raise PintimeError(f"{a.path}: program {a.program.name} at {a.run['f_cpu_hz']} Hz "
                           f"differs from the truth's {truth['program']} at {truth['f_cpu_hz']} Hz "
                           f"({truth_path})")


def compare(a: Analysis, exact: Analysis, truth: Path, edges: Mapping[str, EdgeErrors | str]) -> Validation:
    """The estimates of ``a`` beside their truth, as its program checks them
    (:meth:`pintime.programs.base.Program.check`) against ``exact``, the same analysis of the exact edges.
    ``truth``: the truth JSON; ``edges``: the per-edge errors by locator (:func:`edge_errors`)."""
    if exact.program is not a.program:
        raise PintimeError(f"{exact.path}: the exact edges are of program {exact.program.name}, the capture "
                           f"{a.path} of program {a.program.name}")
    out, exact_out = summary_json(a), summary_json(exact)
    return Validation(out, str(truth), a.program.check(a.result, out, exact_out, a.run["f_cpu_hz"]), edges)


def edge_errors(a: Analysis, exact: Analysis,
                channels: Channels = DEFAULT_CHANNELS) -> dict[str, EdgeErrors | str]:
    """Per-edge errors by method (:func:`edgecheck.edge_errors`) when the capture's edges were located (WAV),
    stretch by stretch between the gaps its analysis ``a`` knows (listed or found in the data); none for
    exact edges."""
    if sniff(a.path) != "wav":
        return {}
    cuts_s = cut_spans(np.zeros(0) if a.gaps is None else a.gaps.times_s, a.lost_audio)
    truth = exact.edges
    if truth.unit_s is None:  # an edge list counts cycles: their length is the RUN frame's (a mono capture
        truth = replace(truth, unit_s=1.0 / exact.run["f_cpu_hz"])  # has no reference to scale them by)
    return edgecheck.edge_errors(a.path, truth, channels, cuts_s)
