/*
 * pins.h — the two signal pins of pintime (firmware/FORMAT.md §1), shared by C and assembler.
 *
 * Measurement pin: PA0 = Arduino Mega 2560 digital 22 → left audio channel (channel 0).
 * Clock reference: PB5 = OC1A = Arduino Mega 2560 digital 11 → right audio channel (channel 1).
 *
 * Assembler files use `_SFR_IO_ADDR(MEAS_PIN)` with `out`/`in`; the measurement pin is toggled only by
 * `out MEAS_PIN, r` with r = MEAS_MASK (writing a one to a PINx bit toggles the PORTx bit). Never
 * `sbi PINx, b`: simavr 1.6 then toggles every PORTx bit that reads 1 (docs/design.md §9).
 */
#ifndef PINTIME_PINS_H
#define PINTIME_PINS_H

#include <avr/io.h>

#define MEAS_PIN   PINA       /* write MEAS_MASK here to toggle the measurement pin */
#define MEAS_PORT  PORTA
#define MEAS_DDR   DDRA
#define MEAS_BIT   0          /* PA0, Arduino D22 */
#define MEAS_MASK  (1 << MEAS_BIT)

#define REF_DDR    DDRB
#define REF_BIT    5          /* PB5 = OC1A, Arduino D11 */
#define REF_MASK   (1 << REF_BIT)

#endif
