"""The programs' registry (pintime.programs): one program per RUN frame program id, looked up there alone."""

from __future__ import annotations

import ast

import pytest
from pintime.frames import PROGRAMS
from pintime.programs.base import Program
from pintime.programs.registry import REGISTRY, program_of, program_of_truth
from support import ROOT

PACKAGE = ROOT / "analyzer" / "pintime"


def test_every_program_id_has_its_program():
    assert {program_of(i).name for i in PROGRAMS} == set(PROGRAMS.values()) == set(REGISTRY)
    assert all(isinstance(p, Program) and p.name == name for name, p in REGISTRY.items())


def test_an_unknown_program_id_has_none():
    assert program_of(max(PROGRAMS) + 1) is None


@pytest.mark.parametrize(("truth", "program"), [
    ("table1", "table1"), ("table2", "table2"), ("micro", "micro"), ("kernel", "kernel"), ("user", "user"),
    ("user_example", "user"), ("mine", "user")])
def test_a_truth_names_its_program_by_its_elf(truth, program):
    assert program_of_truth(truth).name == program


def test_only_user_and_micro_take_an_elf_and_only_table2_reads_visits():
    assert {n for n, p in REGISTRY.items() if p.elf_use is not None} == {"user", "micro"}
    assert {n for n, p in REGISTRY.items() if p.reads_visits} == {"table2"}


def _kind_tests(path) -> list[str]:
    """Where a module compares a program's name with something holding "program" (``truth["program"]``,
    ``a.program.name``), or reads ``frames.PROGRAMS``: frame kinds of the same name (``f.kind == "user"``)
    are not programs."""
    names = set(PROGRAMS.values())
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            sides = (node.left, *node.comparators)
            if any(isinstance(c, ast.Constant) and c.value in names for c in sides) and any(
                    "program" in ast.unparse(c) for c in sides if not isinstance(c, ast.Constant)):
                found.append(f"{path.name}:{node.lineno}")
        elif isinstance(node, ast.ImportFrom) and "PROGRAMS" in [a.name for a in node.names]:
            found.append(f"{path.name}:{node.lineno}")
    return found


def test_the_program_kind_is_tested_in_pintime_programs_alone():
    outside = [hit for path in sorted(PACKAGE.rglob("*.py")) if "programs" not in path.parts
               for hit in _kind_tests(path)]
    assert outside == []
