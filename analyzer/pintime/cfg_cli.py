"""``pintime cfg ELF``: a compiled function's basic blocks with their cycle costs, as a table or JSON."""

from __future__ import annotations

import argparse
import json

from pintime.cfg import describe, function_cfg, simavr_skip_bug_sites, watch_addresses
from pintime.userfiles import refuse_overwrite, write_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("elf", metavar="ELF", help="AVR firmware with a symbol table")
    parser.add_argument("--function", default="adpcm_coder", help="function symbol (default: adpcm_coder)")
    parser.add_argument("--json", metavar="FILE", default=None,
                        help="also write the blocks, their exits and cycle costs, and the watch addresses")
    parser.add_argument("--watch", metavar="FILE", default=None,
                        help="write the byte addresses a per-pulse PC histogram must count, one per line")


def run(args: argparse.Namespace) -> int:
    refuse_overwrite([args.json, args.watch], [args.elf])
    cfg = function_cfg(args.elf, args.function)
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
        write_text(args.json, json.dumps(describe(cfg), indent=1) + "\n")
    if args.watch:
        write_text(args.watch, "".join(f"{a:#x}\n" for a in watch_addresses(cfg)))
    return 1 if bugs else 0
