"""firmware/table2/adpcm.c against the MiBench reference vectors, built for the host and the AVR (simavr)."""

from __future__ import annotations

import subprocess

import pytest
from adpcm_build import (
    build_check_elf,
    build_host_coder,
    build_rounds_elf,
    load_vectors,
    run_check_elf,
    samples,
)

# the chips of the boards (firmware/BOARDS.md): the Mega's, the Uno's and Nano's, the Leonardo's and Micro's
MCUS = ("atmega2560", "atmega328p", "atmega32u4")


def test_host_build_matches_all_vectors(tmp_path):
    rows = load_vectors()
    assert len(rows) == 400
    exe = build_host_coder(tmp_path)
    stdin = "".join(f"{r['valprev_in']} {r['index_in']} {r['in_hex_s16le']}\n" for r in rows)
    lines = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True,
                           check=True).stdout.splitlines()
    assert len(lines) == len(rows)
    for row, line in zip(rows, lines, strict=True):
        assert line.split() == [row["out_hex"], row["valprev_out"], row["index_out"]], f"case {row['case']}"


@pytest.mark.parametrize("mcu", MCUS)
def test_avr_build_in_simavr_matches_vectors(tmp_path, mcu):
    rows = load_vectors()
    cases = [(samples(r), int(r["valprev_in"]), int(r["index_in"])) for r in rows]
    elf = build_check_elf(tmp_path, cases, mcu)
    results = run_check_elf(elf, len(rows), mcu)
    for row, (out, valprev, index, _) in zip(rows, results, strict=True):
        assert (out, valprev, index) == (row["out_hex"], int(row["valprev_out"]), int(row["index_out"])), \
            f"case {row['case']}"


@pytest.mark.parametrize("mcu", MCUS)
def test_generated_rounds_identical_on_host_and_avr(tmp_path, mcu):
    """firmware/table2/adpcm_input.c + the coder over many rounds: same bytes on the AVR and the host."""
    rounds, seed, max_len = 300, 777, 24
    results = run_check_elf(build_rounds_elf(tmp_path, rounds, seed, max_len, mcu), rounds, mcu)
    host = subprocess.run([str(build_host_coder(tmp_path)), str(rounds), str(seed), str(max_len)],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    assert [line.split() for line in host] == [[out, str(v), str(i)] for out, v, i, _ in results]
    out_bytes = {len(out) // 2 for out, _, _, _ in results}
    assert min(out_bytes) == 1 and max(out_bytes) == (max_len + 1) // 2  # rounds of 1 … max_len samples
