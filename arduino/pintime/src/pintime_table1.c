/*
 * pintime_table1.c — the Arduino library's Table 1 run (the paper's experiments on ref100,
 * FORMAT.md §6) with PINTIME_REPS repetitions, at the board's clock.
 */
#include "pintime.h"
#include "pintime_arduino.h"
#include "table1_run.h"

void pintime_table1(void)
{
	uint8_t sreg = pintime_arduino_begin();
	table1_frames(PINTIME_REPS);
	pintime_arduino_end(sreg);
}
