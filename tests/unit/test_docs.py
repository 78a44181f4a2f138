"""The docs tell the truth about the program: every `pintime` and `make` command they show parses as
written, every file they link exists, and docs/cli.md is what tools/cli_reference.py makes now."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from pintime.cli import EXAMPLES, build_parser
from support import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
TARGET = re.compile(r"^([A-Za-z0-9_./%$()-]+(?:\s+[A-Za-z0-9_./%$()-]+)*)\s*:(?!=)", re.MULTILINE)


def shell_commands() -> list[tuple[str, str]]:
    """(document, command) for every command in the docs' ``sh`` blocks, comments cut, `&&` chains split."""
    found = []
    for doc in DOCS:
        for language, body in FENCE.findall(doc.read_text(encoding="utf-8")):
            if language != "sh":
                continue
            for line in body.splitlines():
                line = re.sub(r"(^|\s)#.*$", "", line).strip()
                found += [(doc.name, part.strip()) for part in line.split("&&") if part.strip()]
    return found


def make_targets(build: str = "build") -> list[re.Pattern[str]]:
    """Every target the Makefile names in a rule or a .PHONY line, as a pattern (``%`` matches a stem),
    with the build folder ``build`` (the Makefile's: ``build/<board>`` for a board other than the Mega)."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    names = {word for rule in TARGET.findall(text) for word in rule.split()}
    names |= {w for line in re.findall(r"^\.PHONY:(.*)$", text, re.MULTILINE) for w in line.split()}
    folders = {"$(BUILD)": build, "$(FW_BUILD)": f"{build}/firmware", "$(OUT)": "out"}
    patterns = []
    for name in names:
        for variable, folder in folders.items():
            name = name.replace(variable, folder)
        patterns.append(re.compile(re.escape(name).replace("%", ".+") + "$"))
    return patterns


COMMANDS = shell_commands()


def is_pintime(command: str) -> bool:
    """Whether the command runs pintime itself (``pintime``, ``.venv/bin/pintime``, a venv's on any OS)."""
    return re.split(r"[/\\]", shlex.split(command)[0])[-1] in ("pintime", "pintime.exe")


def test_the_docs_show_commands() -> None:
    kinds = {shlex.split(c)[0] for _, c in COMMANDS}
    assert {".venv/bin/pintime", "make"} <= kinds


HELP_EXAMPLES = [(f"pintime {name} --help", line) for name, lines in EXAMPLES.items() for line in lines]


@pytest.mark.parametrize(("doc", "command"),
                         [c for c in COMMANDS if is_pintime(c[1])] + HELP_EXAMPLES)
def test_pintime_commands_parse(doc: str, command: str) -> None:
    argv = shlex.split(command)[1:]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            build_parser(argv).parse_args(argv)
        except SystemExit as stop:  # --help exits 0; a wrong option exits 2
            assert stop.code == 0, f"{doc}: `{command}`: {err.getvalue().strip()}"
    for word in argv:
        if word.startswith("captures/"):
            assert (ROOT / word).is_file(), f"{doc}: `{command}` names {word}, which is not committed"


@pytest.mark.parametrize(("doc", "command"), [c for c in COMMANDS if shlex.split(c[1])[0] == "make"])
def test_make_commands_name_targets(doc: str, command: str) -> None:
    words = shlex.split(command)[1:]
    goals = [w for w in words if "=" not in w and not w.startswith("-")]
    board = dict(w.split("=", 1) for w in words if "=" in w).get("BOARD", "mega")
    targets = make_targets("build" if board == "mega" else f"build/{board}")
    missing = [g for g in goals if not any(t.match(g) for t in targets)]
    assert not missing, f"{doc}: `{command}`: no Makefile target {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_links_point_at_files(doc: Path) -> None:
    text = FENCE.sub("", doc.read_text(encoding="utf-8"))
    broken = [t for t in LINK.findall(text) if "://" not in t and not (doc.parent / t).exists()]
    assert not broken, f"{doc.name} links to missing files: {broken}"


def test_cli_reference_is_current() -> None:
    if sys.version_info >= (3, 13):
        pytest.skip("argparse formats option help otherwise from Python 3.13; docs/cli.md is made with 3.11")
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "cli_reference.py"), "--check"],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
