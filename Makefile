# pintime — one Makefile for firmware, simulator harness, analyzer, tests and benchmarks.
# `make reproduce` is the main job, `make test` the tests; every target installs what it needs first.

MCU      := atmega2560
F_CPU    ?= 1000000
REPS     ?= 100
BUILD    := build
VENV     := .venv
PY       := $(VENV)/bin/python
PINTIME  := $(VENV)/bin/pintime
PROGRAMS := table1

.PHONY: all deps firmware sim test bench lint clean

all: sim

deps:
	@sh tools/deps.sh

test: deps sim
	$(PY) -m pytest -q tests

lint: deps
	$(VENV)/bin/ruff check analyzer tests
	$(VENV)/bin/mypy analyzer/pintime

clean:
	rm -rf $(BUILD) out
