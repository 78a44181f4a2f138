"""The micro-benchmarks (program micro, firmware/micro/MICRO.md) on simavr's exact edges.

Two independent sources meet here: simavr's edges (the truth) and the datasheet's cycle counts summed over
the ELF's machine code (pintime.avr.datasheet), which runs nothing. Where simavr times instructions as the
datasheet does they must agree to the cycle; where it is known to differ (the interrupt response, the
instructions after SEI: docs/design.md §9) they must differ, by exactly the documented amounts.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pintime.capture.edgelist import read_edge_list
from pintime.errors import PintimeError
from pintime.estimate.micro import BENCHMARKS, datasheet_cycles
from pintime.frames import PROGRAMS, decode_frames
from pintime.programs.micro import SIMAVR_DIFFERS
from support import BUILD, ROOT, SIM, run_cli

pytestmark = pytest.mark.usefixtures("make_sim")

ELF = BUILD / "firmware" / "micro.elf"
EDGES = SIM / "micro.edges.csv"
M = 20  # Makefile USER_M default
GAP_US, SETTLE_US = 300, 1000  # FORMAT.md §3


@pytest.fixture(scope="module")
def exact(tmp_path_factory) -> dict:
    """``pintime validate`` of the exact edges against themselves, the ELF from the truth JSON."""
    out = tmp_path_factory.mktemp("micro") / "v.json"
    code, printed, lines = run_cli(["validate", EDGES, "--truth", SIM / "micro.json", "--json", out])
    assert code == 0, lines
    return json.loads(out.read_text()) | {"printed": printed}


def test_frames_in_run_order():
    """RUN (program micro), CAL, R × (RUN, one USER frame per benchmark in order), END; nothing rejected;
    every GAP exact; the SETTLE exact but before the interrupt groups, whose setup runs before their first
    edge (MICRO.md §4): 4, 6 and 12 cycles longer."""
    e = read_edge_list(EDGES).on(0)
    d = decode_frames(e.time, e.polarity)  # edge times in cycles = µs at 1 MHz
    assert d.rejected == 0 and d.incomplete == 0
    assert {PROGRAMS[f.fields["program"]] for f in d.of_kind("run")} == {"micro"}
    user = [f for f in d.frames if f.kind == "user"]
    reps = len(user) // len(BENCHMARKS)
    assert reps >= 2
    per_rep = ["run", *["user"] * len(BENCHMARKS)]
    assert [f.kind for f in d.frames] == ["run", "cal", *per_rep * reps, "end"]
    assert [(f.fields["function"], f.fields["rep"], f.fields["m"]) for f in user] == [
        (i, r, M) for r in range(reps) for i in range(len(BENCHMARKS))]
    longer = {"round_trip": 4, "entry": 6, "return": 12}
    for f in user:
        g = f.group
        assert np.all(e.time[g[2::2]] - e.time[g[1:-1:2]] == GAP_US)
        settle = SETTLE_US + longer.get(BENCHMARKS[f.fields["function"]].kind, 0)
        assert e.time[g[0]] - e.time[g[0] - 1] == settle


def test_exact_figures_are_their_truth(exact):
    """Every figure a whole number of cycles, equal to its truth with a zero-width CI; none outside it."""
    rows = exact["micro"]
    assert [r["name"] for r in rows] == [b.label for b in BENCHMARKS]
    for r in rows:
        assert r["mean_cycles"] == pytest.approx(round(r["mean_cycles"]), abs=1e-6)
        assert r["mean_cycles"] == pytest.approx(r["truth_cycles"], abs=1e-9)
        assert r["ci95_half_us"] == pytest.approx(0, abs=1e-9) and r["within_ci95"]
        assert r["truth_source"] == "simavr"
    assert exact["micro_coverage"]["outside"] == 0 and exact["micro_coverage"]["total"] == len(BENCHMARKS)


def test_simavr_equals_the_datasheet_except_where_known_to_differ(exact):
    """The statement every row makes about its truth column, tested: simavr's cycles equal the datasheet's
    for all compiled code; for the three interrupt rows they differ, by the documented amounts: no
    response cycles (chip 5), two instructions after SEI (chip one)."""
    for r in exact["micro"]:
        known = SIMAVR_DIFFERS.get(r["kind"])
        assert r["simavr_differs_from_datasheet"] == known
        assert (round(r["truth_cycles"]) == r["datasheet_cycles"]) == (known is None), r["name"]
    by_kind = {r["kind"]: (round(r["truth_cycles"]), r["datasheet_cycles"])
               for r in exact["micro"] if r["kind"] in SIMAVR_DIFFERS}
    response, extra_nop = 5, 1
    assert by_kind == {"round_trip": (18 - response, 18),  # the same instructions, no response
                       "entry": (10 - response + extra_nop, 10),  # and both NOPs before the handler
                       "return": (6 - extra_nop, 6)}  # so no NOP left after the RETI


def test_calling_convention_in_the_figures(exact):
    """What the avr-gcc ABI makes of the arguments: an empty callee costs CALL + RET (10), the wrapper
    twice that; each register byte one LDI; past 18 bytes (r25…r8) arguments go on the stack and the
    wrapper saves the call-saved registers it loads, so the cost per argument jumps."""
    t = {r["name"]: round(r["truth_cycles"]) for r in exact["micro"]}
    assert t["call"] == 10 and t["call()"] == 20
    assert [t[f"call(u8×{n})"] - t["call()"] for n in range(1, 5)] == [1, 2, 3, 4]  # r24, r22, r20, r18
    assert [t[f"call(u16×{n})"] - t["call()"] for n in range(1, 5)] == [2, 4, 6, 8]
    assert t["call(u32×2)"] - t["call()"] == 8
    steps = np.diff([t[f"call(u32×{n})"] for n in range(1, 9)])
    assert steps.max() > 4 * 4  # a stack argument costs more than its four LDI
    assert t["call() via pointer"] == t["call()"] + 2 + 2 - 1  # two LDS, EICALL 4 instead of CALL 5


def test_datasheet_needs_the_micro_elf():
    """Another program's ELF has other groups: refused, never read as the benchmarks'."""
    with pytest.raises(PintimeError, match="not the micro benchmarks"):
        datasheet_cycles(BUILD / "firmware" / "user_example.elf")


def test_analyze_prints_the_table(tmp_path, monkeypatch):
    """`pintime analyze` without the ELF: every row, the interrupts' datasheet cycles, a note for the
    rest; with it, every datasheet figure."""
    monkeypatch.chdir(ROOT)
    code, printed, _ = run_cli(["analyze", EDGES])
    assert code == 0 and "interrupt entry" in printed and "give the firmware's ELF" in printed
    code, printed, _ = run_cli(["analyze", EDGES, "--elf", Path("build/firmware/micro.elf"),
                                "--json", tmp_path / "a.json"])
    rows = json.loads((tmp_path / "a.json").read_text())["micro"]
    assert code == 0 and "give the firmware's ELF" not in printed
    assert all(isinstance(r["datasheet_cycles"], int) for r in rows)
