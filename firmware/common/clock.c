/*
 * clock.c — system clock prescaler, Timer1 clock reference and the final stop (FORMAT.md §1, §6).
 */
#include <avr/interrupt.h>
#include <avr/io.h>
#include <avr/power.h>
#include <avr/sleep.h>

#include "clock.h"
#include "pins.h"

#define BOARD_CLOCK_HZ 16000000		/* the crystal or resonator of every board (BOARDS.md) */
#define CLOCK_DIVISOR (BOARD_CLOCK_HZ / F_CPU)

#if CLOCK_DIVISOR == 1
#define CLOCK_DIV clock_div_1
#elif CLOCK_DIVISOR == 2
#define CLOCK_DIV clock_div_2
#elif CLOCK_DIVISOR == 4
#define CLOCK_DIV clock_div_4
#elif CLOCK_DIVISOR == 8
#define CLOCK_DIV clock_div_8
#elif CLOCK_DIVISOR == 16
#define CLOCK_DIV clock_div_16
#else
#error "F_CPU must be 16 MHz divided by 1, 2, 4, 8 or 16"
#endif

/* Half period of the reference in cycles; smallest Timer1 prescaler that divides it into 16 bits. */
#define REF_HALF_CYCLES (F_CPU / 2)
#if REF_HALF_CYCLES <= 65536
#define REF_PRESCALE 1
#define REF_CS (1 << CS10)
#elif REF_HALF_CYCLES % 8 == 0 && REF_HALF_CYCLES / 8 <= 65536
#define REF_PRESCALE 8
#define REF_CS (1 << CS11)
#elif REF_HALF_CYCLES % 64 == 0 && REF_HALF_CYCLES / 64 <= 65536
#define REF_PRESCALE 64
#define REF_CS ((1 << CS11) | (1 << CS10))
#elif REF_HALF_CYCLES % 256 == 0 && REF_HALF_CYCLES / 256 <= 65536
#define REF_PRESCALE 256
#define REF_CS (1 << CS12)
#else
#error "no Timer1 prescaler gives an exact F_CPU / 2 half period"
#endif

void clock_setup(void)
{
	clock_prescale_set(CLOCK_DIV);
}

void reference_start(void)
{
	REF_DDR |= REF_MASK;
	TCCR1A = 1 << COM1A0;				/* toggle OC1A on compare match */
	TCCR1B = 1 << WGM12;				/* WGM 4: CTC, TOP = OCR1A; timer stopped */
	OCR1A = REF_HALF_CYCLES / REF_PRESCALE - 1;	/* a match every OCR1A + 1 timer clocks */
	TCCR1B = (1 << WGM12) | REF_CS;			/* start */
}

void stop(void)
{
	cli();
	set_sleep_mode(SLEEP_MODE_IDLE);
	sleep_enable();
	for (;;)
		sleep_cpu();
}
