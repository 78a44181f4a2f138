#!/bin/sh
# Start a Leonardo's or Micro's bootloader (Caterina, avrdude -c avr109) before `make flash`: open its USB
# serial port at 1200 baud and close it (the "1200-baud touch" the Arduino core answers by resetting), then
# wait up to 8 s for the bootloader's port. A pintime firmware has no USB serial: then press the reset
# button when asked (Caterina waits 8 s for avrdude after a reset).
set -eu
port=$1
if [ -e "$port" ] && stty -F "$port" 1200 2>/dev/null; then
  echo "flash: 1200-baud touch on $port; waiting for the bootloader"
  sleep 1
else
  echo "flash: no USB serial at $port (a pintime firmware has none): press the board's reset button now"
fi
i=0
until [ -e "$port" ]; do
  i=$((i + 1))
  [ "$i" -le 80 ] || { echo "flash: no bootloader port $port after 8 s" >&2; exit 1; }
  sleep 0.1
done
sleep 0.5
