/*
 * clock.h — system clock and the 1 s clock reference (FORMAT.md §1), shared by every program.
 */
#ifndef PINTIME_CLOCK_H
#define PINTIME_CLOCK_H

/* Divide the board's 16 MHz crystal down to F_CPU (e.g. /16 for 1 MHz, as in the paper). */
void clock_setup(void);
/* Timer1 CTC (WGM 4) toggles OC1A (PB5) every F_CPU / 2 cycles, in hardware, until power-off. */
void reference_start(void);
/* Disable interrupts and sleep for good (idle mode: the reference keeps running). */
void stop(void) __attribute__((noreturn));

#endif
