/*
 * pintime_run.h — the frames of a run of the functions registered with PINTIME_FUNCTIONS (FORMAT.md §8),
 * shared by pintime_user.c (the firmware's main) and the Arduino library's pintime_measure()
 * (arduino/pintime). Pins and the reference must be set up first.
 */
#ifndef PINTIME_RUN_H
#define PINTIME_RUN_H

#include <stdint.h>

#include "frames.h"
#include "pintime.h"
#include "timing.h"

/* RUN, CAL, PINTIME_REPS × (RUN, one USER frame per function), 1 s of the reference, END. */
static inline void pintime_user_frames(void)
{
	/* the generated groups (pintime.h) toggle the pin at this I/O address */
	__asm__(".if %0 != " PINTIME_STR(PINTIME_MEAS_PIN_IO) "\n"
		".error \"pintime.h: PINTIME_MEAS_PIN_IO is not _SFR_IO_ADDR(MEAS_PIN)\"\n"
		".endif" :: "I"(_SFR_IO_ADDR(MEAS_PIN)));
	frame_run(pintime_user_program);
	frame_cal();
	for (uint16_t rep = 0; rep < PINTIME_REPS; rep++) {
		frame_run(pintime_user_program);
		for (uint8_t i = 0; i < pintime_user_count; i++)
			frame_user(i, PINTIME_M, rep, pintime_user_groups[i], PINTIME_GROUP_LEAD);
	}
	/* 1 s more of the clock reference (an edge every 0.5 s) before END: even a short run spans the >= 3
	 * reference edges the analyzer's clock calibration needs (FORMAT.md §8) */
	for (uint16_t ms = 0; ms < 1000; ms++)
		delay_exact(US_CYCLES(1000));
	frame_end();
}

#endif
