"""The table2 program in simavr: frames as FORMAT.md §4/§7 says, and every pulse exactly the static
cost of the visits the harness counted in it, plus ε (firmware/table2/TABLE2.md §3–§4); the cut copies of §6
byte for byte the coder but for their patched word, and every cut pulse the cost of the exits taken before it
first reached its block, plus ε_cut.

Small builds in a temporary directory (`make sim PROGRAMS=table2` with few rounds): at 1 MHz two measurements
of 200 rounds; at 16 MHz one of 150, so its last frame holds a partial batch. Frames are decoded by the
analyzer's decoder; the visits are rebuilt with pintime.avr.cfg from the harness's per-pulse counts
(`--watch`), against the CFG that `pintime cfg` reads from the same ELF.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from adpcm_build import build_rounds_elf, run_check_elf
from pintime.avr.cfg import (
    Cfg,
    disassemble,
    function_cfg,
    instruction_cycles,
    visits_from_histogram,
    watch_addresses,
)
from pintime.avr.cutcopies import CutCopies, check_cut_build, find_copies
from pintime.capture.edgelist import read_edge_list
from pintime.errors import PintimeError
from pintime.frames import FrameDecode, decode_frames
from pintime.table2.table import Table2, build_table2
from pintime.table2.visits import load_sim_rounds, match
from support import make_build
from test_firmware import US, Run, header_cycles, load_run

BATCH_ROUNDS = 100  # rounds per TABLE2 frame (FORMAT.md §7)
CALL_CYCLES = 5  # CALL on the ATmega2560 (22-bit PC), datasheet instruction set summary
MEAS_PINA_IO = 0x00  # PINA in I/O space: `out 0x00, r` toggles the measurement pin (pins.h)
CUT_ROUNDS = 5  # pulses per cut in a TABLE2CUT frame (Makefile default)
CUT_HOLD_US = 2000  # a reached cut's wait before its falling edge (FORMAT.md §7)


def epsilon_cut(t2: Table2Run) -> int:
    """ε_cut (FORMAT.md §7): rising `out` 1, ICALL 4 (22-bit PC), the patched RJMP 2, the stub's JMP 3, two
    LDI and the hold's CALL of delay_exact, LDS 2."""
    return 1 + 4 + 2 + 3 + 2 + CUT_HOLD_US * t2.run.info["f_cpu_hz"] // 10**6 + 2
EPSILON_UNCUT = 1 + 4  # a cut copy that never reaches its block: rising `out`, ICALL, then its own RET
BUILDS = {"1MHz": (1_000_000, 2, 200), "16MHz": (16_000_000, 1, 150)}  # F_CPU, MEASUREMENTS, ROUNDS


@dataclass
class Table2Run:
    run: Run  # edges, summary and decoded frames (test_firmware.load_run)
    elf: Path
    measurements: int
    rounds: int
    cfg: Cfg
    watch: np.ndarray  # watched byte addresses, in the watch file's (= visits columns') order
    visits: np.ndarray  # visits.csv rows: pulse, rise_cycle, width_cycles, then count, cycles per address
    copies: CutCopies

    def rows_of(self, kind: str) -> np.ndarray:
        """The visits rows of the pulses of one frame kind, in pulse order."""
        rising = np.concatenate([f.group[0::2] for f in self.run.decode.of_kind(kind)])
        return self.visits[np.isin(self.visits[:, 0], rising // 2)]


@pytest.fixture(scope="module", params=list(BUILDS))
def t2(request, tmp_path_factory) -> Table2Run:
    f_cpu_hz, measurements, rounds = BUILDS[request.param]
    build = make_build(tmp_path_factory.mktemp(f"table2_{request.param}"), "sim", F_CPU=f_cpu_hz,
                       MEASUREMENTS=measurements, ROUNDS=rounds, PROGRAMS="table2")
    prefix = build / "sim" / "table2"
    elf = build / "firmware" / "table2.elf"
    watch = np.array([int(line, 16) for line in Path(f"{prefix}.watch").read_text().split()], dtype=np.int64)
    visits = np.loadtxt(f"{prefix}.visits.csv", delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    copies = find_copies(elf, "adpcm_coder")
    assert copies is not None
    return Table2Run(load_run(prefix, 0), elf, measurements, rounds, function_cfg(elf, "adpcm_coder"), watch,
                     visits, copies)


def schedule(t2: Table2Run) -> list[tuple[str, dict[str, int]]]:
    """The frames of a table2 run, in order (FORMAT.md §7)."""
    info = t2.run.info
    frames = [("run", {"f_cpu_hz": info["f_cpu_hz"], "revision": info["revision"], "program": 2}),
              ("cal", {"period_cycles": US["cal_period"] * info["f_cpu_hz"] // 10**6, "count": 1000})]
    for m in range(t2.measurements):
        frames += [("table2", {"measurement": m, "first_round": first,
                               "count": min(BATCH_ROUNDS, t2.rounds - first)})
                   for first in range(0, t2.rounds, BATCH_ROUNDS)]
        frames.append(("table2cut", {"measurement": m, "cuts": len(t2.cfg.blocks), "per_cut": CUT_ROUNDS}))
    return frames + [("end", {"frames": len(frames)})]


def epsilon_cycles(elf: Path) -> int:
    """ε from the listing: adpcm_pulse's rising `out`, then only `call adpcm_coder`, then the falling `out`
    (whose start ends the pulse). The coder's RET is part of its own block costs."""
    code = disassemble(elf, "adpcm_pulse")
    toggles = [k for k, i in enumerate(code)
               if i.mnemonic == "out" and int(i.operands.split(",")[0], 0) == MEAS_PINA_IO]
    assert len(toggles) == 2, [str(i) for i in code]
    rise, fall = toggles
    (call,) = code[rise + 1:fall]
    assert call.mnemonic == "call" and call.target() == function_cfg(elf, "adpcm_coder").address
    assert code[rise].operands == code[fall].operands  # the same mask register for both edges
    return instruction_cycles(code[rise]) + CALL_CYCLES


def test_run_ends_and_records_its_truth_files(t2: Table2Run):
    info = t2.run.info
    assert info["end"] == "firmware_done"
    sim = t2.run.prefix.parent
    cut_pulses = t2.measurements * len(t2.cfg.blocks) * CUT_ROUNDS
    visits = dict(info["visits"])
    assert visits.pop("aliased_outside_pulses") > 0  # the firmware's dry runs of the copies, between frames
    assert visits == {"file": f"{t2.run.prefix}.visits.csv", "watch": f"{t2.run.prefix}.watch",
                      "blocks": f"{t2.run.prefix}.blocks.json", "addresses": len(t2.watch),
                      "pulses": t2.measurements * t2.rounds + cut_pulses, "watched_outside_pulses": 0}
    blocks = json.loads((sim / "table2.blocks.json").read_text())
    assert blocks["watch"] == watch_addresses(t2.cfg)
    assert t2.watch.tolist() == t2.copies.watch() == watch_addresses(t2.cfg) + blocks["cuts"]["patched"]
    assert [b["name"] for b in blocks["blocks"]] == [b.name for b in t2.cfg.blocks]


def test_frames_follow_the_table2_schedule(t2: Table2Run):
    d = t2.run.decode
    assert (d.rejected, d.incomplete, d.inverted) == (0, 0, False)
    assert [(f.kind, f.fields) for f in d.frames] == schedule(t2)


def test_headers_settle_and_gaps_exact(t2: Table2Run):
    """Every header edge and the SETTLE exact (the group's lead before its first edge included), every
    pulse rising then falling, every GAP exactly 300 µs (FORMAT.md §3)."""
    t, level = t2.run.cycle[0], t2.run.level[0]
    per_us = t2.run.info["f_cpu_hz"] // 10**6
    assert level[0] == 1 and level[-1] == 0 and np.all(level[1:] != level[:-1])
    for f in t2.run.decode.frames:
        expected = header_cycles(f.kind, f.fields, per_us)
        n = len(expected) if len(f.group) else len(expected) - 1
        assert list(np.diff(t[f.start:f.start + n + 1])) == expected[:n], f"{f.kind} {f.fields}"
        assert f.start == 0 or t[f.start] - t[f.start - 1] >= US["quiet"] * per_us
        if f.kind == "table2":
            assert np.all(level[f.group[0::2]] == 1) and np.all(level[f.group[1::2]] == 0)
            assert np.all(t[f.group[2::2]] - t[f.group[1:-1:2]] == US["gap"] * per_us)
        if f.kind == "table2cut":  # C code between the pulses: 0 or 14 cycles over (FORMAT.md §7)
            assert np.all(level[f.group[0::2]] == 1) and np.all(level[f.group[1::2]] == 0)
            assert set(np.unique(t[f.group[2::2]] - t[f.group[1:-1:2]] - US["gap"] * per_us)) <= {0, 14}


def test_epsilon_is_six_cycles(t2: Table2Run):
    assert epsilon_cycles(t2.elf) == 6


def test_every_pulse_is_its_visits_cost_plus_epsilon(t2: Table2Run):
    """The end-to-end truth check of TABLE2.md §4: one visits row per TABLE2 pulse, in order, at its edges,
    and its width = Σ exit counts × exit costs (pintime.avr.cfg) + ε, exactly, for every pulse."""
    t = t2.run.cycle[0]
    rising = np.sort(np.concatenate([f.group[0::2] for f in t2.run.decode.frames
                                     if f.kind in ("table2", "table2cut")]))
    pulse, rise_cycle, width = t2.visits[:, :3].T
    np.testing.assert_array_equal(pulse, rising // 2)  # pulse p = measurement-pin edges 2p, 2p + 1
    np.testing.assert_array_equal(rise_cycle, t[rising])
    np.testing.assert_array_equal(width, t[rising + 1] - t[rising])
    eps = epsilon_cycles(t2.elf)
    rows = t2.rows_of("table2")
    costs = [visits_from_histogram(t2.cfg, t2.watch, row[3::2], row[4::2]).cycles(t2.cfg) + eps
             for row in rows]
    np.testing.assert_array_equal(costs, rows[:, 2])


def test_every_cut_pulse_is_its_prefix_cost_plus_epsilon_cut(t2: Table2Run):
    """TABLE2.md §6 end to end: pulse i of a TABLE2CUT frame runs copy i div CUT_ROUNDS; the harness counts
    the visits inside the copy as the coder's (--alias) and shows whether its patched word ran (once, and no
    other copy's); the width is the cost of the exits taken before the cut + ε_cut when it did, the whole
    call's cost + 5 when the round never reached the block. The cut at BB0 is ε_cut alone."""
    cuts = len(t2.cfg.blocks)
    rows = t2.rows_of("table2cut")
    assert len(rows) == t2.measurements * cuts * CUT_ROUNDS
    patched = rows[:, 3::2][:, len(watch_addresses(t2.cfg)):]  # per copy's patched word
    cut = np.tile(np.repeat(np.arange(cuts), CUT_ROUNDS), t2.measurements)
    hit = patched[np.arange(len(rows)), cut]
    assert set(np.unique(hit)) <= {0, 1} and patched.sum(axis=1).tolist() == hit.tolist()
    for row, c, reached in zip(rows, cut, hit, strict=True):
        v = visits_from_histogram(t2.cfg, t2.watch, row[3::2], row[4::2])
        assert row[2] == v.cycles(t2.cfg) + (epsilon_cut(t2) if reached else EPSILON_UNCUT)
        if reached:  # block c never ran: the first arrival is the cut
            assert v.block_counts[c] == 0 and (c > 0 or v.block_counts.sum() == 0)
    assert np.all(rows[cut == 0, 2] == epsilon_cut(t2)) and np.all(hit[cut == 0] == 1)
    assert hit.mean() > 0.9  # the firmware's dry runs found reaching rounds for (nearly) every cut


def test_cut_copies_are_the_coder_byte_for_byte(t2: Table2Run, tmp_path: Path):
    """The build's check (`pintime cfg --check-cuts`) passes on the build, and names the copy when one byte
    of a copy differs."""
    first = t2.elf.with_name("table2.pass1.elf")
    assert check_cut_build(t2.elf, first, "adpcm_coder").base == t2.copies.base
    header = subprocess.run(["avr-objdump", "-h", str(t2.elf)], capture_output=True, text=True,
                            check=True).stdout
    text = next(line.split() for line in header.splitlines() if line.split()[1:2] == [".text"])
    tampered = tmp_path / "tampered.elf"
    data = bytearray(t2.elf.read_bytes())
    data[int(text[5], 16) + t2.copies.start(5) + 40] ^= 0x01  # a byte of copy 5, not its patched word
    tampered.write_bytes(bytes(data))
    with pytest.raises(PintimeError, match="copy 5 is not adpcm_coder cut at BB5"):
        check_cut_build(tampered, first, "adpcm_coder")


def block_counts(t2: Table2Run) -> np.ndarray:
    """Rounds × blocks visit counts of the TABLE2 pulses, rows in pulse order."""
    return np.array([visits_from_histogram(t2.cfg, t2.watch, row[3::2], row[4::2]).block_counts
                     for row in t2.rows_of("table2")])


def test_counts_vary_except_once_per_call_blocks(t2: Table2Run):
    """In every measurement each block's count varies across rounds, except blocks run exactly once per
    call; the count matrix has the rank TABLE2.md §5 reports (11, with or without the ε column)."""
    counts = block_counts(t2)
    for m in range(t2.measurements):
        a = counts[m * t2.rounds:(m + 1) * t2.rounds]
        constant = a.min(axis=0) == a.max(axis=0)
        assert (a[:, constant] == 1).all()
        assert [t2.cfg.blocks[k].name for k in np.flatnonzero(constant)] == ["BB0", "BB2", "BB33", "BB35"]
        assert np.linalg.matrix_rank(a) == 11
        assert np.linalg.matrix_rank(np.column_stack([a, np.ones(len(a))])) == 11


@pytest.fixture(scope="module")
def check_rounds(t2: Table2Run, tmp_path_factory) -> tuple[Path, list[tuple[str, int, int, int]]]:
    """tests/adpcm_build.py's rounds firmware on measurement 0's rounds (generator seed 1): its ELF and,
    per round, the coder's output, end state and Timer1 cycles around the call, from simavr."""
    elf = build_rounds_elf(tmp_path_factory.mktemp("check"), rounds=t2.rounds, seed=1, max_len=24)
    return elf, run_check_elf(elf, t2.rounds)


def test_coder_compiled_as_in_the_cfg_tests(t2: Table2Run, check_rounds):
    """adpcm_coder in table2.elf has the instructions and block costs of tests/adpcm_build.py's build,
    whose costs test_cfg.py checks against simavr instruction by instruction."""
    reference = function_cfg(check_rounds[0], "adpcm_coder")

    def shape(cfg: Cfg) -> list:
        return [([i.mnemonic for i in b.instructions], [e.cycles for e in b.exits]) for b in cfg.blocks]

    assert shape(t2.cfg) == shape(reference)


def test_rounds_are_the_generators(t2: Table2Run, check_rounds):
    """Measurement 0 runs the rounds of the generator seeded with 1 (FORMAT.md §7): its pulse widths follow
    the call times of the check firmware round by round (one constant apart), whose outputs test_adpcm.py
    proves bit-identical to the host build's."""
    widths = t2.visits[:t2.rounds, 2]
    call_cycles = np.array([cycles for *_, cycles in check_rounds[1]])
    offset = call_cycles - widths
    assert np.all(offset == offset[0]), offset


def harness(t2: Table2Run, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(t2.run.prefix.parent / "harness"), str(t2.elf), "-o", str(tmp_path / "x"),
                           *args], capture_output=True, text=True, check=False)


@pytest.mark.parametrize("content, line", [("0x5a4\nzz\n", 2), ("0x5a5\n", 1), ("0x5a4\n0x5a4\n", 2),
                                           ("0x4000000\n", 1)])
def test_harness_rejects_bad_watch_file(t2: Table2Run, tmp_path: Path, content: str, line: int):
    watch = tmp_path / "bad.watch"
    watch.write_text(content)
    result = harness(t2, tmp_path, "--watch", str(watch))
    assert result.returncode == 2
    assert result.stderr.strip() == (f"harness: {watch}:{line}: expected a new even hex byte address inside "
                                     "the flash image")


def test_harness_blocks_needs_watch(t2: Table2Run, tmp_path: Path):
    result = harness(t2, tmp_path, "--blocks", "x.json")
    assert (result.returncode, result.stderr.strip()) == (2, "harness: --blocks and --alias need --watch")


def resolved(t2: Table2Run, edges: Path | None = None) -> tuple[FrameDecode, Table2]:
    """The decoded frames and Table 2 of the run's exact edges (or of ``edges``, an edited copy) with the
    run's visits, in MCU time from F_CPU (the 16 MHz run is too short for the clock calibration)."""
    meas = read_edge_list(edges or Path(f"{t2.run.prefix}.edges.csv")).on(0)
    us_per_cycle = 1e6 / t2.run.info["f_cpu_hz"]
    decode = decode_frames(meas.time * us_per_cycle, meas.polarity, start_us=0.0)
    sim = load_sim_rounds(Path(f"{t2.run.prefix}.visits.csv"))
    return decode, build_table2(sim.cfg, match(sim, decode.frames, meas.time, us_per_cycle), us_per_cycle)


def test_cut_system_resolves_every_exit_exactly(t2: Table2Run):
    """TABLE2.md §6 on the exact edges: the rounds and the reached cut pulses have rank 50 of the 53
    columns (51 exits, ε, ε_cut); what stays merged is exactly the two fixed-trip loops and the return block
    with ε, each split by its stated constraint; every cut raises the rank; every column is then its simavr
    cost, exactly."""
    r = resolved(t2)[1].resolved
    assert r is not None and r.skipped == [] and r.outliers == 0
    assert len(r.reduction.basis) == 50 and len(r.columns) == 53
    merged = sorted(sorted(name for name, _ in r.reduction.members(u)) for u in range(50)
                    if len(r.reduction.members(u)) > 1)
    assert merged == [["BB29→BB29", "BB29→BB30"], ["BB35→ret", "ε"], ["BB7→BB7", "BB7→BB8"]]
    assert r.needed_cuts == r.cut_blocks == list(range(len(t2.cfg.blocks)))
    us_per_cycle = 1e6 / t2.run.info["f_cpu_hz"]
    for c in r.columns:
        assert c.estimate is not None
        assert abs(c.estimate.mean_us / us_per_cycle - c.truth_cycles) < 1e-6, c
        assert (c.how == "measured") == (c.name not in {n for group in merged for n in group}), c
    exits = {c.name: c.truth_cycles for c in r.columns}
    assert [exits[f"BB{e.source}→{'ret' if e.target is None else f'BB{e.target}'}"]
            for e in t2.cfg.exits] == [e.cycles for e in t2.cfg.exits]
    assert (exits["ε"], exits["ε_cut"]) == (6, epsilon_cut(t2))


def edited_edges(t2: Table2Run, tmp_path: Path, drop: np.ndarray) -> Path:
    """A copy of the exact edge list without the measurement-pin edges whose indices are in ``drop``."""
    lines = Path(f"{t2.run.prefix}.edges.csv").read_text().splitlines()
    meas_rows = [k for k, line in enumerate(lines[1:], 1) if line.split(",")[1] == "0"]
    gone = {meas_rows[i] for i in drop.tolist()}
    path = tmp_path / "edited.edges.csv"
    path.write_text("\n".join(line for k, line in enumerate(lines) if k not in gone) + "\n")
    return path


def test_lost_or_damaged_cut_frames_are_counted_not_guessed(t2: Table2Run, tmp_path: Path):
    """A TABLE2CUT frame that lost a pulse is rejected (counted by the decoder); its measurement has no cut
    rows, so its combined system is rank-deficient and skipped (counted), and the others still resolve
    every exit exactly. With no cut frame at all there is no resolved table, only the reason."""
    cut_frames = t2.run.decode.of_kind("table2cut")
    damaged = edited_edges(t2, tmp_path, cut_frames[0].group[-2:])  # the frame's last pulse
    decode, table2 = resolved(t2, damaged)
    assert decode.rejected == 1 and len(decode.of_kind("table2cut")) == t2.measurements - 1
    r = table2.resolved
    if t2.measurements == 1:
        assert r is None and table2.resolved_note is not None and "no TABLE2CUT" in table2.resolved_note
    else:
        assert r is not None and r.skipped == [0] and len(r.measurements) == t2.measurements - 1
        assert all(c.estimate is not None and abs(c.estimate.mean_us * t2.run.info["f_cpu_hz"] / 1e6
                                                  - c.truth_cycles) < 1e-6 for c in r.columns)
    everything = np.concatenate([np.arange(f.start, f.group[-1] + 1) for f in cut_frames])
    decode, table2 = resolved(t2, edited_edges(t2, tmp_path, everything))
    assert decode.rejected == 0 and not decode.of_kind("table2cut")
    assert table2.resolved is None and table2.resolved_note is not None
    assert "no TABLE2CUT" in table2.resolved_note


@pytest.mark.parametrize("content, why", [("zz\n", "expected `start end target`"),
                                          ("0x100 0x80 0x0\n", "expected `start end target`"),
                                          ("0x100 0x104 0x0 9\n", "expected `start end target`"),
                                          ("0x100 0x108 0x0\n0x104 0x10c 0x0\n", "alias ranges overlap")])
def test_harness_rejects_bad_alias_file(t2: Table2Run, tmp_path: Path, content: str, why: str):
    alias = tmp_path / "bad.alias"
    alias.write_text(content)
    result = harness(t2, tmp_path, "--watch", f"{t2.run.prefix}.watch", "--alias", str(alias))
    assert result.returncode == 2 and why in result.stderr
