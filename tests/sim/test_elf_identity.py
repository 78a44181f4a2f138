"""The firmware an ELF is (pintime.avr.symbols): its revision is the RUN frame's, and `--elf` of another
build is refused instead of naming the functions of the capture's firmware after another's."""

from __future__ import annotations

import json

import pytest
from pintime.avr.symbols import firmware_revision
from support import BUILD, SIM, assert_fails

pytestmark = pytest.mark.usefixtures("make_sim")
FIRMWARE = BUILD / "firmware"


@pytest.mark.parametrize("program", ["table1", "table2", "user_example"])
def test_the_elf_revision_is_the_one_its_run_sends(program):
    truth = json.loads((SIM / f"{program}.json").read_text())
    assert firmware_revision(FIRMWARE / f"{program}.elf") == truth["revision"]


def test_an_elf_of_other_firmware_is_refused(tmp_path):
    elf = (FIRMWARE / "user_example.elf").read_bytes()
    revision = firmware_revision(FIRMWARE / "user_example.elf").to_bytes(4, "little")
    assert elf.count(revision) == 1  # the constant in flash, nowhere else: patched, it is another build
    other = tmp_path / "other.elf"
    other.write_bytes(elf.replace(revision, (int.from_bytes(revision, "little") ^ 1).to_bytes(4, "little")))
    message = assert_fails(["analyze", SIM / "user_example.edges.csv", "--elf", other], other)
    assert "give the ELF of the firmware that made the capture" in message
