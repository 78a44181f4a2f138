; ref100.S — the reference routine of Table 1 and the initialization routine of paper §5 (FORMAT.md §5).
; Every instruction carries its cycle count `; [n]` (ATmega2560, 22-bit PC: CALL 5, RET 5); on a 2-byte PC
; (CALL 4, RET 4) PC_PAD (timing.h) adds the two cycles, so both routines take the same on every chip.
; Both use only r24 and SREG, so the measured groups (groups.S) keep r18 and X across calls.

#include "timing.h"

        .section .text.ref100, "ax", @progbits

; ref100: exactly 100 cycles including its CALL and RET.
; 5 (CALL) + 1 + 29 (dec) + 28·2 + 1 (brne) + 3 (nop) + 5 (RET) = 100.
        .global ref100
        .type   ref100, @function
ref100:                         ; CALL [5]
        ldi     r24, 29         ; [1]
1:      dec     r24             ; [1] × 29
        brne    1b              ; [2] × 28 + [1]
        nop                     ; [1]
        nop                     ; [1]
        nop                     ; [1]
        PC_PAD  2               ; [2] on a 2-byte PC, [0] on the Mega: the CALL and the RET
        ret                     ; [5]              total 100
        .size   ref100, . - ref100

; init37 (`init` in FORMAT.md): exactly 37 cycles including its CALL and RET.
; 5 (CALL) + 1 + 9 (dec) + 8·2 + 1 (brne) + 5 (RET) = 37.
        .global init37
        .type   init37, @function
init37:                         ; CALL [5]
        ldi     r24, 9          ; [1]
1:      dec     r24             ; [1] × 9
        brne    1b              ; [2] × 8 + [1]
        PC_PAD  2               ; [2] on a 2-byte PC, [0] on the Mega: the CALL and the RET
        ret                     ; [5]              total 37
        .size   init37, . - init37
