/*
 * pintime_user.c — the runtime of pintime.h: measures the functions a user program registers with
 * PINTIME_FUNCTIONS by line fitting (paper §4), in the run order of FORMAT.md §8.
 */
#include <avr/io.h>

#include "avr_mcu_section.h"
#include "clock.h"
#include "pintime_run.h"

/* simavr: MCU and clock (the .mmcu section never reaches the chip; the HEX omits it). */
AVR_MCU(F_CPU, MCU_NAME);

int main(void)
{
	clock_setup();
	MEAS_PORT &= ~MEAS_MASK;	/* idle low */
	MEAS_DDR |= MEAS_MASK;
	reference_start();

	pintime_user_frames();
	stop();
}
