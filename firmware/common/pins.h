/*
 * pins.h — the signal pins of pintime (firmware/FORMAT.md §1) per chip, shared by C and assembler
 * (firmware/BOARDS.md: the boards, their header pins and why these).
 *
 *                    measurement (left, ch 0)   reference OC1A (right, ch 1)   INT0, INT1 (micro)
 *   ATmega2560 Mega  PA0 = D22                  PB5 = D11                      PD0 = D21, PD1 = D20
 *   ATmega328P Uno   PB2 = D10                  PB1 = D9                       PD2 = D2,  PD3 = D3
 *              Nano  (the same chip and header pins as the Uno)
 *   ATmega32U4 Leo.  PF0 = A5                   PB5 = D9                       PD0 = D3,  PD1 = D2
 *              Micro (the same chip and header pins as the Leonardo)
 *
 * The kernel's three more signals (firmware/kernel/KERNEL.md) are the next bits of the measurement port
 * (Mega: PA1 … PA3 = D23 … D25). The measurement bit is INT0's bit, on another port: micro's round trip
 * toggles INT0 with the measurement mask (micro_groups.S). sim/harness.c holds the same table per MCU.
 *
 * Assembler files use `_SFR_IO_ADDR(MEAS_PIN)` with `out`/`in`; the measurement pin is toggled only by
 * `out MEAS_PIN, r` with r = MEAS_MASK (writing a one to a PINx bit toggles the PORTx bit). Never
 * `sbi PINx, b`: simavr 1.6 then toggles every PORTx bit that reads 1 (docs/design.md §9).
 */
#ifndef PINTIME_PINS_H
#define PINTIME_PINS_H

#include <avr/io.h>

#if defined(__AVR_ATmega2560__)
#define MEAS_PIN   PINA       /* write MEAS_MASK here to toggle the measurement pin */
#define MEAS_PORT  PORTA
#define MEAS_DDR   DDRA
#define MEAS_BIT   0          /* PA0, Arduino D22 */
#define MEAS_PIN_IO 0x00      /* _SFR_IO_ADDR(MEAS_PIN) as a plain number (pintime.h) */
#define REF_DDR    DDRB
#define REF_BIT    5          /* PB5 = OC1A, Arduino D11 */
#define INT0_BIT   PD0
#define INT1_BIT   PD1
#define MCU_NAME   "atmega2560"  /* simavr's name (AVR_MCU) */
#elif defined(__AVR_ATmega328P__)
#define MEAS_PIN   PINB
#define MEAS_PORT  PORTB
#define MEAS_DDR   DDRB
#define MEAS_BIT   2          /* PB2, Arduino D10 */
#define MEAS_PIN_IO 0x03
#define REF_DDR    DDRB
#define REF_BIT    1          /* PB1 = OC1A, Arduino D9 */
#define INT0_BIT   PD2
#define INT1_BIT   PD3
#define MCU_NAME   "atmega328p"
#elif defined(__AVR_ATmega32U4__)
#define MEAS_PIN   PINF
#define MEAS_PORT  PORTF
#define MEAS_DDR   DDRF
#define MEAS_BIT   0          /* PF0, Arduino A5 */
#define MEAS_PIN_IO 0x0F
#define REF_DDR    DDRB
#define REF_BIT    5          /* PB5 = OC1A, Arduino D9 */
#define INT0_BIT   PD0
#define INT1_BIT   PD1
#define MCU_NAME   "atmega32u4"
#else
#error "pintime: no pin map for this chip (ATmega2560, ATmega328P, ATmega32U4: firmware/BOARDS.md)"
#endif

#define MEAS_MASK  (1 << MEAS_BIT)
#define REF_MASK   (1 << REF_BIT)

#endif
