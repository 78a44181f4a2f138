"""A resistor-ladder capture's attribution against simavr: each pin's located edges beside its exact ones.

The capture's edges (seconds of the card's clock, :mod:`pintime.ladder`) are put on the MCU's time base by
the analysis's clock and aligned to the exact edges at the measurement pin's first edge (the RUN frame's,
made by that pin alone). Then every exact edge of every pin looks for a located edge within
``MATCH_US``: of the same pin and polarity (matched), of another pin (attributed wrongly), or none
(missing, also when the edge was left unattributed). Located pin edges no exact edge claims are extra.
Exact edges after the last located one are not counted (a recording shorter than the run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pintime.clock import Clock
from pintime.edges import Edges
from pintime.ladder import PIN_NAMES, Attribution

MATCH_US = 2.0  # a located edge this close to an exact one is its (the closest pins' edges are ≥ 7 µs apart)


@dataclass(frozen=True)
class PinCheck:
    """One pin's exact edges and what the attribution made of them."""

    pin: str
    exact: int
    attributed: int
    matched: int  # same pin and polarity within MATCH_US
    wrong_pin: int  # the closest located edge within MATCH_US is another pin's (or the other polarity)
    missing: int  # no located edge within MATCH_US
    extra: int  # attributed to this pin, no exact edge of it within MATCH_US
    rms_ns: float | None  # matched edges' error about each polarity's mean (the pin's delay), ns; the
    # capture's straight clock line maps them, so the card clock's wander is in it

    def to_json(self) -> dict[str, Any]:
        return {"pin": self.pin, "exact": self.exact, "attributed": self.attributed, "matched": self.matched,
                "wrong_pin": self.wrong_pin, "missing": self.missing, "extra": self.extra,
                "rms_ns": self.rms_ns}


def ladder_check(att: Attribution, clock: Clock, exact: Edges) -> tuple[PinCheck, ...]:
    """Per pin (PA0 … PA3) the attribution's edges against ``exact`` (simavr's, any time unit with
    ``unit_s`` set)."""
    located_us = clock.to_us(att.edges.time)
    exact_us = exact.time * (exact.unit_s or 0.0) * 1e6
    first = att.edges.channel == 0
    offset_us = exact_us[exact.channel == 0][0] - located_us[first][0]
    located_us = located_us + offset_us
    order = np.argsort(located_us, kind="stable")
    located_us, pin, polarity = located_us[order], att.edges.channel[order], att.edges.polarity[order]
    recorded = exact_us <= located_us[-1] + MATCH_US
    claimed = np.zeros(len(located_us), dtype=bool)
    checks = []
    for ch, name in PIN_NAMES.items():
        on = (exact.channel == ch) & recorded
        t, p = exact_us[on], exact.polarity[on]
        k = np.clip(np.searchsorted(located_us, t), 1, max(len(located_us) - 1, 1))
        nearest = np.where(np.abs(located_us[k - 1] - t) <= np.abs(located_us[k] - t), k - 1, k)
        close = np.abs(located_us[nearest] - t) <= MATCH_US
        same = close & (pin[nearest] == ch) & (polarity[nearest] == p)
        claimed[nearest[same]] = True
        err_ns = (located_us[nearest[same]] - t[same]) * 1e3
        for sign in (1, -1):  # about each polarity's mean: the pin's own delay is not the attribution's
            sel = p[same] == sign
            err_ns[sel] -= np.mean(err_ns[sel]) if sel.any() else 0.0
        checks.append((ch, name, int(on.sum()), int(np.sum(pin == ch)), int(same.sum()),
                       int(np.sum(close & ~same)), int(np.sum(~close)),
                       float(np.sqrt(np.mean(err_ns ** 2))) if err_ns.size else None))
    return tuple(PinCheck(name, n_exact, n_att, matched, wrong, missing,
                          int(np.sum((pin == ch) & ~claimed)), rms)
                 for ch, name, n_exact, n_att, matched, wrong, missing, rms in checks)


def format_ladder_check(checks: tuple[PinCheck, ...]) -> str:
    """A table: per pin, exact and attributed edges, matched, wrong pin, missing, extra, RMS error."""
    lines = ["Ladder attribution against simavr (each exact edge's closest located edge within "
             f"{MATCH_US:g} µs):",
             f"{'pin':<5} {'exact':>7} {'attributed':>10} {'matched':>8} {'wrong pin':>9} {'missing':>8} "
             f"{'extra':>6} {'RMS ns':>8}  (RMS: about the clock's straight line, the card's wander in it)"]
    for c in checks:
        rms = "—" if c.rms_ns is None else f"{c.rms_ns:.3g}"
        lines.append(f"{c.pin:<5} {c.exact:>7} {c.attributed:>10} {c.matched:>8} {c.wrong_pin:>9} "
                     f"{c.missing:>8} {c.extra:>6} {rms:>8}")
    return "\n".join(lines)
