"""``pintime cfg ELF``: a compiled function's basic blocks with their cycle costs, as a table or JSON; the
table2 build's cut copies (:mod:`pintime.avr.cutcopies`): generate, check, and map them for the harness."""

from __future__ import annotations

import argparse
import json

from pintime.avr.cfg import describe, function_cfg, simavr_skip_bug_sites, watch_addresses
from pintime.avr.cutcopies import check_cut_build, copies_assembly, find_copies
from pintime.files import refuse_overwrite, write_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("elf", metavar="ELF", help="AVR firmware with a symbol table")
    parser.add_argument("--function", default="adpcm_coder", help="function symbol (default: adpcm_coder)")
    parser.add_argument("--json", metavar="FILE", default=None,
                        help="also write the blocks, their exits and cycle costs, and the watch addresses")
    parser.add_argument("--watch", metavar="FILE", default=None,
                        help="write the byte addresses a per-pulse PC histogram must count, one per line "
                             "(with cut copies in the ELF: then each copy's patched word)")
    parser.add_argument("--cut-copies", metavar="FILE", default=None,
                        help="write the assembly of one copy of the function per block, cut at that block "
                             "(firmware/table2/TABLE2.md §6)")
    parser.add_argument("--check-cuts", metavar="FIRST_ELF", default=None,
                        help="check the ELF's cut copies against the function and the first link FIRST_ELF "
                             "they were made from (exit status 1 and the difference if they differ)")
    parser.add_argument("--alias", metavar="FILE", default=None,
                        help="write the cut copies' address ranges for the harness's --alias "
                             "(`start end target`, hex, one copy per line; empty without copies)")


def run(args: argparse.Namespace) -> int:
    refuse_overwrite([args.json, args.watch, args.cut_copies, args.alias], [args.elf, args.check_cuts])
    if args.check_cuts:
        checked = check_cut_build(args.elf, args.check_cuts, args.function)
        print(f"{args.elf}: {len(checked.cfg.blocks)} cut copies of {args.function} at {checked.base:#x}, "
              "each identical to it but for its patched word; nothing before them moved")
        return 0
    if args.cut_copies:
        write_text(args.cut_copies, copies_assembly(args.elf, args.function))
        return 0
    cfg = function_cfg(args.elf, args.function)
    copies = find_copies(args.elf, args.function) if args.watch or args.json or args.alias else None
    print(f"{cfg.function}: {len(cfg.blocks)} blocks, {len(cfg.exits)} exits, "
          f"{cfg.size_bytes} bytes at {cfg.address:#x}")
    print(f"{'block':<6} {'offset':>7} {'instr':>5} {'cycles':>7}  exits (target: cycles)")
    for b in cfg.blocks:
        cycles = f"{b.cycles_min}/{b.cycles_max}" if b.varies else str(b.cycles_min)
        exits = ", ".join(f"{'return' if e.target is None else f'BB{e.target}'}"
                          f"{' (taken)' if e.taken else ''}: {e.cycles}" for e in b.exits)
        print(f"{b.name:<6} {b.address - cfg.address:>#7x} {len(b.instructions):>5} {cycles:>7}  {exits}")
    bugs = simavr_skip_bug_sites(cfg)
    for i in bugs:
        print(f"warning: simavr 1.6 mis-executes the skip at {i} (skip followed by adiw/sbiw ≥ 0xC)")
    if args.json:
        description = describe(cfg) | {"cuts": None if copies is None else copies.describe()}
        write_text(args.json, json.dumps(description, indent=1) + "\n")
    if args.watch:
        watch = watch_addresses(cfg) if copies is None else copies.watch()
        write_text(args.watch, "".join(f"{a:#x}\n" for a in watch))
    if args.alias:
        aliases = [] if copies is None else copies.aliases()
        write_text(args.alias, "".join(f"{s:#x} {e:#x} {t:#x}\n" for s, e, t in aliases))
    return 1 if bugs else 0
