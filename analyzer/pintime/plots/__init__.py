"""The figures: each written whole or not at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pintime.files import whole_or_nothing


def save_figure(fig: Any, path: Path, dpi: int) -> None:
    """Write the matplotlib figure ``fig`` to ``path`` (its format named by the suffix) through a temporary
    file (:func:`pintime.files.whole_or_nothing`): a signal or a full disk leaves no part of a PNG."""
    with whole_or_nothing(path) as part:
        fig.savefig(part, dpi=dpi, format=path.suffix.lstrip(".") or "png")
