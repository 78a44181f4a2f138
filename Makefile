# pintime — one Makefile for firmware, simulator harness, analyzer, tests and benchmarks.
# `make reproduce` is the main job, `make test` the tests; every target installs what it needs first.

# The board (docs/boards.md, firmware/BOARDS.md): its chip, the programs that fit it, its bootloader. The
# default board's files go to build/, another board's to build/<board>/ (or BUILD=…).
BOARDS   := uno nano leonardo mega
BOARD    ?= mega
ifeq ($(filter $(BOARD),$(BOARDS)),)
$(error unknown BOARD '$(BOARD)': one of $(BOARDS))
endif
MCU_uno := atmega328p
MCU_nano := atmega328p
MCU_leonardo := atmega32u4
MCU_mega := atmega2560
MCU      ?= $(MCU_$(BOARD))
F_CPU    ?= 1000000
REPS     ?= 100
MEASUREMENTS ?= 100
ROUNDS   ?= 1000
# kernel (firmware/kernel/KERNEL.md): repetitions of the five configurations, ticks per configuration
KERNEL_REPS  ?= 20
KERNEL_TICKS ?= 20
CUT_ROUNDS ?= 5
BUILD    ?= $(if $(filter mega,$(BOARD)),build,build/$(BOARD))
HARNESS  := $(BUILD)/sim/harness
VENV     := .venv
PY       := $(VENV)/bin/python
PINTIME  := $(VENV)/bin/pintime
# the kernel needs a second 16-bit timer and the 3-byte PC its context layout assumes (firmware/BOARDS.md)
PROGRAMS := table1 table2 user_example micro $(if $(filter mega,$(BOARD)),kernel)
# `make USER_SRC=mine.c user`: your own functions measured by line fitting (firmware/user/pintime.h)
USER_SRC ?=
USER_REPS ?= 20
# (16 on the 32 KB chips: micro's unrolled groups at 20 are 37 KB)
USER_M   ?= $(if $(filter mega,$(BOARD)),20,16)

# One BLAS/OpenMP thread per process unless set otherwise: the tests and benchmarks run one job per core,
# and a BLAS thread pool per job on a busy machine makes small factorizations far slower (docs/design.md).
export OPENBLAS_NUM_THREADS ?= 1
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: all deps firmware sim flash test bench lint clean FORCE

all: sim

deps:
	@sh tools/deps.sh

# --- firmware (avr-gcc) ----------------------------------------------------------------------------
# Sources per program, one folder each under firmware/; FW_COMMON (firmware/common/) goes into every program.
# A source includes from its own folder and from common/. Objects depend on a flags stamp, so changing
# F_CPU, REPS, MEASUREMENTS, ROUNDS or the git revision rebuilds, and nothing rebuilds when nothing changed.
# adpcm.c gets the flags tests/adpcm_build.py builds it with (-Os, TABLE2.md §1).
FW_DIR      := firmware
FW_BUILD    := $(BUILD)/firmware
FW_COMMON   := $(addprefix common/,clock.c pinwave.S)  # and frames.c, built per program with its revision
table1_SRCS := $(addprefix table1/,ref100.S table1.c groups.S)
table2_SRCS := $(addprefix table2/,table2.c table2_group.S adpcm.c adpcm_input.c adpcm_pulse.S table2_cut.S)
user_example_SRCS := $(addprefix user/,user_example.c pintime_user.c)
kernel_SRCS := $(addprefix kernel/,kernel.c switch.S)
user_SRCS   := user.c user/pintime_user.c
micro_SRCS  := $(addprefix micro/,micro.c micro_groups.S) user/pintime_user.c
# A program's revision, sent in its RUN frame: the CRC-32 (cksum) of its sources, those of common/ and the
# headers beside them, so that two programs (two users' functions) never share one, and a change to the
# analyzer or to documents keeps the revision (and captures valid).
USER_FILE    = $(or $(USER_SRC),$(shell cat $(FW_BUILD)/user_src.txt 2>/dev/null))
fw_sources   = $(sort $(abspath $(wildcard $(FW_DIR)/common/*.[chS] $(addsuffix *.[chS],$(sort $(dir \
               $(addprefix $(FW_DIR)/,$($(1)_SRCS)))))) $(if $(filter user,$(1)),$(USER_FILE))))
fw_revision  = $(shell cat $(call fw_sources,$(1)) | cksum | { read crc _; printf '0x%08x' "$$crc"; })
# simavr's avr_mcu_section.h (the .mmcu section); evaluated after `deps` has installed libsimavr-dev.
SIMAVR_AVR_INC = $(patsubst -I%,%,$(firstword $(shell pkg-config --cflags-only-I simavr)))/avr
FW_CFLAGS   = -mmcu=$(MCU) -DF_CPU=$(F_CPU) -DREPS=$(REPS) -DMEASUREMENTS=$(MEASUREMENTS) -DROUNDS=$(ROUNDS) \
              -DCUT_ROUNDS=$(CUT_ROUNDS) -DPINTIME_REPS=$(USER_REPS) -DPINTIME_M=$(USER_M) \
              -DKERNEL_REPS=$(KERNEL_REPS) -DKERNEL_TICKS=$(KERNEL_TICKS) \
              -Os -g -std=gnu11 -Wall -Wextra -Werror -I$(FW_DIR)/common -isystem $(SIMAVR_AVR_INC)
# docs/design.md §9: without the .mmcu section at 0x910000 simavr 1.6 loads .data at the wrong address.
FW_LDFLAGS  := -mmcu=$(MCU) -Wl,--undefined=_mmcu,--section-start=.mmcu=0x910000
FW_ELFS     := $(PROGRAMS:%=$(FW_BUILD)/%.elf)
fw_objs      = $(patsubst %,$(FW_BUILD)/obj/%.o,$(basename $(FW_COMMON) $($(1)_SRCS))) \
               $(FW_BUILD)/obj/revision/$(1)/frames.o

firmware: deps $(FW_ELFS) $(FW_ELFS:.elf=.hex) $(FW_ELFS:.elf=.lss)

$(FW_BUILD)/flags.txt: FORCE | deps
	@mkdir -p $(@D)
	@echo '$(FW_CFLAGS) $(FW_LDFLAGS)' | cmp -s - $@ || echo '$(FW_CFLAGS) $(FW_LDFLAGS)' > $@

$(FW_BUILD)/obj/%.o: $(FW_DIR)/%.c $(FW_BUILD)/flags.txt | deps
	@mkdir -p $(@D)
	avr-gcc $(FW_CFLAGS) -MMD -MP -c -o $@ $<

$(FW_BUILD)/obj/%.o: $(FW_DIR)/%.S $(FW_BUILD)/flags.txt | deps
	@mkdir -p $(@D)
	avr-gcc $(FW_CFLAGS) -MMD -MP -c -o $@ $<

# program `user` = USER_SRC + the pintime.h runtime (firmware/user/). The stamp remembers USER_SRC, so later
# commands (`make flash PROGRAM=user`) need not repeat it, and naming another file rebuilds.
.PHONY: user
user: $(FW_BUILD)/user.elf $(FW_BUILD)/user.hex $(FW_BUILD)/user.lss

$(FW_BUILD)/user_src.txt: FORCE | deps
	@mkdir -p $(@D)
	@test -n '$(USER_SRC)' || test -f $@ || { echo 'which file? make USER_SRC=path/to/mine.c user' >&2; exit 1; }
	@test -z '$(USER_SRC)' || echo '$(abspath $(USER_SRC))' | cmp -s - $@ || echo '$(abspath $(USER_SRC))' > $@

$(FW_BUILD)/obj/user.o: $(USER_SRC) $(FW_BUILD)/user_src.txt $(FW_BUILD)/flags.txt | deps
	@mkdir -p $(@D)
	avr-gcc $(FW_CFLAGS) -I$(FW_DIR)/user -MMD -MP -c -o $@ $$(cat $(FW_BUILD)/user_src.txt)

.SECONDEXPANSION:
$(FW_BUILD)/obj/revision/%/frames.o: $(FW_DIR)/common/frames.c $$(call fw_sources,$$*) $(FW_BUILD)/flags.txt \
                                     | deps
	@mkdir -p $(@D)
	avr-gcc $(FW_CFLAGS) -DFW_REVISION=$(call fw_revision,$*) -MMD -MP -c -o $@ $<

$(FW_BUILD)/%.elf: $$(call fw_objs,$$*)
	avr-gcc $(FW_LDFLAGS) -o $@ $^
	avr-size --format=avr --mcu=$(MCU) $@

# table2 links twice (firmware/table2/TABLE2.md §6): first with no cut copies (table2_nocuts.S), then with one
# copy of that link's adpcm_coder per block (table2_cuts.S, generated), last in .text so nothing before them
# moves; `pintime cfg --check-cuts` verifies the copies and the function byte for byte or the ELF is removed.
$(FW_BUILD)/table2.pass1.elf: $(call fw_objs,table2) $(FW_BUILD)/obj/table2/table2_nocuts.o
	avr-gcc $(FW_LDFLAGS) -o $@ $^

$(FW_BUILD)/table2_cuts.S: $(FW_BUILD)/table2.pass1.elf | deps
	$(PINTIME) cfg $< --cut-copies $@

$(FW_BUILD)/obj/table2_cuts.o: $(FW_BUILD)/table2_cuts.S
	avr-gcc $(FW_CFLAGS) -I$(FW_DIR)/table2 -c -o $@ $<

$(FW_BUILD)/table2.elf: $(call fw_objs,table2) $(FW_BUILD)/obj/table2_cuts.o $(FW_BUILD)/table2.pass1.elf
	avr-gcc $(FW_LDFLAGS) -o $@ $(filter %.o,$^)
	$(PINTIME) cfg $@ --check-cuts $(FW_BUILD)/table2.pass1.elf || { rm -f $@; exit 1; }
	avr-size --format=avr --mcu=$(MCU) $@

# The chip gets only code and initialised data (no .mmcu section).
$(FW_BUILD)/%.hex: $(FW_BUILD)/%.elf
	avr-objcopy -O ihex -j .text -j .data $< $@

$(FW_BUILD)/%.lss: $(FW_BUILD)/%.elf
	avr-objdump -d -S $< > $@

.PRECIOUS: $(FW_BUILD)/obj/%.o $(FW_BUILD)/obj/revision/%/frames.o
-include $(wildcard $(FW_BUILD)/obj/*.d $(FW_BUILD)/obj/*/*.d $(FW_BUILD)/obj/revision/*/*.d)

# Program a real board through the bootloader it ships with: make flash [BOARD=uno] [PROGRAM=table1]
# [PORT=/dev/ttyACM0]; avrdude part from MCU (m2560, m328p, m32u4). Mega 2560: `wiring` at 115200 baud;
# Uno: optiboot (`arduino`) at 115200; Nano: the old bootloader at 57600 (NANO_BOOTLOADER=new: optiboot at
# 115200); Leonardo and Micro: Caterina (`avr109`) after the 1200-baud touch that starts it
# (tools/caterina_touch.sh; a pintime firmware has no USB serial to be touched: it asks you to press reset).
NANO_BOOTLOADER ?= old
PROGRAMMER_uno := arduino
PROGRAMMER_nano := arduino
PROGRAMMER_leonardo := avr109
PROGRAMMER_mega := wiring
BAUD_uno := 115200
BAUD_nano := $(if $(filter new,$(NANO_BOOTLOADER)),115200,57600)
BAUD_leonardo := 57600
BAUD_mega := 115200
PORT_nano := /dev/ttyUSB0
# flash left to a program by the bootloader (bytes); a larger HEX is refused (program it by ISP instead)
APP_BYTES_uno := 32256
APP_BYTES_nano := $(if $(filter new,$(NANO_BOOTLOADER)),32256,30720)
APP_BYTES_leonardo := 28672
APP_BYTES_mega := 253952
PROGRAM      ?= table1
PORT         ?= $(or $(PORT_$(BOARD)),/dev/ttyACM0)
PROGRAMMER   ?= $(PROGRAMMER_$(BOARD))
BAUD         ?= $(BAUD_$(BOARD))
AVRDUDE_PART ?= $(patsubst atmega%,m%,$(MCU))
flash: $(FW_BUILD)/$(PROGRAM).hex
	@size=$$(avr-size $< | awk 'NR == 2 {print $$4}'); test "$$size" -le $(APP_BYTES_$(BOARD)) || \
	  { echo "flash: $(PROGRAM) is $$size bytes, the $(BOARD)'s bootloader leaves $(APP_BYTES_$(BOARD)) (docs/boards.md)" >&2; exit 1; }
	$(if $(filter avr109,$(PROGRAMMER)),sh tools/caterina_touch.sh $(PORT))
	avrdude -p $(AVRDUDE_PART) -c $(PROGRAMMER) -P $(PORT) -b $(BAUD) -D -U flash:w:$<:i

# --- Arduino library (arduino/pintime/, docs/boards.md) ---------------------------------------------------
# The library as the Arduino IDE installs it (build/arduino/pintime/ and its ZIP): arduino/pintime/ (its
# properties, its Arduino runtime, the examples) and the firmware sources it runs, copied from firmware/ and
# never edited there (one copy of the logic). `make arduino-examples` builds every example against the real
# Arduino AVR core for every board (tools/arduino_sketch.sh) and runs it in simavr (tests/sim/test_arduino.py).
ARDUINO_LIB      := build/arduino/pintime
ARDUINO_SOURCES  := $(addprefix $(FW_DIR)/,common/clock.c common/clock.h common/frames.c common/frames.h \
                    common/pinwave.S common/pins.h common/timing.h user/pintime.h user/pintime_run.h \
                    table1/groups.S table1/groups.h table1/ref100.S table1/table1_run.h)
ARDUINO_EXAMPLES := MeasureMyFunction Table1
.PHONY: arduino arduino-examples

arduino: $(ARDUINO_LIB).zip

$(ARDUINO_LIB).zip: $(ARDUINO_SOURCES) $(shell find arduino/pintime -type f) | deps
	rm -rf $(ARDUINO_LIB) && mkdir -p $(ARDUINO_LIB)
	cp -r arduino/pintime/. $(ARDUINO_LIB)/
	cp $(ARDUINO_SOURCES) $(ARDUINO_LIB)/src/
	cd $(dir $(ARDUINO_LIB)) && rm -f pintime.zip && $(abspath $(PY)) -m zipfile -c pintime.zip pintime

# the harness ends a sketch's run once the measurement pin has been idle 3 s (its loop() never stops)
arduino-examples: $(ARDUINO_LIB).zip $(HARNESS)
	@for b in $(BOARDS); do for e in $(ARDUINO_EXAMPLES); do n=$$(echo $$e | tr A-Z a-z); \
	  sh tools/arduino_sketch.sh $$b $(ARDUINO_LIB)/examples/$$e/$$e.ino $(ARDUINO_LIB) build/arduino/$$b && \
	  $(HARNESS) build/arduino/$$b/$$n.elf -o build/arduino/$$b/$$n --idle-end 3 || exit 1; done; done

# --- simavr harness ---------------------------------------------------------------------------------

$(HARNESS): sim/harness.c | deps
	@mkdir -p $(@D)
	cc -O2 -std=gnu11 -Wall -Wextra -Werror -o $@ $< $$(pkg-config --cflags --libs simavr) -lelf

# The JSON is written last; on a failed run it is removed so make does not take the run for done.
$(BUILD)/sim/%.json: $(FW_BUILD)/%.elf $(HARNESS)
	@mkdir -p $(@D)
	$(HARNESS) $< -o $(BUILD)/sim/$* $(HARNESS_FLAGS) || { rm -f $@; exit 1; }

# table2 (firmware/table2/TABLE2.md §4): adpcm_coder's blocks and cycle costs (the truth) and the addresses
# whose per-pulse counts give each round's visits, from the ELF; the harness writes table2.visits.csv.
$(BUILD)/sim/%.watch $(BUILD)/sim/%.blocks.json: $(FW_BUILD)/%.elf | deps
	@mkdir -p $(@D)
	$(PINTIME) cfg $< --watch $(BUILD)/sim/$*.watch --json $(BUILD)/sim/$*.blocks.json \
	  --alias $(BUILD)/sim/$*.alias > $(BUILD)/sim/$*.blocks.txt
$(BUILD)/sim/table2.json: $(BUILD)/sim/table2.watch $(BUILD)/sim/table2.blocks.json
$(BUILD)/sim/table2.json: HARNESS_FLAGS = --watch $(BUILD)/sim/table2.watch --blocks $(BUILD)/sim/table2.blocks.json \
  --alias $(BUILD)/sim/table2.alias
# kernel (firmware/kernel/KERNEL.md): its three more signal pins PA1 … PA3 as channels 2 … 4
$(BUILD)/sim/kernel.json: HARNESS_FLAGS = --signals 3
# the CFG JSON's format is pintime.avr.cfg.describe: regenerate when it changes
$(BUILD)/sim/table2.blocks.json: analyzer/pintime/avr/cfg.py analyzer/pintime/avr/cutcopies.py

sim: deps firmware $(PROGRAMS:%=$(BUILD)/sim/%.json)

# Every other board's firmware and simavr runs, in build/<board>/ (tests/sim/test_boards.py).
.PHONY: boards
boards: deps
	@for b in $(filter-out mega,$(BOARDS)); do $(MAKE) --no-print-directory sim BOARD=$$b || exit 1; done

FORCE:

# The quality gates CI runs (.ci/run: `make test`): ruff and mypy, the firmware and harness built with -Werror
# for every board (`sim`, `boards`), the Arduino examples against the real core (`arduino-examples`),
# `pip install ./analyzer` alone (check-install), the tests (the 25 slowest listed), then every benchmark in
# its short mode (its figures produced, their values not judged). The gates are independent and the tests
# independent of one another: both run one job per core (TEST_JOBS), the tests through pytest-xdist, with
# the tests that share an expensive fixture on one worker (tests/conftest.py, `--dist loadgroup`).
TEST_GATES := sim boards arduino-examples lint check-install
TEST_JOBS  ?= $(shell nproc)
.PHONY: test-fast check-install
test: deps
	@$(MAKE) --no-print-directory -j$(TEST_JOBS) --output-sync=target $(TEST_GATES)
	$(PY) -m pytest -q -n $(TEST_JOBS) --dist loadgroup --durations=25 tests
	@$(MAKE) --no-print-directory -j$(TEST_JOBS) --output-sync=target bench-short

# While editing: the unit tests (no simavr, no captures, no long pipelines), under a minute. Tests that need
# `make sim` carry the marker `sim` (tests/conftest.py), left out here and by `pytest -m "not sim"`.
test-fast: deps
	$(PY) -m pytest -q -n $(TEST_JOBS) --dist loadgroup -m "not sim" --durations=10 tests/unit

# A user's install on any OS, with no make, no apt and no dev extras: `pip install ./analyzer` in a fresh
# venv, whose pintime must analyse a committed capture exactly as tests/golden has it.
check-install: deps
	sh tools/check_pip_install.sh

# One rule set (analyzer/pyproject.toml) for the package, the tests, the benchmarks and the tools.
lint: deps
	$(VENV)/bin/ruff check --config analyzer/pyproject.toml analyzer tests bench tools
	$(VENV)/bin/mypy --config-file analyzer/pyproject.toml analyzer/pintime bench

clean:
	rm -rf $(BUILD) $(OUT)

# --- synthetic captures (sound-card model: analyzer/pintime/soundcard/) --------------------------------
# Long captures of whole runs, one per program and profile (not committed): make synth-captures [SEED=1]
SYNTH_PROFILES   := default paper wide-filter noisy
EXAMPLE_PROFILES := default wide-filter noisy laptop-48k
# as a laptop's jack records it
EXAMPLE_OPTIONS_laptop-48k := --channels 1 --level readme
SEED             ?= 1
.PHONY: synth-captures example-captures

synth-captures: $(SYNTH_PROFILES:%=$(BUILD)/captures/table1-%.wav)

define capture_rule
$(BUILD)/captures/$(1)-%.wav: $(BUILD)/sim/$(1).json | deps
	@mkdir -p $$(@D)
	$(PINTIME) synth $(BUILD)/sim/$(1).edges.csv -o $$@ --profile $$* --seed $(SEED) --force
endef
$(foreach p,$(PROGRAMS),$(eval $(call capture_rule,$(p))))
.PRECIOUS: $(BUILD)/captures/%.wav

# Regenerate the short examples in captures/ (committed so a new user can run the analyzer at once).
# They hold RUN, CAL and two repetitions and end inside the SYNC high of repetition 2's RUN frame
# (tools/example_duration.py finds where from the exact edges, so the cut follows the firmware); a profile's
# EXAMPLE_OPTIONS_<profile> are added to its synth (the laptop's: 48 kHz 16-bit mono at README's level).
example-captures: sim
	d=$$($(PY) tools/example_duration.py $(BUILD)/sim/table1) && \
	$(foreach p,$(EXAMPLE_PROFILES),$(PINTIME) synth $(BUILD)/sim/table1.edges.csv \
	  -o captures/table1-$(p).wav --profile $(p) $(EXAMPLE_OPTIONS_$(p)) --seed 1 --duration-s $$d --force && ) true

bench: deps sim
	$(PY) bench/bench_synth.py
	$(PY) bench/bench_edges.py --json $(BUILD)/bench/edges.json
	$(PY) bench/bench_analyze.py --json $(BUILD)/bench/analyze.json
	$(PY) bench/bench_memory.py --json $(BUILD)/bench/memory.json
	$(PY) bench/bench_table2.py --json $(BUILD)/bench/table2.json
	$(PY) bench/bench_rates.py --json $(BUILD)/bench/rates.json
	$(PY) bench/bench_kernel.py --json $(BUILD)/bench/kernel.json
	$(PY) bench/bench_micro.py --json $(BUILD)/bench/micro.json
	$(PY) bench/bench_count.py --json $(BUILD)/bench/count.json
	$(PY) bench/bench_gaps.py --json $(BUILD)/bench/gaps.json
	$(PY) bench/bench_cards.py --json $(BUILD)/bench/cards.json
	$(PY) bench/bench_coverage.py --json $(BUILD)/bench/coverage.json
	$(PY) bench/bench_signals.py --json $(BUILD)/bench/signals.json
	$(PY) bench/bench_resamplers.py --json $(BUILD)/bench/resamplers.json
	$(PY) bench/bench_decimation.py --json $(BUILD)/bench/decimation.json
	$(PY) bench/bench_real.py --json $(BUILD)/bench/real.json
	$(PY) bench/bench_live.py --json $(BUILD)/bench/live.json

# Each benchmark on a small input (seconds): checks that every figure it prints is produced. The benchmarks
# run one job per core (`make -j`: each writes its own folder or a temporary one), but edges, analyze and
# memory share build/bench/short's capture of the first 3 s, so each of them waits for the one before.
BENCHES := synth edges analyze memory table2 rates kernel micro count gaps cards coverage resamplers \
           decimation signals real live
.PHONY: bench-short $(BENCHES:%=bench-short-%)
bench-short: $(BENCHES:%=bench-short-%)

$(BENCHES:%=bench-short-%): bench-short-%: deps sim
	$(PY) bench/bench_$*.py --short --json $(BUILD)/bench/short/$*.json
bench-short-analyze: bench-short-edges
bench-short-memory: bench-short-analyze

# --- reproduction: the README's main command ---------------------------------------------------------
# simavr truth → synthesized captures → `pintime validate` per capture and edge method → out/report.md.
OUT            := out
REPRO_PROFILES ?= paper default
REPRO_METHODS  ?= template inflection
REPRO_PROGRAMS := $(filter-out user_example,$(PROGRAMS))
REPRO_RESULTS  := $(REPRO_PROGRAMS:%=$(OUT)/%.exact.json) \
                  $(foreach p,$(REPRO_PROGRAMS),$(foreach f,$(REPRO_PROFILES),\
                    $(foreach m,$(REPRO_METHODS),$(OUT)/$(p)-$(f).$(m).json)))
.PHONY: reproduce

# Independent captures are analysed in parallel, one job per core.
reproduce: deps sim
	@$(MAKE) --no-print-directory -j$$(nproc) $(OUT)/report.md
	@echo "reproduce: the report is $(OUT)/report.md (figures in $(OUT)/figures/)"

$(OUT)/report.md: $(REPRO_RESULTS)
	$(PINTIME) report $^ -o $@ --figures $(OUT)/figures

# out/<program>.exact.json: the estimators on simavr's exact edges (every value must be the truth).
$(OUT)/%.exact.json: $(BUILD)/sim/%.json | deps
	@mkdir -p $(@D)
	$(PINTIME) validate $(BUILD)/sim/$*.edges.csv --truth $< --json $@ > $(OUT)/$*.exact.txt

# out/<program>-<profile>.<method>.json: one synthesized capture through one edge method.
define validate_rule
$(OUT)/$(1)-%.$(2).json: $(BUILD)/captures/$(1)-%.wav
	@mkdir -p $$(@D)
	$(PINTIME) validate $$< --truth $(BUILD)/sim/$(1).json --method $(2) --json $$@ \
	  --plots $(OUT)/figures/$(1)-$$*.$(2) > $(OUT)/$(1)-$$*.$(2).txt
endef
$(foreach p,$(PROGRAMS),$(foreach m,template inflection threshold,$(eval $(call validate_rule,$(p),$(m)))))
