/*
 * timing.h — durations of the frame format (FORMAT.md §3, §6) in MCU cycles and the cycle-exact pin
 * routines of pinwave.S. Shared by C and assembler, so F_CPU is a plain integer (no UL suffix).
 */
#ifndef PINTIME_TIMING_H
#define PINTIME_TIMING_H

#ifndef F_CPU
#error "F_CPU must be defined (Makefile variable, in Hz)"
#endif
/* Cycles per µs; for the assembler (and assembler text built in C) as a plain number, CYCLES_PER_US_PLAIN,
   since it reads no C integer suffix (the Arduino IDE passes F_CPU=16000000L). The clocks a board's 16 MHz
   crystal gives through the prescaler (clock.c). */
#if F_CPU == 16000000
#define CYCLES_PER_US_PLAIN 16
#elif F_CPU == 8000000
#define CYCLES_PER_US_PLAIN 8
#elif F_CPU == 4000000
#define CYCLES_PER_US_PLAIN 4
#elif F_CPU == 2000000
#define CYCLES_PER_US_PLAIN 2
#elif F_CPU == 1000000
#define CYCLES_PER_US_PLAIN 1
#else
#error "F_CPU must be 16, 8, 4, 2 or 1 MHz (16-bit cycle counts of a 3000 us QUIET)"
#endif
#ifdef __ASSEMBLER__
#define CYCLES_PER_US   CYCLES_PER_US_PLAIN
#else
#define CYCLES_PER_US   (F_CPU / 1000000)
#endif

/* The program counter's width (firmware/BOARDS.md): 3 bytes on the ATmega2560 (CALL and RET 5 cycles,
   RCALL, ICALL and the interrupt response 4 … 5), 2 on the ATmega328P and ATmega32U4 (one cycle less each). */
#ifdef __AVR_3_BYTE_PC__
#define PC_BYTES        3
#else
#define PC_BYTES        2
#endif
#define CALL_CYCLES     (PC_BYTES + 2)
#define RET_CYCLES      (PC_BYTES + 2)
#define ICALL_CYCLES    (PC_BYTES + 1)
#define US_CYCLES(us)   ((us) * CYCLES_PER_US)

/* FORMAT.md §3, nominal µs of MCU time. */
#define QUIET_US        6000
#define SYNC_HIGH_US    1000
#define SYNC_LOW_US     500
#define BIT0_HIGH_US    200
#define BIT1_HIGH_US    400
#define BIT_LOW_US      200
#define SETTLE_US       1000
#define GAP_US          300
/* FORMAT.md §6: calibration train, 2777 µs between edges: more than the edge template's reach (120
   samples) at every standard rate from 44.1 kHz, and a whole number of samples at none of them. */
#define CAL_PERIOD_US   2777
#define CAL_COUNT       1000

/* delay_exact(n) takes n + DELAY_EXACT_OVERHEAD cycles including its CALL and RET; n >= DELAY_EXACT_MIN. */
#define DELAY_EXACT_OVERHEAD 18
#define DELAY_EXACT_MIN      4

#ifndef __ASSEMBLER__
#include <stdint.h>

/* Burn exactly n + DELAY_EXACT_OVERHEAD cycles (CALL and RET included); n >= DELAY_EXACT_MIN. */
void delay_exact(uint16_t n);

/*
 * One frame on the measurement pin (pinwave.S): toggle it n times, toggle i+1 exactly cycles[i] cycles after
 * toggle i (cycles[i] >= PIN_FRAME_MIN), then run `group` (groups.S: entered with r18 = MEAS_MASK and
 * X = arg) whose first edge comes exactly cycles[n-1] + PIN_FRAME_TAIL cycles after the last toggle.
 */
void pin_frame(const uint16_t *cycles, uint16_t n, void (*group)(void), uint16_t arg);

/* GROUPs of every program, for pin_frame: none (RUN, END); the calibration train (CAL, arg = count). */
void group_none(void);
void group_cal(void);
#endif

#define PIN_FRAME_MIN  (29 + DELAY_EXACT_MIN)
#define PIN_FRAME_TAIL 5

#ifdef __ASSEMBLER__
/* `n` NOPs on a 2-byte PC, none on a 3-byte one: pads code whose n CALL/RET/ICALL (one cycle cheaper each on
   a 2-byte PC) are part of a fixed cycle count, so the count is the same on every chip. */
.macro PC_PAD n
        .rept   (\n) * (3 - PC_BYTES)
        nop                                     ; [1]
        .endr
.endm
#endif

#endif
