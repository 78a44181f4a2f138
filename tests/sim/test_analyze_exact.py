"""`pintime analyze` and `pintime validate` end to end on the real simavr outputs, and on bad input.

Expected values come from firmware/FORMAT.md §5: ref100 = 100 cycles, init = 37 cycles, and a pulse around
calls of C cycles is C + 1 cycles wide (ε = 1 cycle on the simulator).
"""

from __future__ import annotations

import binascii
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from pintime.estimate.table1 import PAPER_TABLE1
from pintime.frames import KINDS, decode_frames
from support import SIM, fails_with, run_json

pytestmark = pytest.mark.usefixtures("make_sim")

EDGE_LIST, VCD, TRUTH = SIM / "table1.edges.csv", SIM / "table1.vcd", SIM / "table1.json"


def expected_us(technique: str, n: int, f_cpu_hz: int) -> float:
    """The exact Table 1 value of a row on the simulator (FORMAT.md §5)."""
    cycles = {"line_fit": 100, "differential": 100, "direct": 101, "executing": (100 * n + 1) / n}[technique]
    return cycles * 1e6 / f_cpu_hz


def assert_exact_table1(result: dict, f_cpu_hz: int, reps: int) -> None:
    rows = result["table1"]
    assert [r["label"] for r in rows] == [label for _, _, label, _, _ in PAPER_TABLE1]  # the paper's order
    for r in rows:
        want = expected_us(r["technique"], r["n"], f_cpu_hz)
        assert r["mean_us"] == pytest.approx(want, abs=1e-9), r["label"]
        assert r["std_us"] == pytest.approx(0, abs=1e-9) and r["count"] == reps
        assert r["ci95_us"] == pytest.approx([want, want], abs=1e-9)
        assert (r["paper_mean_us"], r["paper_std_us"]) != (None, None)
        if r["technique"] == "differential":
            assert r["median"]["mean_us"] == pytest.approx(want, abs=1e-9)
            assert r["trimmed_mean"]["mean_us"] == pytest.approx(want, abs=1e-9)
        if r["technique"] == "line_fit":
            assert r["intercept"]["mean_us"] == pytest.approx(1e6 / f_cpu_hz, abs=1e-9)  # ε = 1 cycle
            assert r["outliers"] == 0 and r["r2_mean"] == pytest.approx(1, abs=1e-12)
    od = result["overdetermined"]
    for name, cycles in (("t_e", 100), ("t_i", 37), ("epsilon", 1)):
        assert od[name]["mean_us"] == pytest.approx(cycles * 1e6 / f_cpu_hz, abs=1e-9), name
        assert od[name]["std_us"] == pytest.approx(0, abs=1e-9)
    assert od["condition"] < 1e3
    assert result["clock"]["ppm"] == pytest.approx(0, abs=1e-6)
    assert result["clock"]["calibration_train_ppm"] == pytest.approx(0, abs=1e-6)
    assert result["frames"]["rejected"] == result["frames"]["incomplete"] == result["frames"]["missing"] == 0


@pytest.fixture(scope="module")
def truth() -> dict:
    return json.loads(TRUTH.read_text())


@pytest.mark.parametrize("capture", [EDGE_LIST, VCD], ids=["edge-list", "vcd"])
def test_table1_exact_on_simavr_outputs(capsys, tmp_path, truth, capture):
    result = run_json(capsys, tmp_path, "analyze", str(capture), "--plots", str(tmp_path / "plots"))
    reps = result["table1"][0]["count"]
    assert reps >= 2 and result["frames"]["decoded"] == 13 * reps + 3  # FORMAT.md §6 schedule
    assert result["run"] == {"f_cpu_hz": truth["f_cpu_hz"], "revision": f"{truth['revision']:08x}",
                             "program": "table1"}
    assert_exact_table1(result, truth["f_cpu_hz"], reps)
    for name in ("fig2_line_fit", "fig3_outlier", "fig7_executing_error"):
        assert (tmp_path / "plots" / f"{name}.png").stat().st_size > 10_000


def test_validate_against_truth(capsys, tmp_path, truth):
    result = run_json(capsys, tmp_path, "validate", str(VCD), "--truth", str(TRUTH))
    for r in result["table1"]:
        assert r["truth_us"] == pytest.approx(expected_us(r["technique"], r["n"], truth["f_cpu_hz"]),
                                              abs=1e-9)
        assert r["error_us"] == pytest.approx(0, abs=1e-9)
        assert r["routine_us"] == 100 * 1e6 / truth["f_cpu_hz"]
    assert result["overdetermined"]["t_i"]["error_us"] == pytest.approx(0, abs=1e-9)
    assert result["edges"] == {}  # exact capture: no located edges to check


def test_table1_exact_at_16mhz(capsys, tmp_path, build_16mhz):
    result = run_json(capsys, tmp_path, "analyze", str(build_16mhz / "sim" / "table1.edges.csv"))
    assert_exact_table1(result, 16_000_000, 2)
    assert result["table1"][0]["mean_us"] == pytest.approx(6.25, abs=1e-12)  # 100 cycles at 16 MHz


# --- bad input --------------------------------------------------------------------------------------


def rewrite_headers(out: Path, seconds: float, change: Callable[[bytes], bytes]) -> Path:
    """The first ``seconds`` of the simavr edge list, each header's bytes replaced by ``change(bytes)`` with
    the CRC recomputed: bits are flipped by moving the falling edge of each changed bit (and all later
    edges of the measurement pin) by ±200 µs (FORMAT.md §3: BIT 0 high 200, BIT 1 high 400)."""
    f_cpu = json.loads(TRUTH.read_text())["f_cpu_hz"]
    rows = np.loadtxt(EDGE_LIST, delimiter=",", skiprows=1, dtype=np.int64)
    rows = rows[rows[:, 0] < seconds * f_cpu]
    meas = rows[rows[:, 1] == 0]
    time_us, pol = meas[:, 0] * 1e6 / f_cpu, np.where(meas[:, 2] == 1, 1, -1)
    delta = np.zeros(len(meas), dtype=np.int64)
    for f in decode_frames(time_us, pol).frames:
        n_bits = 8 * (3 + sum(size for _, size in next(v[1] for v in KINDS.values() if v[0] == f.kind)))
        rise = f.start + 2 + 2 * np.arange(n_bits)
        old = (time_us[rise + 1] - time_us[rise] > 300).astype(np.uint8)
        header = change(np.packbits(old).tobytes()[:-2])
        new = np.unpackbits(np.frombuffer(header + binascii.crc_hqx(header, 0xFFFF).to_bytes(2, "big"),
                                          np.uint8))
        delta[rise + 1] += (new.astype(np.int64) - old) * 200 * f_cpu // 10**6
    meas[:, 0] += np.cumsum(delta)
    merged = np.concatenate([meas, rows[rows[:, 1] == 1]])
    merged = merged[np.argsort(merged[:, 0], kind="stable")]
    path = out / "rewritten.edges.csv"
    np.savetxt(path, merged, fmt="%d", delimiter=",", header="cycle,channel,level", comments="")
    return path


def test_rewrite_helper_keeps_a_valid_capture(capsys, tmp_path, truth):
    """The header rewrite itself (identity change) leaves an exactly analysable capture."""
    path = rewrite_headers(tmp_path, 6.0, lambda h: h)
    result = run_json(capsys, tmp_path, "analyze", str(path))
    assert result["frames"]["rejected"] == 0 and result["frames"]["decoded"] >= 10


def test_other_frame_format_version(capsys, tmp_path):
    path = rewrite_headers(tmp_path, 6.0, lambda h: bytes([0x30 | (h[0] & 0x0F)]) + h[1:])
    fails_with(capsys, ["analyze", str(path)], "frame format version 3")


def test_unknown_program(capsys, tmp_path):
    path = rewrite_headers(tmp_path, 6.0, lambda h: h[:-1] + b"\x09" if h[0] == 0x20 else h)
    fails_with(capsys, ["analyze", str(path)], "unknown program 9")


def test_capture_cut_after_some_frames_is_analysed(capsys, tmp_path, truth):
    path = tmp_path / "cut.edges.csv"
    lines = EDGE_LIST.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:60_000]))
    result = run_json(capsys, tmp_path, "analyze", str(path))
    assert result["frames"]["incomplete"] == 1 and result["frames"]["rejected"] == 0
    assert result["frames"]["missing"] is None  # no END frame: nothing to count against
    direct = next(r for r in result["table1"] if r["technique"] == "direct")
    assert direct["mean_us"] == pytest.approx(expected_us("direct", 1, truth["f_cpu_hz"]), abs=1e-9)


def test_validate_refuses_another_revision(capsys, tmp_path, truth):
    other = dict(truth, revision=truth["revision"] ^ 1)
    (tmp_path / "table1.json").write_text(json.dumps(other))
    shutil.copy(EDGE_LIST, tmp_path / "table1.edges.csv")
    fails_with(capsys, ["validate", str(EDGE_LIST), "--truth", str(tmp_path / "table1.json")],
               "firmware revision")


def test_validate_needs_the_exact_edges(capsys, tmp_path, truth):
    (tmp_path / "table1.json").write_text(json.dumps(truth))
    fails_with(capsys, ["validate", str(EDGE_LIST), "--truth", str(tmp_path / "table1.json")],
               "exact edge list")


def test_an_interrupt_in_one_pulse_is_rejected_as_an_outlier(capsys, tmp_path, truth):
    """One line-fit pulse made 20 cycles longer (its falling edge moved into the GAP, which stays a GAP):
    §4.1 rejects exactly that point and the slope stays exact; Fig. 3 shows it."""
    rows = np.loadtxt(EDGE_LIST, delimiter=",", skiprows=1, dtype=np.int64)
    meas = np.flatnonzero(rows[:, 1] == 0)
    d = decode_frames(rows[meas, 0] * 1e6 / truth["f_cpu_hz"], np.where(rows[meas, 2] == 1, 1, -1))
    line = next(f for f in d.frames if f.kind == "line" and f.fields["m"] == 10)
    rows[meas[line.group[2 * 4 + 1]], 0] += 20  # falling edge of pulse k = 5
    path = tmp_path / "interrupted.edges.csv"
    np.savetxt(path, rows, fmt="%d", delimiter=",", header="cycle,channel,level", comments="")
    result = run_json(capsys, tmp_path, "analyze", str(path), "--plots", str(tmp_path / "plots"))
    row = next(r for r in result["table1"] if r["technique"] == "line_fit" and r["n"] == 10)
    assert row["outliers"] == 1 and result["frames"]["rejected"] == 0
    assert row["mean_us"] == pytest.approx(expected_us("line_fit", 10, truth["f_cpu_hz"]), abs=1e-9)
    assert row["std_us"] == pytest.approx(0, abs=1e-9)
    executing = next(r for r in result["table1"] if r["technique"] == "executing" and r["n"] == 10)
    assert executing["std_us"] == pytest.approx(0, abs=1e-9)  # no other frame touched


def test_inverted_capture_is_analysed_and_reported(capsys, tmp_path, truth):
    """A capture chain that inverts both channels: frames decode only the other way round; said so."""
    rows = np.loadtxt(EDGE_LIST, delimiter=",", skiprows=1, dtype=np.int64)
    rows = rows[rows[:, 0] < 6 * truth["f_cpu_hz"]]
    rows[:, 2] = 1 - rows[:, 2]
    path = tmp_path / "inverted.edges.csv"
    np.savetxt(path, rows, fmt="%d", delimiter=",", header="cycle,channel,level", comments="")
    result = run_json(capsys, tmp_path, "analyze", str(path))
    assert result["frames"]["polarity_inverted"] and result["frames"]["rejected"] == 0
    for r in result["table1"]:
        assert r["mean_us"] == pytest.approx(expected_us(r["technique"], r["n"], truth["f_cpu_hz"]), abs=1e-9)


