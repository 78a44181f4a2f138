"""Table 2's expectation from the listing (pintime.table2.table, pintime.avr.expect) on `make sim`'s
default table2 run: each unknown's expected cycles beside the simavr truth, and the flag when a measurement
misses them.

Truth: the least-squares solve of simavr's exact pulse widths (its cycle counter). The expectation uses
none of them: only the listing's exit costs along each round's path and the pulse's own instructions.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from pintime.avr.cfg import exit_names, function_cfg
from pintime.avr.expect import path_cycles
from pintime.pipeline import analyze
from pintime.table2.blocksystem import EPSILON
from pintime.table2.table import PULSE_EPSILON_CYCLES, build_table2, outside, table2_json
from pintime.table2.visits import Rounds, SimRounds, load_sim_rounds
from support import BUILD, SIM

pytestmark = pytest.mark.usefixtures("make_sim")


@pytest.fixture(scope="module")
def sim() -> SimRounds:
    return load_sim_rounds(SIM / "table2.visits.csv")


@pytest.fixture(scope="module")
def exact(sim):
    return _table(sim)


def _table(s: SimRounds, extra_cycles: int = 0):
    """Table 2 from simavr's exact widths, every pulse ``extra_cycles`` wider."""
    us_per_cycle = 1e6 / s.f_cpu_hz
    width_cycles = s.width_cycles + extra_cycles
    return build_table2(s.cfg, Rounds(s.key // 65536, width_cycles * us_per_cycle, s.block_counts,
                                      s.exit_counts, width_cycles), us_per_cycle)


def test_expected_cycles_are_simavrs(sim, exact):
    """Every unknown of both models: expected from the listing = simavr's exact value, a whole number of
    cycles, never flagged; an exit-model unknown is its integer combination of exit costs and ε."""
    t2 = exact
    assert t2.epsilon_cycles == PULSE_EPSILON_CYCLES == 6  # TABLE2.md §3: simavr agrees with the listing
    for model in (t2.block, t2.exit):
        for u in model.unknowns:
            assert u.expected_cycles == round(u.truth_cycles)
            assert abs(u.truth_cycles - u.expected_cycles) < 1e-6
            assert outside(u, t2.us_per_cycle) is False
    costs = [Fraction(e.cycles) for e in sim.cfg.exits] + [Fraction(PULSE_EPSILON_CYCLES)]
    for u, coefficients in zip(t2.exit.unknowns, zip(*t2.exit.reduction.coefficients, strict=True),
                               strict=True):
        assert u.expected_cycles == sum(c * costs[k] for k, c in enumerate(coefficients))
    rows = table2_json(t2)["table2"]
    assert all(r["expected_cycles"] == r["expected_min_cycles"] == r["expected_max_cycles"] for r in rows)
    assert not any(r["outside_expectation"] for r in rows)


def test_each_resolved_exit_measures_its_listing_cost(sim):
    """The cut measurements resolve every CFG exit alone (a block left one way): on simavr's exact edges
    each measures exactly the cycles the listing gives it, and ε the pulse's out + CALL."""
    t2 = analyze(SIM / "table2.edges.csv").result
    assert t2 is not None and t2.resolved is not None, t2
    columns = table2_json(t2)["table2_resolved"]["columns"]
    costs = dict(zip(exit_names(sim.cfg), (e.cycles for e in sim.cfg.exits), strict=True))
    measured = [c for c in columns if "mean_cycles" in c and c["name"] in costs]
    assert len(measured) > 40  # nearly all 51 exits (a few fixed-trip loop exits come from the datasheet)
    for c in measured:
        assert c["expected_cycles"] == costs[c["name"]]
        assert c["mean_cycles"] == pytest.approx(c["expected_cycles"], abs=1e-6)
        assert c["outside_expectation"] is False
    [eps] = [c for c in columns if c["name"] == EPSILON]
    assert eps["expected_cycles"] == PULSE_EPSILON_CYCLES and eps["outside_expectation"] is False


def test_a_pulse_the_model_does_not_know_is_flagged(sim):
    """Pulses one cycle wider than the listing's pulse (as if the rising edge were made by a 2-cycle `sbi`
    instead of the `out` the expectation assumes): only the unknown holding ε misses its expectation, by
    exactly that cycle, and is flagged in both models; every ε-free unknown stays inside."""
    t2 = _table(sim, extra_cycles=1)
    for model in (t2.block, t2.exit):
        flagged = [u.label for u in model.unknowns if outside(u, t2.us_per_cycle)]
        holders = [u.label for u in model.unknowns if EPSILON in [n for n, _ in u.members]]
        assert flagged == holders and len(holders) == 1
        u = next(u for u in model.unknowns if u.label == holders[0])
        assert u.estimate.mean_us / t2.us_per_cycle == pytest.approx(u.expected_cycles + 1, abs=1e-6)
    assert [r["outside_expectation"] for r in table2_json(t2)["table2"]].count(True) == 1


def test_the_coders_whole_call_is_bounded_below_only(sim):
    """adpcm_coder's main loop runs once per sample (its count is an argument), so the listing bounds a
    call from below only: 204 cycles without a sample (TABLE2.md: BB0 et al. without ε), no maximum."""
    e = path_cycles(function_cfg(Path(BUILD / "firmware" / "table2.elf"), "adpcm_coder"))
    assert e.min_cycles == 204 and e.max_cycles is None and "trip count unknown" in e.how
    assert np.all(sim.width_cycles - PULSE_EPSILON_CYCLES >= e.min_cycles)
