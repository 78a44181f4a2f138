"""The other methods' estimates checked against the template method's (pintime.crosscheck)."""

from __future__ import annotations

from pintime.crosscheck import check_text, compare_estimates


def _row(label, mean, half, **more):
    return {"label": label, "mean_us": mean, "ci95_us": [mean - half, mean + half], **more}


def test_estimates_beyond_both_cis_are_reported_rows_paired_by_label():
    method = {"method": "threshold", "table1": [
        _row("Differential 55×", 80.92, 0.025, median=_row("median", 80.5, 0.06)),
        _row("Line fitting 1×–20×", 99.99, 0.02),
        _row("only here", 1.0, 0.1)],
        "overdetermined": {"t_e": {"mean_us": 100.3, "ci95_us": [100.0, 100.6]}}}
    template = {"method": "template", "table1": [
        _row("Line fitting 1×–20×", 100.0, 6e-6),  # another order: paired by label
        _row("Differential 55×", 100.0, 2e-4, median=_row("median", 100.0, 4e-5))],
        "overdetermined": {"t_e": {"mean_us": 100.0, "ci95_us": [99.99, 100.01]}}}
    compared, found = compare_estimates(method, template)
    assert compared == 4  # the row only the method has is not compared
    assert [d.where for d in found] == ["table1 / Differential 55×", "table1 / Differential 55× / median"]
    assert found[0].method_us == 80.92 and abs(found[0].method_half_us - 0.025) < 1e-12
    text = check_text("threshold", compared, found)
    assert text.startswith("template check: 2 of the 4 estimates of the threshold method differ")
    rows = {line.rsplit(maxsplit=4)[0]: line.split()[-4:] for line in text.splitlines()[3:]}
    assert rows == {"table1 / Differential 55×": ["80.9200", "25.0000", "100.0000", "0.2000"],
                    "table1 / Differential 55× / median": ["80.5000", "60.0000", "100.0000", "0.0400"]}


def test_agreement_is_said():
    same = {"table1": [_row("Direct (1×)", 101.0, 0.5)]}
    compared, found = compare_estimates(same, {"table1": [_row("Direct (1×)", 101.2, 0.01)]})
    assert (compared, found) == (1, [])
    assert "agree with the template method's" in check_text("inflection", compared, found)


def test_the_count_methods_estimates_carry_its_slow_clock_models_ci():
    """Whole samples: repetitions that all count alike have a CI of 0 (Executing 10× on the 192 kHz example
    capture, 99.9977 µs ± 0 against the template's 100.0998); its slow-clock row's model CI holds it."""
    method = {"table1": [_row("Executing 10×", 99.9977, 0.0)],
              "slow_clock": {"tick_us": 5.2, "table1": [_row("Executing 10×", 99.9977, 0.0,
                                                             model_ci95_us=[99.7977, 100.1977])]}}
    compared, found = compare_estimates(method, {"table1": [_row("Executing 10×", 100.0998, 4e-6)]})
    assert (compared, found) == (1, [])
    compared, found = compare_estimates({"table1": method["table1"]},
                                        {"table1": [_row("Executing 10×", 100.0998, 4e-6)]})
    assert len(found) == 1  # without the model, its CI of 0 would flag it
