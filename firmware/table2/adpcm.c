/*
 * adpcm.c — IMA/DVI ADPCM encoder (see adpcm.h). One call runs, per sample: the difference to the
 * prediction and its sign, three successive-approximation quantization steps, the predictor update and
 * clamp, the step-index update and clamp, and the nibble packing that alternates with `bufferstep`; after
 * the loop a half-filled byte is flushed. This is the control flow of MiBench's adpcm_coder, whose
 * basic blocks are the subject of the paper's Table 2.
 */
#include "adpcm.h"

/* Step sizes of the IMA ADPCM standard: 89 entries, roughly 10 % apart. */
static const int16_t step_sizes[89] = {
    7, 8, 9, 10, 11, 12, 13, 14, 16, 17,
    19, 21, 23, 25, 28, 31, 34, 37, 41, 45,
    50, 55, 60, 66, 73, 80, 88, 97, 107, 118,
    130, 143, 157, 173, 190, 209, 230, 253, 279, 307,
    337, 371, 408, 449, 494, 544, 598, 658, 724, 796,
    876, 963, 1060, 1166, 1282, 1411, 1552, 1707, 1878, 2066,
    2272, 2499, 2749, 3024, 3327, 3660, 4026, 4428, 4871, 5358,
    5894, 6484, 7132, 7845, 8630, 9493, 10442, 11487, 12635, 13899,
    15289, 16818, 18500, 20350, 22385, 24623, 27086, 29794, 32767,
};

/* Step-index change for each 4-bit code (the sign bit 8 does not matter). */
static const int8_t index_steps[16] = {
    -1, -1, -1, -1, 2, 4, 6, 8,
    -1, -1, -1, -1, 2, 4, 6, 8,
};

/* noinline: the function must stay one contiguous symbol so its CFG can be read from the ELF. */
__attribute__((noinline)) void adpcm_coder(const int16_t *in, uint8_t *out, int32_t len,
                                           struct adpcm_state *state)
{
    int32_t predicted = state->valprev;
    int32_t index = state->index;
    int32_t step = step_sizes[index];
    int32_t high_nibble = 0; /* code waiting for its partner in the same byte */
    int32_t want_high = 1;   /* MiBench's bufferstep: 1 when the next code goes to a high nibble */

    for (; len > 0; len--) {
        int32_t diff = (int32_t)*in++ - predicted;
        int32_t sign = diff < 0 ? 8 : 0;
        if (sign)
            diff = -diff;

        /* Quantize diff/step to 3 bits by successive approximation; vpdiff is the decoder's view of it. */
        int32_t code = 0;
        int32_t vpdiff = step >> 3;
        if (diff >= step) {
            code = 4;
            diff -= step;
            vpdiff += step;
        }
        step >>= 1;
        if (diff >= step) {
            code |= 2;
            diff -= step;
            vpdiff += step;
        }
        step >>= 1;
        if (diff >= step) {
            code |= 1;
            vpdiff += step;
        }

        /* Move the prediction the way the decoder will, and keep it a 16-bit sample. */
        if (sign)
            predicted -= vpdiff;
        else
            predicted += vpdiff;
        if (predicted > 32767)
            predicted = 32767;
        else if (predicted < -32768)
            predicted = -32768;

        code |= sign;
        index += index_steps[code];
        if (index < 0)
            index = 0;
        if (index > 88)
            index = 88;
        step = step_sizes[index];

        if (want_high) {
            high_nibble = (code << 4) & 0xf0;
        } else {
            *out++ = (uint8_t)((code & 0x0f) | high_nibble);
        }
        want_high = !want_high;
    }

    if (!want_high)
        *out = (uint8_t)high_nibble;

    state->valprev = (int16_t)predicted;
    state->index = (uint8_t)index;
}
