/*
 * pintime_measure.c — the Arduino library's run of the functions a sketch registers with
 * PINTIME_FUNCTIONS (pintime.h, FORMAT.md §8), at the board's clock.
 */
#include "pintime_arduino.h"
#include "pintime_run.h"

void pintime_measure(void)
{
	uint8_t sreg = pintime_arduino_begin();
	pintime_user_frames();
	pintime_arduino_end(sreg);
}
