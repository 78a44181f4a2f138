"""Every board's firmware on simavr's exact edges (firmware/BOARDS.md): `make sim BOARD=<board>` for the
boards besides the default Mega (whose runs the other files check), each program decoded and measured to
the cycle by `pintime validate`.

Expectations come from FORMAT.md (ref100 and init are 100 and 37 cycles on every chip: PC_PAD makes up the
cheaper CALL and RET of a 2-byte PC), from the chip's datasheet (a user function's cost holds its CALL and
RET: one cycle less each on a 2-byte PC), and from each ELF's listing, never from the firmware's sources.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from pintime.avr.chip import pc_bytes
from pintime.capture.edgelist import read_edge_list
from pintime.capture.vcd import read_vcd
from pintime.cli import main
from support import BUILD, ROOT, rows_of

BOARDS = {"uno": "atmega328p", "nano": "atmega328p", "leonardo": "atmega32u4"}
PROGRAMS = ("table1", "table2", "user_example", "micro")
EXACT_US = 1e-9  # float rounding of an exact measurement
# firmware/user/user_example.c on the Mega (3-byte PC): the functions' cycles per call, CALL and RET included
MEGA_CALL_CYCLES = {"mac16": 48, "crc8_step": 93}
TABLE1_FRAMES = 2 + 100 * 13 + 1  # RUN, CAL, REPS × (RUN + 12 groups), END (FORMAT.md §6, REPS = 100)
TABLE2_EXITS = 51  # adpcm_coder's CFG edges at -Os (TABLE2.md)


def board_sim(board: str, program: str):
    """build/<board>/sim/<program>, or skip with the command that makes it."""
    sim = BUILD / board / "sim" / program
    if not sim.with_suffix(".json").exists():
        pytest.skip(f"no simavr run of {board} ({sim}.json missing): run `make sim BOARD={board}` "
                    "(`make test` does)")
    return sim


def validate(tmp_path, capsys, board: str, program: str, *extra: str) -> dict:
    sim = board_sim(board, program)
    out = tmp_path / f"{board}-{program}.json"
    assert main(["validate", f"{sim}.edges.csv", "--truth", f"{sim}.json", "--json", str(out),
                 *map(str, extra)]) == 0
    capsys.readouterr()
    return json.loads(out.read_text())


@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("program", PROGRAMS)
def test_the_run_is_the_boards_chip_and_every_frame_decodes(board, program):
    sim = board_sim(board, program)
    summary = json.loads(sim.with_suffix(".json").read_text())
    assert summary["mcu"] == BOARDS[board] and summary["end"] == "firmware_done"
    assert summary["edges"]["reference"] >= 3  # the 1 s reference on OC1A ran
    elf = BUILD / board / "firmware" / f"{program}.elf"
    assert pc_bytes(elf) == 2  # both chips: at most 128 KiB of flash


@pytest.mark.parametrize("board", BOARDS)
def test_the_vcd_names_the_boards_pins_and_holds_the_edge_lists_edges(board):
    sim = board_sim(board, "user_example")
    text = sim.with_suffix(".vcd").read_text()[:400]
    pins = {"atmega328p": ("PB2", "PB1"), "atmega32u4": ("PF0", "PB5")}[BOARDS[board]]  # BOARDS.md §1
    assert f"measurement_{pins[0]} " in text and f"reference_{pins[1]} " in text
    ps_per_cycle = 10**12 // 1_000_000  # F_CPU = 1 MHz
    expected = [(t * ps_per_cycle, c, level) for t, c, level in rows_of(read_edge_list(f"{sim}.edges.csv"))]
    assert rows_of(read_vcd(sim.with_suffix(".vcd"))) == expected


def test_an_unknown_board_is_refused_with_the_list():
    result = subprocess.run(["make", "-n", "-C", str(ROOT), "BOARD=due", "firmware"], capture_output=True,
                            text=True, check=False)
    assert result.returncode != 0 and "unknown BOARD 'due': one of uno nano leonardo mega" in result.stderr


@pytest.mark.parametrize(("board", "left"), [("leonardo", 28672), ("nano", 30720)])
def test_flash_refuses_a_program_the_bootloader_leaves_no_room_for(board, left):
    """table2 (31.9 KB) beside Caterina (4 KB) or the old Nano bootloader (2 KB): refused before avrdude."""
    board_sim(board, "table2")
    result = subprocess.run(["make", "-s", "-C", str(ROOT), f"BOARD={board}", "PROGRAM=table2",
                             "PORT=/nonexistent", "flash"], capture_output=True, text=True, check=False)
    assert result.returncode != 0 and "avrdude" not in result.stdout + result.stderr
    assert f"the {board}'s bootloader leaves {left} (docs/boards.md)" in result.stderr


def test_the_megas_program_counter_is_3_bytes():
    elf = BUILD / "firmware" / "table1.elf"
    if not elf.exists():
        pytest.skip("no build/firmware/table1.elf: run `make sim`")
    assert pc_bytes(elf) == 3  # CALL and RET 5 cycles: user_example's 48 and 93


@pytest.mark.parametrize("board", BOARDS)
def test_table1_is_exact_and_its_lines_fit_100_cycles(tmp_path, capsys, board):
    result = validate(tmp_path, capsys, board, "table1")
    assert result["frames"]["decoded"] == TABLE1_FRAMES and result["frames"]["rejected"] == 0
    rows = result["table1"]
    assert len(rows) == 11  # 2 line fits, 3 differential, direct, 5 executing (overdetermined: apart)
    for row in rows:
        assert row["within_ci95"] and abs(row["error_us"]) < EXACT_US, row["label"]
    lines = [r for r in rows if r["technique"] == "line_fit"]
    assert len(lines) == 2 and all(abs(r["mean_us"] - 100) < EXACT_US for r in lines)  # 1 cycle = 1 µs


@pytest.mark.parametrize("board", BOARDS)
def test_user_functions_cost_their_listing_two_cycles_less_than_on_the_mega(tmp_path, capsys, board):
    elf = BUILD / board / "firmware" / "user_example.elf"
    result = validate(tmp_path, capsys, board, "user_example", "--elf", elf)
    by_name = {r["name"]: r for r in result["user"]}
    for name, mega_cycles in MEGA_CALL_CYCLES.items():
        row = by_name[name]
        cycles = mega_cycles - 2  # CALL 4 and RET 4 on a 2-byte PC, 5 and 5 on the Mega
        assert row["expected_cycles"] == cycles and not row["outside_expectation"], row["expected_how"]
        assert abs(row["time"]["mean_cycles"] - cycles) < EXACT_US
        assert abs(row["intercept"]["mean_us"] - 1) < EXACT_US  # ε: the rising `out`
    assert by_name["crc8_branchy"]["outside_expectation"] is False  # its mean inside the listing's range


@pytest.mark.parametrize("board", BOARDS)
def test_micro_benchmarks_are_exact_and_the_datasheet_is_simavrs_for_code(tmp_path, capsys, board):
    elf = BUILD / board / "firmware" / "micro.elf"
    result = validate(tmp_path, capsys, board, "micro", "--elf", elf)
    rows = result["micro"]
    assert len(rows) == 35
    for row in rows:
        assert row["within_ci95"] and abs(row["error_us"]) < EXACT_US, row["name"]
        if row["kind"] in ("call", "loop"):  # simavr charges no interrupt response (docs/design.md §9)
            assert row["datasheet_cycles"] == round(row["truth_cycles"]), row["name"]


@pytest.mark.parametrize("board", BOARDS)
def test_table2_resolves_every_exit_to_its_listing_cost(tmp_path, capsys, board):
    result = validate(tmp_path, capsys, board, "table2")
    columns = result["table2_resolved"]["columns"]  # the exits, ε and ε_cut
    exits = [c for c in columns if "→" in c["name"]]
    assert len(exits) == TABLE2_EXITS and len(columns) == TABLE2_EXITS + 2
    for c in columns:  # ε_cut's path holds the hold loop: no listing cost
        assert c["rounds_to_truth"], c["name"]
        assert c["truth_cycles"] == c.get("expected_cycles", c["truth_cycles"]), c["name"]
    epsilon = next(c for c in columns if c["name"] == "ε")
    assert epsilon["expected_cycles"] == 1 + 4  # the rising `out` and a 2-byte PC's CALL
    assert result["table2_coverage"]["all"]["outside"] == 0
