/*
 * micro.c — the classic OS micro-benchmarks on the ATmega2560 (program `micro`, firmware/micro/MICRO.md):
 * function-call overhead for 0…8 arguments of 8/16/32-bit types, a call through a function pointer, loop
 * overhead per iteration for five loop shapes, and interrupt round trip, entry and return latency.
 *
 * Every benchmark is a group of the pintime.h runtime (pintime_user.c: RUN, CAL, then per repetition one
 * USER frame per benchmark, FORMAT.md §8, §10), measured by line fitting (paper §4): pulse k holds k
 * repetitions of the benchmark's unit. The call benchmarks use pintime.h's own groups (pulse k = k
 * `call` instructions of a wrapper that makes the call under test); the loop and interrupt groups are in
 * micro_groups.S. The index of each benchmark in `pintime_user_groups` is the contract with the analyzer
 * (analyzer/pintime/estimate/micro.py, MICRO.md §2).
 */
#include <stdint.h>

#include "../user/pintime.h"

/* The callees take their arguments and do nothing with them: the empty asm makes each an opaque function
 * with a side effect (not const, so no call is dropped), noinline and noclone keep every call a real call
 * with the avr-gcc calling convention (arguments in r25…r8, the rest on the stack). */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define CALLEE __attribute__((noinline, noclone))

#define PARAMS_1(T) T a1
#define PARAMS_2(T) PARAMS_1(T), T a2
#define PARAMS_3(T) PARAMS_2(T), T a3
#define PARAMS_4(T) PARAMS_3(T), T a4
#define PARAMS_5(T) PARAMS_4(T), T a5
#define PARAMS_6(T) PARAMS_5(T), T a6
#define PARAMS_7(T) PARAMS_6(T), T a7
#define PARAMS_8(T) PARAMS_7(T), T a8
/* argument i: distinct bytes (a golden-ratio multiple), so the compiler loads each byte of each argument */
#define ARG(T, i) ((T)(0x9E3779B9UL * (i)))
#define ARGS_1(T) ARG(T, 1)
#define ARGS_2(T) ARGS_1(T), ARG(T, 2)
#define ARGS_3(T) ARGS_2(T), ARG(T, 3)
#define ARGS_4(T) ARGS_3(T), ARG(T, 4)
#define ARGS_5(T) ARGS_4(T), ARG(T, 5)
#define ARGS_6(T) ARGS_5(T), ARG(T, 6)
#define ARGS_7(T) ARGS_6(T), ARG(T, 7)
#define ARGS_8(T) ARGS_7(T), ARG(T, 8)

/* micro_call_<T>_<n>: the unit of benchmark "call(T×n)", a wrapper whose whole work is one call of
 * micro_f_<T>_<n> with n arguments; the asm after the call keeps it from becoming a jump (tail call). */
#define CALL_BENCH(T, n)								\
	CALLEE void micro_f_##T##_##n(PARAMS_##n(T##_t)) { __asm__ volatile(""); }	\
	void micro_call_##T##_##n(void);						\
	void micro_call_##T##_##n(void) { micro_f_##T##_##n(ARGS_##n(T##_t)); __asm__ volatile(""); }
#define CALL_BENCHES(T) CALL_BENCH(T, 1) CALL_BENCH(T, 2) CALL_BENCH(T, 3) CALL_BENCH(T, 4) \
	CALL_BENCH(T, 5) CALL_BENCH(T, 6) CALL_BENCH(T, 7) CALL_BENCH(T, 8)

CALLEE void micro_f_void(void) { __asm__ volatile(""); }
void micro_call_void(void);
void micro_call_void(void) { micro_f_void(); __asm__ volatile(""); }
CALL_BENCHES(uint8)
CALL_BENCHES(uint16)
CALL_BENCHES(uint32)

/* "call via pointer": the same empty callee through a pointer the compiler cannot see through */
void (*volatile micro_f_pointer)(void) = micro_f_void;
void micro_call_ptr(void);
void micro_call_ptr(void) { micro_f_pointer(); __asm__ volatile(""); }

/* The loop shapes (micro_groups.S calls each with n = k in pulse k): an empty body that uses the counter,
 * so the compiler keeps the counter the shape declares. */
void micro_loop_for8(uint8_t n);
void micro_loop_for8(uint8_t n)
{
	for (uint8_t i = 0; i < n; i++)
		__asm__ volatile("" :: "r"(i));
}

void micro_loop_for16(uint16_t n);
void micro_loop_for16(uint16_t n)
{
	for (uint16_t i = 0; i < n; i++)
		__asm__ volatile("" :: "r"(i));
}

void micro_loop_while(uint8_t n);
void micro_loop_while(uint8_t n)
{
	uint8_t i = 0;
	while (i < n) {
		__asm__ volatile("" :: "r"(i));
		i++;
	}
}

void micro_loop_dowhile(uint8_t n);
void micro_loop_dowhile(uint8_t n)
{
	uint8_t i = 0;
	do
		__asm__ volatile("" :: "r"(i));
	while (++i < n);
}

void micro_loop_down(uint8_t n);
void micro_loop_down(uint8_t n)
{
	for (uint8_t i = n; i != 0; i--)
		__asm__ volatile("" :: "r"(i));
}

/* INT0 and INT1 (pins.h: PD0 = D21 and PD1 = D20 on the Mega) as outputs, any edge: the firmware triggers them by
 * toggling the pins (micro_groups.S). Runs before main (.init8); EIMSK stays 0 outside the groups. */
__attribute__((naked, used, section(".init8"))) static void micro_init(void)
{
	DDRD |= (1 << INT0_BIT) | (1 << INT1_BIT);
	EICRA = (1 << ISC00) | (1 << ISC10);
}

/* The benchmarks in the analyzer's order (MICRO.md §2). */
#define CALL_GROUPS(X)										\
	X(0, micro_f_void) X(1, micro_call_void)						\
	X(2, micro_call_uint8_1) X(3, micro_call_uint8_2) X(4, micro_call_uint8_3)		\
	X(5, micro_call_uint8_4) X(6, micro_call_uint8_5) X(7, micro_call_uint8_6)		\
	X(8, micro_call_uint8_7) X(9, micro_call_uint8_8)					\
	X(10, micro_call_uint16_1) X(11, micro_call_uint16_2) X(12, micro_call_uint16_3)	\
	X(13, micro_call_uint16_4) X(14, micro_call_uint16_5) X(15, micro_call_uint16_6)	\
	X(16, micro_call_uint16_7) X(17, micro_call_uint16_8)					\
	X(18, micro_call_uint32_1) X(19, micro_call_uint32_2) X(20, micro_call_uint32_3)	\
	X(21, micro_call_uint32_4) X(22, micro_call_uint32_5) X(23, micro_call_uint32_6)	\
	X(24, micro_call_uint32_7) X(25, micro_call_uint32_8)					\
	X(26, micro_call_ptr)
CALL_GROUPS(PINTIME_DECLARE_)

/* micro_groups.S */
void pintime_user_27_loop_for8(void);
void pintime_user_28_loop_for16(void);
void pintime_user_29_loop_while(void);
void pintime_user_30_loop_dowhile(void);
void pintime_user_31_loop_down(void);
void pintime_user_32_irq_round_trip(void);
void pintime_user_33_irq_entry(void);
void pintime_user_34_irq_return(void);

const pintime_group pintime_user_groups[] = {
	CALL_GROUPS(PINTIME_ENTRY_)
	pintime_user_27_loop_for8, pintime_user_28_loop_for16, pintime_user_29_loop_while,
	pintime_user_30_loop_dowhile, pintime_user_31_loop_down,
	pintime_user_32_irq_round_trip, pintime_user_33_irq_entry, pintime_user_34_irq_return,
};
const uint8_t pintime_user_count = sizeof pintime_user_groups / sizeof pintime_user_groups[0];
const uint8_t pintime_user_program = PROGRAM_MICRO;
