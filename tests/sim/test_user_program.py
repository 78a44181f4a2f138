"""Measure your own code (firmware/user/pintime.h, FORMAT.md §8): line fitting of registered functions.

The example program is `make sim`'s build/sim/user_example.* (firmware/user/user_example.c: mac16 and
crc8_step, the same cost on every call, and crc8_branchy, whose cost depends on its data). Truth: simavr's
per-instruction cycle histogram of the very ELF — the cycles charged inside each function per call plus
those of the CALL that enters it — never the analyzer. What the listing expects (pintime.avr.expect) is
checked against that truth.
"""

from __future__ import annotations

import csv
import dataclasses
import subprocess
from pathlib import Path

import numpy as np
import pytest
from pintime.avr.cfg import function_cfg
from pintime.avr.expect import path_cycles
from pintime.capture.edgelist import read_edge_list
from pintime.cli import main
from pintime.estimate.user import format_user, user_json
from pintime.frames import decode_frames
from pintime.pipeline import analyze
from support import BUILD, ROOT, make_build, run_json

pytestmark = pytest.mark.usefixtures("make_sim")

ELF = BUILD / "firmware" / "user_example.elf"
EDGES = BUILD / "sim" / "user_example.edges.csv"
HARNESS = BUILD / "sim" / "harness"
FUNCTIONS = ["mac16", "crc8_step", "crc8_branchy"]  # PINTIME_FUNCTIONS order in firmware/user/user_example.c
CONSTANT = ["mac16", "crc8_step"]  # the same cycles on every call; crc8_branchy's depend on its data
BRANCHY_CYCLES = (94, 110)  # crc8_branchy per call, counted by hand from the listing (user_example.c)
M = 20  # Makefile USER_M default
US = {"settle": 1000, "gap": 300}  # FORMAT.md §3
GROUP_LEAD_BYTES = 6  # pintime.h: push r28, ldi r28, out (2 bytes each), then the first `call`


def symbols(elf: Path) -> dict[str, tuple[int, int]]:
    """Name → (byte address, size) of the ELF's sized symbols."""
    out = subprocess.run(["avr-nm", "-S", str(elf)], check=True, capture_output=True, text=True).stdout
    return {p[3]: (int(p[0], 16), int(p[1], 16)) for p in (line.split() for line in out.splitlines())
            if len(p) == 4}


@pytest.fixture(scope="module")
def truth_cycles(tmp_path_factory) -> dict[str, float]:
    """Per function: mean cycles per call, its CALL and RET included, from simavr's histogram (whole
    numbers, the same on every call, for the CONSTANT functions)."""
    hist = tmp_path_factory.mktemp("hist") / "user_example"
    subprocess.run([str(HARNESS), str(ELF), "-o", str(hist), "--histogram", f"{hist}.csv"], check=True,
                   capture_output=True)
    with open(f"{hist}.csv") as f:
        rows = {int(r["pc"]): (int(r["count"]), int(r["cycles"])) for r in csv.DictReader(f)}
    sym = symbols(ELF)
    truth = {}
    for i, name in enumerate(FUNCTIONS):
        start, size = sym[name]
        calls = rows[start][0]  # executions of the function's first instruction
        inside = sum(c for pc, (_, c) in rows.items() if start <= pc < start + size)
        call_pc = sym[f"pintime_user_{i}_{name}"][0] + GROUP_LEAD_BYTES
        call_count, call_cycles = rows[call_pc]
        assert call_cycles % call_count == 0  # every CALL costs the same
        if name in CONSTANT:
            assert inside % calls == 0  # the same cost on every call
        truth[name] = inside / calls + call_cycles // call_count
    return truth


def test_truth_is_the_listing(truth_cycles):
    """The cycle counts documented from the listing (user_example.c at -Os, CALL 5 + body + RET 5)."""
    assert {name: truth_cycles[name] for name in CONSTANT} == {"mac16": 48, "crc8_step": 93}


def test_frames_in_run_order_and_exact():
    """RUN, CAL, R × (RUN, USER per function), END; every USER pulse k is k·T + 1 cycles, its SETTLE and
    GAPs exact (the group's 3-cycle lead is taken off the SETTLE)."""
    e = read_edge_list(EDGES).on(0)
    d = decode_frames(e.time, e.polarity)  # edge times in cycles = µs at 1 MHz
    assert d.rejected == 0 and d.incomplete == 0
    user = [f for f in d.frames if f.kind == "user"]
    reps = len(user) // len(FUNCTIONS)
    expected = ["run", "cal"] + ["run", *(["user"] * len(FUNCTIONS))] * reps + ["end"]
    assert [f.kind for f in d.frames] == expected
    assert [(f.fields["function"], f.fields["rep"], f.fields["m"]) for f in user] == [
        (i, r, M) for r in range(reps) for i in range(len(FUNCTIONS))]
    for f in user:
        if FUNCTIONS[f.fields["function"]] not in CONSTANT:
            continue
        g = f.group
        assert e.time[g[0]] - e.time[g[0] - 1] == US["settle"]
        assert np.all(e.time[g[2::2]] - e.time[g[1:-1:2]] == US["gap"])
        widths = e.time[g[1::2]] - e.time[g[0::2]]
        t = widths[1] - widths[0]
        assert np.array_equal(widths, t * np.arange(1, M + 1) + 1)


def test_exact_edges_give_the_truth(capsys, tmp_path, truth_cycles):
    result = run_json(capsys, tmp_path, "analyze", str(EDGES), "--elf", str(ELF))
    assert [r["name"] for r in result["user"]] == FUNCTIONS
    for r in (r for r in result["user"] if r["name"] in CONSTANT):
        t = r["time"]
        assert t["mean_cycles"] == pytest.approx(truth_cycles[r["name"]], abs=1e-9)
        assert t["mean_us"] == pytest.approx(truth_cycles[r["name"]], abs=1e-9)  # F_CPU = 1 MHz
        assert t["std_cycles"] < 1e-9 and r["outliers"] == 0
        assert r["intercept"]["mean_cycles"] == pytest.approx(1, abs=1e-9)  # ε, FORMAT.md §5
        assert r["r2_mean"] == pytest.approx(1) and r["residual_rms_us_mean"] < 1e-9
        assert r["m"] == M and r["reps"] > 1


def test_synthesized_capture_template(capsys, tmp_path, truth_cycles):
    """A sound-card capture (default profile) through the template locator: within 3 ns of the truth."""
    wav = tmp_path / "user.wav"
    assert main(["synth", str(EDGES), "-o", str(wav), "--profile", "default", "--seed", "3",
                 "--duration-s", "4.25"]) == 0
    result = run_json(capsys, tmp_path, "analyze", str(wav), "--method", "template")
    assert result["frames"]["rejected"] == 0 and result["frames"]["incomplete"] <= 1
    assert [r["name"] for r in result["user"]] == [f"function {i}" for i in range(len(FUNCTIONS))]  # no --elf
    assert all(r["expected_cycles"] is None and r["outside_expectation"] is None for r in result["user"])
    for name, r in zip(FUNCTIONS, result["user"], strict=True):
        if name not in CONSTANT:
            continue
        t = r["time"]
        assert abs(t["mean_us"] - truth_cycles[name]) < 0.003
        assert round(t["mean_cycles"]) == truth_cycles[name]
        assert t["ci95_us"][0] <= t["mean_us"] <= t["ci95_us"][1] and r["reps"] >= 5


def test_listing_expects_what_simavr_measures(capsys, tmp_path, truth_cycles):
    """Exact edges: each constant function's time per call is the cycles its listing gives, CALL 5 + body +
    RET 5 (mac16 48, crc8_step 93: the loop's 8 passes found from its ldi/subi/brne counter); the
    data-dependent crc8_branchy gets the listing's min–max, and both its measured slope (its whole 95 % CI)
    and simavr's mean per call lie inside it."""
    result = run_json(capsys, tmp_path, "analyze", str(EDGES), "--elf", str(ELF))
    rows = {r["name"]: r for r in result["user"]}
    for name in CONSTANT:
        r = rows[name]
        assert r["expected_cycles"] == truth_cycles[name]
        assert r["expected_min_cycles"] == r["expected_max_cycles"] == truth_cycles[name]
        assert r["time"]["mean_cycles"] == pytest.approx(r["expected_cycles"], abs=1e-9)
        assert r["outside_expectation"] is False
    assert "8 passes" in rows["crc8_step"]["expected_how"]
    b = rows["crc8_branchy"]
    low, high = BRANCHY_CYCLES
    assert b["expected_cycles"] is None
    assert (b["expected_min_cycles"], b["expected_max_cycles"]) == (low, high)
    assert low < b["time"]["ci95_cycles"][0] <= b["time"]["mean_cycles"] <= b["time"]["ci95_cycles"][1] < high
    assert low < truth_cycles["crc8_branchy"] < high and b["time"]["std_cycles"] > 0  # data-dependent indeed
    assert b["outside_expectation"] is False
    assert main(["analyze", str(EDGES), "--elf", str(ELF)]) == 0
    printed = capsys.readouterr().out
    assert "94–110" in printed and "OUTSIDE" not in printed


def test_a_wrong_expectation_is_flagged():
    """A deliberately wrong model — mac16's listing without the CALL that enters it (43 cycles, not 48) —
    leaves the exact measurement outside: the row says so in JSON and in print."""
    rows = analyze(EDGES, elf=ELF).result
    assert rows is not None
    mac16 = next(r for r in rows if r.name == "mac16")
    assert mac16.outside() is False
    wrong = dataclasses.replace(mac16, expected=path_cycles(function_cfg(ELF, "mac16")))
    assert wrong.expected is not None and wrong.expected.exact == 43 and wrong.outside() is True
    [row] = user_json([wrong])["user"]
    assert row["expected_cycles"] == 43 and row["outside_expectation"] is True
    assert "✗ OUTSIDE the expectation" in format_user([wrong])


@pytest.mark.parametrize("elf,message", [("README.md", "not an AVR ELF"),
                                         ("build/firmware/table1.elf", "was made by firmware")])
def test_wrong_elf(capsys, elf, message):
    assert main(["analyze", str(EDGES), "--elf", str(ROOT / elf)]) == 2
    assert message in capsys.readouterr().err


def test_make_user_builds_your_own_file(capsys, tmp_path):
    """`make USER_SRC=mine.c user` (README "Measure your own code"), simulated: three nops per call
    = CALL 5 + 3 + RET 5 = 13 cycles (datasheet cycle counts)."""
    mine = tmp_path / "mine.c"
    mine.write_text('#include "pintime.h"\n'
                    'void three_nops(void) { __asm__ volatile("nop\\n\\tnop\\n\\tnop"); }\n'
                    "PINTIME_FUNCTIONS(three_nops);\n")
    build = tmp_path / "build"
    make_build(build, "user", f"{build}/sim/user.json", USER_SRC=mine, USER_REPS=3, USER_M=5)
    result = run_json(capsys, tmp_path, "analyze", str(build / "sim" / "user.edges.csv"),
                      "--elf", str(build / "firmware" / "user.elf"))
    [row] = result["user"]
    assert (row["name"], row["m"], row["reps"]) == ("three_nops", 5, 3)
    assert row["time"]["mean_cycles"] == pytest.approx(13, abs=1e-9)
