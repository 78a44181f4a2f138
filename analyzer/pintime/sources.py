"""One entry point for every capture: WAV, simavr VCD or edge-list CSV, recognised by content."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

from pintime.edgelist import HEADER as EDGE_LIST_HEADER
from pintime.edgelist import read_edge_list
from pintime.edges import Edges
from pintime.errors import PintimeError
from pintime.vcd import read_vcd

# WAV captures are located by the edge-finding module (``pintime edges``): it provides
# ``locate_capture(path, method, progress) -> CaptureEdges`` whose ``.edges`` are in seconds of the
# capture clock, with a progress bar over the recording when ``progress`` is true.
WAV_LOCATOR = "pintime.locate"


def sniff(path: str | Path) -> str:
    """What a capture file is: "wav", "vcd" or "edges"; PintimeError if none or unreadable."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as err:
        raise PintimeError(f"{path}: cannot read ({err.strerror or err})") from None
    if not head:
        raise PintimeError(f"{path}: empty file")
    if head[:4] in (b"RIFF", b"RF64") and head[8:12] == b"WAVE":
        return "wav"
    text = head.lstrip()
    if text.startswith(b"$"):
        return "vcd"
    if text.startswith(EDGE_LIST_HEADER.encode()):
        return "edges"
    raise PintimeError(f"{path}: not a capture (expected a WAV, a simavr VCD or an edge-list CSV)")


def load_edges(path: str | Path, method: str | None = None, progress: bool = False) -> Edges:
    """Every edge of a capture, whatever its kind; ``method`` picks the WAV edge locator.

    VCDs and edge lists hold exact edges, so ``method`` does not apply to them. ``progress`` shows a
    progress bar while a WAV is being located (the long step of an analysis).
    """
    kind = sniff(path)
    if kind == "vcd":
        return read_vcd(path)
    if kind == "edges":
        return read_edge_list(path)
    if importlib.util.find_spec(WAV_LOCATOR) is None:
        raise PintimeError(f"{path}: WAV analysis not available yet (no {WAV_LOCATOR} module)")
    locator = importlib.import_module(WAV_LOCATOR)
    return locator.locate_capture(path, method, progress=progress).edges
