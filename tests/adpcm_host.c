/*
 * adpcm_host.c — host driver for the tests: runs firmware/table2/adpcm.c's coder, one line per call:
 *     out_hex valprev index
 *
 *     adpcm_host                        cases from stdin, one per line: valprev index samples_hex_s16le
 *     adpcm_host ROUNDS SEED MAX_LEN    rounds of firmware/table2/adpcm_input.c's generator (inputs and start
 *                                       states), as tests/firmware/adpcm_check.c runs them
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adpcm.h"
#include "adpcm_input.h"

#define MAX_SAMPLES 4096

static void run(const int16_t *samples, int32_t len, struct adpcm_state *state)
{
    static uint8_t out[(MAX_SAMPLES + 1) / 2];

    adpcm_coder(samples, out, len, state);
    for (int32_t i = 0; i < (len + 1) / 2; i++)
        printf("%02x", out[i]);
    printf(" %d %d\n", state->valprev, state->index);
}

static int run_rounds(long rounds, uint32_t seed, uint8_t max_len)
{
    static int16_t samples[256];
    struct adpcm_input input;
    struct adpcm_state state;

    adpcm_input_init(&input, seed);
    for (long k = 0; k < rounds; k++) {
        uint8_t len = adpcm_input_round(&input, samples, max_len, &state);
        run(samples, len, &state);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static char hex[4 * MAX_SAMPLES + 2];
    static int16_t samples[MAX_SAMPLES];
    int valprev, index;

    if (argc == 4)
        return run_rounds(atol(argv[1]), (uint32_t)strtoul(argv[2], NULL, 0), (uint8_t)atoi(argv[3]));

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
        run(samples, len, &state);
    }
    return 0;
}
