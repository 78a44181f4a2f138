/*
 * table2.c — Table 2 of Moreno & Fischmeister (seed 004, §5.1, §6.2) on adpcm_coder: MEASUREMENTS
 * measurements of ROUNDS rounds, each round one call on fresh generated input (adpcm_input.c, seeded with
 * measurement + 1) inside one pulse, the rounds of each measurement sent in batches of BATCH_ROUNDS by
 * TABLE2 frames, in the run order of FORMAT.md §7 (TABLE2.md).
 */
#include <stddef.h>

#include "adpcm_input.h"
#include "avr_mcu_section.h"
#include "clock.h"
#include "frames.h"
#include "pins.h"
#include "table2.h"

/* simavr: MCU and clock (the .mmcu section never reaches the chip; the HEX omits it). */
AVR_MCU(F_CPU, "atmega2560");

#ifndef MEASUREMENTS
#define MEASUREMENTS 100
#endif
#ifndef ROUNDS
#define ROUNDS 1000
#endif
#if MEASUREMENTS < 1 || MEASUREMENTS > 65535 || ROUNDS < 1 || ROUNDS > 65535 - BATCH_ROUNDS
#error "MEASUREMENTS must be 1 … 65535, ROUNDS 1 … 65435"
#endif

_Static_assert(offsetof(struct round, state) == ROUND_STATE_OFFSET, "table2.h: ROUND_STATE_OFFSET");
_Static_assert(offsetof(struct round, len) == ROUND_LEN_OFFSET, "table2.h: ROUND_LEN_OFFSET");
_Static_assert(sizeof(struct round) == ROUND_BYTES, "table2.h: ROUND_BYTES");

struct round table2_rounds[BATCH_ROUNDS];
uint8_t table2_out[(ROUND_MAX_LEN + 1) / 2];

/* The next `count` rounds of the generator into table2_rounds[] (while the pin is low before a frame). */
static void generate(struct adpcm_input *input, uint16_t count)
{
	for (uint16_t j = 0; j < count; j++) {
		struct round *r = &table2_rounds[j];
		r->len = adpcm_input_round(input, r->samples, ROUND_MAX_LEN, &r->state);
	}
}

int main(void)
{
	clock_setup();
	MEAS_PORT &= ~MEAS_MASK;	/* idle low */
	MEAS_DDR |= MEAS_MASK;
	reference_start();

	frame_run(PROGRAM_TABLE2);
	frame_cal();
	for (uint16_t m = 0; m < MEASUREMENTS; m++) {
		struct adpcm_input input;
		adpcm_input_init(&input, (uint32_t)m + 1);
		for (uint16_t first = 0; first < ROUNDS; first += BATCH_ROUNDS) {
			uint16_t count = ROUNDS - first < BATCH_ROUNDS ? ROUNDS - first : BATCH_ROUNDS;
			generate(&input, count);
			frame_table2(m, first, count, group_table2, TABLE2_GROUP_LEAD);
		}
	}
	frame_end();
	stop();
}
