/*
 * adpcm_host.c — host driver for tests/test_adpcm.py. Reads cases from stdin, one per line:
 *     valprev index samples_hex_s16le
 * runs firmware/adpcm.c's coder on each and prints one line per case:
 *     out_hex valprev index
 */
#include <stdio.h>
#include <string.h>

#include "adpcm.h"

#define MAX_SAMPLES 4096

int main(void)
{
    static char hex[4 * MAX_SAMPLES + 2];
    static int16_t samples[MAX_SAMPLES];
    static uint8_t out[(MAX_SAMPLES + 1) / 2];
    int valprev, index;

    while (scanf("%d %d %16385s", &valprev, &index, hex) == 3) {
        size_t digits = strlen(hex);
        if (digits % 4 != 0 || digits / 4 > MAX_SAMPLES) {
            fprintf(stderr, "adpcm_host: bad sample field of %zu hex digits\n", digits);
            return 1;
        }
        int32_t len = (int32_t)(digits / 4);
        for (int32_t i = 0; i < len; i++) {
            unsigned lo, hi;
            sscanf(hex + 4 * i, "%2x%2x", &lo, &hi);
            samples[i] = (int16_t)(uint16_t)(lo | hi << 8);
        }
        struct adpcm_state state = {(int16_t)valprev, (uint8_t)index};
        adpcm_coder(samples, out, len, &state);
        for (int32_t i = 0; i < (len + 1) / 2; i++)
            printf("%02x", out[i]);
        printf(" %d %d\n", state.valprev, state.index);
    }
    return 0;
}
