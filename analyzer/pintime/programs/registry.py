"""The one table of programs: a capture's RUN frame program id (``frames.PROGRAMS``) → its
:class:`pintime.programs.base.Program`."""

from __future__ import annotations

from pintime.frames import PROGRAMS
from pintime.programs.base import Program
from pintime.programs.kernel import KernelProgram
from pintime.programs.micro import MicroProgram
from pintime.programs.table1 import Table1Program
from pintime.programs.table2 import Table2Program
from pintime.programs.user import UserProgram

REGISTRY: dict[str, Program] = {p.name: p for p in (Table1Program(), Table2Program(), UserProgram(),
                                                    MicroProgram(), KernelProgram())}


def program_of(program_id: int) -> Program | None:
    """The program of a RUN frame's program id; None for an id the frame format does not know."""
    name = PROGRAMS.get(program_id)
    return None if name is None else REGISTRY[name]


def program_of_truth(name: str) -> Program:
    """The program of a simavr truth: the harness names a run by its ELF, so ``table1``, ``table2``,
    ``micro`` and ``kernel`` are themselves and any other name (``user``, ``user_example``…) is a user
    program (firmware/user/pintime.h)."""
    return REGISTRY.get(name, REGISTRY["user"])
