// Table1 — the paper's Table 1 (Moreno & Fischmeister): a 100-cycle routine measured by direct, executing,
// differential, line-fitting and overdetermined measurements (about 40 s at 20 repetitions). Wiring as in
// MeasureMyFunction; record both channels, press reset, then `pintime analyze capture.wav`: every
// technique's estimate of the routine, 100 cycles = 6.25 us at 16 MHz.
#include <pintime.h>

void setup()
{
  pintime_table1();
}

void loop()
{
}
