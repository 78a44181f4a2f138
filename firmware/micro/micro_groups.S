; micro_groups.S — the loop and interrupt groups of program `micro` (firmware/micro/MICRO.md §3, §4), run by
; pin_frame through frame_user as pintime.h's groups are: M pulses, pulse k (k = 1 … M) around k
; repetitions of the unit, a GAP between pulses. Every instruction carries its cycle count `; [n]`
; (ATmega2560, 22-bit PC). r28 holds MEAS_MASK throughout (call-saved: the called loops keep it).

#include "pins.h"
#include "timing.h"

#ifndef PINTIME_M
#error "PINTIME_M must be defined (Makefile USER_M)"
#endif
#define MEAS _SFR_IO_ADDR(MEAS_PIN)
#define GAP_DELAY (US_CYCLES(GAP_US) - 21)      /* falling out [1] + 2 ldi + delay_exact (n + 18) */

; INT0 is toggled with r28: the measurement pin's mask must be INT0's (pins.h)
.if MEAS_MASK != (1 << INT0_BIT)
.error "micro_groups.S: MEAS_MASK is not 1 << INT0_BIT"
.endif
.if INT0_vect_num != 1 || INT1_vect_num != 2
.error "micro_groups.S: INT0/INT1 are not vectors 1/2"
.endif

; a group's symbol is pintime_user_<index>_<name> (pintime.h), its index in micro.c's table
.macro group_begin group
        .section .text.\group, "ax", @progbits
        .global \group
        .type   \group, @function
\group:
        push    r28                     ; [2]
        ldi     r28, MEAS_MASK          ; [1]
.endm

.macro group_end group
        pop     r28                     ; [2]
        ret                             ; [5]
        .size   \group, . - \group
.endm

; the GAP after pulse k, none after the last; `extra` cycles of the GAP are spent elsewhere
.macro gap k, extra=0
        .if \k < PINTIME_M
        ldi     r24, lo8(GAP_DELAY - (\extra))  ; [1]
        ldi     r25, hi8(GAP_DELAY - (\extra))  ; [1]
        call    delay_exact                     ; [n + 18]
        .endif
.endm

; Loop groups: pulse k = one call of micro_loop_<name>(k): its width is k · (cycles per iteration) + a
; constant (the ldi, CALL, setup, exit, RET and ε), so the line's slope is the loop's cost per iteration.
.macro loop_group group, loop
        group_begin \group
        .set    micro_k, 1
        .rept   PINTIME_M
        out     MEAS, r28               ; [1] rising edge
        ldi     r24, micro_k            ; [1] n = k (8-bit loops read r24, 16-bit r25:r24)
        ldi     r25, 0                  ; [1]
        call    \loop                   ; [5 + …]
        out     MEAS, r28               ; [1] falling edge
        gap     micro_k
        .set    micro_k, micro_k + 1
        .endr
        group_end \group
.endm

        loop_group pintime_user_27_loop_for8, micro_loop_for8
        loop_group pintime_user_28_loop_for16, micro_loop_for16
        loop_group pintime_user_29_loop_while, micro_loop_while
        loop_group pintime_user_30_loop_dowhile, micro_loop_dowhile
        loop_group pintime_user_31_loop_down, micro_loop_down

; Interrupt groups. INT0 and INT1 (pins.h; PD0 and PD1 on the Mega) are outputs, any edge (micro.c): toggling the pin sets the
; flag. A group enables one of them in EIMSK, keeps I = 0 except in its units, and leaves EIMSK = 0 and
; both flags clear. The setup after the group's first 3 cycles delays its first edge by a few cycles more
; than pintime.h's PINTIME_GROUP_LEAD: the SETTLE before it is that much longer (FORMAT.md §2: ±2 %).
.macro irq_setup enable
        ldi     r24, (1 << INTF0) | (1 << INTF1)        ; [1]
        out     _SFR_IO_ADDR(EIFR), r24                 ; [1] both flags clear
        ldi     r24, \enable                            ; [1]
        out     _SFR_IO_ADDR(EIMSK), r24                ; [1]
.endm

.macro irq_teardown
        ldi     r24, 0                                  ; [1]
        out     _SFR_IO_ADDR(EIMSK), r24                ; [1]
        ldi     r24, (1 << INTF0) | (1 << INTF1)        ; [1]
        out     _SFR_IO_ADDR(EIFR), r24                 ; [1]
.endm

; INT1 pending (its flag set by an edge on its pin), I = 0
.macro pend_int1
        ldi     r24, 1 << INT1_BIT              ; [1]
        out     _SFR_IO_ADDR(PIND), r24         ; [1]
.endm

; Round trip: pulse k = k units. A unit sets INT0 pending, then `sei` and two `nop`: the interrupt is taken
; after one of them (the chip runs one instruction after SEI, simavr 1.6 two: docs/design.md §9), its
; handler is a lone RETI, the other `nop` runs after the return, then `cli`. Either way the unit executes
; the same instructions; only the interrupt response differs (chip 5 cycles, simavr 0).
        group_begin pintime_user_32_irq_round_trip
        irq_setup 1 << INT0
        .set    micro_k, 1
        .rept   PINTIME_M
        out     MEAS, r28               ; [1] rising edge
        .rept   micro_k
        out     _SFR_IO_ADDR(PIND), r28 ; [1] toggle INT0's pin: INT0 pending
        sei                             ; [1]
        nop                             ; [1]
        nop                             ; [1]   … response, JMP [3], RETI [5] after one of the nops
        cli                             ; [1]
        .endr
        out     MEAS, r28               ; [1] falling edge
        gap     micro_k
        .set    micro_k, micro_k + 1
        .endr
        irq_teardown
        group_end pintime_user_32_irq_round_trip

; Entry: every pulse is one interrupt, rising edge before the trigger (`sei` with INT1 pending), falling
; edge the first instruction of the handler (irq_mark): width = ε + cycles from `sei` to the handler.
        group_begin pintime_user_33_irq_entry
        irq_setup 1 << INT1
        pend_int1
        .set    micro_k, 1
        .rept   PINTIME_M
        out     MEAS, r28               ; [1] rising edge
        sei                             ; [1]
        nop                             ; [1]
        nop                             ; [1]   irq_mark after one of them: falling edge, RETI
        cli                             ; [1]
        pend_int1
        gap     micro_k, 8                  ; GAP on simavr (the chip: 1 more): the handler's RETI 5, CLI, the pend 2
        .set    micro_k, micro_k + 1
        .endr
        irq_teardown
        group_end pintime_user_33_irq_entry

; Return: every pulse is one interrupt, rising edge the handler's last instruction before its RETI
; (irq_mark), falling edge the instruction the return comes back to: width = ε + RETI (+ the `nop` the chip
; still has to run, which simavr ran before entering).
        group_begin pintime_user_34_irq_return
        irq_setup 1 << INT1
        pend_int1
        .set    micro_k, 1
        .rept   PINTIME_M
        sei                             ; [1]
        nop                             ; [1]
        nop                             ; [1]   irq_mark after one of them: rising edge, RETI
        out     MEAS, r28               ; [1] falling edge
        cli                             ; [1]
        pend_int1
        gap     micro_k, 9                  ; GAP on simavr (the chip: 4 more): CLI, the pend 2, SEI, 2 NOP, JMP 3
        .set    micro_k, micro_k + 1
        .endr
        irq_teardown
        group_end pintime_user_34_irq_return

; INT0: the round trip's handler, nothing but the return.
        .section .text.micro_isr, "ax", @progbits
        .global __vector_1
        .type   __vector_1, @function
__vector_1:
        reti                            ; [5]
        .size   __vector_1, . - __vector_1

; INT1 (irq_mark): toggle the measurement pin first thing, return.
        .global __vector_2
        .type   __vector_2, @function
__vector_2:
        out     MEAS, r28               ; [1] the entry's falling / the return's rising edge
        reti                            ; [5]
        .size   __vector_2, . - __vector_2
