; pinwave.S — cycle-exact waits and the frame emitter: header edges, SETTLE and the start of the GROUP
; (FORMAT.md §3). Every instruction carries its cycle count `; [n]` (ATmega2560, 22-bit PC:
; CALL 5, RET 5, ICALL 4); on a 2-byte PC each is one cycle less and PC_PAD (timing.h) makes up for it, so
; every count here holds on every chip. Only call-clobbered registers of the avr-gcc ABI are used.

#include "pins.h"
#include "timing.h"

        .section .text.pinwave, "ax", @progbits

; void delay_exact(uint16_t n)   r25:r24 = n >= DELAY_EXACT_MIN (4)
; Total n + DELAY_EXACT_OVERHEAD (18) cycles including CALL and RET, for b0 = bit 0 of n, b1 = bit 1,
; q = n >> 2: 5 (CALL) + (2 + b0) + (3 + 2·b1) + 4 + (4·q − 1) + 5 (RET) = 18 + n.
; Clobbers r24, r25 and SREG. No skip precedes an adiw/sbiw (simavr skip bug, docs/design.md §9).
        .global delay_exact
        .type   delay_exact, @function
delay_exact:                    ; CALL [5]
        sbrc    r24, 0          ; [1] when b0 = 1, [2] (skips the rjmp) when b0 = 0
        rjmp    .+0             ; [2] when b0 = 1            → this pair: 2 + b0
        sbrs    r24, 1          ; [1] when b1 = 0, [2] (skips the rjmp) when b1 = 1
        rjmp    1f              ; [2] when b1 = 0
        nop                     ; [1] when b1 = 1
        nop                     ; [1] when b1 = 1
        nop                     ; [1] when b1 = 1            → these five: 3 + 2·b1
1:      lsr     r25             ; [1]
        ror     r24             ; [1]
        lsr     r25             ; [1]
        ror     r24             ; [1]  r25:r24 = q = n >> 2 >= 1
2:      sbiw    r24, 1          ; [2] × q
        brne    2b              ; [2] × (q − 1) + [1]        → loop: 4·q − 1
        PC_PAD  2               ; [2] on a 2-byte PC, [0] on the Mega: the CALL and the RET
        ret                     ; [5]
        .size   delay_exact, . - delay_exact

; void pin_frame(const uint16_t *cycles, uint16_t n, void (*group)(void), uint16_t arg)
;   r25:r24 = cycles, r23:r22 = n >= 1, r21:r20 = group, r19:r18 = arg
; Toggles the measurement pin n times, toggle i + 1 exactly cycles[i] cycles after toggle i
; (cycles[i] >= PIN_FRAME_MIN): one iteration = 1 + 2 + 2 + 2 + (cycles[i] − 29 + 18) + 2 + 2 = cycles[i].
; The last iteration ends cycles[n−1] − 1 cycles after the last toggle (brne not taken: [1]); then
; 1 + 1 + 4 (icall) cycles later `group` starts, entered with r18 = MEAS_MASK and X = arg, its first
; instruction being its first edge: that edge comes exactly cycles[n−1] + PIN_FRAME_TAIL (5) cycles after
; the last toggle. Returns when `group` returns.
        .global pin_frame
        .type   pin_frame, @function
pin_frame:
        movw    r26, r24        ; [1] X = cycles
        movw    r30, r22        ; [1] Z = toggles left
        movw    r22, r18        ; [1] arg
        ldi     r18, MEAS_MASK  ; [1]
1:      out     _SFR_IO_ADDR(MEAS_PIN), r18     ; [1] edge
        ld      r24, X+         ; [2]
        ld      r25, X+         ; [2]
        sbiw    r24, 29         ; [2] this iteration's own cycles
        call    delay_exact     ; [cycles[i] − 29 + 18]
        sbiw    r30, 1          ; [2]
        brne    1b              ; [2] taken, [1] after the last toggle
        movw    r26, r22        ; [1] X = arg
        movw    r30, r20        ; [1] Z = group (word address; code below 128 KiB, EIND unused)
        PC_PAD  1               ; [1] on a 2-byte PC, [0] on the Mega: the ICALL
        icall                   ; [4]
        ret                     ; [5]
        .size   pin_frame, . - pin_frame

; GROUPs common to every program, run by pin_frame (r18 = MEAS_MASK, X = argument; first instruction =
; first edge).

; RUN, END: no edges.
        .global group_none
        .type   group_none, @function
group_none:
        ret                     ; [5]
        .size   group_none, . - group_none

; CAL, X = count >= 1 toggles exactly CAL_CYCLES apart, starting with a rising edge:
; one iteration = 1 + 1 + 1 + (CAL_CYCLES − 25 + 18) + 2 + 2 = CAL_CYCLES.
#define CAL_CYCLES US_CYCLES(CAL_PERIOD_US)
        .global group_cal
        .type   group_cal, @function
group_cal:
1:      out     _SFR_IO_ADDR(MEAS_PIN), r18     ; [1] edge
        ldi     r24, lo8(CAL_CYCLES - 25)       ; [1]
        ldi     r25, hi8(CAL_CYCLES - 25)       ; [1]
        call    delay_exact     ; [CAL_CYCLES − 25 + 18]
        sbiw    r26, 1          ; [2]
        brne    1b              ; [2] taken (last time [1])
        ret                     ; [5]
        .size   group_cal, . - group_cal
