/*
 * pintime_user.c — the runtime of pintime.h: measures the functions a user program registers with
 * PINTIME_FUNCTIONS by line fitting (paper §4), in the run order of FORMAT.md §8.
 */
#include <avr/io.h>

#include "avr_mcu_section.h"
#include "clock.h"
#include "frames.h"
#include "pintime.h"
#include "timing.h"

/* simavr: MCU and clock (the .mmcu section never reaches the chip; the HEX omits it). */
AVR_MCU(F_CPU, MCU_NAME);

int main(void)
{
	/* the generated groups (pintime.h) toggle the pin at this I/O address */
	__asm__(".if %0 != " PINTIME_STR(PINTIME_MEAS_PIN_IO) "\n"
		".error \"pintime.h: PINTIME_MEAS_PIN_IO is not _SFR_IO_ADDR(MEAS_PIN)\"\n"
		".endif" :: "I"(_SFR_IO_ADDR(MEAS_PIN)));
	clock_setup();
	MEAS_PORT &= ~MEAS_MASK;	/* idle low */
	MEAS_DDR |= MEAS_MASK;
	reference_start();

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
	stop();
}
