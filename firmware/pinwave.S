; pinwave.S — cycle-exact waits and pin waveforms for frame headers and the calibration train
; (FORMAT.md §3, §4 CAL). Every instruction carries its cycle count `; [n]` (ATmega2560, 22-bit PC:
; CALL 5, RET 5). Only r18, r20-r27, r30, r31 are used (all call-clobbered in the avr-gcc ABI).

#include "pins.h"
#include "timing.h"

        .section .text.pinwave, "ax", @progbits

; void delay_exact(uint16_t n)   r25:r24 = n >= DELAY_EXACT_MIN (4)
; Total n + DELAY_EXACT_OVERHEAD (18) cycles including CALL and RET, for b0 = bit 0 of n, b1 = bit 1,
; q = n >> 2: 5 (CALL) + (2 + b0) + (3 + 2·b1) + 4 + (4·q − 1) + 5 (RET) = 18 + n.
; Clobbers r24, r25 and SREG. No skip precedes an adiw/sbiw (simavr skip bug, DESIGN.md §4).
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
        ret                     ; [5]
        .size   delay_exact, . - delay_exact

; void pin_waveform(const uint16_t *cycles, uint16_t n)   r25:r24 = cycles, r23:r22 = n >= 1
; Toggle i + 1 starts exactly cycles[i] cycles after toggle i (cycles[i] >= PIN_WAVEFORM_MIN):
; one iteration = 1 + 2 + 2 + 2 + (cycles[i] − 29 + 18) + 2 + 2 = cycles[i].
        .global pin_waveform
        .type   pin_waveform, @function
pin_waveform:
        movw    r26, r24        ; [1] X = cycles
        movw    r30, r22        ; [1] Z = toggles left
        ldi     r18, MEAS_MASK  ; [1]
1:      out     _SFR_IO_ADDR(MEAS_PIN), r18     ; [1] edge
        ld      r24, X+         ; [2]
        ld      r25, X+         ; [2]
        sbiw    r24, 29         ; [2] this iteration's own cycles
        call    delay_exact     ; [cycles[i] − 29 + 18]
        sbiw    r30, 1          ; [2]
        brne    1b              ; [2] taken (last time [1])
        ret                     ; [5]
        .size   pin_waveform, . - pin_waveform

; void pin_train(uint16_t period, uint16_t count)   r25:r24 = period >= PIN_TRAIN_MIN, r23:r22 = count >= 1
; Toggles exactly period cycles apart: one iteration = 1 + 1 + (period − 24 + 18) + 2 + 2 = period.
        .global pin_train
        .type   pin_train, @function
pin_train:
        movw    r20, r24        ; [1]
        subi    r20, lo8(24)    ; [1] the iteration's own cycles
        sbci    r21, hi8(24)    ; [1]
        movw    r30, r22        ; [1] Z = toggles left
        ldi     r18, MEAS_MASK  ; [1]
1:      out     _SFR_IO_ADDR(MEAS_PIN), r18     ; [1] edge
        movw    r24, r20        ; [1]
        call    delay_exact     ; [period − 24 + 18]
        sbiw    r30, 1          ; [2]
        brne    1b              ; [2] taken (last time [1])
        ret                     ; [5]
        .size   pin_train, . - pin_train
