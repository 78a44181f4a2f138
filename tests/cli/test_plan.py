"""``pintime plan``: repetitions per technique and method for a wanted CI, from a capture or a profile."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pintime.cli import main
from pintime.estimate.plan import half_width_us
from pintime.estimate.table1 import PAPER_TABLE1
from support import SIM, assert_fails, run_cli

pytestmark = pytest.mark.usefixtures("make_sim")
LABELS = [label for _, _, label, *_ in PAPER_TABLE1] + ["§5 system T_e"]


def _plan(tmp_path, *argv) -> dict:
    out = tmp_path / "plan.json"
    code, printed, lines = run_cli(["plan", *argv, "--json", out])
    assert code == 0, lines
    assert printed.startswith("Plan for a 95 % CI")
    return json.loads(out.read_text())


def _check_rows(plan: dict, labels: list[str], data_dependent: tuple[str, ...] = ()) -> None:
    """A row per technique and method; each the fewest repetitions reaching the target."""
    rows = {(r["label"], r["method"]): r for r in plan["rows"]}
    assert set(rows) == {(label, m) for label in labels for m in ("template", "count")}
    target = plan["target_ci95_half_us"]
    for r in plan["rows"]:
        reps, shared = r["repetitions"], r["shared_ci95_half_us"]
        assert r["ci95_half_us"] <= target * (1 + 1e-12) and r["mcu_s"] > 0
        assert r["ci95_half_us"] == pytest.approx(half_width_us(r["std_us"], reps, shared))
        assert reps == 2 or half_width_us(r["std_us"], reps - 1, shared) > target
    # the count method needs far more: a tick is 5.2 µs, a template edge < 1 ns (unless the code's own time
    # varies from call to call more than a tick does)
    for label in set(labels) - set(data_dependent):
        assert rows[(label, "count")]["std_us"] > 100 * rows[(label, "template")]["std_us"]


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    wav = tmp_path_factory.mktemp("plan") / "t1.wav"
    assert main(["synth", str(SIM / "table1.edges.csv"), "-o", str(wav), "--seed", "7", "--duration-s",
                 "30"]) == 0
    return wav


def test_plan_from_a_capture_has_every_technique_and_method(tmp_path, capture):
    plan = _plan(tmp_path, capture, "--target-ns", "1")
    assert plan["target_ci95_half_us"] == pytest.approx(1e-3) and plan["f_cpu_hz"] == 1e6
    assert plan["tick_us"] == pytest.approx(1e6 / 192000, rel=1e-4)
    assert 0 < plan["edge_sigma_us"] < 1e-3  # the template locator: well under a ns per edge
    _check_rows(plan, LABELS)
    assert all(not r["mcu_s_pulses_only"] for r in plan["rows"])  # frames measured in the capture


def test_a_target_below_the_learned_shapes_shared_error_is_no_plan(tmp_path, capture):
    """The template's shared error is a floor: a target under it gets no repetitions, said as such."""
    rows = _plan(tmp_path, capture, "--target-ns", "1")["rows"]
    floor = max(r["shared_ci95_half_us"] for r in rows if r["method"] == "template")
    assert 0 < floor < 1e-3
    below = _plan(tmp_path, capture, "--target-ns", str(floor * 1e3 / 2))["rows"]
    unreachable = [r for r in below if r["repetitions"] is None]
    assert unreachable
    for r in unreachable:
        assert r["method"] == "template" and r["mcu_s"] is None
        assert r["ci95_half_us"] == r["shared_ci95_half_us"] > floor / 2
    code, printed, _ = run_cli(["plan", str(capture), "--target-ns", str(floor * 1e3 / 2)])
    assert code == 0 and "unreachable†" in printed
    assert "no number of repetitions reaches the target" in printed


def test_resolving_the_cycle_and_a_target_in_cycles(tmp_path, capture):
    resolve = _plan(tmp_path, capture, "--resolve-cycle")
    assert resolve["target_ci95_half_cycles"] == pytest.approx(0.5)
    cycles = _plan(tmp_path, capture, "--target-cycles", "0.5")
    assert [r["repetitions"] for r in cycles["rows"]] == [r["repetitions"] for r in resolve["rows"]]


def test_plan_for_your_functions(tmp_path):
    wav = tmp_path / "user.wav"
    assert main(["synth", str(SIM / "user_example.edges.csv"), "-o", str(wav), "--seed", "1"]) == 0
    elf = SIM.parent / "firmware" / "user_example.elf"
    plan = _plan(tmp_path, wav, "--target-ns", "2", "--elf", elf)
    _check_rows(plan, ["mac16 per call", "crc8_step per call", "crc8_branchy per call"],
                data_dependent=("crc8_branchy per call",))


def test_plan_from_a_profile_uses_beilners_variance(tmp_path):
    plan = _plan(tmp_path, "--profile", "default", "--rate", "48000", "--target-ns", "5")
    _check_rows(plan, LABELS)
    tick = 1e6 / 48000
    assert plan["tick_us"] == pytest.approx(tick)
    direct = next(r for r in plan["rows"] if r["label"] == "Direct (1×)" and r["method"] == "count")
    f = (101.0 / tick) % 1  # 100 cycles and ε = 1 at 1 MHz
    assert direct["std_us"] == pytest.approx(tick * np.sqrt(f * (1 - f)))
    assert all(r["mcu_s_pulses_only"] for r in plan["rows"])


@pytest.mark.parametrize("argv,names", [
    (["--target-ns", "1"], "a WAV capture or --profile"),
    (["--profile", "default", "--target-ns", "abc"], "--target-ns"),
    (["--profile", "default", "--target-ns", "-1"], "--target-ns must be from"),
    (["--profile", "nope", "--target-ns", "1"], "nope"),
    (["--profile", "default", "--target-ns", "1e-30"], "--target-ns must be from"),
    (["--profile", "default", "--target-ns", "1e-5"], "no plan"),
    ([SIM / "table1.edges.csv", "--target-ns", "1"], "needs a WAV capture"),
])
def test_bad_input_is_one_line(argv, names):
    assert_fails(["plan", *argv], names)


def test_rate_is_the_captures_own(capture):
    assert_fails(["plan", capture, "--rate", "48000", "--target-ns", "1"], "--rate")


def test_a_capture_of_two_repetitions_is_too_short_to_plan_from():
    """The example capture holds 2 repetitions per technique: no spread can be measured from it."""
    assert_fails(["plan", SIM.parents[1] / "captures" / "table1-default.wav", "--target-ns", "1"],
                 "10 repetitions")
