#!/bin/sh
# Build an Arduino sketch against the real Arduino AVR core (Debian's arduino-core-avr) and a library folder,
# as the Arduino IDE does (its platform.txt flags: -Os, -flto, sections, --gc-sections), with avr-gcc
# directly: Debian's avr-gcc 5.4 has no DECIMAL_DIG in C++11 mode, which the core's WString.cpp needs, so
# it gets the compiler's own value (__DECIMAL_DIG__, what float.h gives in newer GCCs); nothing else
# differs from the IDE's build. Links the simavr .mmcu section too (sim/mmcu.c: no byte reaches the chip).
#
#   tools/arduino_sketch.sh BOARD SKETCH.ino LIBRARY_DIR OUT_DIR
# BOARD: uno, nano, leonardo, mega. Writes OUT_DIR/<sketch, lower case>.elf and .hex.
set -eu
board=$1 sketch=$2 library=$3 out=$4
core=${ARDUINO_AVR:-/usr/share/arduino/hardware/arduino/avr}
[ -d "$core/cores/arduino" ] || { echo "arduino_sketch: no Arduino AVR core in $core (apt-get install arduino-core-avr)" >&2; exit 2; }
case $board in
  uno) mcu=atmega328p variant=standard define=ARDUINO_AVR_UNO usb="" ;;
  nano) mcu=atmega328p variant=eightanaloginputs define=ARDUINO_AVR_NANO usb="" ;;
  leonardo) mcu=atmega32u4 variant=leonardo define=ARDUINO_AVR_LEONARDO
    usb="-DUSB_VID=0x2341 -DUSB_PID=0x8036 '-DUSB_MANUFACTURER=\"Unknown\"' '-DUSB_PRODUCT=\"Arduino Leonardo\"'" ;;
  mega) mcu=atmega2560 variant=mega define=ARDUINO_AVR_MEGA2560 usb="" ;;
  *) echo "arduino_sketch: unknown board '$board' (uno nano leonardo mega)" >&2; exit 2 ;;
esac
name=$(basename "$sketch" .ino | tr A-Z a-z)  # the harness names the run after it: table1 as the firmware's
obj=$out/obj
rm -rf "$obj" && mkdir -p "$obj/core" "$obj/lib"
common="-mmcu=$mcu -DF_CPU=16000000L -DARDUINO=10807 -D$define -DARDUINO_ARCH_AVR $usb \
  -I$core/cores/arduino -I$core/variants/$variant -I$library/src"
cflags="-c -g -Os -w -std=gnu11 -ffunction-sections -fdata-sections -MMD -flto -fno-fat-lto-objects"
cxxflags="-c -g -Os -w -std=gnu++11 -fpermissive -fno-exceptions -ffunction-sections -fdata-sections \
  -fno-threadsafe-statics -Wno-error=narrowing -MMD -flto"
sflags="-c -g -x assembler-with-cpp -flto -MMD"
compile() {  # source object
  case $1 in
    *.c) eval avr-gcc $cflags $common -o "$2" "$1" ;;
    *.cpp) eval avr-g++ $cxxflags $common ${3:-} -o "$2" "$1" ;;
    *.S) eval avr-gcc $sflags $common -o "$2" "$1" ;;
  esac
}
for f in "$core"/cores/arduino/*.c "$core"/cores/arduino/*.cpp "$core"/cores/arduino/*.S; do
  extra=""
  [ "$(basename "$f")" = WString.cpp ] && extra="-DDECIMAL_DIG=__DECIMAL_DIG__"
  compile "$f" "$obj/core/$(basename "$f").o" "$extra"
done
avr-gcc-ar rcs "$obj/core.a" "$obj"/core/*.o
for f in "$library"/src/*.c "$library"/src/*.cpp "$library"/src/*.S; do
  [ -e "$f" ] && compile "$f" "$obj/lib/$(basename "$f").o"
done
# the sketch as the IDE preprocesses it: Arduino.h first (the examples need no generated prototypes)
{ echo '#include <Arduino.h>'; echo "#line 1 \"$sketch\""; cat "$sketch"; } > "$obj/$name.ino.cpp"
compile "$obj/$name.ino.cpp" "$obj/$name.ino.cpp.o"
avr-gcc -mmcu=$mcu -DF_CPU=16000000 -DMCU_NAME="\"$mcu\"" -c -isystem "$(pkg-config --variable=includedir simavr)/simavr/avr" \
  -o "$obj/mmcu.o" "$(dirname "$0")/../sim/mmcu.c"
avr-gcc -w -Os -g -flto -fuse-linker-plugin -Wl,--gc-sections -mmcu=$mcu \
  -Wl,--undefined=_mmcu,--section-start=.mmcu=0x910000 -o "$out/$name.elf" \
  "$obj/$name.ino.cpp.o" "$obj"/lib/*.o "$obj/mmcu.o" "$obj/core.a" -lm
avr-objcopy -O ihex -j .text -j .data "$out/$name.elf" "$out/$name.hex"
