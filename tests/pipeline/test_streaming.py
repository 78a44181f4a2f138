"""The locator's memory-bounded bookkeeping changes no result: located edges are kept in arrays grown in
place (from ``FIRST_CAPACITY_EDGES``), the polarity vote runs over slices (``VOTE_CHUNK_EDGES``); with
arrays starting at a few edges and slices of a few hundred, so that every boundary case occurs many times
over, the edges of an example capture are bit for bit those of large ones."""

from __future__ import annotations

import numpy as np
import pytest
from pintime.locate.detect import detect
from pintime.locate.stream import store
from pintime.locate.stream.capture_edges import locate_capture
from support import CAPTURES

CAPTURE = CAPTURES / "table1-default.wav"


@pytest.mark.parametrize("method", ["template", "threshold"])
def test_chunk_sizes_change_nothing(monkeypatch, method):
    whole = locate_capture(CAPTURE, method)
    assert len(whole.edges.time) > 2000  # more than several chunks of the sizes below
    monkeypatch.setattr(store, "FIRST_CAPACITY_EDGES", 3)
    monkeypatch.setattr(detect, "VOTE_CHUNK_EDGES", 257)
    chunked = locate_capture(CAPTURE, method)
    for field in ("time", "channel", "polarity", "sigma"):
        assert np.array_equal(getattr(whole.edges, field), getattr(chunked.edges, field)), field
    assert np.array_equal(whole.crlb_s, chunked.crlb_s)
    assert whole.inverted == chunked.inverted is False
    for channel in (0, 1):  # channel-major, each channel's in time order
        assert np.all(np.diff(chunked.edges.on(channel).time) >= 0)
    assert np.all(np.diff(chunked.edges.channel) >= 0)
