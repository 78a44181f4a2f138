"""`pintime analyze` on inputs that are no capture, or a simavr capture cut or overwritten: one clear
error."""

from __future__ import annotations

import shutil

import pytest
from support import SIM, fails_with

pytestmark = pytest.mark.usefixtures("make_sim")
EDGE_LIST, VCD = SIM / "table1.edges.csv", SIM / "table1.vcd"

VCD_HEAD = b"$timescale 1 ps $end\n$var wire 1 ! measurement_PA0 $end\n$enddefinitions $end\n"


@pytest.mark.parametrize("name,content,message", [
    ("notes.txt", b"hello, world\n", "not a capture"),
    ("random.bin", bytes(range(256)) * 8, "not a capture"),
    ("empty.csv", b"", "empty file"),
    ("garbage.csv", b"cycle,channel,level\n10,0,1\nabc,0,0\n", "malformed edge list"),
    ("garbage.vcd", VCD_HEAD + b"#0\n0!\nzz %% garbage\n", "not a readable VCD"),
    ("backwards.vcd", VCD_HEAD + b"#0\n0!\n#50\n1!\n#20\n0!\n", "backwards"),
    ("nopins.vcd", b"$timescale 1 ns $end\n$var wire 1 ! clk $end\n$enddefinitions $end\n#0\n0!\n",
     "none of the pin signals"),
])
def test_bad_input(capsys, tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    fails_with(capsys, ["analyze", str(path)], message)


def test_truncated_edge_list_file(capsys, tmp_path):
    path = tmp_path / "cut.edges.csv"
    whole = EDGE_LIST.read_bytes()
    path.write_bytes(whole[:whole.rindex(b"\n", 0, 100_000) + 5])  # cut inside a line (of > 5 bytes)
    data = path.read_bytes()
    assert not data.endswith(b"\n")
    fails_with(capsys, ["analyze", str(path)], "edge list")


def test_truncated_vcd_too_short_for_the_clock(capsys, tmp_path):
    path = tmp_path / "cut.vcd"
    text = VCD.read_bytes()
    # well under 1.5 s of MCU time: < 3 reference edges; cut at a line's end, whatever the firmware revision
    # (its RUN frame's edges move every later byte): a cut inside a line is another error
    path.write_bytes(text[:text.rindex(b"\n", 0, 12_000) + 1])
    fails_with(capsys, ["analyze", str(path)], "at least 3 edges on the reference channel")


def test_refuses_to_overwrite_the_capture(capsys, tmp_path):
    path = tmp_path / "capture.edges.csv"
    shutil.copy(EDGE_LIST, path)
    before = path.read_bytes()
    fails_with(capsys, ["analyze", str(path), "--json", str(path)], "refusing to overwrite")
    assert path.read_bytes() == before
