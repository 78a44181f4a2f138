"""The result of ``pintime validate``: a capture's estimates beside their simavr truth, and its JSON.

:func:`pintime.validate.compare.compare` builds a :class:`Validation`; ``pintime validate`` prints it and
writes :meth:`Validation.to_json`: the capture's ``analyze`` JSON with the truth, the errors and the CI
verdicts its program's check (:mod:`pintime.programs.truth`) adds to each estimate, then ``truth`` and the
per-edge ``edges``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pintime.programs.truth import Check
from pintime.validate.edgecheck import EdgeErrors
from pintime.validate.laddercheck import PinCheck


@dataclass(frozen=True)
class Validation:
    """A capture's estimates beside their simavr truth (``pintime validate``)."""

    summary: dict[str, Any]  # the capture's analysis, as ``pintime analyze --json`` writes it (not changed)
    truth: str  # the simavr truth JSON compared against
    check: Check = field(default_factory=Check)  # its program's estimates beside their truth
    # per edge locator (or why it was not compared); empty: exact edges
    edges: Mapping[str, EdgeErrors | str] = field(default_factory=dict)
    ladder: tuple[PinCheck, ...] = ()  # a resistor-ladder capture: each pin's attribution against simavr

    def to_json(self) -> dict[str, Any]:
        """The ``pintime validate --json`` result: ``summary`` with the check's keys added to its
        estimates, then ``truth`` and ``edges``."""
        out = copy.deepcopy(self.summary)
        self.check.annotate(out)
        out["truth"] = self.truth
        out["edges"] = {method: {"not_compared": e} if isinstance(e, str) else e.to_json()
                        for method, e in self.edges.items()}
        if self.ladder:
            out["ladder_check"] = [c.to_json() for c in self.ladder]
        return out
