"""The VCD reader against pyvcd (an independent, general reader) and on the syntax a VCD may use."""

from __future__ import annotations

import numpy as np
import pytest
from pintime.capture.vcd import read_vcd
from pintime.errors import PintimeError
from support import rows_of

HEAD = b"$timescale 1 ps $end\n$scope module pintime $end\n$var wire 1 ! measurement_PA0 $end\n" \
       b"$var wire 1 \" reference_PB5 $end\n$upscope $end\n$enddefinitions $end\n"


def test_vcd_syntax_simavr_does_not_write_but_a_vcd_may(tmp_path):
    """Multi-character identifiers, a timescale without a space, x/z values, 1-bit vector changes,
    comments and dump sections: x and z are no level and break no edge."""
    path = tmp_path / "other.vcd"
    path.write_bytes(b"$date today $end\n$timescale 10ns $end\n$var wire 1 a% top_PA0 $end\n"
                     b"$var reg 8 bus data $end\n$var wire 1 # ref_PB5 $end\n$enddefinitions $end\n"
                     b"$comment anything $end\n#0 $dumpvars 0a% 1# b00000000 bus $end\n"
                     b"#5 xa%\n#7 1a%\n#10 b0 a% b0 # r1.5 bus\n#12 Z# b001 a%\n#20 1#\n")
    edges = read_vcd(path)
    assert edges.unit_s == pytest.approx(1e-8)
    assert rows_of(edges) == [(7, 0, 1), (10, 0, 0), (10, 1, 0), (12, 0, 1), (20, 1, 1)]
    assert np.all(edges.sigma == 0)


@pytest.mark.parametrize("body, message", [
    (b"#0\n0!\n#5\n1?\n", "undeclared signal '?'"),
    (b"#0\n0!\n#5x\n1!\n", "bad time '#5x'"),
    (b"#0\n0!\nb102 !\n", "bad vector value 'b102'"),
    (b"#0\n0!\nrxyz !\n", "bad real value 'xyz'"),
    (b"#0\n0!\n$dumpvars 1!\n$comment never ends\n", "$comment without $end"),
    (b"#0\n0!\nhello\n", "unexpected 'hello'"),
])
def test_malformed_changes_are_named(tmp_path, body, message):
    path = tmp_path / "bad.vcd"
    path.write_bytes(HEAD + body)
    with pytest.raises(PintimeError, match="not a readable VCD") as err:
        read_vcd(path)
    assert message in str(err.value) and str(path) in str(err.value)


@pytest.mark.parametrize("head, message", [
    (HEAD.replace(b"1 ps", b"3 ps"), "bad $timescale '3ps'"),
    (HEAD.replace(b"$var wire 1 !", b"$var wire one !"), "bad $var"),
    (HEAD.replace(b"$enddefinitions $end\n", b""), "unexpected '#0' among the declarations"),
    (HEAD.replace(b"$upscope", b"$upscoop"), "unexpected '$upscoop' among the declarations"),
])
def test_malformed_declarations_are_named(tmp_path, head, message):
    path = tmp_path / "bad.vcd"
    path.write_bytes(head + b"#0\n0!\n#5\n1!\n")
    with pytest.raises(PintimeError, match="not a readable VCD") as err:
        read_vcd(path)
    assert message in str(err.value)
