// MeasureMyFunction — measure your own functions to the cycle (docs/boards.md, "Measure your function on
// an Uno"). Wire the measurement pin to the left and the reference pin to the right line input, each
// through 47 kOhm in series and 1 kOhm to ground at the jack, GND to the sleeve:
//   Uno, Nano: D10 (measurement), D9 (reference)   Leonardo, Micro: A5, D9   Mega 2560: D22, D11
// Upload, start recording both channels, press the board's reset button, and when the run is over
// (about 10 s) analyse the WAV: `pintime analyze capture.wav`.
#include <pintime.h>

// The functions to measure: void name(void), not static. These two take the same cycles on every call.
volatile uint16_t mac_acc;
volatile uint16_t mac_a = 12345;
volatile uint16_t mac_b = 54321;

void mac16(void)
{
  mac_acc += mac_a * mac_b;  // 16-bit multiply-accumulate
  mac_a++;
}

volatile uint8_t crc8_value;
volatile uint8_t crc8_byte;

void crc8_step(void)
{
  uint8_t crc = crc8_value ^ crc8_byte++;
  for (uint8_t bit = 0; bit < 8; bit++)
    crc = (uint8_t)(crc << 1) ^ (0x07 & -(crc >> 7));  // CRC-8, no branch
  crc8_value = crc;
}

PINTIME_FUNCTIONS(mac16, crc8_step);  // up to 8 functions

void setup()
{
  pintime_measure();  // one whole run (interrupts off meanwhile, millis() stands still)
}

void loop()
{
}
