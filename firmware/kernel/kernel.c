/*
 * kernel.c — program `kernel` (KERNEL.md): a small preemptive round-robin kernel, timed on four pins.
 *
 * The scheduler (kernel_tick, run by the tick interrupt of switch.S) walks the linked list of all threads;
 * every thread whose period has come goes to the tail of the run queue (a FIFO: round-robin). Each thread
 * counts for a while, then gives up the CPU (kernel_next); when the queue is empty the idle context, the
 * code that started the kernel, runs until the next tick. A thread still running at a tick is preempted
 * and goes to the tail of the queue.
 *
 * Run order (FORMAT.md §9): RUN, CAL, then KERNEL_REPS times (RUN, KERNEL(N) for N = 1, 2, 4, 8, 16), END.
 * Each KERNEL frame's GROUP is one run of the kernel with N threads for KERNEL_TICKS ticks.
 */
#include <avr/interrupt.h>
#include <avr/io.h>
#include <stddef.h>

#include "avr_mcu_section.h"
#include "clock.h"
#include "frames.h"
#include "kernel.h"

/* simavr: MCU and clock (the .mmcu section never reaches the chip; the HEX omits it). */
AVR_MCU(F_CPU, MCU_NAME);

#ifndef KERNEL_REPS
#define KERNEL_REPS 20
#endif
#ifndef KERNEL_TICKS
#define KERNEL_TICKS 20
#endif

_Static_assert(offsetof(struct thread, qnext) == TCB_QNEXT, "TCB_QNEXT");
_Static_assert(offsetof(struct thread, sp) == TCB_SP, "TCB_SP");
_Static_assert(offsetof(struct thread, waiting) == TCB_WAITING, "TCB_WAITING");

/* Timer3 in CTC mode (WGM 4) interrupts every TICK_US: the smallest prescaler that fits 16 bits. */
#define TICK_CYCLES US_CYCLES(TICK_US)
#if TICK_CYCLES <= 65536
#define TICK_PRESCALE 1
#define TICK_CS (1 << CS30)
#elif TICK_CYCLES % 8 == 0 && TICK_CYCLES / 8 <= 65536
#define TICK_PRESCALE 8
#define TICK_CS (1 << CS31)
#else
#error "no Timer3 prescaler gives an exact tick"
#endif

/* Counting work per thread and tick: a quarter of the tick shared by the N threads, at about 16 cycles per
 * count, so that the switches, the scheduler and the work together stay well inside the tick. */
#define WORK_CYCLES_PER_COUNT 28

static const uint8_t thread_counts[] = { 1, 2, 4, 8, 16 };

struct thread *volatile kernel_current;
struct thread kernel_runq;
struct thread *kernel_tail;
struct thread kernel_idle;

static struct thread threads[MAX_THREADS];
static uint8_t stacks[MAX_THREADS][STACK_BYTES];
static struct thread *thread_list;	/* threads[0] → threads[1] → … → NULL */
static uint8_t n_threads;
static uint16_t work_counts;
static volatile uint16_t ticks_done;

static inline void toggle(uint8_t mask)
{
	__asm__ __volatile__("out %0, %1" :: "I"(_SFR_IO_ADDR(PINA)), "r"(mask) : "memory");
}

/* A thread's counting work: work_counts increments of its own counter. */
static void work(struct thread *me)
{
	for (uint16_t i = work_counts; i; i--)
		me->count++;
}

static void thread0_main(void)
{
	for (;;) {
		toggle(THREAD0_MASK);	/* PA3 rises: thread 0 works */
		work(kernel_current);
		toggle(THREAD0_MASK);	/* PA3 falls */
		kernel_next();
	}
}

static void worker_main(void)
{
	for (;;) {
		work(kernel_current);
		kernel_next();
	}
}

/* The tail of the run queue gets `t`, between two edges of PA1. */
static inline void enqueue(struct thread *t)
{
	toggle(INSERT_MASK);		/* PA1 rises */
	t->qnext = NULL;
	kernel_tail->qnext = t;
	kernel_tail = t;
	toggle(INSERT_MASK);		/* PA1 falls */
}

void kernel_tick(void)
{
	ticks_done++;
	for (struct thread *t = thread_list; t; t = t->next) {
		if (t->waiting && --t->countdown == 0) {
			t->countdown = t->period;
			t->waiting = 0;
			enqueue(t);
		}
	}
	struct thread *preempted = kernel_current;
	if (preempted != &kernel_idle && !preempted->waiting) {	/* still running: round-robin */
		preempted->qnext = NULL;
		kernel_tail->qnext = preempted;
		kernel_tail = preempted;
	}
}

/* A fresh context on thread i's stack that "returns" to `entry` with interrupts on and every register 0. */
static void thread_setup(uint8_t i, void (*entry)(void))
{
	uint8_t *top = &stacks[i][STACK_BYTES - 1];
	uint16_t pc = (uint16_t)entry;	/* word address; the code lies below 128 KiB */
	for (uint8_t k = 0; k < CONTEXT_BYTES; k++)
		top[-k] = 0;
	top[0] = pc & 0xFF;
	top[-1] = pc >> 8;
	top[-2] = 0;			/* PC bits 16–21 */
	top[-4] = 0x80;			/* SREG: I */
	struct thread *t = &threads[i];
	t->sp = (uint16_t)(top - CONTEXT_BYTES);
	t->waiting = 1;
	t->period = 1;
	t->countdown = 1;
	t->id = i;
	t->count = 0;
	t->next = i + 1 < n_threads ? &threads[i + 1] : NULL;
}

void kernel_run(void)
{
	for (uint8_t i = 0; i < n_threads; i++)
		thread_setup(i, i == 0 ? thread0_main : worker_main);
	thread_list = &threads[0];
	kernel_runq.qnext = NULL;
	kernel_tail = &kernel_runq;
	kernel_current = &kernel_idle;
	ticks_done = 0;
	work_counts = TICK_CYCLES / 4 / WORK_CYCLES_PER_COUNT / n_threads;

	TCCR3A = 0;
	TCCR3B = 1 << WGM32;			/* CTC, TOP = OCR3A; stopped */
	TCNT3 = 0;
	OCR3A = TICK_CYCLES / TICK_PRESCALE - 1;
	TIFR3 = 1 << OCF3A;
	TIMSK3 = 1 << OCIE3A;
	TCCR3B = (1 << WGM32) | TICK_CS;	/* start */
	sei();
	while (ticks_done < KERNEL_TICKS)
		;				/* idle */
	cli();
	TCCR3B = 0;
	TIMSK3 = 0;
	/* parts PA0's fall from PA2's last one (26 cycles before it): on one ladder channel (KERNEL.md §7)
	   the edge detector would merge them into one step */
	delay_exact(US_CYCLES(STOP_WAIT_US));
	toggle(MEAS_MASK);			/* PA0 falls: the kernel stopped */
}

int main(void)
{
	clock_setup();
	PORTA &= ~KERNEL_PINS;		/* idle low */
	DDRA |= KERNEL_PINS;
	reference_start();

	frame_run(PROGRAM_KERNEL);
	frame_cal();
	for (uint16_t rep = 0; rep < KERNEL_REPS; rep++) {
		frame_run(PROGRAM_KERNEL);
		for (uint8_t c = 0; c < sizeof thread_counts; c++) {
			n_threads = thread_counts[c];
			frame_kernel(n_threads, KERNEL_TICKS, rep, kernel_group);
		}
	}
	frame_end();
	stop();
}
