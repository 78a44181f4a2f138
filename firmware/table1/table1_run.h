/*
 * table1_run.h — the frames of a Table 1 run (FORMAT.md §6), shared by table1.c (the firmware's main) and
 * the Arduino library's pintime_table1() (arduino/pintime). Pins and the reference must be set up first.
 */
#ifndef PINTIME_TABLE1_RUN_H
#define PINTIME_TABLE1_RUN_H

#include <stdint.h>

#include "frames.h"
#include "groups.h"

static void table1_repetition(uint16_t rep)
{
	frame_run(PROGRAM_TABLE1);
	frame_direct(rep, group_direct);
	frame_counted(FRAME_EXECUTING, 10, rep, group_executing_10);
	frame_counted(FRAME_EXECUTING, 20, rep, group_executing_20);
	frame_counted(FRAME_EXECUTING, 55, rep, group_executing_55);
	frame_counted(FRAME_EXECUTING, 100, rep, group_executing_100);
	frame_counted(FRAME_EXECUTING, 210, rep, group_executing_210);
	frame_counted(FRAME_DIFFERENTIAL, 55, rep, group_differential);
	frame_counted(FRAME_DIFFERENTIAL, 210, rep, group_differential);
	frame_counted(FRAME_DIFFERENTIAL, 1000, rep, group_differential);
	frame_counted(FRAME_LINE, 10, rep, group_line_10);
	frame_counted(FRAME_LINE, 20, rep, group_line_20);
	frame_counted(FRAME_OVERDET, 20, rep, group_overdet_20);
}

/* RUN, CAL, `reps` repetitions, END. */
static inline void table1_frames(uint16_t reps)
{
	frame_run(PROGRAM_TABLE1);
	frame_cal();
	for (uint16_t rep = 0; rep < reps; rep++)
		table1_repetition(rep);
	frame_end();
}

#endif
