/*
 * table2.h — rounds of the table2 program (TABLE2.md §2–§3), shared by table2.c and table2_group.S.
 *
 * Before each TABLE2 frame, table2.c writes the frame's rounds into table2_rounds[]; the frame's GROUP
 * (group_table2, table2_group.S) then calls adpcm_coder once per round, each call inside one pulse
 * (adpcm_pulse.S), a GAP between pulses, with only constant-time pointer arithmetic outside the pulses.
 */
#ifndef PINTIME_TABLE2_H
#define PINTIME_TABLE2_H

#define ROUND_MAX_LEN   24      /* samples per round: 1 … ROUND_MAX_LEN (TABLE2.md §2) */
#define BATCH_ROUNDS    100     /* rounds per TABLE2 frame (FORMAT.md §7) */

/* Layout of struct round for the assembler: samples, coder start state (3 bytes), length. */
#define ROUND_STATE_OFFSET  (2 * ROUND_MAX_LEN)
#define ROUND_LEN_OFFSET    (ROUND_STATE_OFFSET + 3)
#define ROUND_BYTES         (ROUND_LEN_OFFSET + 1)

/* Cycles from the start of group_table2 to its first (rising) edge; see table2_group.S. */
#define TABLE2_GROUP_LEAD   34

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
#endif

#endif
