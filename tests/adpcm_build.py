"""Build and run helpers shared by test_adpcm.py and test_cfg.py.

They compile ``firmware/table2/adpcm.c`` for the host (with ``tests/adpcm_host.c``) and for an AVR (the
ATmega2560 unless told; with ``tests/firmware/adpcm_check.c`` and a generated ``adpcm_cases.h``), run the AVR
build in ``simavr`` and parse the results it prints on its USART.
"""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMON = ROOT / "firmware" / "common"
TABLE2 = ROOT / "firmware" / "table2"
CHECK_C = ROOT / "tests" / "firmware" / "adpcm_check.c"
VECTORS_CSV = ROOT / "tests" / "data" / "adpcm_vectors.csv"
AVR_F_CPU_HZ = 16_000_000
# The flags the firmware is built with (optimise for size, every warning an error).
AVR_CFLAGS = ["-Os", "-std=gnu11", "-Wall", "-Wextra", "-Werror"]
MCU = "atmega2560"  # the default board's chip; the others: firmware/BOARDS.md
# simavr 1.6 needs the .mmcu section linked at this address (docs/design.md §9).
AVR_LDFLAGS = ["-Wl,--undefined=_mmcu,--section-start=.mmcu=0x910000"]
RESULT_LINE = re.compile(r"R (\d+) ([0-9a-f]*) (-?\d+) (\d+) (\d+)")


def require(*tools: str) -> None:
    """Skip the calling test when a tool is missing (``make deps`` installs them all)."""
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed (run `make deps`)")


def load_vectors() -> list[dict[str, str]]:
    """Rows of ``tests/data/adpcm_vectors.csv`` as dicts of strings."""
    with open(VECTORS_CSV, newline="") as f:
        return list(csv.DictReader(f))


def samples(row: dict[str, str]) -> list[int]:
    """The input samples of one vector row (16-bit signed little-endian hex)."""
    raw = bytes.fromhex(row["in_hex_s16le"])
    return [int.from_bytes(raw[i : i + 2], "little", signed=True) for i in range(0, len(raw), 2)]


def build_host_coder(tmp: Path) -> Path:
    """Compile the host driver with ``firmware/table2/adpcm.c``; returns the executable."""
    require("gcc")
    exe = tmp / "adpcm_host"
    subprocess.run(
        ["gcc", "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{TABLE2}",
         str(ROOT / "tests" / "adpcm_host.c"), str(TABLE2 / "adpcm.c"), str(TABLE2 / "adpcm_input.c"),
         "-o", str(exe)],
        check=True,
    )
    return exe


def cases_header(inputs: list[tuple[list[int], int, int]]) -> str:
    """C text of ``adpcm_cases.h`` for ``adpcm_check.c``: one (samples, valprev, index) per case."""
    flat: list[int] = []
    entries = []
    for data, valprev, index in inputs:
        entries.append(f"    {{{len(flat)}, {len(data)}, {valprev}, {index}}},")
        flat.extend(data)
    max_len = max(len(data) for data, _, _ in inputs)
    return "\n".join([
        f"#define ADPCM_CASE_COUNT {len(inputs)}",
        f"#define ADPCM_MAX_LEN {max_len}",
        "static const int16_t adpcm_samples[] PROGMEM = {",
        *(f"    {', '.join(map(str, flat[i : i + 16]))}," for i in range(0, len(flat), 16)),
        "};",
        "static const struct adpcm_case adpcm_cases[] PROGMEM = {",
        *entries,
        "};",
        "",
    ])


def build_check_elf(tmp: Path, inputs: list[tuple[list[int], int, int]], mcu: str = MCU) -> Path:
    """``adpcm_check.c`` for ``mcu`` in cases mode: one (samples, valprev, index) per case."""
    (tmp / "adpcm_cases.h").write_text(cases_header(inputs))
    return _build_avr(tmp, [], mcu)


def build_rounds_elf(tmp: Path, rounds: int, seed: int, max_len: int, mcu: str = MCU) -> Path:
    """``adpcm_check.c`` for ``mcu`` in rounds mode (``adpcm_input.c``'s generator)."""
    return _build_avr(tmp, [f"-DADPCM_ROUNDS={rounds}", f"-DADPCM_SEED={seed}", f"-DADPCM_MAX_LEN={max_len}"],
                      mcu)


def _build_avr(tmp: Path, defines: list[str], mcu: str) -> Path:
    require("avr-gcc", "pkg-config")
    include = subprocess.run(["pkg-config", "--variable=includedir", "simavr"], check=True,
                             capture_output=True, text=True).stdout.strip()
    elf = tmp / "adpcm_check.elf"
    subprocess.run(
        ["avr-gcc", f"-mmcu={mcu}", *AVR_CFLAGS, f"-DF_CPU={AVR_F_CPU_HZ}", *defines, f"-I{tmp}",
         f"-I{COMMON}", f"-I{TABLE2}", f"-I{include}/simavr/avr", str(CHECK_C), str(TABLE2 / "adpcm.c"),
         str(TABLE2 / "adpcm_input.c"), str(TABLE2 / "adpcm_pulse.S"), *AVR_LDFLAGS, "-o", str(elf)],
        check=True,
    )
    return elf


def run_check_elf(elf: Path, count: int, mcu: str = MCU) -> list[tuple[str, int, int, int]]:
    """Run the check firmware in simavr; per case (out hex, valprev, index, Timer1 cycles of the call)."""
    require("simavr")
    proc = subprocess.run(["simavr", "-m", mcu, "-f", str(AVR_F_CPU_HZ), str(elf)],
                          capture_output=True, text=True, timeout=120, check=True)
    # simavr prints the USART on stderr, one line at a time, colour codes around it.
    found = [RESULT_LINE.search(line) for line in proc.stderr.splitlines()]
    results = [m.groups() for m in found if m]
    assert [int(r[0]) for r in results] == list(range(count)), proc.stderr[-2000:]
    return [(out, int(valprev), int(index), int(cycles)) for _, out, valprev, index, cycles in results]
