"""The locator's memory-bounded bookkeeping changes no result: located edges are finished and kept a chunk
at a time (``RESULT_CHUNK_EDGES``), the polarity vote runs over slices (``VOTE_CHUNK_EDGES``); with chunks
of a few hundred edges, so that every boundary case occurs many times over, the edges of an example
capture are bit for bit those of one chunk."""

from __future__ import annotations

import numpy as np
import pytest
from pintime.locate import detect, store
from pintime.locate.capture_edges import locate_capture
from support import CAPTURES

CAPTURE = CAPTURES / "table1-default.wav"


@pytest.mark.parametrize("method", ["template", "threshold"])
def test_chunk_sizes_change_nothing(monkeypatch, method):
    whole = locate_capture(CAPTURE, method)
    assert len(whole.edges.time) > 2000  # more than several chunks of the sizes below
    monkeypatch.setattr(store, "RESULT_CHUNK_EDGES", 333)
    monkeypatch.setattr(detect, "VOTE_CHUNK_EDGES", 257)
    chunked = locate_capture(CAPTURE, method)
    for field in ("time", "channel", "polarity", "sigma"):
        assert np.array_equal(getattr(whole.edges, field), getattr(chunked.edges, field)), field
    assert np.array_equal(whole.crlb_s, chunked.crlb_s)
    assert whole.inverted == chunked.inverted is False
    assert np.all(np.diff(chunked.edges.time) >= 0)
