"""The package's import graph: one way up, no circles, no private names across modules, no imports by string.

Layers, lowest first; a module may import only from its own layer or lower ones. The analyzer core
(capture, frames, locate, clock, estimate, avr, table2) thereby never imports the sound-card model,
validation, plots or the command line; the programs (one module each behind one interface) sit on the
estimates they call and under the pipeline that looks them up.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from support import ROOT

PACKAGE = ROOT / "analyzer" / "pintime"
LAYERS = [
    {"errors", "edges", "files", "compiled", "signals", "printed"},
    {"capture", "frames"},
    {"locate", "ladder"},
    {"frame_timing"},
    {"clock", "lost_audio", "estimate", "avr"},
    {"table2"},
    {"programs"},
    {"pipeline", "crosscheck", "compare"},
    {"validate", "soundcard", "record", "live", "liveworker"},
    {"plots"},
    {"cli"},
]


def _modules() -> dict[str, Path]:
    return {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
            for p in PACKAGE.rglob("*.py")}


@functools.cache  # each file parsed once for all the tests here
def _imports(path: Path) -> tuple[tuple[str, list[str]], ...]:
    """(module, names) of every ``import``/``from … import`` of pintime in the file, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "pintime":
            found.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.split(".")[0] == "pintime"]
    return tuple(found)


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    return next(i for i, layer in enumerate(LAYERS) if top in layer)


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for m, path in modules.items():
        for target, names in _imports(path):
            targets = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules] or [target]
            graph[m].update(t for t in targets if t in modules)
    return graph


def test_every_module_has_a_layer():
    for m in _modules():
        if m != "pintime":
            _layer(m)  # StopIteration: a new top-level module or subpackage not placed in LAYERS


def test_no_import_runs_up_a_layer():
    upward = [(m, t) for m, targets in _graph().items() if m != "pintime"
              for t in targets if _layer(t) > _layer(m)]
    assert upward == []


def test_no_import_circles():
    graph, state, cycles = _graph(), {}, []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = "open"
        for t in sorted(graph[m]):
            if state.get(t) == "open":
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t, stack + [t])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []


def test_no_private_names_across_modules():
    private = [(m, target, n) for m, path in _modules().items() for target, names in _imports(path)
               for n in names if n.startswith("_")]
    assert private == []


def test_no_imports_by_string():
    by_string = [m for m, path in _modules().items()
                 if "import_module(" in path.read_text() or "__import__(" in path.read_text()]
    assert by_string == []


MAX_FUNCTION_LINES = 60  # no function or method longer; complexity is ruff's (C901, PLR0912, PLR0915)


def _function_lines() -> dict[str, int]:
    """Every function and method of the package (``module.name``, methods by their own name) → its lines."""
    lines = {}
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{module}.{node.name}"
                lines[name] = max(lines.get(name, 0), node.end_lineno - node.lineno + 1)
    return lines


def test_functions_are_short():
    lines = _function_lines()
    too_long = {name: n for name, n in lines.items() if n > MAX_FUNCTION_LINES}
    assert too_long == {}
