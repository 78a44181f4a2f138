"""The VCD reader against pyvcd (an independent, general reader) on a simavr run's VCD."""

from __future__ import annotations

import pytest
from pintime.capture import vcd
from pintime.capture.vcd import read_vcd
from support import SIM, pyvcd_edges, rows_of

pytestmark = pytest.mark.usefixtures("make_sim")

REAL = SIM / "table1.vcd"


def test_same_edges_as_pyvcd_on_a_simavr_run(tmp_path, monkeypatch):
    """The first 300 kB of table1.vcd, read in 4 kB pieces (tokens cut between them) and whole."""
    path = tmp_path / "head.vcd"
    data = REAL.read_bytes()[:300_000]
    path.write_bytes(data[:data.rindex(b"\n#")])
    expected = sorted(pyvcd_edges(path))  # simultaneous edges by channel, as rows_of orders them
    assert len(expected) > 10_000
    whole = read_vcd(path)
    assert rows_of(whole) == expected and whole.unit_s == 1e-12
    monkeypatch.setattr(vcd, "CHUNK_BYTES", 4096)
    assert rows_of(read_vcd(path)) == expected
