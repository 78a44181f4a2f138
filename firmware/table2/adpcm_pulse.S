; adpcm_pulse.S — one call of adpcm_coder inside one measurement pulse (TABLE2.md §3).
;
; void adpcm_pulse(const int16_t *in, uint8_t *out, int32_t len, struct adpcm_state *state);
; Same arguments as adpcm_coder, already in their registers (r24:25, r22:23, r18…r21, r16:17), so nothing
; but the call runs between the edges: pulse width = 1 (rising out) + 5 (call) + adpcm_coder's cycles,
; its RET included (on a 2-byte PC: 4 + its cycles, its RET 4). PC_PAD before and after the pulse keeps the
; cycles outside it, which table2_group.S counts, the same on every chip. r28 holds the toggle mask; adpcm_coder preserves it (call-saved). The measurement pin
; must be low and an output; interrupts off.

#include "pins.h"
#include "timing.h"

        .section .text.adpcm_pulse, "ax", @progbits
        .global adpcm_pulse
        .type   adpcm_pulse, @function
adpcm_pulse:
        push    r28                             ; [2]
        ldi     r28, MEAS_MASK                  ; [1]
        PC_PAD  1                               ; [1] on a 2-byte PC, [0] on the Mega: the CALL of adpcm_pulse
        out     _SFR_IO_ADDR(MEAS_PIN), r28     ; [1] rising edge
        call    adpcm_coder                     ; [5 + adpcm_coder]
        out     _SFR_IO_ADDR(MEAS_PIN), r28     ; [1] falling edge: its start ends the pulse
        PC_PAD  1                               ; [1] on a 2-byte PC, [0] on the Mega: the RET of adpcm_pulse
        pop     r28                             ; [2]
        ret                                     ; [5]
        .size   adpcm_pulse, . - adpcm_pulse
