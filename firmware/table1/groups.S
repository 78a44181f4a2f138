; groups.S — the measured GROUPs of the Table 1 frames (FORMAT.md §4), fully unrolled. Each is run by pin_frame (pinwave.S) with r18 = MEAS_MASK and X = its argument, and its first
; instruction is its first edge, so the SETTLE before it is exact. Each leaves the measurement pin low.
; A pulse is `out MEAS_PIN, r18` (rising edge, [1]), the calls, `out MEAS_PIN, r18` (falling edge, whose
; start ends the pulse): width = cycles of the calls + 1. Between pulses the pin stays low exactly GAP_US
; (start of a falling `out` to start of the next rising `out`). Interrupts stay disabled throughout.

#include "pins.h"
#include "timing.h"

#define GAP_CYCLES US_CYCLES(GAP_US)

; Edge of a pulse: toggles the measurement pin (r18 = MEAS_MASK).
.macro EDGE
        out     _SFR_IO_ADDR(MEAS_PIN), r18     ; [1]
.endm

; `count` back-to-back calls of `routine`.
.macro CALLS count, routine
        .rept   \count
        call    \routine                        ; [5 + body] each
        .endr
.endm

; Low for GAP_CYCLES from the start of the preceding falling EDGE to the start of the next rising EDGE,
; `extra` = cycles of other code between this GAP and that EDGE:
; 1 (falling EDGE) + 2 (ldi) + (n + 18) (delay_exact) + extra = GAP_CYCLES.
.macro GAP extra
        ldi     r24, lo8(GAP_CYCLES - 21 - \extra)      ; [1]
        ldi     r25, hi8(GAP_CYCLES - 21 - \extra)      ; [1]
        call    delay_exact                             ; [n + 18]
.endm

.macro FUNCTION name
        .section .text.\name, "ax", @progbits
        .global \name
        .type   \name, @function
\name:
.endm

.macro END_FUNCTION name
        ret                                     ; [5]
        .size   \name, . - \name
.endm

; DIRECT: one pulse around one call.
FUNCTION group_direct
        EDGE
        call    ref100                          ; [100]
        EDGE
END_FUNCTION group_direct

; EXECUTING n: one pulse around n back-to-back calls.
.macro EXECUTING n
FUNCTION group_executing_\n
        EDGE
        CALLS   \n, ref100
        EDGE
END_FUNCTION group_executing_\n
.endm
EXECUTING 10
EXECUTING 20
EXECUTING 55
EXECUTING 100
EXECUTING 210

; DIFFERENTIAL, X = n pairs >= 1. Per pair: pulse around 1 call, GAP, pulse around 2 calls, GAP.
; The pair loop runs outside the pulses.
FUNCTION group_differential
1:      EDGE
        call    ref100                          ; [100]
        EDGE
        GAP     0
        EDGE
        CALLS   2, ref100
        EDGE
        GAP     4
        sbiw    r26, 1                          ; [2]
        brne    1b                              ; [2] taken
END_FUNCTION group_differential

; LINE m: pulse k (k = 1 … m) around k back-to-back calls, a GAP between pulses.
.macro LINE m
FUNCTION group_line_\m
        .set    k, 1
        .rept   \m
        EDGE
        CALLS   k, ref100
        EDGE
        .if     k < \m
        GAP     0
        .endif
        .set    k, k + 1
        .endr
END_FUNCTION group_line_\m
.endm
LINE 10
LINE 20

; OVERDET m: pulse k around M_k calls of init37 and N_k = k calls of ref100 (paper eq. 6–7):
; (init37, ref100) for k = 1; init37, then k × (init37, ref100) for k > 1, so M_k = k + 1.
.macro OVERDET m
FUNCTION group_overdet_\m
        .set    k, 1
        .rept   \m
        EDGE
        .if     k > 1
        call    init37                          ; [37]
        .endif
        .rept   k
        call    init37                          ; [37]
        call    ref100                          ; [100]
        .endr
        EDGE
        .if     k < \m
        GAP     0
        .endif
        .set    k, k + 1
        .endr
END_FUNCTION group_overdet_\m
.endm
OVERDET 20
