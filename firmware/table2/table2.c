/*
 * table2.c — Table 2 of Moreno & Fischmeister (§5.1, §6.2) on adpcm_coder: MEASUREMENTS
 * measurements of ROUNDS rounds, each round one call on fresh generated input (adpcm_input.c, seeded with
 * measurement + 1) inside one pulse, the rounds of each measurement sent in batches of BATCH_ROUNDS by
 * TABLE2 frames, then one TABLE2CUT frame of cut measurements on the last batch's rounds (TABLE2.md §6), in
 * the run order of FORMAT.md §7 (TABLE2.md).
 */
#include <stddef.h>

#include "adpcm_input.h"
#include "avr_mcu_section.h"
#include "clock.h"
#include "frames.h"
#include "pins.h"
#include "table2.h"
#include "timing.h"

/* simavr: MCU and clock (the .mmcu section never reaches the chip; the HEX omits it). */
AVR_MCU(F_CPU, MCU_NAME);

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

/* The cut copies (table2_cuts.S, generated at build time): table2_cut_count copies, table2_cut_stride words
 * apart, copy c cut at block c. The last two are absolute symbols: their "addresses" are the numbers. */
extern void table2_cut_copies(void);
extern const char table2_cut_count[], table2_cut_stride[];
#define CUTS ((uint8_t)(uintptr_t)table2_cut_count)

static struct adpcm_state cut_state;		/* a fresh copy of the round's state for every run */
static uint8_t cut_round[TABLE2_MAX_CUTS * CUT_ROUNDS];	/* round of pulse i of the TABLE2CUT frame */

static uint8_t run_cut(uint16_t copy, uint8_t round, uint8_t mask)
{
	const struct round *r = &table2_rounds[round];
	cut_state = r->state;
	return table2_cut_pulse(r->samples, table2_out, r->len, &cut_state, copy, mask);
}

#define FIRST_COPY ((uint16_t)(uintptr_t)table2_cut_copies)
#define STRIDE ((uint16_t)(uintptr_t)table2_cut_stride)

/* For every cut, the first CUT_ROUNDS of the `count` rounds in RAM that reach its block (dry runs: no edge);
 * when fewer do, round 0 fills up (a run that never reaches the cut, which the analyzer counts and drops). */
static void select_cut_rounds(uint8_t count)
{
	uint8_t *chosen = cut_round;
	uint16_t copy = FIRST_COPY;
	for (uint8_t cut = 0; cut < CUTS; cut++, copy += STRIDE) {
		uint8_t n = 0;
		for (uint8_t j = 0; j < count && n < CUT_ROUNDS; j++)
			if (run_cut(copy, j, 0))
				chosen[n++] = j;
		for (; n < CUT_ROUNDS; n++)
			chosen[n] = 0;
		chosen += CUT_ROUNDS;
	}
}

_Static_assert(US_CYCLES(GAP_US) - TABLE2_CUT_GAP_OVERHEAD >= DELAY_EXACT_MIN, "GAP too short for the cut loop");

/* GROUP of a TABLE2CUT frame (pin_frame): CUT_ROUNDS pulses per cut, each its copy on its chosen round, a GAP
 * between pulses. */
static void group_table2_cut(void)
{
	const uint8_t *round = cut_round;
	uint16_t copy = FIRST_COPY;
	for (uint8_t cut = 0; cut < CUTS; cut++, copy += STRIDE) {
		for (uint8_t k = 0; k < CUT_ROUNDS; k++) {
			if (round != cut_round)
				delay_exact(US_CYCLES(GAP_US) - TABLE2_CUT_GAP_OVERHEAD);
			run_cut(copy, *round++, MEAS_MASK);
		}
	}
}

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
			if (first + count == ROUNDS) {
				select_cut_rounds(count);
				frame_table2cut(m, CUTS, CUT_ROUNDS, group_table2_cut, TABLE2_CUT_LEAD);
			}
		}
	}
	frame_end();
	stop();
}
