; adpcm_pulse.S — one call of adpcm_coder inside one measurement pulse (TABLE2.md §3).
;
; void adpcm_pulse(const int16_t *in, uint8_t *out, int32_t len, struct adpcm_state *state);
; Same arguments as adpcm_coder, already in their registers (r24:25, r22:23, r18…r21, r16:17), so nothing
; but the call runs between the edges: pulse width = 1 (rising out) + 5 (call) + adpcm_coder's cycles,
; its RET included. r28 holds the toggle mask; adpcm_coder preserves it (call-saved). The measurement pin
; must be low and an output; interrupts off.

#include "pins.h"

        .section .text.adpcm_pulse, "ax", @progbits
        .global adpcm_pulse
        .type   adpcm_pulse, @function
adpcm_pulse:
        push    r28                             ; [2]
        ldi     r28, MEAS_MASK                  ; [1]
        out     _SFR_IO_ADDR(MEAS_PIN), r28     ; [1] rising edge
        call    adpcm_coder                     ; [5 + adpcm_coder]
        out     _SFR_IO_ADDR(MEAS_PIN), r28     ; [1] falling edge: its start ends the pulse
        pop     r28                             ; [2]
        ret                                     ; [5]
        .size   adpcm_pulse, . - adpcm_pulse
