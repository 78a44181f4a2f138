/*
 * table1.c — the Table 1 experiments of Moreno & Fischmeister (§3–§5) on the measurement pin,
 * each group announced by a frame header, in the run order of FORMAT.md §6.
 */
#include <avr/io.h>

#include "avr_mcu_section.h"
#include "clock.h"
#include "frames.h"
#include "groups.h"
#include "pins.h"

/* simavr: MCU and clock (the .mmcu section never reaches the chip; the HEX omits it). */
AVR_MCU(F_CPU, MCU_NAME);

#ifndef REPS
#define REPS 100
#endif

static void repetition(uint16_t rep)
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

int main(void)
{
	clock_setup();
	MEAS_PORT &= ~MEAS_MASK;	/* idle low */
	MEAS_DDR |= MEAS_MASK;
	reference_start();

	frame_run(PROGRAM_TABLE1);
	frame_cal();
	for (uint16_t rep = 0; rep < REPS; rep++)
		repetition(rep);
	frame_end();
	stop();
}
