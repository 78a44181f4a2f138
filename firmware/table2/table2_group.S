; table2_group.S — GROUP of a TABLE2 frame (FORMAT.md §4, TABLE2.md §3): one pulse around one call of
; adpcm_coder per round of table2_rounds[], a GAP between pulses. Run by pin_frame (pinwave.S) with X = count
; (1 … BATCH_ROUNDS); it loads the first call's arguments before its first edge, TABLE2_GROUP_LEAD cycles
; after its start (frame_table2 shortens the SETTLE by as much). Every instruction outside the pulses takes
; the same time for every round, so each GAP is exact. Leaves the measurement pin low; interrupts stay off.
;
; The pulse is adpcm_pulse (adpcm_pulse.S): from its CALL, 5 + 3 cycles (push r28, ldi) to the rising edge;
; after the start of the falling `out`, 1 + 7 cycles (the `out`, pop r28, ret) to the return here.

#include "pins.h"
#include "table2.h"
#include "timing.h"

#define GAP_CYCLES US_CYCLES(GAP_US)
; From the start of a falling `out` to the start of the next rising one: 8 (end of adpcm_pulse)
; + 7 (next round) + 2 (ldi) + (n + 18) (delay_exact) + 2 (rjmp) + 11 (arguments) + 8 (start of adpcm_pulse).
#define GAP_OVERHEAD 56
#if GAP_CYCLES - GAP_OVERHEAD < DELAY_EXACT_MIN
#error "GAP too short for the round loop"
#endif
#if ROUND_BYTES > 63
#error "struct round too large for adiw"
#endif

        .section .text.group_table2, "ax", @progbits
        .global group_table2
        .type   group_table2, @function
group_table2:                                   ; lead: 12 + 3 + 11 + 8 = 34 = TABLE2_GROUP_LEAD
        push    r14                             ; [2] call-saved registers used here
        push    r15                             ; [2]
        push    r16                             ; [2]
        push    r17                             ; [2]
        push    r28                             ; [2]
        push    r29                             ; [2]
        movw    r14, r26                        ; [1] rounds left (adpcm_coder preserves r14…r17, r28, r29)
        ldi     r28, lo8(table2_rounds)         ; [1] Y = this round
        ldi     r29, hi8(table2_rounds)         ; [1]
1:      movw    r24, r28                        ; [1] in = the round's samples
        ldi     r22, lo8(table2_out)            ; [1] out
        ldi     r23, hi8(table2_out)            ; [1]
        ldd     r18, Y + ROUND_LEN_OFFSET       ; [2] len, int32_t r21:r18
        ldi     r19, 0                          ; [1]
        ldi     r20, 0                          ; [1]
        ldi     r21, 0                          ; [1]
        movw    r16, r28                        ; [1] state = &round->state
        subi    r16, lo8(-ROUND_STATE_OFFSET)   ; [1]
        sbci    r17, hi8(-ROUND_STATE_OFFSET)   ; [1]
        call    adpcm_pulse                     ; [5 + 3] to the rising edge; the pulse; [8] from the falling edge
        adiw    r28, ROUND_BYTES                ; [2] next round
        movw    r24, r14                        ; [1]
        sbiw    r24, 1                          ; [2]
        movw    r14, r24                        ; [1]
        breq    2f                              ; [1] not taken (taken only after the last pulse)
        ldi     r24, lo8(GAP_CYCLES - GAP_OVERHEAD)     ; [1]
        ldi     r25, hi8(GAP_CYCLES - GAP_OVERHEAD)     ; [1]
        call    delay_exact                     ; [n + 18]
        rjmp    1b                              ; [2]
2:      pop     r29                             ; [2]
        pop     r28                             ; [2]
        pop     r17                             ; [2]
        pop     r16                             ; [2]
        pop     r15                             ; [2]
        pop     r14                             ; [2]
        ret                                     ; [5]
        .size   group_table2, . - group_table2
