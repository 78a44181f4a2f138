/*
 * adpcm.h — IMA/DVI ADPCM encoder with the control flow of MiBench's adpcm_coder.
 *
 * Written for pintime from the IMA ADPCM algorithm (IMA Recommended Practices for Enhancing Digital
 * Audio Compatibility, 1992). The same source builds for the AVR (avr-gcc, 16-bit int) and the host
 * (gcc): every quantity MiBench keeps in an `int` is an int32_t here, so the predictor and index clamps
 * behave as on a 32-bit machine and stay live on the AVR.
 */
#ifndef PINTIME_ADPCM_H
#define PINTIME_ADPCM_H

#include <stdint.h>

/* Coder state carried from one call to the next. */
struct adpcm_state {
    int16_t valprev; /* predicted sample after the last call */
    uint8_t index;   /* step-size table index, 0 … 88 */
};

/*
 * Encode `len` 16-bit samples from `in` into 4-bit codes packed into `out`, high nibble first; for an odd
 * `len` the last byte holds one code in its high nibble. `out` needs (len + 1) / 2 bytes. Updates `state`.
 */
void adpcm_coder(const int16_t *in, uint8_t *out, int32_t len, struct adpcm_state *state);

/* adpcm_coder inside one pulse of the measurement pin (adpcm_pulse.S, AVR only; see TABLE2.md). */
void adpcm_pulse(const int16_t *in, uint8_t *out, int32_t len, struct adpcm_state *state);

#endif
