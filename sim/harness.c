/*
 * harness.c — run a pintime firmware ELF in simavr and record every edge of the two signal pins with its
 * exact cycle (docs/design.md §3, firmware/FORMAT.md §1).
 *
 *   harness ELF -o PREFIX [--max-cycles N] [--idle-end S] [--signals N] [--histogram FILE]
 *           [--watch FILE [--blocks FILE] [--alias FILE]]
 *
 * Writes PREFIX.vcd (timescale 1 ps, time = cycle · 1e12 / F_CPU), PREFIX.edges.csv (cycle,channel,level;
 * channel 0 = measurement pin, channel 1 = clock reference OC1A) and PREFIX.json (run summary). The pins
 * are the chip's (the ELF's .mmcu name; firmware/common/pins.h): ATmega2560 PA0 and PB5, ATmega328P PB2 and
 * PB1, ATmega32U4 PF0 and PB5. --signals N (1 … 7) records N more signal pins, the next bits of the
 * measurement port (PA1 … PAN on the ATmega2560), as channels 2 … N + 1 (VCD signals signal_PA1 …;
 * "signals" in the JSON's edge counts); without it the outputs name only the two pins.
 * Stops when the firmware ends (cli; sleep → simavr's cpu_Done) or at the cycle budget (error, exit 1,
 * files flushed with what was recorded). --idle-end S also ends a run (exit 0, "end": "measurement_idle")
 * once the measurement pin has had edges and then none for S seconds of MCU time: a program that never
 * stops, such as an Arduino sketch whose loop() runs on after its measurement (tools/arduino_sketch.sh).
 * Bad arguments or ELF: one-line error, exit 2.
 *
 * Edge cycles. A pin written by an instruction (`out PINA, r`) is reported by simavr during that
 * instruction with avr->cycle = the cycle at its start (docs/design.md §9). The reference pin is toggled by
 * a Timer1 cycle timer, which simavr runs only after the current instruction, i.e. up to a few cycles late;
 * the exact compare-match cycle is the timer's `tov_base` (CTC with TOP = OCR1A: simavr sets it to the
 * match cycle just before it toggles OC1A), which is what we record.
 *
 * Histogram (optional): per instruction address (byte address, as in the .lss listing) the number of
 * executions and the cycles they took, kept in RAM and written at the end as CSV `pc,count,cycles`.
 *
 * Per-pulse visits (optional, firmware/table2/TABLE2.md §4): --watch FILE lists byte addresses (hex, one per
 * line, as `pintime cfg ELF --watch FILE` writes them). For every pulse of the measurement pin (rising edge
 * to falling edge) in which a watched address ran, PREFIX.visits.csv gets one row: the pulse's number p (its
 * edges are the measurement pin's edges 2p and 2p + 1), its rising-edge cycle, its width in cycles, then
 * per watched address, in the file's order, its executions and the cycles they took inside the pulse. An
 * instruction belongs to the pulse when it starts at or after the rising edge and before the falling edge.
 * --blocks FILE (the CFG truth, `pintime cfg --json`) is only recorded in PREFIX.json beside the others.
 * --alias FILE (TABLE2.md §6: the cut copies of adpcm_coder, as `pintime cfg ELF --alias FILE` writes them)
 * lists address ranges `start end target` (hex byte addresses, one range per line): an instruction at pc in
 * [start, end) that is not itself watched counts as the one at pc − start + target, so visits inside a copy
 * are visits of the original's blocks. Watched or aliased instructions in a range that run outside every
 * pulse (the firmware's dry runs of the copies) are counted apart ("aliased_outside_pulses").
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <avr_ioport.h>
#include <avr_timer.h>
#include <sim_avr.h>
#include <sim_elf.h>

#define CHANNELS 9			/* measurement, reference, up to 7 more signal pins */
#define MAX_SIGNALS 7
#define DEFAULT_MAX_CYCLES 10000000000ULL
#define PS_PER_S 1000000000000ULL
#define REVISION_SYMBOL "pintime_fw_revision"

/* The signal pins per chip: firmware/common/pins.h's table. */
struct pin_map {
	const char *mmcu;
	char meas_port;
	int meas_bit;
	char ref_port;
	int ref_bit;
};

static const struct pin_map pin_maps[] = {
	{ "atmega2560", 'A', 0, 'B', 5 },
	{ "atmega328p", 'B', 2, 'B', 1 },
	{ "atmega32u4", 'F', 0, 'B', 5 },
};

struct recorder {
	avr_t *avr;
	FILE *csv, *vcd;
	uint64_t ps_per_cycle;		/* VCD time unit is 1 ps */
	avr_timer_t *timer1;		/* source of exact reference edge cycles */
	int level[CHANNELS];		/* pin level after the last recorded edge */
	uint64_t edges[CHANNELS];	/* edges recorded per channel */
	uint64_t last_cycle;		/* cycle of the last recorded edge (edges must come in order) */
	uint64_t edge_cycle[CHANNELS];	/* cycle of the last recorded edge per channel */
	int out_of_order;
};

struct histogram {
	uint64_t *count;		/* executions per instruction word */
	uint64_t *cycles;		/* cycles per instruction word */
	uint32_t words;
};

struct watch {
	uint32_t n;			/* watched addresses */
	uint32_t *pc;			/* their byte addresses, in the watch file's order */
	int32_t *slot;			/* per flash word: index into pc (its own, or its alias target's), or -1 */
	uint8_t *aliased;		/* per flash word: inside an --alias range */
	uint64_t *count;		/* executions per watched address in the current pulse */
	uint64_t *cycles;		/* cycles per watched address in the current pulse */
	int ran;			/* a watched address ran in the current pulse */
	uint64_t pulse;			/* number of the current pulse (rising edges before it) */
	uint64_t rise_cycle;		/* cycle of the current pulse's rising edge */
	uint64_t rows;			/* rows written: pulses in which a watched address ran */
	uint64_t outside;		/* executions of watched addresses outside every pulse (not aliased) */
	uint64_t aliased_outside;	/* executions of watched addresses in alias ranges outside every pulse */
	FILE *csv;
};

static const char vcd_id[CHANNELS] = { '!', '"', '#', '$', '%', '&', '\'', '(', ')' };

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "harness: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(2);
}

/* simavr's errors to stderr, prefixed; its warnings and chatter ("Loaded … .text") dropped: writing OCR1A
 * before Timer1 runs (as the firmware must, to avoid a spurious early match) draws a harmless warning. */
static void simavr_logger(avr_t *avr, const int level, const char *format, va_list ap)
{
	(void)avr;
	if (level > LOG_ERROR)
		return;
	fputs("harness: simavr: ", stderr);
	vfprintf(stderr, format, ap);
}

static void record_edge(struct recorder *r, int channel, uint64_t cycle, int level)
{
	if (level == r->level[channel])
		return;
	if (cycle < r->last_cycle)
		r->out_of_order = 1;
	r->last_cycle = cycle;
	r->level[channel] = level;
	r->edge_cycle[channel] = cycle;
	r->edges[channel]++;
	fprintf(r->csv, "%" PRIu64 ",%d,%d\n", cycle, channel, level);
	fprintf(r->vcd, "#%" PRIu64 "\n%d%c\n", cycle * r->ps_per_cycle, level, vcd_id[channel]);
}

static void on_measurement_pin(struct avr_irq_t *irq, uint32_t value, void *param)
{
	(void)irq;
	struct recorder *r = param;
	record_edge(r, 0, r->avr->cycle, value & 1);
}

/* A signal pin PA1 … PA7 (--signals): `param` is the recorder, the channel is 1 + the pin's bit. */
struct signal_pin {
	struct recorder *rec;
	int channel;
};

static void on_signal_pin(struct avr_irq_t *irq, uint32_t value, void *param)
{
	(void)irq;
	struct signal_pin *s = param;
	record_edge(s->rec, s->channel, s->rec->avr->cycle, value & 1);
}

static void on_reference_pin(struct avr_irq_t *irq, uint32_t value, void *param)
{
	(void)irq;
	struct recorder *r = param;
	record_edge(r, 1, r->timer1->tov_base, value & 1);
}

static avr_timer_t *find_timer(avr_t *avr, char name)
{
	for (avr_io_t *io = avr->io_port; io; io = io->next)
		if (io->kind && strcmp(io->kind, "timer") == 0 && ((avr_timer_t *)io)->name == name)
			return (avr_timer_t *)io;
	return NULL;
}

static int is_elf(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		die("cannot open ELF %s", path);
	unsigned char magic[4] = { 0 };
	size_t n = fread(magic, 1, sizeof magic, f);
	fclose(f);
	return n == 4 && memcmp(magic, "\177ELF", 4) == 0;
}

/* The firmware's revision word (frames.c) from the ELF symbols, read from the flash image; 0 if absent. */
static uint32_t firmware_revision(const elf_firmware_t *fw)
{
	for (uint32_t i = 0; i < fw->symbolcount; i++) {
		const avr_symbol_t *s = fw->symbol[i];
		if (strcmp(s->symbol, REVISION_SYMBOL) == 0 && s->addr + 4 <= fw->flashsize) {
			const uint8_t *p = fw->flash + s->addr;	/* little-endian u32 */
			return p[0] | p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
		}
	}
	return 0;
}

static FILE *open_out(const char *prefix, const char *suffix)
{
	char path[4096];
	snprintf(path, sizeof path, "%s%s", prefix, suffix);
	FILE *f = fopen(path, "w");
	if (!f)
		die("cannot write %s", path);
	return f;
}

static const struct pin_map *pin_map_of(const char *mmcu)
{
	for (size_t i = 0; i < sizeof pin_maps / sizeof pin_maps[0]; i++)
		if (strcmp(pin_maps[i].mmcu, mmcu) == 0)
			return &pin_maps[i];
	die("no pin map for the MCU '%s' (firmware/common/pins.h)", mmcu);
	return NULL;
}

static void write_vcd_header(FILE *vcd, const struct pin_map *pins, int signals)
{
	fprintf(vcd, "$timescale 1 ps $end\n"
		"$scope module pintime $end\n"
		"$var wire 1 ! measurement_P%c%d $end\n"
		"$var wire 1 \" reference_P%c%d $end\n", pins->meas_port, pins->meas_bit, pins->ref_port,
		pins->ref_bit);
	for (int i = 1; i <= signals; i++)
		fprintf(vcd, "$var wire 1 %c signal_P%c%d $end\n", vcd_id[1 + i], pins->meas_port,
			pins->meas_bit + i);
	fputs("$upscope $end\n"
	      "$enddefinitions $end\n"
	      "#0\n$dumpvars\n0!\n0\"\n", vcd);
	for (int i = 1; i <= signals; i++)
		fprintf(vcd, "0%c\n", vcd_id[1 + i]);
	fputs("$end\n", vcd);
}

static void write_histogram(const char *path, const struct histogram *h)
{
	FILE *f = fopen(path, "w");
	if (!f)
		die("cannot write %s", path);
	fputs("pc,count,cycles\n", f);
	for (uint32_t w = 0; w < h->words; w++)
		if (h->count[w])
			fprintf(f, "%" PRIu32 ",%" PRIu64 ",%" PRIu64 "\n", 2 * w, h->count[w], h->cycles[w]);
	fclose(f);
}

/* Read the watch file: hex byte addresses, one per line, each an instruction word inside the flash image,
 * none twice. */
static void read_watch(const char *path, uint32_t flash_bytes, struct watch *w)
{
	FILE *f = fopen(path, "r");
	if (!f)
		die("cannot open watch file %s", path);
	w->slot = malloc((flash_bytes / 2 + 1) * sizeof *w->slot);
	if (!w->slot)
		die("%s", "out of memory for the watch list");
	for (uint32_t i = 0; i <= flash_bytes / 2; i++)
		w->slot[i] = -1;
	char line[128];
	for (unsigned number = 1; fgets(line, sizeof line, f); number++) {
		char *end;
		errno = 0;
		unsigned long pc = strtoul(line, &end, 16);
		while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
			end++;
		if (errno || end == line || *end || pc % 2 || pc >= flash_bytes || w->slot[pc / 2] >= 0) {
			snprintf(line, sizeof line, "%s:%u", path, number);
			die("%s: expected a new even hex byte address inside the flash image", line);
		}
		uint32_t *grown = realloc(w->pc, (w->n + 1) * sizeof *w->pc);
		if (!grown)
			die("%s", "out of memory for the watch list");
		w->pc = grown;
		w->slot[pc / 2] = (int32_t)w->n;
		w->pc[w->n++] = (uint32_t)pc;
	}
	fclose(f);
	if (w->n == 0)
		die("watch file %s lists no address", path);
	w->count = calloc(w->n, sizeof *w->count);
	w->cycles = calloc(w->n, sizeof *w->cycles);
	if (!w->count || !w->cycles)
		die("%s", "out of memory for the watch list");
}

/* Read the alias file (after the watch file): `start end target` per line, hex byte addresses, each range and
 * its image inside the flash, ranges not overlapping. Words of a range that are not watched themselves take
 * the slot of their image. */
static void read_alias(const char *path, uint32_t flash_bytes, struct watch *w)
{
	FILE *f = fopen(path, "r");
	if (!f)
		die("cannot open alias file %s", path);
	w->aliased = calloc(flash_bytes / 2 + 1, 1);
	if (!w->aliased)
		die("%s", "out of memory for the alias ranges");
	char line[128];
	for (unsigned number = 1; fgets(line, sizeof line, f); number++) {
		unsigned long start, end, target;
		char extra;
		if (sscanf(line, "%lx %lx %lx %c", &start, &end, &target, &extra) != 3 || start % 2 || end % 2
		    || target % 2 || start >= end || end > flash_bytes || target + (end - start) > flash_bytes) {
			snprintf(line, sizeof line, "%s:%u", path, number);
			die("%s: expected `start end target`, even hex byte addresses inside the flash image", line);
		}
		for (unsigned long pc = start; pc < end; pc += 2) {
			if (w->aliased[pc / 2]) {
				snprintf(line, sizeof line, "%s:%u", path, number);
				die("%s: alias ranges overlap", line);
			}
			w->aliased[pc / 2] = 1;
			if (w->slot[pc / 2] < 0)
				w->slot[pc / 2] = w->slot[(pc - start + target) / 2];
		}
	}
	fclose(f);
}

static void write_visits_header(struct watch *w)
{
	fputs("pulse,rise_cycle,width_cycles", w->csv);
	for (uint32_t i = 0; i < w->n; i++)
		fprintf(w->csv, ",count_%#" PRIx32 ",cycles_%#" PRIx32, w->pc[i], w->pc[i]);
	fputc('\n', w->csv);
}

/* One executed instruction (at `pc`, `cycles` long), with the measurement pin's level before and after it:
 * the rising `out` belongs to its pulse, the falling `out` does not. */
static void watch_step(struct watch *w, const struct recorder *r, uint32_t pc, uint64_t cycles,
		       int level_before, int level_after)
{
	if (!level_before && level_after) {
		memset(w->count, 0, w->n * sizeof *w->count);
		memset(w->cycles, 0, w->n * sizeof *w->cycles);
		w->ran = 0;
		w->rise_cycle = r->edge_cycle[0];
	}
	int32_t slot = w->slot[pc / 2];
	if (slot >= 0 && level_after) {
		w->count[slot]++;
		w->cycles[slot] += cycles;
		w->ran = 1;
	} else if (slot >= 0 && w->aliased && w->aliased[pc / 2]) {
		w->aliased_outside++;
	} else if (slot >= 0) {
		w->outside++;
	}
	if (level_before && !level_after) {
		if (w->ran) {
			fprintf(w->csv, "%" PRIu64 ",%" PRIu64 ",%" PRIu64, w->pulse, w->rise_cycle,
				r->edge_cycle[0] - w->rise_cycle);
			for (uint32_t i = 0; i < w->n; i++)
				fprintf(w->csv, ",%" PRIu64 ",%" PRIu64, w->count[i], w->cycles[i]);
			fputc('\n', w->csv);
			w->rows++;
		}
		w->pulse++;
	}
}

/* The "visits" member of PREFIX.json: the per-pulse visits file and the truth files it goes with. */
static void write_visits_summary(FILE *json, const char *prefix, const char *watch_path, const char *blocks_path,
				 const struct watch *w)
{
	fprintf(json, ",\n  \"visits\": {\"file\": \"%s.visits.csv\", \"watch\": \"%s\", \"blocks\": ", prefix,
		watch_path);
	if (blocks_path)
		fprintf(json, "\"%s\"", blocks_path);
	else
		fputs("null", json);
	fprintf(json, ", \"addresses\": %" PRIu32 ", \"pulses\": %" PRIu64 ", \"watched_outside_pulses\": %"
		PRIu64 ", \"aliased_outside_pulses\": %" PRIu64 "}", w->n, w->rows, w->outside, w->aliased_outside);
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

int main(int argc, char **argv)
{
	const char *elf = NULL, *prefix = NULL, *histogram_path = NULL, *watch_path = NULL, *blocks_path = NULL;
	const char *alias_path = NULL;
	uint64_t max_cycles = DEFAULT_MAX_CYCLES;
	double idle_end_s = 0;
	int signals = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
			prefix = argv[++i];
		} else if (strcmp(argv[i], "--max-cycles") == 0 && i + 1 < argc) {
			char *end;
			errno = 0;
			max_cycles = strtoull(argv[++i], &end, 10);
			if (errno || *end || max_cycles == 0)
				die("--max-cycles needs a positive integer, got '%s'", argv[i]);
		} else if (strcmp(argv[i], "--idle-end") == 0 && i + 1 < argc) {
			char *end;
			idle_end_s = strtod(argv[++i], &end);
			if (*end || !(idle_end_s > 0))
				die("--idle-end needs a positive number of seconds, got '%s'", argv[i]);
		} else if (strcmp(argv[i], "--signals") == 0 && i + 1 < argc) {
			char *end;
			long n = strtol(argv[++i], &end, 10);
			if (*end || n < 1 || n > MAX_SIGNALS)
				die("--signals needs a number of pins 1 … 7 (PA1 …), got '%s'", argv[i]);
			signals = (int)n;
		} else if (strcmp(argv[i], "--histogram") == 0 && i + 1 < argc) {
			histogram_path = argv[++i];
		} else if (strcmp(argv[i], "--watch") == 0 && i + 1 < argc) {
			watch_path = argv[++i];
		} else if (strcmp(argv[i], "--blocks") == 0 && i + 1 < argc) {
			blocks_path = argv[++i];
		} else if (strcmp(argv[i], "--alias") == 0 && i + 1 < argc) {
			alias_path = argv[++i];
		} else if (argv[i][0] != '-' && !elf) {
			elf = argv[i];
		} else {
			die("usage: harness ELF -o PREFIX [--max-cycles N] [--idle-end S] [--signals N] "
			    "[--histogram FILE] [--watch FILE [--blocks FILE] [--alias FILE]] (bad argument '%s')",
			    argv[i]);
		}
	}
	if (!elf || !prefix)
		die("%s", "usage: harness ELF -o PREFIX [--max-cycles N] [--idle-end S] [--signals N] "
		    "[--histogram FILE] [--watch FILE [--blocks FILE] [--alias FILE]]");
	if ((blocks_path || alias_path) && !watch_path)
		die("%s", "--blocks and --alias need --watch");
	if (!is_elf(elf))
		die("%s is not an ELF file", elf);

	avr_global_logger_set(simavr_logger);
	elf_firmware_t fw;
	memset(&fw, 0, sizeof fw);
	if (elf_read_firmware(elf, &fw) != 0)
		die("cannot load ELF %s", elf);
	if (!fw.mmcu[0] || !fw.frequency)
		die("%s has no .mmcu section with MCU and F_CPU (link with -Wl,--undefined=_mmcu,"
		    "--section-start=.mmcu=0x910000)", elf);
	if (PS_PER_S % fw.frequency != 0)
		die("F_CPU of %s does not divide 1e12: VCD times in ps would not be exact", elf);
	avr_t *avr = avr_make_mcu_by_name(fw.mmcu);
	if (!avr)
		die("simavr does not know the MCU '%s'", fw.mmcu);
	const struct pin_map *pins = pin_map_of(fw.mmcu);
	if (pins->meas_bit + signals > 7)
		die("--signals: more pins than the measurement port of %s has after it", fw.mmcu);
	avr_init(avr);			/* resets the frequency: load the firmware after it (docs/design.md §9) */
	avr_load_firmware(avr, &fw);

	struct recorder rec = { .avr = avr, .ps_per_cycle = PS_PER_S / fw.frequency };
	rec.timer1 = find_timer(avr, '1');
	if (!rec.timer1)
		die("simavr MCU '%s' has no Timer1", fw.mmcu);
	rec.csv = open_out(prefix, ".edges.csv");
	rec.vcd = open_out(prefix, ".vcd");
	fputs("cycle,channel,level\n", rec.csv);
	write_vcd_header(rec.vcd, pins, signals);
	avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ(pins->meas_port), pins->meas_bit),
				on_measurement_pin, &rec);
	avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ(pins->ref_port), pins->ref_bit),
				on_reference_pin, &rec);
	struct signal_pin signal_pins[MAX_SIGNALS];
	for (int i = 0; i < signals; i++) {
		signal_pins[i] = (struct signal_pin){ .rec = &rec, .channel = 2 + i };
		avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ(pins->meas_port),
						      pins->meas_bit + 1 + i), on_signal_pin, &signal_pins[i]);
	}

	struct histogram hist = { .words = fw.flashsize / 2 + 1 };
	if (histogram_path) {
		hist.count = calloc(hist.words, sizeof *hist.count);
		hist.cycles = calloc(hist.words, sizeof *hist.cycles);
		if (!hist.count || !hist.cycles)
			die("%s", "out of memory for the histogram");
	}

	struct watch watch = { 0 };
	if (watch_path) {
		read_watch(watch_path, fw.flashsize, &watch);
		if (alias_path)
			read_alias(alias_path, fw.flashsize, &watch);
		watch.csv = open_out(prefix, ".visits.csv");
		write_visits_header(&watch);
	}

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int state = cpu_Running;
	uint64_t idle_cycles = (uint64_t)(idle_end_s * fw.frequency);
	int idle = 0;
	while (avr->cycle < max_cycles && state != cpu_Done && state != cpu_Crashed) {
		if (idle_cycles && rec.edges[0] && avr->cycle - rec.edge_cycle[0] > idle_cycles) {
			idle = 1;
			break;
		}
		uint32_t pc = avr->pc;
		uint64_t before = avr->cycle;
		int running = avr->state == cpu_Running;
		int level_before = rec.level[0];
		state = avr_run(avr);
		if (hist.count && running && pc / 2 < hist.words) {
			hist.count[pc / 2]++;
			hist.cycles[pc / 2] += avr->cycle - before;
		}
		if (watch.n && running && pc / 2 < hist.words)
			watch_step(&watch, &rec, pc, avr->cycle - before, level_before, rec.level[0]);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double wall_s = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
	double cycles_per_s = wall_s > 0 ? avr->cycle / wall_s : 0;

	const char *end = idle ? "measurement_idle" : state == cpu_Done ? "firmware_done"
			: state == cpu_Crashed ? "crashed" : "cycle_budget";
	fprintf(rec.vcd, "#%" PRIu64 "\n", avr->cycle * rec.ps_per_cycle);	/* the VCD covers the whole run */
	fclose(rec.csv);
	fclose(rec.vcd);
	if (hist.count)
		write_histogram(histogram_path, &hist);
	if (watch.csv)
		fclose(watch.csv);

	char program[256];
	snprintf(program, sizeof program, "%s", basename_of(elf));
	char *dot = strrchr(program, '.');
	if (dot)
		*dot = '\0';
	FILE *json = open_out(prefix, ".json");
	fprintf(json, "{\n  \"program\": \"%s\",\n  \"elf\": \"%s\",\n  \"mcu\": \"%s\",\n"
		"  \"f_cpu_hz\": %" PRIu32 ",\n  \"revision\": %" PRIu32 ",\n"
		"  \"cycles_simulated\": %" PRIu64 ",\n  \"capture_s\": %.6f,\n"
		"  \"edges\": {\"measurement\": %" PRIu64 ", \"reference\": %" PRIu64 "},\n"
		"  \"end\": \"%s\",\n  \"wall_s\": %.3f,\n  \"cycles_per_s\": %.0f",
		program, elf, fw.mmcu, fw.frequency, firmware_revision(&fw), avr->cycle,
		(double)avr->cycle / fw.frequency, rec.edges[0], rec.edges[1], end, wall_s, cycles_per_s);
	if (signals) {
		fputs(",\n  \"signals\": [", json);
		for (int i = 0; i < signals; i++)
			fprintf(json, "%s{\"pin\": \"P%c%d\", \"channel\": %d, \"edges\": %" PRIu64 "}",
				i ? ", " : "", pins->meas_port, pins->meas_bit + 1 + i, 2 + i, rec.edges[2 + i]);
		fputc(']', json);
	}
	if (watch.n)
		write_visits_summary(json, prefix, watch_path, blocks_path, &watch);
	fputs("\n}\n", json);
	fclose(json);

	printf("harness: %s: %" PRIu64 " cycles (%.3f s of MCU time) in %.2f s wall = %.1f M cycles/s; "
	       "edges %" PRIu64 " + %" PRIu64 "; %s\n", program, avr->cycle, (double)avr->cycle / fw.frequency,
	       wall_s, cycles_per_s / 1e6, rec.edges[0], rec.edges[1], end);
	if (watch.n)
		printf("harness: %s: visits of %" PRIu32 " watched addresses in %" PRIu64 " pulses -> %s.visits.csv\n",
		       program, watch.n, watch.rows, prefix);
	if (rec.out_of_order) {
		fprintf(stderr, "harness: %s: edges were recorded out of cycle order (harness bug)\n", program);
		return 1;
	}
	if (state == cpu_Crashed) {
		fprintf(stderr, "harness: %s: firmware crashed at cycle %" PRIu64 "\n", program, avr->cycle);
		return 1;
	}
	if (state != cpu_Done && !idle) {
		fprintf(stderr, "harness: %s: cycle budget of %" PRIu64 " cycles exceeded before the firmware "
			"ended (cli; sleep); files hold what was recorded\n", program, max_cycles);
		return 1;
	}
	return 0;
}
