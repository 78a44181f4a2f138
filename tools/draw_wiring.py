"""Draw docs/figures/wiring.png: two board pins to a sound card's line input through 47 kΩ / 1 kΩ dividers.

Run as ``.venv/bin/python tools/draw_wiring.py [OUT.png]``; the docs show the committed drawing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "docs" / "figures" / "wiring.png"
# (board pin label, what it carries, jack contact) for each of the two dividers, top to bottom
PINS = (("D22 (PA0)", "measurement pin", "tip: left"),
        ("D11 (PB5 = OC1A)", "1 s clock reference", "ring: right"))


def resistor(ax: Axes, x: float, y: float, length: float, vertical: bool, label: str) -> None:
    """A zigzag resistor from (x, y) along +x (or −y when ``vertical``), labelled beside it."""
    steps = 8
    along = [i * length / steps for i in range(steps + 1)]
    across = [0.0] + [0.12 * (1 if i % 2 else -1) for i in range(1, steps)] + [0.0]
    if vertical:
        ax.plot([x + a for a in across], [y - s for s in along], color="black", lw=1.5)
        ax.text(x + 0.25, y - length / 2, label, va="center", fontsize=10)
    else:
        ax.plot([x + s for s in along], [y + a for a in across], color="black", lw=1.5)
        ax.text(x + length / 2, y + 0.3, label, ha="center", fontsize=10)


def ground(ax: Axes, x: float, y: float) -> None:
    """The ground symbol hanging from (x, y)."""
    for i, half in enumerate((0.3, 0.2, 0.1)):
        ax.plot([x - half, x + half], [y - 0.12 * i, y - 0.12 * i], color="black", lw=1.5)


def divider(ax: Axes, y: float, pin: str, what: str, contact: str) -> None:
    """One pin → 47 kΩ → node (1 kΩ to ground) → the jack's contact."""
    ax.plot([1.6, 2.4], [y, y], color="black", lw=1.5)
    ax.text(1.5, y, pin, ha="right", va="center", fontsize=10, fontweight="bold")
    ax.text(1.5, y - 0.35, what, ha="right", va="center", fontsize=9, color="dimgray")
    resistor(ax, 2.4, y, 1.6, False, "47 kΩ")
    ax.plot([4.0, 7.0], [y, y], color="black", lw=1.5)
    ax.plot(4.8, y, "o", color="black", ms=4)
    ax.plot([4.8, 4.8], [y, y - 0.3], color="black", lw=1.5)
    resistor(ax, 4.8, y - 0.3, 0.9, True, "1 kΩ")
    ax.plot([4.8, 4.8], [y - 1.2, y - 1.4], color="black", lw=1.5)
    ground(ax, 4.8, y - 1.4)
    ax.text(7.1, y, contact, va="center", fontsize=10)


def draw(out: Path) -> None:
    fig, ax = plt.subplots(figsize=(9, 5.2))
    ax.add_patch(plt.Rectangle((-1.9, 0.2), 3.5, 4.6, fill=False, lw=1.2, ls="--"))
    ax.text(-0.15, 5.0, "board (Arduino Mega 2560;\nother boards: docs/boards.md)", ha="center", fontsize=9)
    ax.add_patch(plt.Rectangle((7.0, 0.2), 2.1, 4.6, fill=False, lw=1.2, ls="--"))
    ax.text(8.05, 5.0, "sound card\nLINE input (3.5 mm jack)", ha="center", fontsize=9)
    for (pin, what, contact), y in zip(PINS, (4.0, 2.2), strict=True):
        divider(ax, y, pin, what, contact)
    ax.plot([1.6, 7.0], [0.5, 0.5], color="black", lw=1.5)
    ax.text(1.5, 0.5, "GND", ha="right", va="center", fontsize=10, fontweight="bold")
    ax.text(7.1, 0.5, "sleeve: ground", va="center", fontsize=10)
    ax.text(4.5, -0.3, "5 V · 1/48 ≈ 0.10 V steps (≈ −20 dBFS at 1 V peak full scale); "
            "keep the resistors at the jack", ha="center", fontsize=9, color="dimgray")
    ax.set_xlim(-2.1, 10.2)
    ax.set_ylim(-0.6, 5.6)
    ax.set_axis_off()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")


if __name__ == "__main__":
    draw(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
