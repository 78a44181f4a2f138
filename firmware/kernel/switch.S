; switch.S — the kernel's context switches (KERNEL.md §3): the tick interrupt (Timer3 compare A), a thread's
; voluntary switch (kernel_next), the choice of the next thread (kernel_pick) and the KERNEL frame's GROUP.
; Every instruction on a measured path carries its cycle count `; [n]` (ATmega2560, 22-bit PC: CALL 5,
; RET/RETI 5, LDS/STS/PUSH/POP/LDD/STD 2).
;
; A saved context, pushed in this order onto the thread's own stack: the return PC (3 bytes, by the CALL or
; the interrupt), r16, SREG (with I set: the context ran with interrupts on), r0 … r15, r17 … r31; the stack
; pointer then goes into the thread's TCB. Both switches save and restore this same frame, so a thread
; preempted by the tick may resume through kernel_next's `ret` and a thread that yielded through the
; interrupt's `reti`.

#include "kernel.h"

#define SREG_IO 0x3F
#define SPL_IO  0x3D
#define SPH_IO  0x3E
#define PINA_IO _SFR_IO_ADDR(MEAS_PIN)

        .section .text.kernel_switch, "ax", @progbits

; r0 … r15, r17 … r31 after r16 and SREG: [62]
.macro SAVE_REGISTERS
        .irp    r, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
        push    r\r                           ; [2]
        .endr
.endm

; [62]
.macro RESTORE_REGISTERS
        .irp    r, 31,30,29,28,27,26,25,24,23,22,21,20,19,18,17,15,14,13,12,11,10,9,8,7,6,5,4,3,2,1,0
        pop     r\r                            ; [2]
        .endr
.endm

; SP → kernel_current->sp; leaves Z = kernel_current: [10]
.macro SAVE_SP
        lds     r30, kernel_current             ; [2]
        lds     r31, kernel_current + 1         ; [2]
        in      r0, SPL_IO                      ; [1]
        std     Z + TCB_SP, r0                  ; [2]
        in      r0, SPH_IO                      ; [1]
        std     Z + TCB_SP + 1, r0              ; [2]
.endm

; SP ← kernel_current->sp (interrupts are off): [10]
.macro LOAD_SP
        lds     r30, kernel_current             ; [2]
        lds     r31, kernel_current + 1         ; [2]
        ldd     r0, Z + TCB_SP                  ; [2]
        out     SPL_IO, r0                      ; [1]
        ldd     r0, Z + TCB_SP + 1              ; [2]
        out     SPH_IO, r0                      ; [1]
.endm

; The tick. PA0 falls 3 cycles after the vector's first instruction and rises 6 cycles before RETI ends
; (pop r16, out SREG, pop r16 and RETI after it); between them: the context save, kernel_tick (the
; scheduler, C), kernel_pick and the restore of the thread it picked.
        .global TIMER3_COMPA_vect
        .type   TIMER3_COMPA_vect, @function
TIMER3_COMPA_vect:
        push    r16                             ; [2]
        ldi     r16, MEAS_MASK                  ; [1]
        out     PINA_IO, r16                    ; [1] PA0 falls: the tick runs
        in      r16, SREG_IO                    ; [1]
        ori     r16, 0x80                       ; [1] the interrupted context ran with I set
        push    r16                             ; [2]
        SAVE_REGISTERS                          ; [62]
        clr     r1                              ; [1] the C ABI's zero register
        SAVE_SP                                 ; [10]
        call    kernel_tick                     ; [5 + kernel_tick's cycles] the scheduler (C)
        call    kernel_pick                     ; [5 + 40]
        LOAD_SP                                 ; [10]
        RESTORE_REGISTERS                       ; [62]
        ldi     r16, MEAS_MASK                  ; [1]
        out     PINA_IO, r16                    ; [1] PA0 rises: the tick is over
        pop     r16                             ; [2] SREG
        out     SREG_IO, r16                    ; [1]
        pop     r16                             ; [2]
        reti                                    ; [5]
        .size   TIMER3_COMPA_vect, . - TIMER3_COMPA_vect

; void kernel_next(void): the running thread is done for this period. PA2 rises 3 cycles after the CALL
; (push r16, ldi) and falls before the last 3 instructions (pop r16, out SREG, pop r16) and RET. From the
; start of the rising `out` to the start of the falling one:
; 1 + 1 + 1 + 2 + 62 + 1 + 10 + 1 + 2 + (5 + 40) + 10 + 62 + 1 = 199 cycles.
        .global kernel_next
        .type   kernel_next, @function
kernel_next:
        push    r16                             ; [2]
        ldi     r16, SWITCH_MASK                ; [1]
        out     PINA_IO, r16                    ; [1] PA2 rises
        in      r16, SREG_IO                    ; [1]
        cli                                     ; [1] no tick while the queue and SP change
        push    r16                             ; [2]
        SAVE_REGISTERS                          ; [62]
        clr     r1                              ; [1]
        SAVE_SP                                 ; [10]
        ldi     r16, 1                          ; [1]
        std     Z + TCB_WAITING, r16            ; [2] waits for its next period
        call    kernel_pick                     ; [5 + 40]
        LOAD_SP                                 ; [10]
        RESTORE_REGISTERS                       ; [62]
        ldi     r16, SWITCH_MASK                ; [1]
        out     PINA_IO, r16                    ; [1] PA2 falls
        pop     r16                             ; [2] SREG (I set: threads and the idle context run with it)
        out     SREG_IO, r16                    ; [1]
        pop     r16                             ; [2]
        ret                                     ; [5]
        .size   kernel_next, . - kernel_next

; kernel_pick: kernel_current ← the run queue's head, dequeued, or &kernel_idle when the queue is empty.
; 40 cycles with its RET on every path (empty; not the last; the last, which resets kernel_tail), so a
; switch costs the same whichever thread comes next: 6 before the branch,
; 25 on each path to 3:, 9 after. Clobbers r16, r17, r30, r31.
        .type   kernel_pick, @function
kernel_pick:
        lds     r30, kernel_runq + TCB_QNEXT    ; [2]
        lds     r31, kernel_runq + TCB_QNEXT + 1        ; [2]
        cp      r30, r1                         ; [1]
        cpc     r31, r1                         ; [1]
        brne    1f                              ; [1] empty, [2] not
        ldi     r30, lo8(kernel_idle)           ; [1]
        ldi     r31, hi8(kernel_idle)           ; [1]
        .rept   10
        rjmp    .+0                             ; [2] × 10: the empty path as long as the others
        .endr
        rjmp    3f                              ; [2] empty: 1 + 2 + 20 + 2 = 25
1:      ldd     r16, Z + TCB_QNEXT              ; [2]
        ldd     r17, Z + TCB_QNEXT + 1          ; [2]
        sts     kernel_runq + TCB_QNEXT, r16    ; [2]
        sts     kernel_runq + TCB_QNEXT + 1, r17        ; [2]
        lds     r16, kernel_tail                ; [2]
        lds     r17, kernel_tail + 1            ; [2]
        cp      r16, r30                        ; [1]
        cpc     r17, r31                        ; [1]
        brne    2f                              ; [1] the last one, [2] not
        ldi     r16, lo8(kernel_runq)           ; [1]
        ldi     r17, hi8(kernel_runq)           ; [1]
        sts     kernel_tail, r16                ; [2]
        sts     kernel_tail + 1, r17            ; [2] the queue is empty again
        rjmp    3f                              ; [2] the last: 2 + 8 + 4 + 2 + 1 + 2 + 4 + 2 = 25
2:      rjmp    .+0                             ; [2]
        rjmp    .+0                             ; [2]
        rjmp    .+0                             ; [2]
        nop                                     ; [1] not the last: 2 + 8 + 4 + 2 + 2 + 7 = 25
3:      sts     kernel_current, r30             ; [2]
        sts     kernel_current + 1, r31         ; [2]
        ret                                     ; [5]
        .size   kernel_pick, . - kernel_pick

; The KERNEL frame's GROUP (FORMAT.md §4 kind 12), run by pin_frame with r18 = MEAS_MASK: its first
; instruction is its first edge (PA0 rises: the kernel starts), then kernel_run, which returns to pin_frame.
        .global kernel_group
        .type   kernel_group, @function
kernel_group:
        out     PINA_IO, r18                    ; [1] PA0 rises
        jmp     kernel_run                      ; [3]
        .size   kernel_group, . - kernel_group
