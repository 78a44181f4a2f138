/* adpcm_input.c — see adpcm_input.h. */
#include "adpcm_input.h"

/* sin(2πk/64) · 32767 for k = 0 … 16: a quarter period; the rest follows by symmetry. */
static const int16_t quarter_sine[17] = {
    0, 3212, 6393, 9512, 12539, 15446, 18204, 20787, 23170,
    25329, 27245, 28898, 30273, 31356, 32137, 32609, 32767,
};

enum { TONE, SQUARE, NOISY_TONE, ONSET };

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

uint8_t adpcm_input_round(struct adpcm_input *input, int16_t *samples, uint8_t max_len)
{
    uint32_t r = next_random(input);
    uint8_t len = (uint8_t)(1 + r % max_len);
    int32_t amplitude = (int32_t)(32767u >> ((r >> 8) & 15)); /* full scale … 0, log-uniform */
    uint8_t kind = (uint8_t)((r >> 12) & 3);
    uint16_t phase_step = (uint16_t)(256 + ((r >> 16) & 0x0fff)); /* 1/256 … 1/15 of a period */

    for (uint8_t i = 0; i < len; i++) {
        int32_t tone = (sine(input->phase) * amplitude) >> 15;
        int32_t value;
        input->phase += phase_step;
        switch (kind) {
        case TONE:
            value = tone;
            break;
        case SQUARE:
            value = tone >= 0 ? amplitude : -amplitude;
            break;
        case NOISY_TONE:
            value = tone + (int32_t)((int16_t)next_random(input) * (amplitude >> 2) >> 15);
            break;
        default: /* ONSET: silence for the first half, then the tone at twice the amplitude */
            value = i < len / 2 ? 0 : 2 * tone;
            break;
        }
        samples[i] = saturate(value);
    }
    return len;
}
