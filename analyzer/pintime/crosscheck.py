"""A non-template method's estimates beside the template method's on the same capture.

The threshold, inflection and count methods read one edge in a window, and their σ comes from the
calibration train's isolated edges. A neighbour inside the window biases them alike in every repetition,
which no spread shows (docs/results.md, "The other methods, an edge's neighbour, and low rates", has a
48 kHz capture's). The template method fits neighbouring edges together. Every estimate of the summary JSON (a
``mean_us`` with its ``ci95_us``) is compared with the template's of the same row; one that differs by
more than the two CI half-widths together is reported, so that no such number goes out unflagged. The
count method's estimates are its slow-clock rows, with the CI Beilner's variance predicts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pintime.printed import ns


@dataclass(frozen=True)
class Disagreement:
    """One estimate whose method and template values differ beyond both their 95 % CIs."""

    where: str  # the row: its section, label and part (e.g. "table1 / Differential 55×")
    method_us: float
    method_half_us: float
    template_us: float
    template_half_us: float


def compare_estimates(method: dict[str, Any], template: dict[str, Any]) -> tuple[int, list[Disagreement]]:
    """How many estimates the two summaries (:func:`pintime.pipeline.summary_json`) share, and those that
    disagree. Rows of a list are paired by their label or name (a method may decode fewer frames)."""
    found: list[Disagreement] = []
    if method.get("slow_clock"):  # the count method: its estimates with Beilner's model beside them
        method = {**method, **{k: v for k, v in method["slow_clock"].items() if k in template}}
    return _walk(method, template, "", found), found


def _walk(a: Any, b: Any, where: str, found: list[Disagreement]) -> int:
    if isinstance(a, list) and isinstance(b, list):
        others = {_key(row, i): row for i, row in enumerate(b)}
        return sum(_walk(row, others[k], f"{where} / {k}", found)
                   for i, row in enumerate(a) if (k := _key(row, i)) in others)
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return 0
    compared = 0
    mine, theirs = _estimate(a), _estimate(b)
    if mine is not None and theirs is not None:
        compared = 1
        (m, mh), (t, th) = mine, theirs
        if abs(m - t) > mh + th:
            found.append(Disagreement(where.removeprefix(" / "), m, mh, t, th))
    return compared + sum(_walk(a[k], b[k], f"{where} / {k}", found) for k in a if k in b)


def _key(row: Any, index: int) -> Any:
    return row.get("label", row.get("name", index)) if isinstance(row, dict) else index


def _estimate(row: dict[str, Any]) -> tuple[float, float] | None:
    """(mean, CI half-width) in µs of an estimate, or None; the wider of the repetitions' CI and, for the
    count method, the one its slow-clock model predicts (whole samples: repetitions that all count alike
    have a CI of 0)."""
    mean = row.get("mean_us")
    cis = [ci for ci in (row.get("ci95_us"), row.get("model_ci95_us")) if isinstance(ci, list | tuple)]
    halves = [0.5 * float(ci[1] - ci[0]) for ci in cis
              if len(ci) == 2 and all(isinstance(v, float | int) for v in ci)]
    return (float(mean), max(halves)) if isinstance(mean, float | int) and halves else None


def check_text(method: str, compared: int, found: list[Disagreement], verbose: bool = False) -> str:
    """The report's lines on the check: one when all agree, else a title and a table of those that do not
    (means in µs, CI half-widths in ns: :mod:`pintime.printed`); ``verbose`` says why they may differ."""
    if not found:
        return (f"template check: the {compared} estimates of the {method} method agree with the template "
                "method's within their 95 % CIs")
    why = (" (a bias of the method on this capture: an edge's neighbour within its window? --method template "
           "fits neighbours together)" if verbose else "")
    title = (f"template check: {len(found)} of the {compared} estimates of the {method} method differ from "
             f"the template method's by more than both 95 % CIs: do not use them{why}")
    width = max(len("Estimate"), *(len(d.where) for d in found))
    head = (f"{'Estimate':<{width}} {method + ' (µs)':>17} {'± 95 % CI (ns)':>15} {'template (µs)':>14} "
            f"{'± 95 % CI (ns)':>15}")
    rows = [f"{d.where:<{width}} {d.method_us:>17.4f} {ns(d.method_half_us):>15} {d.template_us:>14.4f} "
            f"{ns(d.template_half_us):>15}" for d in found]
    return "\n".join([title, head, "-" * len(head), *rows])
