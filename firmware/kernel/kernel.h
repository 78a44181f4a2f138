/*
 * kernel.h — the small preemptive round-robin kernel of program `kernel` (KERNEL.md), shared by C and
 * assembler: thread control block offsets, the signal pins, the tick.
 *
 * Signals (KERNEL.md §2), all on port A, each toggled only by `out PINA, r` with r = its mask (never
 * `sbi PINA, b`: docs/design.md §9):
 *   PA0 (measurement pin, frames): inside a KERNEL frame's group, low while the tick interrupt runs
 *       (context save, scheduler, context restore)
 *   PA1 = Arduino D23: high around each run-queue insertion
 *   PA2 = Arduino D24: high around each context switch a thread asks for (kernel_next)
 *   PA3 = Arduino D25: high while thread 0 does its counting work
 */
#ifndef PINTIME_KERNEL_H
#define PINTIME_KERNEL_H

#include "pins.h"
#include "timing.h"

#define INSERT_MASK  (1 << 1)	/* PA1 */
#define SWITCH_MASK  (1 << 2)	/* PA2 */
#define THREAD0_MASK (1 << 3)	/* PA3 */
#define KERNEL_PINS  (MEAS_MASK | INSERT_MASK | SWITCH_MASK | THREAD0_MASK)

#define MAX_THREADS 16
#define STACK_BYTES 128

/* The tick: 7993 µs, prime, so successive ticks fall on ever other sub-sample phases of a sound card
 * (docs/design.md §10). Inside the group PA0 is high between ticks: a long high is no QUIET. */
#define TICK_US 7993
/* wait between the kernel's stop and PA0's fall, µs: far more than the edge detector's 6 samples at any
   rate, so that PA0's fall is never merged with PA2's last edge on a resistor ladder (KERNEL.md §7) */
#define STOP_WAIT_US 300

/* struct thread (kernel.c) byte offsets, checked there with _Static_assert */
#define TCB_QNEXT   0	/* struct thread *: next on the run queue */
#define TCB_SP      2	/* uint16_t: saved stack pointer */
#define TCB_WAITING 4	/* uint8_t: 1 = yielded, waits for its next period */

/* A saved context, from the top of the thread's stack down: return PC (3 bytes, low byte highest), r16,
 * SREG, r0 … r15, r17 … r31 (KERNEL.md §3). */
#define CONTEXT_BYTES (3 + 1 + 1 + 31)

#ifndef __ASSEMBLER__
#include <stdint.h>

struct thread {
	struct thread *qnext;		/* run queue link (TCB_QNEXT) */
	uint16_t sp;			/* saved stack pointer (TCB_SP) */
	uint8_t waiting;		/* TCB_WAITING */
	uint8_t period;			/* ticks between runs */
	uint8_t countdown;		/* ticks until the next run */
	uint8_t id;
	struct thread *next;		/* the list of all threads, which the scheduler walks */
	volatile uint32_t count;	/* the thread's counting work */
};

extern struct thread *volatile kernel_current;
extern struct thread kernel_runq;	/* run queue head (a sentinel: only qnext is used) */
extern struct thread *kernel_tail;	/* last thread on the run queue, or &kernel_runq */
extern struct thread kernel_idle;	/* the context that started the kernel; runs when no thread is ready */

/* switch.S */
void kernel_next(void);			/* a thread gives up the CPU until its next period */
void kernel_group(void);		/* the KERNEL frame's GROUP: first edge, then kernel_run */

/* kernel.c, called from switch.S */
void kernel_tick(void);			/* the scheduler: walk the threads, queue the ready ones */
void kernel_run(void);			/* one configuration: threads set up, ticks, stop */
#endif

#endif
