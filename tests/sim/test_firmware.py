"""Firmware ground truth: the simavr edge list proves the Table 1 firmware exact to the cycle.

The 1 MHz run is `make sim`'s (build/sim/table1.*); a 16 MHz build with 2 repetitions is made in a temporary
directory. Expected values come from firmware/FORMAT.md (schedule, header bytes, §5 pulse widths), never
from the firmware's sources; frames are decoded by the analyzer's decoder (pintime.frames).
"""

from __future__ import annotations

import binascii
import itertools
import json
import re
import subprocess
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from pintime.capture.edgelist import read_edge_list
from pintime.frames import FrameDecode, decode_frames
from support import BUILD, ROOT

REF_CYCLES = 100  # ref100, CALL and RET included (FORMAT.md §5)
INIT_CYCLES = 37  # init, CALL and RET included (FORMAT.md §5)
EPSILON_CYCLES = 1  # pulse width = cycles of the calls + 1 (FORMAT.md §5)
US = {"quiet": 6000, "sync_high": 1000, "sync_low": 500, "bit0": 200, "bit1": 400, "bit_low": 200,
      "settle": 1000, "gap": 300, "cal_period": 2777}  # FORMAT.md §3, §6
CAL_COUNT = 1000
PAYLOAD = {"run": (("f_cpu_hz", 4), ("revision", 4), ("program", 1)),
           "cal": (("period_cycles", 4), ("count", 2)), "direct": (("rep", 2),),
           "executing": (("n", 2), ("rep", 2)), "differential": (("n", 2), ("rep", 2)),
           "line": (("m", 2), ("rep", 2)), "overdet": (("m", 2), ("rep", 2)), "end": (("frames", 2),),
           "table2": (("measurement", 2), ("first_round", 2), ("count", 2)),
           "user": (("function", 1), ("m", 2), ("rep", 2)),
           "table2cut": (("measurement", 2), ("cuts", 1), ("per_cut", 1))}
KIND_NUMBER = {k: i for i, k in enumerate(PAYLOAD)}  # FORMAT.md §4 order: RUN = 0 … TABLE2CUT = 10


def schedule(reps: int, f_cpu_hz: int, revision: int) -> list[tuple[str, dict[str, int]]]:
    """The frames of a table1 run, in order (FORMAT.md §6)."""
    run = ("run", {"f_cpu_hz": f_cpu_hz, "revision": revision, "program": 1})
    frames = [run, ("cal", {"period_cycles": US["cal_period"] * f_cpu_hz // 10**6, "count": CAL_COUNT})]
    for rep in range(reps):
        frames += [run, ("direct", {"rep": rep})]
        frames += [("executing", {"n": n, "rep": rep}) for n in (10, 20, 55, 100, 210)]
        frames += [("differential", {"n": n, "rep": rep}) for n in (55, 210, 1000)]
        frames += [("line", {"m": m, "rep": rep}) for m in (10, 20)]
        frames += [("overdet", {"m": 20, "rep": rep})]
    return frames + [("end", {"frames": len(frames)})]


def pulse_calls(kind: str, fields: dict[str, int]) -> list[tuple[int, int]]:
    """(calls of ref100 N, calls of init M) inside each pulse of a group (FORMAT.md §4)."""
    if kind == "direct":
        return [(1, 0)]
    if kind == "executing":
        return [(fields["n"], 0)]
    if kind == "differential":
        return [(1, 0), (2, 0)] * fields["n"]
    if kind == "line":
        return [(k, 0) for k in range(1, fields["m"] + 1)]
    if kind == "overdet":
        return [(k, 1 if k == 1 else k + 1) for k in range(1, fields["m"] + 1)]
    return []


def header_cycles(kind: str, fields: dict[str, int], cycles_per_us: int) -> list[int]:
    """Cycles between successive header edges from the SYNC's rising edge to the first group edge."""
    data = bytes([0x20 | KIND_NUMBER[kind]])  # FORMAT.md §4: version 2
    for name, size in PAYLOAD[kind]:
        data += fields[name].to_bytes(size, "big")
    data += binascii.crc_hqx(data, 0xFFFF).to_bytes(2, "big")  # CRC-16/CCITT-FALSE
    us = [US["sync_high"], US["sync_low"]]
    for byte in data:
        for bit in range(7, -1, -1):
            us += [US["bit1"] if byte >> bit & 1 else US["bit0"], US["bit_low"]]
    us[-1] = US["settle"]
    return [u * cycles_per_us for u in us]


@dataclass
class Run:
    """One simavr run: its summary, edges per channel (cycles, levels) and the decoded frames."""

    prefix: Path
    info: dict
    reps: int
    cycle: list[np.ndarray]  # per channel, int64 cycles
    level: list[np.ndarray]  # per channel, level after the edge
    decode: FrameDecode


def load_run(prefix: Path, reps: int) -> Run:
    info = json.loads(prefix.with_suffix(".json").read_text())
    edges = read_edge_list(prefix.with_suffix(".edges.csv"))
    cycle = [edges.time[edges.channel == ch].astype(np.int64) for ch in (0, 1)]
    level = [(edges.polarity[edges.channel == ch] > 0).astype(int) for ch in (0, 1)]
    time_us = cycle[0] * 1e6 / info["f_cpu_hz"]
    decode = decode_frames(time_us, np.where(level[0] == 1, 1, -1))
    return Run(prefix, info, reps, cycle, level, decode)


def built_reps(flags: Path) -> int:
    match = re.search(r"-DREPS=(\d+)", flags.read_text())
    assert match, f"{flags} does not record REPS"
    return int(match.group(1))



@pytest.fixture(scope="module", params=["1MHz", "16MHz"])
def run(request) -> Run:
    if request.param == "1MHz":
        prefix = BUILD / "sim" / "table1"
        if not prefix.with_suffix(".json").exists():
            pytest.fail("build/sim/table1.json missing: run `make sim` first (`make test` does)")
        return load_run(prefix, built_reps(BUILD / "firmware" / "flags.txt"))
    build = request.getfixturevalue("build_16mhz")
    return load_run(build / "sim" / "table1", 2)


def cycles_per_us(run: Run) -> int:
    return run.info["f_cpu_hz"] // 10**6


def test_run_summary(run: Run):
    assert run.info["end"] == "firmware_done"
    assert run.info["mcu"] == "atmega2560"
    assert run.info["edges"] == {"measurement": len(run.cycle[0]), "reference": len(run.cycle[1])}
    assert run.cycle[0][-1] < run.info["cycles_simulated"]


def test_frames_round_trip_through_decoder(run: Run):
    d = run.decode
    assert (d.rejected, d.incomplete, d.inverted) == (0, 0, False)
    got = [(f.kind, f.fields) for f in d.frames]
    assert got == schedule(run.reps, run.info["f_cpu_hz"], run.info["revision"])


def test_header_waveforms_exact(run: Run):
    """Every header edge sits exactly where FORMAT.md §3 puts it, and each frame starts after a QUIET."""
    t = run.cycle[0]
    quiet = US["quiet"] * cycles_per_us(run)
    for f in run.decode.frames:
        expected = header_cycles(f.kind, f.fields, cycles_per_us(run))
        s = f.start
        n = len(expected) if len(f.group) else len(expected) - 1  # an empty group has no edge after SETTLE
        assert list(np.diff(t[s:s + n + 1])) == expected[:n], f"{f.kind} {f.fields}"
        assert s == 0 or t[s] - t[s - 1] >= quiet


def test_measurement_pin_polarity(run: Run):
    """Idle low; every edge alternates, so every pulse is rising-then-falling (FORMAT.md §1)."""
    lv = run.level[0]
    assert lv[0] == 1 and lv[-1] == 0
    assert np.all(lv[1:] != lv[:-1])


def group_pulses(run: Run, f) -> tuple[np.ndarray, np.ndarray]:
    """Rising and falling edge cycles of a group's pulses, checking the rising-first polarity."""
    g = f.group
    assert np.all(run.level[0][g[0::2]] == 1) and np.all(run.level[0][g[1::2]] == 0)
    return run.cycle[0][g[0::2]], run.cycle[0][g[1::2]]


def test_every_pulse_width_exact(run: Run):
    """Width = 100·N + 37·M + 1 for every pulse of every technique; GAPs exactly 300 µs (FORMAT.md §3, §5)."""
    gap = US["gap"] * cycles_per_us(run)
    executing_c = set()
    for f in run.decode.frames:
        calls = pulse_calls(f.kind, f.fields)
        if not calls:
            continue
        rise, fall = group_pulses(run, f)
        expected = [REF_CYCLES * n + INIT_CYCLES * m + EPSILON_CYCLES for n, m in calls]
        assert list(fall - rise) == expected, f"{f.kind} {f.fields}"
        assert np.all(rise[1:] - fall[:-1] == gap)
        if f.kind == "executing":
            executing_c.add(int(fall[0] - rise[0]) - REF_CYCLES * f.fields["n"])
    assert executing_c == {EPSILON_CYCLES}  # one constant c for every N


def test_ref100_exactly_100_cycles(run: Run):
    """The differential pairs measure ref100 alone: pulse(2 calls) − pulse(1 call) = 100 every time."""
    pairs = 0
    for f in run.decode.of_kind("differential"):
        rise, fall = group_pulses(run, f)
        width = fall - rise
        assert np.all(width[1::2] - width[0::2] == REF_CYCLES)
        pairs += len(width) // 2
    assert pairs == run.reps * (55 + 210 + 1000)


def test_line_fit_slope_exactly_100(run: Run):
    for f in run.decode.of_kind("line"):
        rise, fall = group_pulses(run, f)
        k = np.arange(1, f.fields["m"] + 1)
        w = [int(x) for x in fall - rise]
        k_mean, w_mean = Fraction(int(k.sum()), len(k)), Fraction(sum(w), len(w))
        slope = (sum((ki - k_mean) * (wi - w_mean) for ki, wi in zip(k, w, strict=True))
                 / sum((ki - k_mean) ** 2 for ki in k))
        intercept = w_mean - slope * k_mean
        assert slope == REF_CYCLES and intercept == EPSILON_CYCLES
        assert all(wi == slope * ki + intercept for ki, wi in zip(k, w, strict=True))  # zero residual


def test_overdetermined_system_recovers_both_routines(run: Run):
    """Least squares on [N_k, M_k, 1] (paper eq. 6–7) gives ref100 = 100, init = 37, c = 1."""
    for f in run.decode.of_kind("overdet"):
        rise, fall = group_pulses(run, f)
        a = np.array([[n, m, 1] for n, m in pulse_calls(f.kind, f.fields)], dtype=float)
        x, _, rank, _ = np.linalg.lstsq(a, (fall - rise).astype(float), rcond=None)
        assert rank == 3
        np.testing.assert_allclose(x, [REF_CYCLES, INIT_CYCLES, EPSILON_CYCLES], rtol=0, atol=1e-9)


def test_calibration_train_exact(run: Run):
    (cal,) = run.decode.of_kind("cal")
    t = run.cycle[0][cal.group]
    assert len(t) == cal.fields["count"] == CAL_COUNT
    assert np.all(np.diff(t) == cal.fields["period_cycles"])
    assert list(run.level[0][cal.group[:2]]) == [1, 0] and run.level[0][cal.group[-1]] == 0


def test_reference_half_period_exact(run: Run):
    """OC1A toggles every F_CPU / 2 cycles for the whole run: period exactly 1 s of MCU time."""
    t, lv = run.cycle[1], run.level[1]
    f_cpu = run.info["f_cpu_hz"]
    assert len(t) >= 2 * run.info["cycles_simulated"] // f_cpu - 2
    assert np.all(np.diff(t) == f_cpu // 2)
    assert np.all(lv[1:] != lv[:-1])


# --- listing ------------------------------------------------------------------------------------------

INSTRUCTION = re.compile(r"^\s*([0-9a-f]+):\s+(?:[0-9a-f]{2} )+\s*(\w+)\s*([^;]*)")
SKIPS = {"cpse", "sbrc", "sbrs", "sbic", "sbis"}


def skip_bug_sites(lines: list[str]) -> list[str]:
    """Instructions simavr 1.6 mis-executes: a skip followed by adiw/sbiw with immediate low nibble ≥ 0xC."""
    ins = [m for m in map(INSTRUCTION.match, lines) if m]
    sites = []
    for prev, cur in itertools.pairwise(ins):
        if prev.group(2) in SKIPS and cur.group(2) in ("adiw", "sbiw"):
            imm = int(cur.group(3).split(",")[1].strip(), 0)
            if imm & 0xF >= 0xC:
                sites.append(f"{prev.group(1)}: {prev.group(2)} then {cur.group(2)} {cur.group(3).strip()}")
    return sites


def test_skip_bug_scan_finds_a_planted_site():
    lines = ["     100:\tfe 01       \tsbrc\tr24, 0", "     102:\t4c 97       \tsbiw\tr24, 0x1c\t; 28",
             "     104:\tfe 01       \tsbrc\tr24, 0", "     106:\t01 97       \tsbiw\tr24, 0x01\t; 1"]
    assert skip_bug_sites(lines) == ["100: sbrc then sbiw r24, 0x1c"]


def test_listing_has_no_skip_bug_site():
    lss = BUILD / "firmware" / "table1.lss"
    lines = lss.read_text().splitlines()
    assert sum(1 for line in lines if INSTRUCTION.match(line)) > 1000
    assert skip_bug_sites(lines) == []


def test_hex_holds_only_code_and_data():
    """The chip's HEX has exactly the ELF's .text and .data bytes, nothing of simavr's .mmcu section."""
    firmware = BUILD / "firmware"
    size = subprocess.run(["avr-size", "-A", str(firmware / "table1.elf")], capture_output=True, text=True,
                          check=True).stdout
    sections = {f[0]: int(f[1]) for f in (line.split() for line in size.splitlines()) if f and f[0][0] == "."}
    assert sections[".mmcu"] > 0
    data_bytes, base, top = 0, 0, 0
    for line in (firmware / "table1.hex").read_text().split():
        record = bytes.fromhex(line[1:])
        length, address, kind = record[0], int.from_bytes(record[1:3], "big"), record[3]
        if kind == 0:
            data_bytes += length
            top = max(top, base + address + length)
        elif kind in (2, 4):
            base = int.from_bytes(record[4:6], "big") << (4 if kind == 2 else 16)
    assert data_bytes == sections[".text"] + sections[".data"]
    assert top <= 256 * 1024  # inside the ATmega2560's flash


# Assembler sources under firmware/ with no instruction, and why; every other one is timed code (pulses, GAPs,
# frame edges or the calls between them) and states each instruction's cycles.
NO_INSTRUCTIONS = {"table2_nocuts.S": "symbols only: the empty stand-in for the generated cut copies"}


def assembler_instructions(text: str) -> list[str]:
    """The lines of an assembler source that hold an instruction. A line that invokes one of the file's own
    macros is left out: the macro's lines are checked where it is defined."""
    macros = set(re.findall(r"^\s*\.macro\s+(\w+)", text, re.MULTILINE))
    lines = []
    for line in text.splitlines():
        code = re.sub(r"^\s*[\\\w]*:", "", line.split(";")[0]).strip()
        if code and not code.startswith((".", "#")) and code.split()[0] not in macros:
            lines.append(line)
    return lines


def test_assembler_instructions_skips_labels_directives_and_macro_calls():
    text = "\n".join([".macro EDGE", "  out 0, r18 ; [1]", ".endm", "\\name:", "1: EDGE", "#if X",
                      "  .rept 2", "  nop", "  .endr", "#endif"])
    assert assembler_instructions(text) == ["  out 0, r18 ; [1]", "  nop"]


def test_timed_assembler_annotates_every_instruction():
    """Every assembler source under firmware/ with instructions states each one's cycles as `; [n]`, so a
    timed routine's cost reads from its source."""
    sources = sorted((ROOT / "firmware").rglob("*.S"))
    assert NO_INSTRUCTIONS.keys() <= {path.name for path in sources}
    for path in sources:
        instructions = assembler_instructions(path.read_text())
        if path.name in NO_INSTRUCTIONS:
            assert instructions == [], path.name
            continue
        assert instructions, path.name
        for line in instructions:
            assert "; [" in line, f"{path.relative_to(ROOT)}: {line.strip()}"


# --- harness ------------------------------------------------------------------------------------------

def harness(build: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(build / "sim" / "harness"), *args], capture_output=True, text=True,
                          check=False)


def test_histogram_counts_calls(build_16mhz: Path, tmp_path: Path):
    """Per-PC counts: ref100 and init37 run once per call the schedule makes, taking 100 and 37 cycles."""
    elf = build_16mhz / "firmware" / "table1.elf"
    hist_csv = tmp_path / "pcs.csv"
    result = harness(build_16mhz, str(elf), "-o", str(tmp_path / "h"), "--histogram", str(hist_csv))
    assert result.returncode == 0, result.stderr
    nm = subprocess.run(["avr-nm", "-S", str(elf)], capture_output=True, text=True, check=True).stdout
    symbols = {f[3]: (int(f[0], 16), int(f[1], 16)) for f in map(str.split, nm.splitlines()) if len(f) == 4}
    hist = np.loadtxt(hist_csv, delimiter=",", skiprows=1, dtype=np.int64)
    pc, count, cycles = hist.T
    calls = [c for kind, fields in schedule(2, 16_000_000, 0) for c in pulse_calls(kind, fields)]
    for name, calls_made, cycles_per_call in (("ref100", sum(n for n, _ in calls), REF_CYCLES),
                                              ("init37", sum(m for _, m in calls), INIT_CYCLES)):
        start, size = symbols[name]
        inside = (pc >= start) & (pc < start + size)
        assert count[pc == start].item() == calls_made
        # the CALL's 5 cycles are charged to the caller's PC, the rest to the routine's own instructions
        assert cycles[inside].sum() == calls_made * (cycles_per_call - 5)
    info = json.loads((tmp_path / "h.json").read_text())
    assert cycles.sum() == info["cycles_simulated"]


def test_vcd_matches_edge_list(build_16mhz: Path):
    """The VCD (read by pyvcd) holds the edge list's edges at time = cycle · 1e12 / F_CPU ps, exactly."""
    from vcd.reader import TokenKind, tokenize

    prefix = build_16mhz / "sim" / "table1"
    ps_per_cycle = 10**12 // json.loads(prefix.with_suffix(".json").read_text())["f_cpu_hz"]
    channel_of, now, changes = {}, 0, []
    with open(prefix.with_suffix(".vcd"), "rb") as f:
        for token in tokenize(f):
            if token.kind is TokenKind.TIMESCALE:
                assert (int(token.timescale.magnitude), token.timescale.unit.value) == (1, "ps")
            elif token.kind is TokenKind.VAR:
                channel_of[token.var.id_code] = 0 if "PA0" in token.var.reference else 1
            elif token.kind is TokenKind.CHANGE_TIME:
                now = token.time_change
            elif token.kind is TokenKind.CHANGE_SCALAR and now > 0:
                changes.append((now, channel_of[token.scalar_change.id_code], int(token.scalar_change.value)))
    edges = np.loadtxt(prefix.with_suffix(".edges.csv"), delimiter=",", skiprows=1, dtype=np.int64)
    assert len(edges) > 1000
    assert changes == [(c * ps_per_cycle, ch, lv) for c, ch, lv in edges.tolist()]


def test_harness_missing_elf(build_16mhz: Path, tmp_path: Path):
    result = harness(build_16mhz, str(tmp_path / "nope.elf"), "-o", str(tmp_path / "x"))
    assert result.returncode == 2
    assert result.stderr.strip() == f"harness: cannot open ELF {tmp_path / 'nope.elf'}"


def test_harness_rejects_non_elf(build_16mhz: Path, tmp_path: Path):
    bogus = tmp_path / "bogus.elf"
    bogus.write_text("not an ELF\n")
    result = harness(build_16mhz, str(bogus), "-o", str(tmp_path / "x"))
    assert result.returncode == 2
    assert result.stderr.strip() == f"harness: {bogus} is not an ELF file"


def test_harness_cycle_budget(build_16mhz: Path, tmp_path: Path):
    """A run cut by the budget fails clearly and leaves what it recorded, sorted, in the files."""
    elf = build_16mhz / "firmware" / "table1.elf"
    result = harness(build_16mhz, str(elf), "-o", str(tmp_path / "cut"), "--max-cycles", "2000000")
    assert result.returncode == 1
    assert "cycle budget of 2000000 cycles exceeded" in result.stderr
    info = json.loads((tmp_path / "cut.json").read_text())
    assert info["end"] == "cycle_budget" and 2_000_000 <= info["cycles_simulated"] < 2_000_100
    edges = read_edge_list(tmp_path / "cut.edges.csv")
    assert 0 < len(edges.time) == info["edges"]["measurement"] + info["edges"]["reference"]
    assert edges.time[-1] < 2_000_100
