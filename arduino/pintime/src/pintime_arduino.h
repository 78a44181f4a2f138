/*
 * pintime_arduino.h — a run beside the Arduino core (the library's pintime_measure() and
 * pintime_table1()): every interrupt off from the first frame to END, the pins set up and Timer1 taken
 * over as the 1 s reference, the interrupts back as they were at the end.
 */
#ifndef PINTIME_ARDUINO_H
#define PINTIME_ARDUINO_H

#include <avr/io.h>
#include <stdint.h>

#include "clock.h"
#include "pins.h"

/* Start a run: the core's interrupts (timer0's millis(), the ATmega32U4's USB) off, so none falls into a
 * pulse; Timer1 stopped and cleared from the core's PWM set-up, then the reference. Returns SREG. */
static inline uint8_t pintime_arduino_begin(void)
{
	uint8_t sreg = SREG;
	__asm__ __volatile__("cli" ::: "memory");
	TCCR1B = 0;
	TCNT1 = 0;
	MEAS_PORT &= ~MEAS_MASK;	/* idle low */
	MEAS_DDR |= MEAS_MASK;
	reference_start();
	return sreg;
}

/* End a run: the interrupts as they were (millis() lost the run's duration). */
static inline void pintime_arduino_end(uint8_t sreg)
{
	SREG = sreg;
}

#endif
