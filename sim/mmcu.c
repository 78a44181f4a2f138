/*
 * mmcu.c — simavr's .mmcu section (the MCU and the clock) for an ELF built without pintime's firmware
 * sources, e.g. an Arduino sketch (tools/arduino_sketch.sh): linked at 0x910000 it never reaches the chip
 * (the HEX has only .text and .data). MCU_NAME and F_CPU come from the command line.
 */
#include "avr_mcu_section.h"

AVR_MCU(F_CPU, MCU_NAME);
