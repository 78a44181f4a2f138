"""The CLI's edges: nothing silently overwritten, ignored or printed empty (issue 4/6 follow-ups).

Each case runs ``pintime`` in-process and checks the one-line error (exit 2) or the output it must give.
"""

from __future__ import annotations

import pytest
from test_hostile import SIM, assert_fails, run_cli

pytestmark = pytest.mark.skipif(not (SIM / "table1.edges.csv").exists(), reason="no simavr run (make sim)")

FEW_EDGES = b"cycle,channel,level\n" + b"".join(b"%d,1,%d\n" % (k * 500_000 + 1000, 1 - k % 2)
                                                 for k in range(6))


@pytest.mark.parametrize("existing", ["out.wav", "out.json"])
def test_synth_refuses_an_existing_output_without_force(tmp_path, existing):
    """Like ``pintime record``: the WAV or its sidecar already there is kept, byte for byte."""
    edges = tmp_path / "r.edges.csv"
    edges.write_bytes(FEW_EDGES)
    (tmp_path / existing).write_bytes(b"keep me")
    argv = ["synth", edges, "-o", tmp_path / "out.wav", "--f-cpu-hz", "1e6", "--duration-s", "0.01"]
    assert "--force" in assert_fails(argv, tmp_path / existing)
    assert (tmp_path / existing).read_bytes() == b"keep me"
    assert not (tmp_path / ("out.json" if existing == "out.wav" else "out.wav")).exists()
    code, out, lines = run_cli([*argv, "--force"])
    assert code == 0, lines
    assert (tmp_path / "out.wav").read_bytes()[:4] == b"RIFF"
