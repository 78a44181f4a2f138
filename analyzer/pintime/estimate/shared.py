"""Errors every repetition shares, in every estimate's uncertainty: the learned edge template's, and
rounding's on a recording quieter than one LSB.

The template is learned once, so its error is the same in every repetition and their spread cannot show
it (docs/results.md, "The learned edge shape's error in every CI"); nor can it show the rounding of
levels that are the same every time (:mod:`pintime.locate.shape.quantization`). The pipeline computes the
results again on the edge times each draw of such an error gives (:mod:`pintime.locate.shape.template_error`),
keeps only their Estimates' means (:func:`estimate_means`), and widens every Estimate of the result by
the draws' spread (:func:`with_shared_error`). Results are any nesting of dataclasses, lists, tuples and
dicts; an Estimate is known by its path there, a row of a list by its label or name.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable
from dataclasses import fields, is_dataclass, replace
from typing import Any

import numpy as np
import scipy.special

from pintime.estimate.estimators import CI_LEVEL, Estimate

Path = tuple[Any, ...]


def estimate_means(result: Any) -> dict[Path, float]:
    """The mean of every Estimate in ``result``, by its path: all a draw's results need keep."""
    means: dict[Path, float] = {}

    def keep(e: Estimate, path: Path) -> Estimate:
        means[path] = e.mean_us
        return e

    _visit(result, keep, ())
    return means


def largest_sigma(result: Any, sigma_field: str = "template_sigma_us") -> tuple[str, float]:
    """The largest σ (µs) of a shared error (``sigma_field``: :func:`with_shared_error`) among ``result``'s
    Estimates and the row it is of (its label, or the last two fields' names: "overdetermined t_e"),
    ``("", 0.0)`` when it has none."""
    found: list[tuple[float, str]] = [(0.0, "")]

    def keep(e: Estimate, path: Path) -> Estimate:
        names = [k[0] for k in path if isinstance(k, tuple) and isinstance(k[0], str)]
        found.append((getattr(e, sigma_field), names[-1] if names else " ".join(str(k) for k in path[-2:])))
        return e

    _visit(result, keep, ())
    sigma, where = max(found, key=lambda f: f[0] if f[0] == f[0] else np.inf)  # NaN: not known, first
    return where, sigma


def template_half_us(sigma_us: float, draws: int) -> float:
    """The 95 % CI half-width of the template's error of 1σ ``sigma_us`` found from ``draws`` draws:
    Student's t (``draws`` degrees of freedom) times σ; 0 without draws."""
    return float(scipy.special.stdtrit(draws, (1 + CI_LEVEL) / 2)) * sigma_us if draws else 0.0


def shared_half_us(e: Estimate, draws: int) -> float:
    """The 95 % CI half-width of the errors ``e`` shares with every repetition (the learned template's and
    rounding's, in quadrature; :func:`template_half_us` of ``draws`` draws)."""
    return template_half_us(float(np.hypot(e.template_sigma_us, e.quantization_sigma_us)), draws)


def with_shared_error(main: Any, base: dict[Path, float], draws: list[dict[Path, float]],
                      sigma_field: str = "template_sigma_us") -> Any:
    """``main`` with an error every repetition shares in every Estimate (the learned template's, or
    rounding's: ``sigma_field`` names the Estimate's field for its σ): σ² the mean square, over the draws,
    of a draw's mean less ``base``'s at the same path (``base``: the results of the same edges undrawn,
    ``main``'s own or a part of the capture's: :func:`estimate_means`), and its CI widened in quadrature by
    Student's t (``len(draws)`` degrees of freedom) times σ. An Estimate that ``base`` or a draw lacks gets
    σ = NaN and its CI NaN: the caller gives them all (the pipeline widens the part until ``base`` has every
    path)."""
    def widened(e: Estimate, path: Path) -> Estimate:
        found = path in base and all(path in d for d in draws)
        sigma = (float(np.sqrt(np.mean([(d[path] - base[path]) ** 2 for d in draws]))) if found
                 else float("nan"))
        wider = e.widened(template_half_us(sigma, len(draws)))
        return replace(wider, **{sigma_field: sigma})  # type: ignore[arg-type]  # a float field

    return _visit(main, widened, ())


def _visit(node: Any, change: Callable[[Estimate, Path], Estimate], path: Path) -> Any:
    """``node`` with ``change`` made to every Estimate in it; fields whose type cannot hold one
    (:func:`_may_hold`: a Table 1's frames) are not entered."""
    if isinstance(node, Estimate):
        return change(node, path)
    if is_dataclass(node) and not isinstance(node, type):
        hints = _hints(type(node))
        return replace(node, **{f.name: _visit(getattr(node, f.name), change, (*path, f.name))
                                for f in fields(node) if f.init and _may_hold(hints.get(f.name, Any))})
    if isinstance(node, list | tuple):
        keys = [_row_key(item, i) for i, item in enumerate(node)]
        keys = [(k, keys[:i].count(k)) for i, k in enumerate(keys)]  # a label twice: its first, its second
        return type(node)(_visit(item, change, (*path, k)) for item, k in zip(node, keys, strict=True))
    if isinstance(node, dict):
        return {k: _visit(v, change, (*path, k)) for k, v in node.items()}
    return node


def _row_key(item: Any, index: int) -> Any:
    """A row's key in its list: its label or name (rows a part of the capture lacks shift no others)."""
    for name in ("label", "name"):
        value = getattr(item, name, None)
        if isinstance(value, str):
            return value
    return index


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """A dataclass's field types, or none where they cannot be resolved (then every field is entered)."""
    try:
        return typing.get_type_hints(cls)
    except NameError:  # a name imported for type checking only
        return {}


@functools.cache
def _may_hold(tp: Any) -> bool:
    """Whether a value of type ``tp`` can hold an Estimate."""
    if tp is Estimate or tp is Any:
        return True
    if isinstance(tp, type) and is_dataclass(tp):
        return any(_may_hold(h) for h in _hints(tp).values()) if _hints(tp) else True
    return any(_may_hold(a) for a in typing.get_args(tp))
