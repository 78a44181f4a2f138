"""pintime.avr.cfg on the AVR build of firmware/table2/adpcm.c: CFG structure, and block costs against simavr.

simavr ground truth comes from tests/pc_trace.c (a minimal libsimavr runner): it runs
tests/firmware/adpcm_check.c and logs, for every instruction executed inside adpcm_coder, its address and the
cycles simavr charged. The check firmware also reports each call's duration from Timer1 (prescaler 1).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from adpcm_build import (
    ROOT,
    build_check_elf,
    build_rounds_elf,
    load_vectors,
    require,
    run_check_elf,
    samples,
)
from pintime.avr.cfg import (
    disassemble,
    function_cfg,
    instruction_cycles,
    simavr_skip_bug_sites,
    visits_from_histogram,
    visits_from_trace,
    watch_addresses,
)
from pintime.errors import PintimeError
from support import SIM

FUNCTION = "adpcm_coder"
CONTROL = {"rjmp", "jmp", "ijmp", "eijmp", "ret", "reti", "cpse", "sbrc", "sbrs", "sbic", "sbis"}


def _inputs() -> list[tuple[list[int], int, int]]:
    """Vector inputs of varied lengths, plus cases that drive every clamp and the empty call."""
    rows = load_vectors()[::10]
    inputs = [(samples(r), int(r["valprev_in"]), int(r["index_in"])) for r in rows]
    inputs += [
        ([], 0, 0),  # loop never entered
        ([32767] * 3, 32000, 88),  # predictor clamps high
        ([32767, -32768, 32767], 0, 88),  # index clamps at 88
        ([-32768] * 4, -32000, 88),  # predictor clamps low
        ([0] * 5, 0, 0),  # index clamps at 0
    ]
    return inputs


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, list]:
    tmp = tmp_path_factory.mktemp("cfg")
    inputs = _inputs()
    return build_check_elf(tmp, inputs), inputs


@pytest.fixture(scope="module")
def cfg(built):
    require("avr-objdump", "avr-nm")
    return function_cfg(built[0], FUNCTION)


def _trace_calls(elf: Path, cfg, tmp: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    """Run ``elf`` under tests/pc_trace.c; per call of the function: (PCs, simavr cycles per instruction)."""
    require("gcc", "pkg-config")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "simavr"], check=True, capture_output=True,
                           text=True).stdout.split()
    tracer = tmp / "pc_trace"
    if not tracer.exists():
        subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", str(ROOT / "tests" / "pc_trace.c"),
                        *flags, "-o", str(tracer)], check=True)
    trace = tmp / "trace.txt"
    subprocess.run([str(tracer), str(elf), str(cfg.address), str(cfg.address + cfg.size_bytes), str(trace)],
                   check=True, capture_output=True, timeout=120)
    calls: list[tuple[list[int], list[int]]] = []
    for line in trace.read_text().splitlines():
        if line == "call":
            calls.append(([], []))
        else:
            pc, cycles = line.split()
            calls[-1][0].append(int(pc, 16))
            calls[-1][1].append(int(cycles))
    return [(np.array(p), np.array(c)) for p, c in calls]


@pytest.fixture(scope="module")
def simulated(built, cfg, tmp_path_factory):
    """Per call: (PCs, simavr cycles per instruction), and the Timer1 durations the firmware printed."""
    elf, inputs = built
    calls = _trace_calls(elf, cfg, tmp_path_factory.mktemp("trace"))
    timer1 = [r[3] for r in run_check_elf(elf, len(inputs))]
    assert len(calls) == len(inputs)
    return calls, timer1


def test_every_instruction_in_exactly_one_block(built, cfg):
    listed = disassemble(built[0], FUNCTION)
    assert list(cfg.instructions) == listed
    assert sum(i.size_bytes for i in listed) == cfg.size_bytes
    for block in cfg.blocks:
        addresses = [i.address for i in block.instructions]
        assert addresses == sorted(addresses) and addresses[0] == block.address


def test_branch_targets_are_leaders_and_successors_consistent(cfg):
    number = {b.address: b.number for b in cfg.blocks}
    assert cfg.blocks[0].address == cfg.address
    reached = {0}
    for block in cfg.blocks:
        last = block.instructions[-1]
        m = last.mnemonic
        after = number.get(last.next_address)
        if m.startswith("br"):
            expected = {after, number[last.target()]}
        elif m in {"rjmp", "jmp"}:
            expected = {number[last.target()]}
        elif m in {"sbrc", "sbrs", "cpse", "sbic", "sbis"}:
            skipped = cfg.blocks[after]
            assert len(skipped.instructions) == 1  # the instruction a skip may skip is its own block
            expected = {after, number[skipped.instructions[0].next_address]}
        elif m == "ret":
            expected = set()
        else:
            expected = {after}  # the next instruction is a leader for another reason
        assert set(block.successors) == expected, block.name
        assert all(e.source == block.number for e in block.exits)
        for i in block.instructions[:-1]:  # no control transfer inside a block
            assert i.mnemonic not in CONTROL and not (i.mnemonic.startswith("br") and i.mnemonic != "break")
            instruction_cycles(i)  # the cycle table covers every mnemonic present
        reached.update(block.successors)
    assert reached == set(range(len(cfg.blocks)))  # every block reachable from the entry
    assert [e.index for e in cfg.exits] == list(range(len(cfg.exits)))


def test_no_simavr_skip_bug_in_function(cfg):
    assert simavr_skip_bug_sites(cfg) == []


def test_instruction_cycles_match_simavr(cfg, simulated):
    calls, _ = simulated
    by_address = {i.address: i for i in cfg.instructions}
    checked = set()
    for pcs, cycles in calls:
        for k, (pc, charged) in enumerate(zip(pcs.tolist(), cycles.tolist(), strict=True)):
            i = by_address[pc]
            following = pcs[k + 1] if k + 1 < len(pcs) else None
            taken = following is not None and following != i.next_address
            skipped = by_address.get(i.next_address)
            expected = instruction_cycles(i, taken, skipped.size_bytes if skipped else 2)
            assert charged == expected, f"{i} (taken={taken})"
            checked.add((i.mnemonic, taken))
    assert ("brne", True) in checked and ("sbrc", True) in checked and ("ret", False) in checked


def test_block_costs_sum_to_simavr_cycles(cfg, simulated):
    calls, timer1 = simulated
    exits_used = np.zeros(len(cfg.exits), dtype=np.int64)
    overhead = set()
    for pcs, cycles in calls:
        visits = visits_from_trace(cfg, pcs)
        assert visits.cycles(cfg) == cycles.sum()
        exits_used += visits.exit_counts
        # The same visits from a per-PC histogram restricted to the watched addresses.
        watched = np.isin(pcs, watch_addresses(cfg))
        pc_list, row = np.unique(pcs[watched], return_inverse=True)
        histogram = visits_from_histogram(cfg, pc_list, np.bincount(row),
                                          np.bincount(row, weights=cycles[watched]).astype(np.int64))
        np.testing.assert_array_equal(histogram.block_counts, visits.block_counts)
        np.testing.assert_array_equal(histogram.exit_counts, visits.exit_counts)
    for (_, cycles), timer_cycles in zip(calls, timer1, strict=True):
        overhead.add(timer_cycles - int(cycles.sum()))
    # Timer1 saw the same calls: call set-up and timer reads are one constant, whatever the input.
    assert len(overhead) == 1 and 0 < overhead.pop() < 40
    # These inputs take every exit of every block, so every cost above was checked.
    assert (exits_used > 0).all(), [e for e in cfg.exits if exits_used[e.index] == 0]


def test_trace_off_the_cfg_is_rejected(cfg):
    with pytest.raises(PintimeError, match="entry"):
        visits_from_trace(cfg, np.array([cfg.blocks[1].address]))


def test_generated_rounds_drive_every_path(tmp_path):
    """The table2 input generator (firmware/table2/adpcm_input.c): over 200 rounds every exit of every block
    is taken in at least 5 % of the rounds, and every block runs a varying number of times except those that
    run once per call."""
    elf = build_rounds_elf(tmp_path, rounds=200, seed=12345, max_len=24)
    cfg = function_cfg(elf, FUNCTION)
    visits = [visits_from_trace(cfg, pcs) for pcs, _ in _trace_calls(elf, cfg, tmp_path)]
    assert len(visits) == 200
    blocks = np.array([v.block_counts for v in visits])
    exits = np.array([v.exit_counts for v in visits])
    assert ((exits > 0).mean(axis=0) >= 0.05).all()
    constant = blocks.min(axis=0) == blocks.max(axis=0)
    assert (blocks[:, constant] == 1).all()  # only the blocks that run once per call never vary
    assert constant.sum() < len(cfg.blocks) // 4
    # Every exit count is a linear function of the block counts (TABLE2.md §5): a least-squares fit of the
    # exit counts on the block counts is exact, so block times explain the round times without residual.
    fit, *_ = np.linalg.lstsq(blocks.astype(float), exits.astype(float), rcond=None)
    assert np.abs(blocks @ fit - exits).max() < 1e-6


@pytest.mark.usefixtures("make_sim")
def test_harness_pulses_and_histogram_match_the_traced_visits(tmp_path):
    """With the simavr harness (sim/harness.c): every measurement pulse around adpcm_pulse is exactly the
    static cost of its call's visits + 6 cycles (rising out, CALL), and the harness's whole-run histogram
    (`pc,count,cycles`) read by visits_from_histogram equals the sum of the traced per-call visits."""
    harness = SIM / "harness"
    elf = build_rounds_elf(tmp_path, rounds=50, seed=99, max_len=24)
    cfg = function_cfg(elf, FUNCTION)
    subprocess.run([str(harness), str(elf), "-o", str(tmp_path / "run"), "--histogram",
                    str(tmp_path / "hist.csv")], check=True, capture_output=True, timeout=120)
    calls = _trace_calls(elf, cfg, tmp_path)
    visits = [visits_from_trace(cfg, pcs) for pcs, _ in calls]
    assert len(visits) == 50

    cycle, channel, level = np.loadtxt(tmp_path / "run.edges.csv", delimiter=",", skiprows=1,
                                       dtype=np.int64, ndmin=2).T
    pin = channel == 0
    assert (level[pin] == np.tile([1, 0], 50)).all()
    widths = np.diff(cycle[pin])[::2]
    assert widths.tolist() == [v.cycles(cfg) + 6 for v in visits]

    pcs, counts, cycles = np.loadtxt(tmp_path / "hist.csv", delimiter=",", skiprows=1, dtype=np.int64,
                                     ndmin=2).T
    whole_run = visits_from_histogram(cfg, pcs, counts, cycles)
    np.testing.assert_array_equal(whole_run.exit_counts, sum(v.exit_counts for v in visits))


def test_cfg_command_writes_blocks_and_watch_list(built, cfg, tmp_path, capsys):
    from pintime.cli import main

    assert main(["cfg", str(built[0]), "--json", str(tmp_path / "cfg.json"),
                 "--watch", str(tmp_path / "watch.txt")]) == 0
    assert f"{len(cfg.blocks)} blocks" in capsys.readouterr().out
    data = json.loads((tmp_path / "cfg.json").read_text())
    assert [(b["name"], b["cycles_min"], b["cycles_max"]) for b in data["blocks"]] == \
        [(b.name, b.cycles_min, b.cycles_max) for b in cfg.blocks]
    watched = [int(line, 16) for line in (tmp_path / "watch.txt").read_text().split()]
    assert watched == data["watch"] == watch_addresses(cfg)
    assert main(["cfg", str(built[0]), "--function", "no_such_function"]) == 2
