/*
 * adpcm_input.c — see adpcm_input.h. Per round: three xorshift32 draws choose the length, scene, level,
 * tone frequency and start state; per sample only table look-ups, shifts and a 16-bit xorshift run, so a
 * round costs about 1500 cycles plus about 180 per sample on the AVR (avr-gcc -Os).
 */
#include "adpcm_input.h"

/* sin(2πk/64) · 32767 for k = 0 … 16: a quarter period; the rest follows by symmetry. */
static const int16_t quarter_sine[17] = {
    0, 3212, 6393, 9512, 12539, 15446, 18204, 20787, 23170,
    25329, 27245, 28898, 30273, 31356, 32137, 32609, 32767,
};

/* Scenes: four kinds of plain audio, and four that push the coder into one of its clamps. */
enum { TONE, SQUARE, NOISY_TONE, ONSET, HUSH, BURST, RAIL_HIGH, RAIL_LOW };

static uint32_t next_random(struct adpcm_input *input)
{
    /* Marsaglia's xorshift32: period 2^32 − 1 over non-zero states. */
    uint32_t x = input->random;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    input->random = x;
    return x;
}

static int16_t next_noise(struct adpcm_input *input)
{
    /* 16-bit xorshift (shifts 7, 9, 8): period 2^16 − 1 over non-zero states, cheap on the AVR. */
    uint16_t x = input->noise;
    x ^= x << 7;
    x ^= x >> 9;
    x ^= x << 8;
    input->noise = x;
    return (int16_t)x;
}

/* Sine of a 16-bit phase at 64 points per period, full scale ±32767. */
static int16_t sine(uint16_t phase)
{
    uint8_t k = (uint8_t)(phase >> 10); /* 0 … 63 */
    uint8_t q = k & 15;
    int16_t magnitude = (k & 16) ? quarter_sine[16 - q] : quarter_sine[q];
    return (k & 32) ? -magnitude : magnitude;
}

/* floor(x · n / 65536): a uniform 16-bit x mapped to 0 … n − 1 without a division (slow on the AVR). */
static uint8_t scale(uint16_t x, uint8_t n)
{
    return (uint8_t)(((uint32_t)x * n) >> 16);
}

static int16_t saturate(int32_t v)
{
    return (int16_t)(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
}

/* One sample of a scene at level `shift` (amplitude 32767 >> shift). */
static int32_t scene_sample(struct adpcm_input *input, uint8_t scene, uint8_t shift, uint8_t i, uint8_t len)
{
    int16_t tone = sine(input->phase) >> shift;
    switch (scene) {
    case TONE:
        return tone;
    case SQUARE:
        return tone >= 0 ? 32767 >> shift : -(32767 >> shift);
    case NOISY_TONE: /* noise at a quarter of the amplitude */
        return (int32_t)tone + (next_noise(input) >> (shift + 2));
    case ONSET: /* silence for the first half, then the tone at twice the amplitude */
        return i < len / 2 ? 0 : 2 * (int32_t)tone;
    case HUSH: /* a few LSBs of noise: the step index falls to 0 */
        return next_noise(input) >> 14;
    case BURST: /* full-scale square at the sample rate: the step index rises to 88 */
        return (i & 1) ? -32768 : 32767;
    case RAIL_HIGH: /* just below the top: the prediction overshoots it */
        return 32767 - (next_noise(input) & 255);
    default: /* RAIL_LOW */
        return -32768 + (next_noise(input) & 255);
    }
}

void adpcm_input_init(struct adpcm_input *input, uint32_t seed)
{
    input->random = seed ? seed : 1;
    input->noise = (uint16_t)(seed >> 16) | 1;
    input->phase = 0;
}

uint8_t adpcm_input_round(struct adpcm_input *input, int16_t *samples, uint8_t max_len,
                          struct adpcm_state *state)
{
    uint32_t r = next_random(input); /* round shape */
    uint32_t s = next_random(input); /* start state */
    uint8_t len = (uint8_t)(1 + scale((uint16_t)(r >> 16), max_len));
    uint8_t scene = (uint8_t)(r & 7);
    uint8_t shift = (uint8_t)((r >> 3) & 15); /* level: full scale … 0, log-uniform */
    uint16_t phase_step = (uint16_t)(256 + (next_random(input) & 0x0fff)); /* 1/256 … 1/15 period */

    /* Start state: a small prediction and any step index for plain audio; the clamp scenes start where
     * their clamp is near. */
    state->valprev = (int16_t)((int16_t)(s >> 16) >> ((r >> 7) & 15));
    state->index = scale((uint16_t)s, 89);
    if (scene == HUSH) {
        state->valprev = 0;
        state->index = (uint8_t)(s & 3);
    } else if (scene == BURST) {
        state->index = (uint8_t)(80 + (s & 7));
    } else if (scene == RAIL_HIGH || scene == RAIL_LOW) {
        uint8_t margin = (uint8_t)(s >> 16);
        state->index = (uint8_t)(60 + scale((uint16_t)s, 29));
        state->valprev = (int16_t)(scene == RAIL_HIGH ? 32767 - margin : -32768 + margin);
    }

    for (uint8_t i = 0; i < len; i++) {
        samples[i] = saturate(scene_sample(input, scene, shift, i, len));
        input->phase += phase_step;
    }
    return len;
}
