/*
 * adpcm_input.h — deterministic, audio-like test input for adpcm_coder rounds (Table 2).
 *
 Each round is one short piece of "audio" of random length: a tone, a square wave, a noisy tone or a
 * silence-then-burst onset, at an amplitude from full scale down to silence, from a xorshift32
 * generator, and a fresh coder state to start it from (any step index; the prediction anywhere, half of
 * the time at a rail). This drives every path of the coder, including the predictor clamps and both index
 * clamps, in a good share of rounds, with counts that vary from round to round. Same source for the AVR
 * and the host.
 */
#ifndef PINTIME_ADPCM_INPUT_H
#define PINTIME_ADPCM_INPUT_H

#include <stdint.h>

#include "adpcm.h"

struct adpcm_input {
    uint32_t random; /* xorshift32 state for per-round choices, never 0 */
    uint16_t noise;  /* 16-bit xorshift state for per-sample noise, never 0 */
    uint16_t phase;  /* tone phase, 65536 = one period */
};

/* Start the generator; equal seeds give equal sequences of rounds. */
void adpcm_input_init(struct adpcm_input *input, uint32_t seed);

/* Write the next round's samples (1 … max_len of them) to `samples` and its start state to `state`;
 * returns the number of samples. */
uint8_t adpcm_input_round(struct adpcm_input *input, int16_t *samples, uint8_t max_len,
                          struct adpcm_state *state);

#endif
