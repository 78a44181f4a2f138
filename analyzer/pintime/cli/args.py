"""Argument helpers shared by the subcommands."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pintime.errors import PintimeError

T = TypeVar("T", int, float)


def number(text: str, name: str, kind: Callable[[str], T]) -> T:
    """``text`` as ``kind`` (int or float); a one-line error naming the option ``name`` otherwise."""
    try:
        return kind(text)
    except ValueError:
        kind_name = "an integer" if kind is int else "a number"
        raise PintimeError(f"{name} must be {kind_name}, got '{text}'") from None
