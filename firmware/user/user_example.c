/*
 * user_example.c — measuring your own code (README "Measure your own code", pintime.h): two small
 * functions, registered with one line. Build: `make firmware` (program user_example); your own file:
 * `make USER_SRC=path/to/mine.c user`.
 *
 * mac16 and crc8_step take the same number of cycles on every call (no data-dependent branch at -Os), so
 * the line fit's slope is their exact cost per call, CALL and RET included (tests/sim/test_user_program.py
 * checks it against simavr's per-instruction cycle counts, and against what `pintime analyze --elf`
 * expects from the listing). crc8_branchy is the same CRC written the textbook way, with a branch per bit
 * that depends on the data: the listing gives only a min–max per call, and the slope is a mean inside it.
 */
#include <stdint.h>

#include "pintime.h"

/* 16-bit multiply-accumulate: mac_acc += mac_a · mac_b (mod 2^16), then a new operand. */
volatile uint16_t mac_acc;
volatile uint16_t mac_a = 12345;
volatile uint16_t mac_b = 54321;

void mac16(void)
{
	mac_acc += mac_a * mac_b;
	mac_a++;
}

/* One byte of CRC-8 (polynomial 0x07, MSB first) over a counter. */
volatile uint8_t crc8_value;
volatile uint8_t crc8_byte;

void crc8_step(void)
{
	uint8_t crc = crc8_value ^ crc8_byte++;
	for (uint8_t bit = 0; bit < 8; bit++)
		crc = (uint8_t)(crc << 1) ^ (0x07 & -(crc >> 7));	/* no branch: same time per bit */
	crc8_value = crc;
}

/* The same CRC-8 with a data-dependent branch per bit: at -Os a pass that finds the top bit set costs 2
 * cycles more than one that does not, so a call's cost spans 16 cycles (from the listing: 94–110 cycles
 * per call, CALL and RET included). */
volatile uint8_t crc8b_value;
volatile uint8_t crc8b_byte;

void crc8_branchy(void)
{
	uint8_t crc = crc8b_value ^ crc8b_byte++;
	for (uint8_t bit = 0; bit < 8; bit++) {
		if (crc & 0x80)
			crc = (uint8_t)(crc << 1) ^ 0x07;
		else
			crc = (uint8_t)(crc << 1);
	}
	crc8b_value = crc;
}

PINTIME_FUNCTIONS(mac16, crc8_step, crc8_branchy);
