"""The Arduino library's examples (arduino/pintime, docs/boards.md), built against the real Arduino AVR core
for every board (`make arduino-examples`: tools/arduino_sketch.sh, then simavr), measured to the cycle on
simavr's edges: MeasureMyFunction's functions take the cycles the Makefile build of the same code takes
(firmware/user/user_example.c, `make sim BOARD=…`), and the Table 1 example's routine is 100 cycles.
"""

from __future__ import annotations

import json

import pytest
from pintime.cli import main
from support import BUILD

BOARDS = ("uno", "nano", "leonardo", "mega")
EXACT = 1e-9  # float rounding of an exact measurement
SKETCH_FUNCTIONS = ("mac16", "crc8_step")  # MeasureMyFunction's, the same code as user_example's
F_CPU_HZ = 16_000_000  # the Arduino core's clock on every board
TABLE1_REPS = 20  # PINTIME_REPS (firmware/user/pintime.h)


def run(path):
    """A simavr run's prefix, or skip with the command that makes it."""
    if not path.with_suffix(".json").exists():
        pytest.skip(f"no simavr run {path}.json: run `make arduino-examples` and `make sim`/`make boards` "
                    "(`make test` does)")
    return path


def validate(tmp_path, capsys, prefix, *extra) -> dict:
    out = tmp_path / f"{prefix.parent.name}-{prefix.name}.json"
    assert main(["validate", f"{prefix}.edges.csv", "--truth", f"{prefix}.json", "--json", str(out),
                 *map(str, extra)]) == 0
    capsys.readouterr()
    return json.loads(out.read_text())


def cycles_per_call(result: dict) -> dict[str, float]:
    return {r["name"]: r["time"]["mean_cycles"] for r in result["user"]}


@pytest.mark.parametrize("board", BOARDS)
def test_sketch_functions_take_the_makefile_builds_cycles(tmp_path, capsys, board):
    sketch = run(BUILD / "arduino" / board / "measuremyfunction")
    firmware = run((BUILD if board == "mega" else BUILD / board) / "sim" / "user_example")
    summary = json.loads(sketch.with_suffix(".json").read_text())
    assert summary["f_cpu_hz"] == F_CPU_HZ and summary["end"] == "measurement_idle"
    from_sketch = validate(tmp_path, capsys, sketch, "--elf", sketch.with_suffix(".elf"))
    from_make = cycles_per_call(validate(tmp_path, capsys, firmware))
    assert from_sketch["frames"]["rejected"] == 0
    for row in from_sketch["user"]:
        name = row["name"]
        assert name in SKETCH_FUNCTIONS
        assert abs(row["time"]["mean_cycles"] - from_make[name]) < EXACT, name
        assert row["expected_cycles"] == round(from_make[name]) and not row["outside_expectation"], name
    assert {r["name"] for r in from_sketch["user"]} == set(SKETCH_FUNCTIONS)


@pytest.mark.parametrize("board", BOARDS)
def test_table1_sketch_measures_the_100_cycle_routine(tmp_path, capsys, board):
    result = validate(tmp_path, capsys, run(BUILD / "arduino" / board / "table1"))
    assert result["frames"]["decoded"] == 2 + TABLE1_REPS * 13 + 1 and result["frames"]["rejected"] == 0
    us_per_cycle = 1e6 / F_CPU_HZ
    for row in result["table1"]:
        assert row["within_ci95"] and abs(row["error_us"]) < EXACT, row["label"]
    lines = [r for r in result["table1"] if r["technique"] == "line_fit"]
    assert len(lines) == 2 and all(abs(r["mean_us"] / us_per_cycle - 100) < 1e-6 for r in lines)
