/*
 * pintime.h — measure your own functions by line fitting (paper §4; FORMAT.md §4 kind 9 USER, §8).
 *
 * In one C file, write the functions to measure as `void name(void)` (not static; interrupts must stay
 * off), then register them with one line, at file scope:
 *
 *     #include "pintime.h"
 *     void mine(void) { ... }
 *     PINTIME_FUNCTIONS(mine);                  // up to 8: PINTIME_FUNCTIONS(a, b, c)
 *
 * and link the file with pintime_user.c (`make USER_SRC=path/to/mine.c user`), or, in an Arduino sketch
 * (the library arduino/pintime, docs/boards.md), call pintime_measure() from setup(). The runtime sends RUN, CAL,
 * then PINTIME_REPS times (RUN, then one USER frame per function in registration order), then END. A USER
 * frame's GROUP is PINTIME_M pulses, pulse k around k back-to-back `call name` instructions (k = 1 … M),
 * fully unrolled: for each function the macro generates an assembler group `pintime_user_<index>_<name>`
 * (its name in the ELF gives the analyzer index → name with `--elf`).
 *
 * Pulse k is `out` (rising edge, 1 cycle), k × `call name`, `out` (falling edge): its width is
 * k · T + 1 cycles, T = the function's cycles per call including CALL (5 cycles on the ATmega2560) and
 * RET (5). Line fitting gives the slope T and the intercept ε (1 cycle on the simulator; on real hardware
 * ε also holds the pin's and the sound card's rise/fall asymmetry), which the fit cancels. A function
 * whose time depends on its data or state gives the mean over the calls, and a worse R².
 */
#ifndef PINTIME_H
#define PINTIME_H

#include <stdint.h>

#include "frames.h"
#include "pins.h"
#include "timing.h"

#ifndef PINTIME_M
#define PINTIME_M 20	/* pulses per USER frame: 1 … M calls (Makefile USER_M) */
#endif
#ifndef PINTIME_REPS
#define PINTIME_REPS 20	/* repetitions R (Makefile USER_REPS) */
#endif
/* A group holds M (M + 1) / 2 calls of 4 bytes: at M = 60, 7.3 KB per function, so 8 functions stay far
 * below the 128 KiB that pin_frame's icall reaches without a trampoline (which would shift the SETTLE). */
#if PINTIME_M < 2 || PINTIME_M > 60
#error "PINTIME_M (Makefile USER_M) must be 2 … 60"
#endif

/* _SFR_IO_ADDR(MEAS_PIN) as a plain number for the generated assembler; pintime_user.c checks it. */
#define PINTIME_MEAS_PIN_IO MEAS_PIN_IO
/* Cycles from the start of a group to its first edge (push r28, ldi r28): the SETTLE is shortened by as
 * much (frame_user). */
#define PINTIME_GROUP_LEAD 3

#ifdef __cplusplus
extern "C" {
#endif
typedef void (*pintime_group)(void);
extern const pintime_group pintime_user_groups[];
extern const uint8_t pintime_user_count;
extern const uint8_t pintime_user_program;	/* the RUN frame's program: PROGRAM_USER (micro: PROGRAM_MICRO) */

/* The Arduino library (arduino/pintime): one whole run, from setup(), beside the Arduino core. Every
 * interrupt (the core's millis() timer, the ATmega32U4's USB) is off from its start to its end; Timer1
 * becomes the reference (no PWM on its pins after it). */
void pintime_measure(void);	/* the functions of PINTIME_FUNCTIONS (FORMAT.md §8) */
void pintime_table1(void);	/* Table 1 of the paper with PINTIME_REPS repetitions (FORMAT.md §6) */
#ifdef __cplusplus
}
#endif

/* GAP_US in cycles, as assembler text */
#define PINTIME_GAP_CYCLES (GAP_US * CYCLES_PER_US_PLAIN)

#define PINTIME_STR_(x) #x
#define PINTIME_STR(x) PINTIME_STR_(x)

/*
 * The GROUP of a function, run by pin_frame (pinwave.S); `target` is the assembler text its calls name it
 * by. r28 (call-saved: the function keeps it) holds the toggle mask. Between pulses a GAP as in groups.S:
 * 1 (falling out) + 2 (ldi) + (n + 18) (delay_exact) = GAP cycles from the start of the falling `out` to
 * the start of the next rising one.
 */
#define PINTIME_GROUP_BODY(target)							\
	"	push r28\n"				/* [2] */			\
	"	ldi r28, " PINTIME_STR(MEAS_MASK) "\n"	/* [1] */			\
	"	.set pintime_k, 1\n"							\
	"	.rept " PINTIME_STR(PINTIME_M) "\n"					\
	"	out " PINTIME_STR(PINTIME_MEAS_PIN_IO) ", r28\n"	/* [1] rising */	\
	"	.rept pintime_k\n"							\
	"	call " target "\n"			/* [T] each */			\
	"	.endr\n"								\
	"	out " PINTIME_STR(PINTIME_MEAS_PIN_IO) ", r28\n"	/* falling */		\
	"	.if pintime_k < " PINTIME_STR(PINTIME_M) "\n"				\
	"	ldi r24, lo8(" PINTIME_STR(PINTIME_GAP_CYCLES) " - 21)\n"	/* [1] */	\
	"	ldi r25, hi8(" PINTIME_STR(PINTIME_GAP_CYCLES) " - 21)\n"	/* [1] */	\
	"	call delay_exact\n"			/* [n + 18] */			\
	"	.endif\n"								\
	"	.set pintime_k, pintime_k + 1\n"					\
	"	.endr\n"								\
	"	pop r28\n"								\
	"	ret\n"

#ifdef __cplusplus
/* C++ (an Arduino sketch): the group `pintime_user_<i>_<fn>` is a naked function whose assembler names
 * `fn` by an operand (%x0: its address as a call target), which holds through C++ name mangling and
 * link-time optimisation (the IDE's -flto) alike. */
#define PINTIME_DECLARE_(i, fn)								\
	extern "C" void pintime_user_##i##_##fn(void) __attribute__((naked, used));	\
	extern "C" void pintime_user_##i##_##fn(void)					\
	{										\
		__asm__ __volatile__(PINTIME_GROUP_BODY("%x0") :: "i"(fn));		\
	}
#else
/* C: the group `pintime_user_<i>_<fn>` in assembler at file scope, in a section of its own. */
#define PINTIME_DECLARE_(i, fn)								\
	void fn(void);									\
	void pintime_user_##i##_##fn(void);						\
	__asm__(".pushsection .text.pintime_user_" #i "_" #fn ", \"ax\", @progbits\n"	\
		".global pintime_user_" #i "_" #fn "\n"					\
		".type pintime_user_" #i "_" #fn ", @function\n"			\
		"pintime_user_" #i "_" #fn ":\n"					\
		PINTIME_GROUP_BODY(#fn)							\
		".size pintime_user_" #i "_" #fn ", . - pintime_user_" #i "_" #fn "\n"	\
		".popsection\n");
#endif
#define PINTIME_ENTRY_(i, fn) pintime_user_##i##_##fn,

/* PINTIME_EACH_(n)(M, a, b, …): M(0, a) M(1, b) … */
#define PINTIME_EACH_1(M, a) M(0, a)
#define PINTIME_EACH_2(M, a, b) PINTIME_EACH_1(M, a) M(1, b)
#define PINTIME_EACH_3(M, a, b, c) PINTIME_EACH_2(M, a, b) M(2, c)
#define PINTIME_EACH_4(M, a, b, c, d) PINTIME_EACH_3(M, a, b, c) M(3, d)
#define PINTIME_EACH_5(M, a, b, c, d, e) PINTIME_EACH_4(M, a, b, c, d) M(4, e)
#define PINTIME_EACH_6(M, a, b, c, d, e, f) PINTIME_EACH_5(M, a, b, c, d, e) M(5, f)
#define PINTIME_EACH_7(M, a, b, c, d, e, f, g) PINTIME_EACH_6(M, a, b, c, d, e, f) M(6, g)
#define PINTIME_EACH_8(M, a, b, c, d, e, f, g, h) PINTIME_EACH_7(M, a, b, c, d, e, f, g) M(7, h)
#define PINTIME_COUNT_(a, b, c, d, e, f, g, h, n, ...) n
#define PINTIME_COUNT(...) PINTIME_COUNT_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define PINTIME_CAT_(a, b) a##b
#define PINTIME_EACH(n) PINTIME_CAT_(PINTIME_EACH_, n)

/* Register the functions to measure (1 … 8 names of `void name(void)` functions), once per program. */
#define PINTIME_FUNCTIONS(...)								\
	PINTIME_EACH(PINTIME_COUNT(__VA_ARGS__))(PINTIME_DECLARE_, __VA_ARGS__)		\
	const pintime_group pintime_user_groups[] = {					\
		PINTIME_EACH(PINTIME_COUNT(__VA_ARGS__))(PINTIME_ENTRY_, __VA_ARGS__)	\
	};										\
	const uint8_t pintime_user_count = PINTIME_COUNT(__VA_ARGS__);		\
	const uint8_t pintime_user_program __attribute__((used)) = PROGRAM_USER

#endif
