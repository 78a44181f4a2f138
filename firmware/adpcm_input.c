/* adpcm_input.c — see adpcm_input.h. */
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

/* Sine of a 16-bit phase at 64 points per period, full scale ±32767. */
static int32_t sine(uint16_t phase)
{
    uint8_t k = (uint8_t)(phase >> 10); /* 0 … 63 */
    uint8_t q = k & 15;
    int32_t magnitude = (k & 16) ? quarter_sine[16 - q] : quarter_sine[q];
    return (k & 32) ? -magnitude : magnitude;
}

static int16_t saturate(int32_t v)
{
    return (int16_t)(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
}

void adpcm_input_init(struct adpcm_input *input, uint32_t seed)
{
    input->random = seed ? seed : 1;
    input->phase = 0;
}

/* One sample of a scene: `tone` is the scene's sine, `noise` a random 16-bit value. */
static int32_t scene_sample(uint8_t scene, uint8_t i, uint8_t len, int32_t tone, int32_t amplitude,
                            int16_t noise)
{
    switch (scene) {
    case TONE:
        return tone;
    case SQUARE:
        return tone >= 0 ? amplitude : -amplitude;
    case NOISY_TONE:
        return tone + ((int32_t)noise * (amplitude >> 2) >> 15);
    case ONSET: /* silence for the first half, then the tone at twice the amplitude */
        return i < len / 2 ? 0 : 2 * tone;
    case HUSH: /* a few LSBs of noise: the step index falls to 0 */
        return noise >> 14;
    case BURST: /* full-scale square at the sample rate: the step index rises to 88 */
        return (i & 1) ? -32768 : 32767;
    case RAIL_HIGH: /* just below the top: the prediction overshoots it */
        return 32767 - (noise & 255);
    default: /* RAIL_LOW */
        return -32768 + (noise & 255);
    }
}

uint8_t adpcm_input_round(struct adpcm_input *input, int16_t *samples, uint8_t max_len,
                          struct adpcm_state *state)
{
    uint32_t r = next_random(input);
    uint32_t s = next_random(input);
    uint8_t len = (uint8_t)(1 + r % max_len);
    uint8_t scene = (uint8_t)((r >> 8) & 7);
    int32_t amplitude = (int32_t)(32767u >> ((r >> 11) & 15)); /* full scale … 0, log-uniform */
    uint16_t phase_step = (uint16_t)(256 + ((r >> 16) & 0x0fff)); /* 1/256 … 1/15 of a period */

    /* Start state: a small prediction and any step index for plain audio; the clamp scenes start where
     * their clamp is near. */
    state->valprev = (int16_t)((int16_t)(s >> 16) >> ((s >> 4) & 15));
    state->index = (uint8_t)(s % 89);
    if (scene == HUSH) {
        state->valprev = 0;
        state->index = (uint8_t)(s & 3);
    } else if (scene == BURST) {
        state->index = (uint8_t)(80 + (s & 7));
    } else if (scene == RAIL_HIGH || scene == RAIL_LOW) {
        state->index = (uint8_t)(60 + s % 29);
        state->valprev = (int16_t)(scene == RAIL_HIGH ? 32767 - (s & 255) : -32768 + (s & 255));
    }

    for (uint8_t i = 0; i < len; i++) {
        int32_t tone = (sine(input->phase) * amplitude) >> 15;
        input->phase += phase_step;
        samples[i] = saturate(scene_sample(scene, i, len, tone, amplitude, (int16_t)next_random(input)));
    }
    return len;
}
