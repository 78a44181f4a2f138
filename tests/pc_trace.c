/*
 * pc_trace.c — minimal libsimavr runner for tests/sim/test_cfg.py: runs an ELF to its end and writes a PC
 * trace of one address range (a function) to a file.
 *
 *     pc_trace FIRMWARE.elf LO HI TRACE.txt
 *
 * TRACE.txt has one line per instruction executed with LO <= PC < HI (byte addresses, hex):
 *     <pc hex> <cycles>
 * where <cycles> is what simavr charged for that instruction, and a line "call" each time the PC enters
 * the range from outside it. The run stops when the firmware sleeps with interrupts off (cpu_Done).
 */
#include <stdio.h>
#include <stdlib.h>

#include <simavr/sim_avr.h>
#include <simavr/sim_elf.h>

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: pc_trace FIRMWARE.elf LO HI TRACE.txt\n");
        return 2;
    }
    uint32_t lo = (uint32_t)strtoul(argv[2], NULL, 0);
    uint32_t hi = (uint32_t)strtoul(argv[3], NULL, 0);
    static elf_firmware_t firmware; /* zeroed: elf_read_firmware fills what the ELF has */
    if (elf_read_firmware(argv[1], &firmware) != 0) {
        fprintf(stderr, "pc_trace: cannot read %s\n", argv[1]);
        return 1;
    }
    avr_t *avr = avr_make_mcu_by_name(firmware.mmcu);
    if (!avr) {
        fprintf(stderr, "pc_trace: unknown MCU '%s' (is the .mmcu section linked?)\n", firmware.mmcu);
        return 1;
    }
    avr_init(avr);
    avr_load_firmware(avr, &firmware); /* after avr_init, which resets the frequency */
    FILE *trace = fopen(argv[4], "w");
    if (!trace) {
        perror(argv[4]);
        return 1;
    }

    int inside = 0;
    for (;;) {
        uint32_t pc = avr->pc;
        avr_cycle_count_t before = avr->cycle;
        int state = avr_run(avr);
        int now_inside = pc >= lo && pc < hi;
        if (now_inside) {
            if (!inside)
                fprintf(trace, "call\n");
            fprintf(trace, "%x %llu\n", pc, (unsigned long long)(avr->cycle - before));
        }
        inside = now_inside;
        if (state == cpu_Done || state == cpu_Crashed)
            break;
    }
    fclose(trace);
    return 0;
}
