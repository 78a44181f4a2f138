/*
 * frames.h — whole frames on the measurement pin (FORMAT.md §3–§4): QUIET, SYNC, header, SETTLE and GROUP.
 * A GROUP is an assembler routine run by pin_frame (timing.h, groups.h, table2.h) with the frame's `n`
 * (or `m`, or `count`) as argument.
 */
#ifndef PINTIME_FRAMES_H
#define PINTIME_FRAMES_H

#include <stdint.h>

#define FORMAT_VERSION 2

enum frame_kind {
	FRAME_RUN = 0,
	FRAME_CAL = 1,
	FRAME_DIRECT = 2,
	FRAME_EXECUTING = 3,
	FRAME_DIFFERENTIAL = 4,
	FRAME_LINE = 5,
	FRAME_OVERDET = 6,
	FRAME_END = 7,
	FRAME_TABLE2 = 8,
	FRAME_USER = 9,
	FRAME_TABLE2CUT = 10,
	FRAME_KERNEL = 12,
};

enum program_id { PROGRAM_TABLE1 = 1, PROGRAM_TABLE2 = 2, PROGRAM_USER = 3, PROGRAM_MICRO = 4,
	PROGRAM_KERNEL = 5 };

void frame_run(uint8_t program);
/* CAL with the calibration train: CAL_COUNT edges CAL_PERIOD_US apart (FORMAT.md §6). */
void frame_cal(void);
void frame_direct(uint16_t rep, void (*group)(void));
/* EXECUTING, DIFFERENTIAL, LINE, OVERDET: payload `n` (or `m`) u16, `rep` u16; `group` gets n. */
void frame_counted(enum frame_kind kind, uint16_t n, uint16_t rep, void (*group)(void));
/* END: payload = number of frames sent before it. */
void frame_end(void);
/* TABLE2: payload `measurement`, `first_round`, `count` (u16 each); `group` gets count. Its first edge comes
 * `lead_cycles` cycles after it starts (it loads the first call's arguments before the edge): the SETTLE is
 * shortened by as much, so it stays exact. */
void frame_table2(uint16_t measurement, uint16_t first_round, uint16_t count, void (*group)(void),
		  uint8_t lead_cycles);
/* TABLE2CUT: payload `measurement` u16, `cuts` u8, `per_cut` u8; `group` gets cuts · per_cut, its first edge
 * comes `lead_cycles` after its start (as for TABLE2). */
void frame_table2cut(uint16_t measurement, uint8_t cuts, uint8_t per_cut, void (*group)(void),
		     uint8_t lead_cycles);
/* USER (pintime.h): payload `function` u8, `m` u16, `rep` u16; `group` gets m, its first edge comes
 * `lead_cycles` after its start (as for TABLE2). */
void frame_user(uint8_t function, uint16_t m, uint16_t rep, void (*group)(void), uint8_t lead_cycles);
/* KERNEL (firmware/kernel/KERNEL.md): payload `threads` u8, `ticks` u16, `rep` u16; `group` gets ticks, its
 * first instruction is its first edge. */
void frame_kernel(uint8_t threads, uint16_t ticks, uint16_t rep, void (*group)(void));

#endif
