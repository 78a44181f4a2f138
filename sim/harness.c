/*
 * harness.c — run a pintime firmware ELF in simavr and record every edge of the two signal pins with its
 * exact cycle (DESIGN.md §2, firmware/FORMAT.md §1).
 *
 *   harness ELF -o PREFIX [--max-cycles N] [--histogram FILE]
 *
 * Writes PREFIX.vcd (timescale 1 ps, time = cycle · 1e12 / F_CPU), PREFIX.edges.csv (cycle,channel,level;
 * channel 0 = measurement pin PA0, channel 1 = clock reference PB5 = OC1A) and PREFIX.json (run summary).
 * Stops when the firmware ends (cli; sleep → simavr's cpu_Done) or at the cycle budget (error, exit 1,
 * files flushed with what was recorded). Bad arguments or ELF: one-line error, exit 2.
 *
 * Edge cycles. A pin written by an instruction (`out PINA, r`) is reported by simavr during that
 * instruction with avr->cycle = the cycle at its start (DESIGN.md §4). The reference pin is toggled by a
 * Timer1 cycle timer, which simavr runs only after the current instruction, i.e. up to a few cycles late;
 * the exact compare-match cycle is the timer's `tov_base` (CTC with TOP = OCR1A: simavr sets it to the
 * match cycle just before it toggles OC1A), which is what we record.
 *
 * Histogram (optional): per instruction address (byte address, as in the .lss listing) the number of
 * executions and the cycles they took, kept in RAM and written at the end as CSV `pc,count,cycles`.
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

#define CHANNELS 2
#define DEFAULT_MAX_CYCLES 10000000000ULL
#define PS_PER_S 1000000000000ULL
#define REVISION_SYMBOL "pintime_fw_revision"

struct recorder {
	avr_t *avr;
	FILE *csv, *vcd;
	uint64_t ps_per_cycle;		/* VCD time unit is 1 ps */
	avr_timer_t *timer1;		/* source of exact reference edge cycles */
	int level[CHANNELS];		/* pin level after the last recorded edge */
	uint64_t edges[CHANNELS];	/* edges recorded per channel */
	uint64_t last_cycle;		/* cycle of the last recorded edge (edges must come in order) */
	int out_of_order;
};

struct histogram {
	uint64_t *count;		/* executions per instruction word */
	uint64_t *cycles;		/* cycles per instruction word */
	uint32_t words;
};

static const char vcd_id[CHANNELS] = { '!', '"' };

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

static void write_vcd_header(FILE *vcd)
{
	fputs("$timescale 1 ps $end\n"
	      "$scope module pintime $end\n"
	      "$var wire 1 ! measurement_PA0 $end\n"
	      "$var wire 1 \" reference_PB5 $end\n"
	      "$upscope $end\n"
	      "$enddefinitions $end\n"
	      "#0\n$dumpvars\n0!\n0\"\n$end\n", vcd);
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

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

int main(int argc, char **argv)
{
	const char *elf = NULL, *prefix = NULL, *histogram_path = NULL;
	uint64_t max_cycles = DEFAULT_MAX_CYCLES;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
			prefix = argv[++i];
		} else if (strcmp(argv[i], "--max-cycles") == 0 && i + 1 < argc) {
			char *end;
			errno = 0;
			max_cycles = strtoull(argv[++i], &end, 10);
			if (errno || *end || max_cycles == 0)
				die("--max-cycles needs a positive integer, got '%s'", argv[i]);
		} else if (strcmp(argv[i], "--histogram") == 0 && i + 1 < argc) {
			histogram_path = argv[++i];
		} else if (argv[i][0] != '-' && !elf) {
			elf = argv[i];
		} else {
			die("usage: harness ELF -o PREFIX [--max-cycles N] [--histogram FILE] (bad argument '%s')",
			    argv[i]);
		}
	}
	if (!elf || !prefix)
		die("%s", "usage: harness ELF -o PREFIX [--max-cycles N] [--histogram FILE]");
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
	avr_init(avr);			/* resets the frequency: load the firmware after it (DESIGN.md §4) */
	avr_load_firmware(avr, &fw);

	struct recorder rec = { .avr = avr, .ps_per_cycle = PS_PER_S / fw.frequency };
	rec.timer1 = find_timer(avr, '1');
	if (!rec.timer1)
		die("simavr MCU '%s' has no Timer1", fw.mmcu);
	rec.csv = open_out(prefix, ".edges.csv");
	rec.vcd = open_out(prefix, ".vcd");
	fputs("cycle,channel,level\n", rec.csv);
	write_vcd_header(rec.vcd);
	avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ('A'), 0), on_measurement_pin, &rec);
	avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ('B'), 5), on_reference_pin, &rec);

	struct histogram hist = { .words = fw.flashsize / 2 + 1 };
	if (histogram_path) {
		hist.count = calloc(hist.words, sizeof *hist.count);
		hist.cycles = calloc(hist.words, sizeof *hist.cycles);
		if (!hist.count || !hist.cycles)
			die("%s", "out of memory for the histogram");
	}

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int state = cpu_Running;
	while (avr->cycle < max_cycles && state != cpu_Done && state != cpu_Crashed) {
		uint32_t pc = avr->pc;
		uint64_t before = avr->cycle;
		int running = avr->state == cpu_Running;
		state = avr_run(avr);
		if (hist.count && running && pc / 2 < hist.words) {
			hist.count[pc / 2]++;
			hist.cycles[pc / 2] += avr->cycle - before;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double wall_s = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
	double cycles_per_s = wall_s > 0 ? avr->cycle / wall_s : 0;

	const char *end = state == cpu_Done ? "firmware_done"
			: state == cpu_Crashed ? "crashed" : "cycle_budget";
	fprintf(rec.vcd, "#%" PRIu64 "\n", avr->cycle * rec.ps_per_cycle);	/* the VCD covers the whole run */
	fclose(rec.csv);
	fclose(rec.vcd);
	if (hist.count)
		write_histogram(histogram_path, &hist);

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
		"  \"end\": \"%s\",\n  \"wall_s\": %.3f,\n  \"cycles_per_s\": %.0f\n}\n",
		program, elf, fw.mmcu, fw.frequency, firmware_revision(&fw), avr->cycle,
		(double)avr->cycle / fw.frequency, rec.edges[0], rec.edges[1], end, wall_s, cycles_per_s);
	fclose(json);

	printf("harness: %s: %" PRIu64 " cycles (%.3f s of MCU time) in %.2f s wall = %.1f M cycles/s; "
	       "edges %" PRIu64 " + %" PRIu64 "; %s\n", program, avr->cycle, (double)avr->cycle / fw.frequency,
	       wall_s, cycles_per_s / 1e6, rec.edges[0], rec.edges[1], end);
	if (rec.out_of_order) {
		fprintf(stderr, "harness: %s: edges were recorded out of cycle order (harness bug)\n", program);
		return 1;
	}
	if (state == cpu_Crashed) {
		fprintf(stderr, "harness: %s: firmware crashed at cycle %" PRIu64 "\n", program, avr->cycle);
		return 1;
	}
	if (state != cpu_Done) {
		fprintf(stderr, "harness: %s: cycle budget of %" PRIu64 " cycles exceeded before the firmware "
			"ended (cli; sleep); files hold what was recorded\n", program, max_cycles);
		return 1;
	}
	return 0;
}
