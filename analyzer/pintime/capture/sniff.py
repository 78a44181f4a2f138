"""What a capture file is, recognised by its content: a WAV, a simavr VCD or an edge-list CSV."""

from __future__ import annotations

from pathlib import Path

from pintime.capture.edgelist import HEADER as EDGE_LIST_HEADER
from pintime.errors import PintimeError


def sniff(path: str | Path) -> str:
    """What a capture file is: "wav", "vcd" or "edges"; PintimeError if none or unreadable."""
    path = Path(path)
    try:
        if path.exists() and not path.is_file() and not path.is_dir():
            raise PintimeError(f"{path}: not a regular file (a pipe or a device): pintime reads a capture "
                               "more than once; save it to a file first")
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
