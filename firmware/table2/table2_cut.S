; table2_cut.S — one run of a *cut copy* of adpcm_coder (TABLE2.md §6, FORMAT.md §4 kind 10).
;
; uint8_t table2_cut_pulse(const int16_t *in, uint8_t *out, int32_t len, struct adpcm_state *state,
;                          uint16_t copy, uint8_t mask);
; `copy` is the word address of one copy of adpcm_coder's machine code (table2_cuts.S, generated at build time
; from the linked ELF by `pintime cfg --cut-copies`) in which the first word of one block, the cut block, is
; `rjmp` to a `jmp table2_cut_exit` after the copy. The copy runs exactly as adpcm_coder until execution first
; reaches the cut block; there it stops. With mask = MEAS_MASK the run is one pulse of the measurement pin:
;
;     out  MEAS_PIN, r28   ; rising edge                           [1]
;     icall                ; the copy                              [4 + the blocks run before the cut]
;     rjmp, jmp            ; the patched word, the copy's stub     [2 + 3]
;     ldi, ldi, call delay_exact  ; the hold                       [2 + CUT_HOLD_CYCLES]
;     lds  r24, mask       ;                                       [2]
;     out  MEAS_PIN, r24   ; falling edge at its start
;
; so its width is the cycles of the exits taken before the first arrival at the cut block + ε_cut,
; ε_cut = 14 + CUT_HOLD_CYCLES on the simulator (the cut at BB0 runs no block). The hold (CUT_HOLD_US,
; table2.h) keeps every cut pulse at least as long as the shortest whole calls, where the edge locator has no
; width-dependent bias (TABLE2.md §6). If the input never reaches the cut block, the copy returns
; as adpcm_coder does and the falling edge follows its RET (width = its cycles + 5): the analyzer tells the
; two apart from the visits. With mask = 0 (a dry run, outside every frame) the pin does not move.
; Returns 1 if the cut block was reached, else 0. Interrupts must be off (SP is rewritten).

#include "pins.h"
#include "table2.h"
#include "timing.h"

#define CUT_HOLD_CYCLES US_CYCLES(CUT_HOLD_US)
#if CUT_HOLD_CYCLES - DELAY_EXACT_OVERHEAD < DELAY_EXACT_MIN || CUT_HOLD_CYCLES > 65535
#error "CUT_HOLD_US out of delay_exact's range"
#endif

        .section .bss.table2_cut, "aw", @nobits
table2_cut_sp:   .space 2                       ; SP after the 18 pushes below
table2_cut_mask: .space 1

        .section .text.table2_cut, "ax", @progbits
        .global table2_cut_pulse
        .type   table2_cut_pulse, @function
table2_cut_pulse:
        push    r2                              ; [2] every call-saved register: a cut copy stops before
        push    r3                              ; [2] its epilogue restores them
        push    r4                              ; [2]
        push    r5                              ; [2]
        push    r6                              ; [2]
        push    r7                              ; [2]
        push    r8                              ; [2]
        push    r9                              ; [2]
        push    r10                             ; [2]
        push    r11                             ; [2]
        push    r12                             ; [2]
        push    r13                             ; [2]
        push    r14                             ; [2]
        push    r15                             ; [2]
        push    r16                             ; [2]
        push    r17                             ; [2]
        push    r28                             ; [2]
        push    r29                             ; [2]
        in      r26, _SFR_IO_ADDR(SPL)          ; [1]
        sts     table2_cut_sp, r26              ; [2]
        in      r26, _SFR_IO_ADDR(SPH)          ; [1]
        sts     table2_cut_sp + 1, r26          ; [2]
        sts     table2_cut_mask, r12            ; [2]
        movw    r30, r14                        ; [1] Z = the copy
        mov     r28, r12                        ; [1] mask (the copy saves and restores r28)
        out     _SFR_IO_ADDR(MEAS_PIN), r28     ; [1] rising edge
        icall                                   ; [4] + the copy
        out     _SFR_IO_ADDR(MEAS_PIN), r28     ; [1] falling edge: the copy returned without reaching the cut
        ldi     r24, 0                          ; [1]
        rjmp    1f                              ; [2]

        .global table2_cut_exit
        .type   table2_cut_exit, @function
table2_cut_exit:                                ; [2 + 3] from the patched word and the copy's stub
        ldi     r24, lo8(CUT_HOLD_CYCLES - DELAY_EXACT_OVERHEAD)        ; [1]
        ldi     r25, hi8(CUT_HOLD_CYCLES - DELAY_EXACT_OVERHEAD)        ; [1]
        call    delay_exact                     ; [CUT_HOLD_CYCLES] (on the copy's stack)
        lds     r24, table2_cut_mask            ; [2]
        out     _SFR_IO_ADDR(MEAS_PIN), r24     ; [1] falling edge
        lds     r26, table2_cut_sp              ; [2] drop the copy's frame: back to the SP after the pushes
        out     _SFR_IO_ADDR(SPL), r26          ; [1]
        lds     r26, table2_cut_sp + 1          ; [2]
        out     _SFR_IO_ADDR(SPH), r26          ; [1]
        ldi     r24, 1                          ; [1]
1:      clr     r1                              ; [1] the copy may stop with a product in r1
        pop     r29                             ; [2]
        pop     r28                             ; [2]
        pop     r17                             ; [2]
        pop     r16                             ; [2]
        pop     r15                             ; [2]
        pop     r14                             ; [2]
        pop     r13                             ; [2]
        pop     r12                             ; [2]
        pop     r11                             ; [2]
        pop     r10                             ; [2]
        pop     r9                              ; [2]
        pop     r8                              ; [2]
        pop     r7                              ; [2]
        pop     r6                              ; [2]
        pop     r5                              ; [2]
        pop     r4                              ; [2]
        pop     r3                              ; [2]
        pop     r2                              ; [2]
        ret                                     ; [5]
        .size   table2_cut_pulse, . - table2_cut_pulse
