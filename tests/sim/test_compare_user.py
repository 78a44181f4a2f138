"""``pintime compare`` on two captures of the user example, one function made slower by a known number of
cycles: the change is found within its 95 % CI, the functions left alone show none.

Truth: the simavr pin traces of the two builds (their exact edges give each function's cycles per call to
the cycle, tests/sim/test_user_program.py), never the synthesizer's parameters.
"""

from __future__ import annotations

import json

import pytest
from pintime.capture.edgelist import read_edge_list
from pintime.cli import main
from support import ROOT, assert_fails, make_build, run_json

EXAMPLE = ROOT / "firmware" / "user" / "user_example.c"
ADDED_NOPS = 4  # mac16 gets this many nops: one cycle each
FUNCTIONS = ["mac16", "crc8_step", "crc8_branchy"]


def _build(tmp, name: str, source: str) -> tuple:
    """A user build of ``source`` (8 repetitions), its simavr edges and ELF."""
    src = tmp / f"{name}.c"
    src.write_text(source)
    build = make_build(tmp / name, "user", f"{tmp / name}/sim/user.json", USER_SRC=src, USER_REPS=8)
    return build / "sim" / "user.edges.csv", build / "firmware" / "user.elf"


@pytest.fixture(scope="module")
def takes(tmp_path_factory) -> dict:
    """Per build ("old", "new"): the exact-edge truth per function and the analysis of a synthesized WAV."""
    tmp = tmp_path_factory.mktemp("compare")
    original = EXAMPLE.read_text()
    nops = "\\n\\t".join(["nop"] * ADDED_NOPS)
    slower = original.replace("\tmac_a++;\n", f'\tmac_a++;\n\t__asm__ volatile("{nops}");\n', 1)
    assert slower != original
    out = {}
    for seed, (name, source) in enumerate((("old", original), ("new", slower)), start=1):
        edges, elf = _build(tmp, name, source)
        truth_json = tmp / f"{name}.truth.json"
        assert main(["analyze", str(edges), "--elf", str(elf), "--json", str(truth_json)]) == 0
        truth = {r["name"]: r["time"]["mean_cycles"] for r in json.loads(truth_json.read_text())["user"]}
        end_s = float(read_edge_list(edges).on(0).time[-1]) / 1e6 + 0.2  # 1 MHz: µs
        wav = tmp / f"{name}.wav"
        assert main(["synth", str(edges), "-o", str(wav), "--profile", "default", "--seed", str(seed),
                     "--duration-s", f"{end_s:.3f}"]) == 0
        result = tmp / f"{name}.result.json"  # {name}.json is the WAV's sidecar
        assert main(["analyze", str(wav), "--elf", str(elf), "--json", str(result)]) == 0
        out[name] = {"truth": truth, "result": result}
    return out


def test_the_change_is_found_within_its_ci_and_nothing_else(capsys, tmp_path, takes):
    truth_change = {f: takes["new"]["truth"][f] - takes["old"]["truth"][f] for f in FUNCTIONS}
    assert truth_change == pytest.approx({"mac16": ADDED_NOPS, "crc8_step": 0, "crc8_branchy": 0},
                                         abs=1e-9)  # simavr's word
    c = run_json(capsys, tmp_path, "compare", str(takes["old"]["result"]), str(takes["new"]["result"]))
    rows = {r["name"]: r for r in c["changes"]}
    assert list(rows) == FUNCTIONS and c["only_old"] == c["only_new"] == []
    for f in FUNCTIONS:
        r = rows[f]
        assert abs(r["change_cycles"] - truth_change[f]) <= r["change_ci95_half_cycles"], r
        assert r["change_percent"] == pytest.approx(100 * r["change_cycles"] / r["old_cycles"])
    assert rows["mac16"]["verdict"] == "slower"
    assert rows["crc8_step"]["verdict"] == rows["crc8_branchy"]["verdict"] == "no change the CIs can see"
    (tmp_path / "back").mkdir()
    back = run_json(capsys, tmp_path / "back", "compare", str(takes["new"]["result"]),
                    str(takes["old"]["result"]))
    assert {r["name"]: r["verdict"] for r in back["changes"]}["mac16"] == "faster"


def test_the_printed_table(capsys, takes):
    assert main(["compare", str(takes["old"]["result"]), str(takes["new"]["result"])]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("program user, F_CPU 1000000 Hz")
    verdicts = {line.split()[0]: line for line in lines[3:]}
    assert verdicts["mac16"].endswith("  slower")
    assert verdicts["crc8_step"].endswith("  no change the CIs can see")


def test_results_of_another_program_are_refused(tmp_path, takes):
    other = json.loads(takes["old"]["result"].read_text())
    other["run"]["program"] = "table1"
    path = tmp_path / "table1.json"
    path.write_text(json.dumps(other))
    line = assert_fails(["compare", path, takes["new"]["result"]], "differ in program: table1 vs user")
    assert str(path) in line
    other["run"] |= {"program": "user", "f_cpu_hz": 16000000}
    path.write_text(json.dumps(other))
    assert_fails(["compare", path, takes["new"]["result"]],
                 "differ in clock (F_CPU, Hz): 16000000 vs 1000000")
