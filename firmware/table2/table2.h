/*
 * table2.h — rounds of the table2 program (TABLE2.md §2–§3), shared by table2.c and table2_group.S.
 *
 * Before each TABLE2 frame, table2.c writes the frame's rounds into table2_rounds[]; the frame's GROUP
 * (group_table2, table2_group.S) then calls adpcm_coder once per round, each call inside one pulse
 * (adpcm_pulse.S), a GAP between pulses, with only constant-time pointer arithmetic outside the pulses.
 */
#ifndef PINTIME_TABLE2_H
#define PINTIME_TABLE2_H

#include <avr/io.h>

#define ROUND_MAX_LEN   24      /* samples per round: 1 … ROUND_MAX_LEN (TABLE2.md §2) */
/* rounds per TABLE2 frame (FORMAT.md §7), all in RAM at once (52 bytes each): 100 in the ATmega2560's 8 KB,
   24 in the ATmega32U4's 2.5 KB, 16 in the ATmega328P's 2 KB (firmware/BOARDS.md) */
#if RAMEND >= 0x2000
#define BATCH_ROUNDS    100
#elif RAMEND >= 0xA00
#define BATCH_ROUNDS    24
#else
#define BATCH_ROUNDS    16
#endif

/* Layout of struct round for the assembler: samples, coder start state (3 bytes), length. */
#define ROUND_STATE_OFFSET  (2 * ROUND_MAX_LEN)
#define ROUND_LEN_OFFSET    (ROUND_STATE_OFFSET + 3)
#define ROUND_BYTES         (ROUND_LEN_OFFSET + 1)

/* Cycles from the start of group_table2 to its first (rising) edge; see table2_group.S. */
#define TABLE2_GROUP_LEAD   34

/* Cut measurements (TABLE2.md §6): per measurement one TABLE2CUT frame with CUT_ROUNDS pulses per cut copy.
 * The copies' number is the CFG's block count, known only after the first link: table2_cuts.S (generated)
 * checks it against TABLE2_MAX_CUTS. The group's C code between pulses is not cycle-counted: its first edge
 * and GAPs are within a few µs of nominal, inside FORMAT.md §3's tolerances (measured: TABLE2.md §6). */
#ifndef CUT_ROUNDS
#define CUT_ROUNDS          5
#endif
#define TABLE2_MAX_CUTS     64
#define CUT_HOLD_US         2000    /* wait before a reached cut's falling edge (table2_cut.S; FORMAT.md §7) */
#define TABLE2_CUT_LEAD     151     /* cycles from the start of group_table2_cut to its first edge */
#define TABLE2_CUT_GAP_OVERHEAD 198 /* cycles between pulses besides delay_exact's n */

#ifndef __ASSEMBLER__
#include <stdint.h>

#include "adpcm.h"

struct round {
	int16_t samples[ROUND_MAX_LEN];
	struct adpcm_state state;	/* the coder's state at the start of the round */
	uint8_t len;			/* samples, 1 … ROUND_MAX_LEN */
};

extern struct round table2_rounds[BATCH_ROUNDS];
extern uint8_t table2_out[(ROUND_MAX_LEN + 1) / 2];

/* GROUP of a TABLE2 frame, for pin_frame (timing.h): X = count, 1 … BATCH_ROUNDS rounds of table2_rounds[]. */
void group_table2(void);

/* One run of the cut copy at word address `copy` (table2_cut.S); 1 if it reached its cut block. */
uint8_t table2_cut_pulse(const int16_t *in, uint8_t *out, int32_t len, struct adpcm_state *state,
			 uint16_t copy, uint8_t mask);
#endif

#endif
