"""The CLI's edges: nothing silently overwritten, ignored or printed empty.

Each case runs ``pintime`` in-process and checks the one-line error (exit 2) or the output it must give.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pintime.cli.validate import format_validation
from pintime.errors import PintimeError
from pintime.programs.table2 import Table2Check, Table2Unknown
from pintime.soundcard import synth as synth_module
from pintime.validate import edgecheck
from pintime.validate.report import edges_section
from pintime.validate.validation import Validation
from scipy import stats
from support import CAPTURES, EXAMPLE_WAV, SIM, assert_fails, run_cli

pytestmark = pytest.mark.usefixtures("make_sim")

FEW_EDGES = b"cycle,channel,level\n" + b"".join(b"%d,1,%d\n" % (k * 500_000 + 1000, 1 - k % 2)
                                                 for k in range(6))


@pytest.mark.parametrize("existing", ["out.wav", "out.json"])
def test_synth_refuses_an_existing_output_without_force(tmp_path, existing):
    """Like ``pintime record``: the WAV or its sidecar already there is kept, byte for byte."""
    edges = tmp_path / "r.edges.csv"
    edges.write_bytes(FEW_EDGES)
    (tmp_path / existing).write_bytes(b"keep me")
    argv = ["synth", edges, "-o", tmp_path / "out.wav", "--f-cpu-hz", "1e6", "--duration-s", "0.01"]
    assert "--force" in assert_fails(argv, tmp_path / existing)
    assert (tmp_path / existing).read_bytes() == b"keep me"
    assert not (tmp_path / ("out.json" if existing == "out.wav" else "out.wav")).exists()
    code, out, lines = run_cli([*argv, "--force"])
    assert code == 0, lines
    assert (tmp_path / "out.wav").read_bytes()[:4] == b"RIFF"


def test_an_interrupted_synth_force_leaves_the_old_capture_whole(tmp_path, monkeypatch):
    """`synth --force` cut short (a signal, a full disk) mid-render: the earlier take and its sidecar are
    still there byte for byte, and no part-written file is left beside them."""
    edges = tmp_path / "r.edges.csv"
    edges.write_bytes(FEW_EDGES)
    argv = ["synth", edges, "-o", tmp_path / "out.wav", "--f-cpu-hz", "1e6", "--duration-s", "3", "--force"]
    assert run_cli(argv)[0] == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    blocks = []

    def interrupted(y, *rest):
        blocks.append(1)
        if len(blocks) > 2:
            raise KeyboardInterrupt
        return render(y, *rest)
    render = synth_module._output
    monkeypatch.setattr(synth_module, "_output", interrupted)
    code, _, lines = run_cli([*argv[:-3], "--seed", "7", "--duration-s", "3", "--force"])
    assert (code, lines) == (130, ["pintime: interrupted"]) and len(blocks) == 3
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_analyze_elf_on_a_table1_capture_is_refused():
    """--elf names a user program's functions: on another program it is an error, never ignored."""
    elf = SIM.parent / "firmware" / "user_example.elf"
    line = assert_fails(["analyze", SIM / "table1.edges.csv", "--elf", elf], SIM / "table1.edges.csv")
    assert "--elf" in line and "table1" in line


@pytest.fixture
def validation(tmp_path) -> Path:
    """A `pintime validate --json` result (exact table1 edges: every estimate is its truth)."""
    out = tmp_path / "v.json"
    argv = ["validate", SIM / "table1.edges.csv", "--truth", SIM / "table1.json", "--json", out]
    assert run_cli(argv)[0] == 0
    return out


@pytest.mark.parametrize("figures", ["missing", "empty", "a-file"])
def test_report_figures_folder_must_hold_figures(tmp_path, validation, figures):
    """A --figures that is no folder, or holds no PNG, would give a report without figures: refused."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "a-file").write_text("x")
    report = tmp_path / "report.md"
    assert_fails(["report", validation, "-o", report, "--figures", tmp_path / figures], tmp_path / figures)
    assert not report.exists()


def test_report_shows_the_figures_found_at_any_depth(tmp_path, validation):
    (tmp_path / "figs" / "run").mkdir(parents=True)
    (tmp_path / "figs" / "run" / "fig3.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    argv = ["report", validation, "-o", tmp_path / "report.md", "--figures", tmp_path / "figs"]
    assert run_cli(argv)[0] == 0
    assert "](figs/run/fig3.png)" in (tmp_path / "report.md").read_text()


def test_validation_prints_only_sections_with_rows():
    """A table2 result has no Table 1 rows: no Table 1 header (it was printed empty before Table 2)."""
    table2_row = Table2Unknown("BB3 et al.", 235.0, 235.0, 1e-13, 100, 235.0, True)
    check = Table2Check(block=(table2_row,))
    text = format_validation(Validation({"recording_gaps": None}, "truth.json", check))
    assert text.splitlines()[0].startswith("Basic Block") and "Technique" not in text
    assert "routine ref100" not in text and "" not in text.splitlines()


def test_a_method_whose_edges_cannot_be_compared_is_reported_not_fatal(monkeypatch, tmp_path):
    """The threshold method's edges of a 48 kHz minimum-phase capture missed the exact ones by more than 20
    µs (19 % of them) and stopped the whole validation; now it is reported beside the others, in the text,
    the JSON and the report. The template method's failure is still the validation's."""
    failing = {"threshold"}

    def locate(capture, method, *_):
        if method in failing:
            raise PintimeError(f"{capture}: only 5 of the 9 located edges match an exact edge")
        return method

    monkeypatch.setattr(edgecheck, "locate_capture", locate)
    monkeypatch.setattr(edgecheck, "errors_of", lambda result, truth, cuts: ("compared", result))
    errors = edgecheck.edge_errors(Path("x.wav"), None)
    assert errors["threshold"] == "only 5 of the 9 located edges match an exact edge"
    assert errors["template"] == ("compared", "template")
    validation = Validation({"recording_gaps": None}, "truth.json", edges={"threshold": errors["threshold"]})
    assert "edges [threshold]: not compared: only 5 of the 9" in format_validation(validation)
    out = tmp_path / "v.json"
    out.write_text(json.dumps({"capture": "x.wav", **validation.to_json()}))
    assert "not compared: only 5" in "\n".join(edges_section([json.loads(out.read_text())]))
    failing.add("template")
    with pytest.raises(PintimeError, match="only 5"):
        edgecheck.edge_errors(Path("x.wav"), None)


@pytest.mark.parametrize("timescale", ["1 ns", "100 fs", "1 s"])
def test_vcd_with_a_wrong_timescale_is_refused(tmp_path, timescale):
    """simavr writes 1 ps; under another unit the capture clock is absurd against the MCU's: refused, with
    both clocks named, instead of a ±10⁹ ppm calibration reported as a result."""
    vcd = tmp_path / "u.vcd"
    text = (SIM / "user_example.vcd").read_bytes()
    vcd.write_bytes(text.replace(b"$timescale 1 ps $end", f"$timescale {timescale} $end".encode(), 1))
    line = assert_fails(["analyze", vcd], vcd)
    assert "ppm" in line and "F_CPU 1000000 Hz" in line and "timescale" in line


def _scaled_edge_list(tmp_path: Path, factor: float) -> Path:
    """build/sim/user_example.edges.csv with every cycle × factor: the reference's second lasts factor s."""
    lines = (SIM / "user_example.edges.csv").read_text().splitlines()
    rows = [line.split(",", 1) for line in lines[1:]]
    path = tmp_path / f"x{factor}.edges.csv"
    path.write_text("\n".join([lines[0]] + [f"{round(int(c) * factor)},{rest}" for c, rest in rows]) + "\n")
    return path


def test_edge_list_clock_far_from_the_run_frames_f_cpu_is_refused(tmp_path):
    """Cycles 3 % longer than the RUN frame's F_CPU says: 30000 ppm is no crystal's error."""
    path = _scaled_edge_list(tmp_path, 1.03)
    assert "+30000 ppm" in assert_fails(["analyze", path], path)


def test_edge_list_clock_within_the_bound_is_reported(tmp_path):
    """A 0.5 % slow MCU clock (a ceramic resonator's tolerance) is a clock error, measured and reported."""
    out = tmp_path / "a.json"
    code, _, lines = run_cli(["analyze", _scaled_edge_list(tmp_path, 1.005), "--json", out])
    assert code == 0, lines
    assert json.loads(out.read_text())["clock"]["ppm"] == pytest.approx(5000, abs=0.01)


def test_error_quoting_a_control_character_is_one_line(tmp_path):
    """pyvcd quotes the byte it is confused by: a U+0085 (NEL, a line break to Python) made two lines."""
    vcd = tmp_path / "nel.vcd"
    text = (SIM / "user_example.vcd").read_bytes()
    at = text.index(b"\n#", 2000) + 1
    vcd.write_bytes(text[:at] + "#12\u0085\n".encode() + text[at:])
    assert "\\x85" in assert_fails(["analyze", vcd], vcd)


def test_a_closed_output_pipe_is_no_traceback():
    """`pintime analyze X | head`, head gone before the tables are printed: exit 141, nothing on stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "pintime.cli", "analyze", str(SIM / "table1.edges.csv")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141 and err == b""


def test_edges_of_the_other_methods_say_how_many_have_a_neighbour_within_reach(tmp_path):
    """Their σ comes from the train's isolated edges, so a neighbour's pull on an edge is in no σ: `pintime
    edges --method threshold` says how many edges have one (Table 1 at 192 kHz: both edges of every 100 µs
    pulse, 19 samples apart). The template method fits such edges together and says nothing."""
    code, _, lines = run_cli(["edges", EXAMPLE_WAV, "--method", "threshold", "--csv", tmp_path / "t.csv"])
    near = [line for line in lines if "have a neighbour within" in line]
    assert code == 0 and len(near) == 1, lines
    count, total = (int(w) for w in near[0].split()[:3:2])
    assert 0.5 * total < count < total and "threshold method's window" in near[0]
    code, _, lines = run_cli(["edges", EXAMPLE_WAV, "--csv", tmp_path / "e.csv"])
    assert code == 0 and not any("neighbour" in line for line in lines), lines


def test_validate_judges_few_repetitions_by_their_ci_not_by_error_se(tmp_path):
    """The laptop example holds two repetitions: error/SE divides by a spread of one degree of freedom, so
    it may read −6 where Student's t's 95 % CI holds the truth. Each row says whether its CI holds the truth,
    and a note says error/SE is no z-score."""
    out = tmp_path / "v.json"
    code, printed, lines = run_cli(["validate", CAPTURES / "table1-laptop-48k.wav",
                                    "--truth", SIM / "table1.json", "--json", out])
    assert code == 0, lines
    rows = json.loads(out.read_text())["table1"]
    for row in rows:
        low, high = row["ci95_us"]
        assert row["count"] == 2 and row["within_ci95"] is (low <= row["truth_us"] <= high)
    for row in rows:  # the CI is at least Student's t wide (12.7 SE at 1 degree of freedom), not ±1.96 SE
        low, high = row["ci95_us"]
        se_us = row["std_us"] / np.sqrt(row["count"])
        assert (high - low) / 2 >= stats.t.ppf(0.975, row["count"] - 1) * se_us * (1 - 1e-9), row
    header = next(line for line in printed.splitlines() if line.startswith("Technique"))
    assert header.endswith("error/SE in CI")
    assert "as few as 2 repetitions, 1 degree(s) of freedom: it is no z-score" in printed
