/*
 * frames.c — frames (FORMAT.md §3–§4): QUIET, SYNC, header bytes MSB first as pulse-width-coded bits closed
 * by a CRC-16/CCITT-FALSE, SETTLE, then the GROUP. From SYNC to the end of the GROUP every edge is
 * cycle-exact (pin_frame, pinwave.S); only QUIET is "at least".
 */
#include <avr/pgmspace.h>
#include <util/crc16.h>

#include "frames.h"
#include "timing.h"

#ifndef FW_REVISION
#define FW_REVISION 0
#endif

/* The program's revision (the Makefile's CRC-32 of its sources); also read from the ELF by the simavr harness
 * (sim/harness.c) and by the analyzer's --elf. */
const uint32_t pintime_fw_revision PROGMEM __attribute__((used)) = FW_REVISION;

#define HEADER_MAX_BYTES 12	/* RUN: kind byte, 9 payload bytes, 2 CRC bytes */
#define CRC_INIT 0xFFFF		/* CRC-16/CCITT-FALSE: poly 0x1021, init 0xFFFF, no reflection, no xor */

/* Cycles between the edges of one header: SYNC high and low, then high and low of every bit; the last
 * low is the SETTLE. */
static uint16_t waveform_cycles[2 + 2 * 8 * HEADER_MAX_BYTES];
static uint16_t frames_sent;

/* `lead_cycles`: cycles from the start of `group` to its first edge (0 for the groups of groups.S). */
static void send_frame(enum frame_kind kind, const uint8_t *payload, uint8_t payload_len,
		       void (*group)(void), uint16_t arg, uint8_t lead_cycles)
{
	uint8_t bytes[HEADER_MAX_BYTES];
	uint8_t len = 0;
	bytes[len++] = (FORMAT_VERSION << 4) | kind;
	for (uint8_t i = 0; i < payload_len; i++)
		bytes[len++] = payload[i];
	uint16_t crc = CRC_INIT;
	for (uint8_t i = 0; i < len; i++)
		crc = _crc_xmodem_update(crc, bytes[i]);
	bytes[len++] = crc >> 8;
	bytes[len++] = crc & 0xFF;

	uint16_t n = 0;
	waveform_cycles[n++] = US_CYCLES(SYNC_HIGH_US);
	waveform_cycles[n++] = US_CYCLES(SYNC_LOW_US);
	for (uint8_t i = 0; i < len; i++) {
		for (uint8_t bit = 0x80; bit; bit >>= 1) {
			waveform_cycles[n++] = (bytes[i] & bit) ? US_CYCLES(BIT1_HIGH_US) : US_CYCLES(BIT0_HIGH_US);
			waveform_cycles[n++] = US_CYCLES(BIT_LOW_US);
		}
	}
	/* pin_frame adds the tail, the group its lead */
	waveform_cycles[n - 1] = US_CYCLES(SETTLE_US) - PIN_FRAME_TAIL - lead_cycles;

	/* plus the code since the last edge: QUIET >= 6000 µs; in halves, each within delay_exact's 16 bits
	   at 16 MHz */
	delay_exact(US_CYCLES(QUIET_US / 2));
	delay_exact(US_CYCLES(QUIET_US / 2));
	pin_frame(waveform_cycles, n, group, arg);
	frames_sent++;
}

static uint8_t *put_u16(uint8_t *p, uint16_t v)
{
	*p++ = v >> 8;
	*p++ = v & 0xFF;
	return p;
}

static uint8_t *put_u32(uint8_t *p, uint32_t v)
{
	p = put_u16(p, v >> 16);
	return put_u16(p, v & 0xFFFF);
}

void frame_run(uint8_t program)
{
	uint8_t payload[9];
	uint8_t *p = put_u32(payload, F_CPU);
	p = put_u32(p, pgm_read_dword(&pintime_fw_revision));
	*p++ = program;
	send_frame(FRAME_RUN, payload, p - payload, group_none, 0, 0);
}

void frame_cal(void)
{
	uint8_t payload[6];
	uint8_t *p = put_u32(payload, US_CYCLES(CAL_PERIOD_US));
	p = put_u16(p, CAL_COUNT);
	send_frame(FRAME_CAL, payload, p - payload, group_cal, CAL_COUNT, 0);
}

void frame_direct(uint16_t rep, void (*group)(void))
{
	uint8_t payload[2];
	put_u16(payload, rep);
	send_frame(FRAME_DIRECT, payload, sizeof payload, group, 0, 0);
}

void frame_counted(enum frame_kind kind, uint16_t n, uint16_t rep, void (*group)(void))
{
	uint8_t payload[4];
	put_u16(put_u16(payload, n), rep);
	send_frame(kind, payload, sizeof payload, group, n, 0);
}

void frame_end(void)
{
	uint8_t payload[2];
	put_u16(payload, frames_sent);
	send_frame(FRAME_END, payload, sizeof payload, group_none, 0, 0);
}

void frame_table2(uint16_t measurement, uint16_t first_round, uint16_t count, void (*group)(void),
		  uint8_t lead_cycles)
{
	uint8_t payload[6];
	put_u16(put_u16(put_u16(payload, measurement), first_round), count);
	send_frame(FRAME_TABLE2, payload, sizeof payload, group, count, lead_cycles);
}

void frame_table2cut(uint16_t measurement, uint8_t cuts, uint8_t per_cut, void (*group)(void),
		     uint8_t lead_cycles)
{
	uint8_t payload[4];
	uint8_t *p = put_u16(payload, measurement);
	*p++ = cuts;
	*p++ = per_cut;
	send_frame(FRAME_TABLE2CUT, payload, sizeof payload, group, (uint16_t)cuts * per_cut, lead_cycles);
}

void frame_user(uint8_t function, uint16_t m, uint16_t rep, void (*group)(void), uint8_t lead_cycles)
{
	uint8_t payload[5];
	payload[0] = function;
	put_u16(put_u16(payload + 1, m), rep);
	send_frame(FRAME_USER, payload, sizeof payload, group, m, lead_cycles);
}

void frame_kernel(uint8_t threads, uint16_t ticks, uint16_t rep, void (*group)(void))
{
	uint8_t payload[5];
	payload[0] = threads;
	put_u16(put_u16(payload + 1, ticks), rep);
	send_frame(FRAME_KERNEL, payload, sizeof payload, group, ticks, 0);
}
