/*
 * table1.c — the Table 1 experiments of Moreno & Fischmeister (§3–§5) on the measurement pin,
 * each group announced by a frame header, in the run order of FORMAT.md §6.
 */
#include <avr/io.h>

#include "avr_mcu_section.h"
#include "clock.h"
#include "pins.h"
#include "table1_run.h"

/* simavr: MCU and clock (the .mmcu section never reaches the chip; the HEX omits it). */
AVR_MCU(F_CPU, MCU_NAME);

#ifndef REPS
#define REPS 100
#endif

int main(void)
{
	clock_setup();
	MEAS_PORT &= ~MEAS_MASK;	/* idle low */
	MEAS_DDR |= MEAS_MASK;
	reference_start();

	table1_frames(REPS);
	stop();
}
