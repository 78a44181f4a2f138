/*
 * frames.h — frame headers on the measurement pin (FORMAT.md §3–§4). Each call sends QUIET, SYNC, the
 * header bytes and SETTLE; the caller then emits the frame's GROUP (groups.h, pin_train).
 */
#ifndef PINTIME_FRAMES_H
#define PINTIME_FRAMES_H

#include <stdint.h>

#define FORMAT_VERSION 1

enum frame_kind {
	FRAME_RUN = 0,
	FRAME_CAL = 1,
	FRAME_DIRECT = 2,
	FRAME_EXECUTING = 3,
	FRAME_DIFFERENTIAL = 4,
	FRAME_LINE = 5,
	FRAME_OVERDET = 6,
	FRAME_END = 7,
};

enum program_id { PROGRAM_TABLE1 = 1, PROGRAM_TABLE2 = 2 };

void frame_run(uint8_t program);
void frame_cal(uint32_t period_cycles, uint16_t count);
void frame_direct(uint16_t rep);
/* EXECUTING, DIFFERENTIAL, LINE, OVERDET: payload `n` (or `m`) u16, `rep` u16. */
void frame_counted(enum frame_kind kind, uint16_t n, uint16_t rep);
/* END: payload = number of frames sent before it. */
void frame_end(void);

#endif
