"""Result files (pintime.files): never over an input or a file that travels with one, written whole or not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pintime.cli import main
from pintime.errors import PintimeError
from pintime.files import companions, refuse_overwrite, write_text
from support import SIM


@pytest.mark.parametrize(("given", "output"), [
    ("run/table1.edges.csv", "run/table1.json"),  # the simavr truth beside the exact edges
    ("run/table1.vcd", "run/table1.edges.csv"),
    ("run/table2.edges.csv", "run/table2.visits.csv"),
    ("cap/my.wav", "cap/my.json"),  # a recording's sidecar, with its gap list
])
def test_outputs_never_replace_a_companion_of_an_input(tmp_path, given, output):
    (tmp_path / given).parent.mkdir(exist_ok=True)
    (tmp_path / given).write_text("x")
    with pytest.raises(PintimeError, match="belongs with the input"):
        refuse_overwrite([tmp_path / output], [tmp_path / given])


def test_companions_are_found_through_a_symlink(tmp_path):
    (tmp_path / "take").mkdir()
    (tmp_path / "take" / "rec.wav").write_text("x")
    link = tmp_path / "link.wav"
    link.symlink_to(tmp_path / "take" / "rec.wav")
    assert tmp_path / "take" / "rec.json" in companions(link)
    with pytest.raises(PintimeError, match="belongs with the input"):
        refuse_overwrite([tmp_path / "take" / "rec.json"], [link])


def test_an_unrelated_output_is_fine(tmp_path):
    (tmp_path / "my.wav").write_text("x")
    refuse_overwrite([tmp_path / "my.result.json", tmp_path / "other.json"], [tmp_path / "my.wav"])


@pytest.mark.usefixtures("make_sim")
def test_analyze_refuses_to_replace_the_truth_and_leaves_it_untouched(capsys):
    edges, truth = SIM / "table1.edges.csv", SIM / "table1.json"
    before = truth.read_bytes()
    assert main(["analyze", str(edges), "--json", str(truth)]) == 2
    assert "belongs with the input" in capsys.readouterr().err
    assert truth.read_bytes() == before


def test_a_failed_write_leaves_the_old_file_and_no_part(tmp_path, monkeypatch):
    out = tmp_path / "result.json"
    out.write_text("old")

    real_write = Path.write_text

    def full_disk(self, text, *args, **kwargs):  # the temporary file fills the disk half-way through
        real_write(self, text[:1], *args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(PintimeError, match="result.json: cannot write .No space left on device"):
        write_text(out, "new")
    monkeypatch.undo()
    assert out.read_text() == "old" and os.listdir(tmp_path) == ["result.json"]


def test_write_replaces_whole(tmp_path):
    out = tmp_path / "r.csv"
    write_text(out, "a\n")
    write_text(out, "b\n")
    assert out.read_text() == "b\n" and os.listdir(tmp_path) == ["r.csv"]


def test_a_new_result_has_the_umasks_permissions_and_a_replaced_one_keeps_its_own(tmp_path):
    """Written through a temporary file (mode 0600), a result still gets what any new file would: readable
    by others under umask 022; a file it replaces keeps its own mode."""
    old_umask = os.umask(0o022)
    try:
        new = tmp_path / "new.json"
        write_text(new, "{}")
        assert new.stat().st_mode & 0o777 == 0o644
        kept = tmp_path / "kept.csv"
        kept.write_text("a\n")
        kept.chmod(0o640)
        write_text(kept, "b\n")
        assert kept.stat().st_mode & 0o777 == 0o640 and kept.read_text() == "b\n"
    finally:
        os.umask(old_umask)
