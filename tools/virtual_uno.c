/*
 * virtual_uno: an Arduino Uno (ATmega328P, 16 MHz) on libsimavr.
 *
 *   virtual_uno FIRMWARE.hex [options]
 *
 * - UART0 is bridged to a pseudo-terminal (raw, no echo). The first line on
 *   stdout is "PTY <path>"; everything simavr itself prints goes to stderr.
 * - Host bytes are held until the AVR UART signals XON and paused on XOFF,
 *   so nothing is dropped while the firmware is not reading.
 * - Firmware output is dropped while no client has the pty open (like a USB
 *   serial adapter with the port closed), so a client never reads stale
 *   bytes from before it opened the port.
 * - The simulation is paced to wall time (slices of --slice-us simulated
 *   time) unless --free-run; --speed scales the pace.
 * - --reset-on-open resets the MCU whenever a client opens the pty, like
 *   the DTR auto-reset of a real Uno. SIGUSR1 resets it at any time.
 * - Every high pulse on a port B/C/D pin (Arduino numbering: D0-D13,
 *   A0-A5 = 14-19) no longer than --max-pulse-us is logged, measured from
 *   the cycle counter between the rising and the falling edge (1/16 us).
 *
 * --control replaces the pty and the wall clock with a command channel on
 * stdin/stdout, for tests that must step simulated time exactly:
 *   tx <hex>        queue bytes for UART0's receiver         -> "ok"
 *   run <us>        run that long (simulated)                -> ["rx <hex>"] "t <t_us>"
 *   until <t_us>    run up to that simulated time            -> ["rx <hex>"] "t <t_us>"
 *   line <us>       run until the firmware has sent a '\n' (in 10 us steps),
 *                   at most that long                        -> ["rx <hex>"] "t <t_us>"
 *   reset           reset the MCU                            -> "ok"
 *   quit
 * and, whenever the firmware starts Timer0, 1 or 2 (TCCRnB clock select
 * from 0 to non-zero), the line "timer<n> <t_us>" (also an event in the
 * pulse log).
 * --uart-byte-us sets UART0's byte time regardless of the baud rate (a fast
 * link for tests that need many lines within one servo frame).
 *
 * --pca9685 ADDR puts a PCA9685 PWM chip on the TWI bus (A4/A5) at 7-bit
 * address ADDR (e.g. 0x40), powered apart from the MCU (an MCU reset leaves
 * it as it is), with its oscillator at --pca9685-osc HZ (default 25 MHz). It
 * follows the datasheet (Rev. 4): reset values (SLEEP, every output full
 * off), the register pointer and auto-increment, PRE_SCALE written only in
 * SLEEP, 500 us oscillator start, RESTART, ALL_LED, LED All Call at 0x70,
 * outputs latched at STOP. Its outputs are logged as pulses of pins 100-115
 * (output n: pin 100 + n), one record a chip period for each output that
 * pulses; what the datasheet forbids is logged as an event "pca9685 <why>".
 * --pca9685-held PRESCALE:C0[,C1..] starts the chip as another program left
 * it: awake (auto-increment off) at that PRE_SCALE, outputs 0, 1, .. pulsing
 * C0, C1, .. counts (ON 0).
 *
 * Pulse log format (text, one record a line, '#' lines are comments):
 *   P <t_us> <pin> <width_us> <mono_s>
 *   E <t_us> <mono_s> <event> [detail]
 * t_us: simulated time of the rising edge (or event) in microseconds since
 * the simulator started (continuous across MCU resets); mono_s: the host's
 * CLOCK_MONOTONIC (Python's time.monotonic()) when the record was made.
 * Events: "reset <reason>", "open", "close", "slip <ms>" (the simulation
 * fell behind wall time and re-anchored), "exit", "pca9685 <why>".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <simavr/sim_avr.h>
#include <simavr/sim_hex.h>
#include <simavr/sim_irq.h>
#include <simavr/sim_io.h>
#include <simavr/avr_ioport.h>
#include <simavr/avr_uart.h>
#include <simavr/avr_extint.h>
#include <simavr/avr_twi.h>

#define F_CPU_HZ 16000000UL
#define CYCLES_PER_US 16
#define NPINS 20
#define RING 65536

typedef struct {
	uint8_t buf[RING];
	size_t head, len;
} ring_t;

static size_t ring_room(const ring_t *r) { return RING - r->len; }

static void ring_push(ring_t *r, uint8_t b)
{
	if (r->len == RING)
		return; /* overflow: drop, like a full USB serial buffer */
	r->buf[(r->head + r->len) % RING] = b;
	r->len++;
}

static int ring_pop(ring_t *r)
{
	if (!r->len)
		return -1;
	uint8_t b = r->buf[r->head];
	r->head = (r->head + 1) % RING;
	r->len--;
	return b;
}

/* ---- options ---- */
static struct {
	const char *hex;
	const char *pulse_log;
	const char *pty_link;
	const char *uart_log;
	int free_run;
	double speed;
	int reset_on_open;
	double max_pulse_us;
	uint32_t slice_us;
	double exit_after_s;
	int keep_int_polling;
	int control;
	double uart_byte_us;
	int pca_addr;
	double pca_osc_hz;
	const char *pca_held;
} opt = {
	.speed = 1.0,
	.max_pulse_us = 4000.0,
	.slice_us = 100,
	.pca_addr = -1,
	.pca_osc_hz = 25e6,
};

/* ---- state ---- */
static avr_t *avr;
static int pty_master = -1;
static char pty_name[128];
static int client_open;
static ring_t to_host, to_avr;
static int xon, feeding;
static avr_irq_t *uart_in_irq;
static uint64_t cycle_base; /* absolute cycles = cycle_base + avr->cycle */
static int in_reset;
static FILE *plog, *ulog;
static int plog_dirty;
static FILE *info; /* the real stdout */
static avr_uart_t *uart0;
static uint8_t timer_cs[3]; /* clock select bits last written to TCCR0B, TCCR1B, TCCR2B */

static struct pin {
	int arduino;
	int level;
	uint64_t rise;
} pins[NPINS];

static volatile sig_atomic_t stop_req, reset_req;

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t abs_cycles(void) { return cycle_base + avr->cycle; }

static double cycles_us(uint64_t c) { return (double)c / CYCLES_PER_US; }

static void log_event(const char *fmt, ...)
{
	if (!plog)
		return;
	fprintf(plog, "E %.4f %.6f ", cycles_us(abs_cycles()), mono_now());
	va_list ap;
	va_start(ap, fmt);
	vfprintf(plog, fmt, ap);
	va_end(ap);
	fputc('\n', plog);
	plog_dirty = 1;
}

/* ---- pins ---- */
static void pin_changed(struct avr_irq_t *irq, uint32_t value, void *param)
{
	(void)irq;
	struct pin *p = param;
	int level = value ? 1 : 0;
	if (in_reset || level == p->level)
		return;
	uint64_t now = abs_cycles();
	p->level = level;
	if (level) {
		p->rise = now;
		return;
	}
	double width = cycles_us(now - p->rise);
	if (plog && width <= opt.max_pulse_us) {
		fprintf(plog, "P %.4f %d %.4f %.6f\n", cycles_us(p->rise), p->arduino, width, mono_now());
		plog_dirty = 1;
	}
}

static void hook_pins(void)
{
	static const struct { char port; int first_arduino; int count; } map[] = {
		{ 'D', 0, 8 }, { 'B', 8, 6 }, { 'C', 14, 6 },
	};
	int k = 0;
	for (unsigned m = 0; m < sizeof(map) / sizeof(map[0]); m++) {
		for (int i = 0; i < map[m].count; i++, k++) {
			pins[k].arduino = map[m].first_arduino + i;
			/* D0/D1 are the UART: not servo pins */
			if (pins[k].arduino < 2)
				continue;
			avr_irq_t *irq = avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ(map[m].port), i);
			if (irq)
				avr_irq_register_notify(irq, pin_changed, &pins[k]);
		}
	}
}

/* ---- a PCA9685 on the TWI bus ---- */
#define PCA_MODE1 0x00
#define PCA_LED0 0x06
#define PCA_LAST_LED 0x45
#define PCA_ALL_LED 0xFA
#define PCA_PRE_SCALE 0xFE
#define PCA_RESTART 0x80
#define PCA_AI 0x20
#define PCA_SLEEP 0x10
#define PCA_ALLCALL 0x01
#define PCA_FULL 0x10

static struct {
	uint8_t reg[256];
	uint8_t ptr;
	int selected, reading, first;  /* addressed; in a read; the next written byte is the pointer */
	uint64_t awake_at;             /* cycle SLEEP was cleared (0: asleep) */
	uint16_t width_c[16];          /* latched outputs, counts (0: none) */
	avr_irq_t *in;
	int timer_on;
} pca;

static void pca_power_on(void)
{
	memset(pca.reg, 0, sizeof(pca.reg));
	pca.reg[PCA_MODE1] = 0x11;
	pca.reg[0x01] = 0x04;
	pca.reg[0x02] = 0xE2;
	pca.reg[0x03] = 0xE4;
	pca.reg[0x04] = 0xE8;
	pca.reg[0x05] = 0xE0;
	for (int ch = 0; ch < 16; ch++)
		pca.reg[PCA_LED0 + 4 * ch + 3] = PCA_FULL;
	pca.reg[PCA_PRE_SCALE] = 0x1E;
	pca.awake_at = 0;
	memset(pca.width_c, 0, sizeof(pca.width_c));
}

static uint8_t pca_next(uint8_t r)
{
	if (!(pca.reg[PCA_MODE1] & PCA_AI))
		return r;
	if (r == PCA_LAST_LED || r == PCA_PRE_SCALE)
		return 0;
	return (uint8_t)(r + 1);
}

static int pca_running(void)
{
	uint8_t m = pca.reg[PCA_MODE1];
	return !(m & (PCA_SLEEP | PCA_RESTART)) && pca.awake_at &&
	       abs_cycles() - pca.awake_at >= 500 * CYCLES_PER_US;
}

static void pca_write(uint8_t r, uint8_t v)
{
	uint8_t m = pca.reg[PCA_MODE1];
	if (r == 0xFF) {
		log_event("pca9685 TestMode written");
		return;
	}
	if (r == PCA_PRE_SCALE) {
		if (!(m & PCA_SLEEP)) {
			log_event("pca9685 PRE_SCALE written while awake (ignored)");
			return;
		}
		pca.reg[r] = v < 3 ? 3 : v;
		return;
	}
	if (r == PCA_MODE1) {
		int restart_pending = (m & PCA_RESTART) != 0;
		if (v & PCA_RESTART) {
			if ((m & PCA_SLEEP) || !pca.awake_at)
				log_event("pca9685 RESTART written while asleep");
			else if (abs_cycles() - pca.awake_at < 500 * CYCLES_PER_US)
				log_event("pca9685 RESTART written %.0f us after waking",
					  cycles_us(abs_cycles() - pca.awake_at));
			restart_pending = 0;
		}
		int any = 0;
		for (int ch = 0; ch < 16; ch++)
			any |= pca.width_c[ch] != 0;
		if ((v & PCA_SLEEP) && !(m & PCA_SLEEP)) {
			pca.awake_at = 0;
			if (any)
				restart_pending = 1;
		} else if (!(v & PCA_SLEEP) && ((m & PCA_SLEEP) || !pca.awake_at)) {
			pca.awake_at = abs_cycles() ? abs_cycles() : 1;
		}
		pca.reg[r] = (uint8_t)((v & ~PCA_RESTART) | (restart_pending ? PCA_RESTART : 0));
		return;
	}
	if (r >= PCA_ALL_LED) {
		for (int ch = 0; ch < 16; ch++)
			pca.reg[PCA_LED0 + 4 * ch + (r - PCA_ALL_LED)] = v;
		pca.reg[PCA_MODE1] &= (uint8_t)~PCA_RESTART;
		return;
	}
	if (r >= 0x02 && r <= 0x05)
		v &= 0xFE; /* bit 0 read-only */
	else if (r == 0x01 || (r >= PCA_LED0 && (r - PCA_LED0) % 4 % 2))
		v &= 0x1F; /* MODE2, LEDn_ON_H/OFF_H: bits 7:5 reserved, read 0 */
	pca.reg[r] = v;
	if (r >= PCA_LED0 && r <= PCA_LAST_LED)
		pca.reg[PCA_MODE1] &= (uint8_t)~PCA_RESTART;
}

/* STOP (OCH = 0): the outputs take the registers' values */
static void pca_latch(void)
{
	for (int ch = 0; ch < 16; ch++) {
		const uint8_t *b = pca.reg + PCA_LED0 + 4 * ch;
		uint16_t on = (uint16_t)(b[0] | b[1] << 8), off = (uint16_t)(b[2] | b[3] << 8);
		uint16_t w = 0;
		if (off & (PCA_FULL << 8))
			w = 0;
		else if (on & (PCA_FULL << 8))
			w = 4096;
		else {
			if (on == off && (on | off))
				log_event("pca9685 channel %d: ON and OFF both %u", ch, on);
			w = (uint16_t)((off - on) & 0x0FFF);
		}
		pca.width_c[ch] = w;
	}
}

static int pca_ours(uint8_t addr8)
{
	uint8_t a = addr8 >> 1;
	return a == opt.pca_addr || (a == 0x70 && (pca.reg[PCA_MODE1] & PCA_ALLCALL));
}

static void pca_twi(struct avr_irq_t *irq, uint32_t value, void *param)
{
	(void)irq; (void)param;
	avr_twi_msg_irq_t v;
	v.u.v = value;
	uint8_t msg = v.u.twi.msg, addr = v.u.twi.addr;
	if (msg & TWI_COND_STOP) {
		if (pca.selected && !pca.reading)
			pca_latch();
		pca.selected = 0;
	}
	if (msg & TWI_COND_START) {
		pca.selected = 0;
		if (pca_ours(addr)) {
			pca.selected = 1;
			pca.reading = addr & 1;
			if (!pca.reading)
				pca.first = 1;
			avr_raise_irq(pca.in, avr_twi_irq_msg(TWI_COND_ACK, addr, 1));
		}
	}
	if (!pca.selected)
		return;
	if (msg & TWI_COND_WRITE) {
		uint8_t d = v.u.twi.data;
		if (pca.first) {
			pca.first = 0;
			if (d > PCA_LAST_LED && d < PCA_ALL_LED) {
				log_event("pca9685 register 0x%02x is reserved (not acknowledged)", d);
				return; /* no ACK */
			}
			pca.ptr = d;
		} else {
			pca_write(pca.ptr, d);
			pca.ptr = pca_next(pca.ptr);
		}
		avr_raise_irq(pca.in, avr_twi_irq_msg(TWI_COND_ACK, addr, 1));
	}
	if (msg & TWI_COND_READ) {
		uint8_t r = pca.ptr;
		uint8_t d = (r >= PCA_ALL_LED && r < PCA_PRE_SCALE) ? 0 : pca.reg[r];
		pca.ptr = pca_next(r);
		avr_raise_irq(pca.in, avr_twi_irq_msg(TWI_COND_READ, addr, d));
	}
}

/* one chip period: a pulse record for each output that pulses */
static avr_cycle_count_t pca_period(struct avr_t *a, avr_cycle_count_t when, void *param)
{
	(void)a; (void)param;
	double count_us = (pca.reg[PCA_PRE_SCALE] + 1) / opt.pca_osc_hz * 1e6;
	if (pca_running() && plog) {
		for (int ch = 0; ch < 16; ch++) {
			if (!pca.width_c[ch])
				continue;
			double w = pca.width_c[ch] * count_us;
			if (w <= opt.max_pulse_us) {
				fprintf(plog, "P %.4f %d %.4f %.6f\n", cycles_us(abs_cycles()), 100 + ch, w, mono_now());
				plog_dirty = 1;
			}
		}
	}
	return when + (avr_cycle_count_t)(4096 * count_us * CYCLES_PER_US);
}


static void usage(void);

/* --pca9685-held PRESCALE:C0[,C1..]: awake at PRESCALE (no AI), outputs 0.. pulsing C0.. counts */
static int pca_hold(const char *spec)
{
	char *end;
	long pre = strtol(spec, &end, 0);
	if (*end != ':' || pre < 3 || pre > 255)
		return -1;
	pca.reg[PCA_PRE_SCALE] = (uint8_t)pre;
	pca.reg[PCA_MODE1] = PCA_ALLCALL;
	pca.awake_at = 1;
	for (int ch = 0; ch < 16 && *end; ch++) {
		long c = strtol(end + 1, &end, 0);
		if (c < 1 || c > 4095 || (*end && *end != ','))
			return -1;
		uint8_t *b = pca.reg + PCA_LED0 + 4 * ch;
		b[0] = b[1] = 0;
		b[2] = (uint8_t)c;
		b[3] = (uint8_t)(c >> 8);
	}
	pca_latch();
	return 0;
}

static void pca_attach(void)
{
	if (opt.pca_addr < 0)
		return;
	pca_power_on();
	if (opt.pca_held && pca_hold(opt.pca_held))
		usage();
	pca.in = avr_io_getirq(avr, AVR_IOCTL_TWI_GETIRQ(0), TWI_IRQ_INPUT);
	avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_TWI_GETIRQ(0), TWI_IRQ_OUTPUT), pca_twi, NULL);
}

/* cycle timers do not survive an MCU reset: the chip's period timer is set again after each */
static void pca_start_timer(void)
{
	if (opt.pca_addr < 0)
		return;
	avr_cycle_timer_register(avr, 16 * CYCLES_PER_US, pca_period, NULL);
}

/* ---- UART <-> pty ---- */
static void uart_out(struct avr_irq_t *irq, uint32_t value, void *param)
{
	(void)irq; (void)param;
	if (ulog)
		fprintf(ulog, "%.4f > %02x\n", cycles_us(abs_cycles()), value & 0xff);
	if (client_open)
		ring_push(&to_host, (uint8_t)value);
}

static void pump_to_avr(void)
{
	if (feeding)
		return;
	feeding = 1;
	while (xon && to_avr.len) {
		int b = ring_pop(&to_avr);
		if (ulog)
			fprintf(ulog, "%.4f < %02x\n", cycles_us(abs_cycles()), b);
		avr_raise_irq(uart_in_irq, (uint32_t)b);
	}
	feeding = 0;
}

static void uart_xon(struct avr_irq_t *irq, uint32_t value, void *param)
{
	(void)irq; (void)value; (void)param;
	xon = 1;
	pump_to_avr();
}

static void uart_xoff(struct avr_irq_t *irq, uint32_t value, void *param)
{
	(void)irq; (void)param;
	if (value)
		xon = 0;
}

/* ATmega328P data-space addresses of TCCR0B, TCCR1B, TCCR2B */
static const uint16_t TCCRB_ADDR[3] = { 0x45, 0x81, 0xB1 };

static void tccrb_written(struct avr_irq_t *irq, uint32_t value, void *param)
{
	(void)irq;
	int n = (int)(intptr_t)param;
	uint8_t cs = value & 7;
	if (cs && !timer_cs[n]) {
		log_event("timer%d start", n);
		if (opt.control)
			fprintf(info, "timer%d %.4f\n", n, cycles_us(abs_cycles()));
	}
	timer_cs[n] = cs;
}

static void find_uart0(void)
{
	for (avr_io_t *io = avr->io_port; io; io = io->next)
		if (io->irq_ioctl_get == AVR_IOCTL_UART_GETIRQ('0'))
			uart0 = (avr_uart_t *)io;
}

/* --uart-byte-us: the firmware's baud-rate write recomputes the byte time,
 * so this is re-applied after every slice */
static void apply_uart_speed(void)
{
	if (opt.uart_byte_us > 0 && uart0)
		uart0->cycles_per_byte = (avr_cycle_count_t)(opt.uart_byte_us * CYCLES_PER_US);
}

static void configure_after_reset(void)
{
	uint32_t flags = 0;
	avr_ioctl(avr, AVR_IOCTL_UART_GET_FLAGS('0'), &flags);
	flags &= ~(AVR_UART_FLAG_STDIO | AVR_UART_FLAG_POLL_SLEEP);
	avr_ioctl(avr, AVR_IOCTL_UART_SET_FLAGS('0'), &flags);
	if (!opt.keep_int_polling) {
		/* simavr polls low-level INT0/INT1 every cycle while D2/D3 are
		 * low, even masked: a big slowdown for firmware driving them. */
		avr_extint_set_strict_lvl_trig(avr, 0, 0);
		avr_extint_set_strict_lvl_trig(avr, 1, 0);
	}
	xon = 0; /* the receiver is off until the firmware enables it */
	memset(timer_cs, 0, sizeof(timer_cs));
	apply_uart_speed();
}

static void mcu_reset(const char *reason)
{
	uint64_t now = abs_cycles();
	in_reset = 1;
	avr_reset(avr);
	in_reset = 0;
	cycle_base = now - avr->cycle;
	for (int i = 0; i < NPINS; i++)
		pins[i].level = 0; /* a pulse cut by the reset is not a pulse */
	/* bytes in flight to the AVR are lost at reset, like on the wire */
	to_avr.len = 0;
	configure_after_reset();
	pca_start_timer();
	log_event("reset %s", reason);
}

static void open_pty(void)
{
	pty_master = posix_openpt(O_RDWR | O_NOCTTY);
	if (pty_master < 0 || grantpt(pty_master) || unlockpt(pty_master)) {
		perror("posix_openpt");
		exit(2);
	}
	if (ptsname_r(pty_master, pty_name, sizeof(pty_name))) {
		perror("ptsname");
		exit(2);
	}
	/* raw mode lives on the slave side and persists while the master is
	 * open: set it once so even a plain `cat` gets no echo or line editing */
	int s = open(pty_name, O_RDWR | O_NOCTTY);
	if (s < 0) {
		perror(pty_name);
		exit(2);
	}
	struct termios t;
	tcgetattr(s, &t);
	cfmakeraw(&t);
	cfsetispeed(&t, B115200);
	cfsetospeed(&t, B115200);
	tcsetattr(s, TCSANOW, &t);
	close(s);
	fcntl(pty_master, F_SETFL, fcntl(pty_master, F_GETFL) | O_NONBLOCK);
	if (opt.pty_link) {
		unlink(opt.pty_link);
		if (symlink(pty_name, opt.pty_link)) {
			perror(opt.pty_link);
			exit(2);
		}
	}
}

/* poll the pty: client open/close, host bytes in, firmware bytes out */
static void service_pty(void)
{
	struct pollfd pfd = { .fd = pty_master, .events = POLLIN };
	if (to_host.len)
		pfd.events |= POLLOUT;
	if (poll(&pfd, 1, 0) < 0)
		return;
	int open_now = !(pfd.revents & POLLHUP);
	if (open_now && !client_open) {
		client_open = 1;
		log_event("open");
		if (opt.reset_on_open)
			mcu_reset("open");
	}
	/* bytes a client wrote just before closing are still delivered */
	if (pfd.revents & POLLIN) {
		uint8_t b[4096];
		size_t want = ring_room(&to_avr) < sizeof(b) ? ring_room(&to_avr) : sizeof(b);
		ssize_t n = want ? read(pty_master, b, want) : 0;
		for (ssize_t i = 0; i < n; i++)
			ring_push(&to_avr, b[i]);
	}
	if (!open_now && client_open) {
		client_open = 0;
		log_event("close");
		to_host.len = 0;
	}
	if (!client_open) {
		pump_to_avr();
		return;
	}
	if (to_host.len) {
		size_t chunk = to_host.len;
		if (to_host.head + chunk > RING)
			chunk = RING - to_host.head;
		ssize_t n = write(pty_master, to_host.buf + to_host.head, chunk);
		if (n > 0) {
			to_host.head = (to_host.head + n) % RING;
			to_host.len -= n;
		}
	}
	pump_to_avr();
}

/* ---- setup ---- */
static void load_hex(const char *path)
{
	ihex_chunk_p chunks = NULL;
	int n = read_ihex_chunks(path, &chunks);
	if (n <= 0) {
		fprintf(stderr, "virtual_uno: cannot read Intel hex file %s\n", path);
		exit(2);
	}
	for (int i = 0; i < n; i++)
		avr_loadcode(avr, chunks[i].data, chunks[i].size, chunks[i].baseaddr);
	free_ihex_chunks(chunks);
}

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		reset_req = 1;
	else
		stop_req = 1;
}

static void sleep_noop(avr_t *a, avr_cycle_count_t how_long)
{
	(void)a; (void)how_long; /* pacing is done by the main loop */
}

static void usage(void)
{
	fprintf(stderr,
		"usage: virtual_uno FIRMWARE.hex [--pulse-log FILE|-] [--pty-link PATH]\n"
		"       [--free-run] [--speed X] [--reset-on-open] [--max-pulse-us US]\n"
		"       [--slice-us US] [--exit-after S] [--uart-log FILE] [--keep-int-polling]\n"
		"       [--control] [--uart-byte-us US] [--pca9685 ADDR] [--pca9685-osc HZ]\n"
		"       [--pca9685-held PRESCALE:C0[,C1..]]\n");
	exit(2);
}

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pulse-log", required_argument, 0, 'p' },
		{ "pty-link", required_argument, 0, 'l' },
		{ "free-run", no_argument, 0, 'f' },
		{ "speed", required_argument, 0, 's' },
		{ "reset-on-open", no_argument, 0, 'r' },
		{ "max-pulse-us", required_argument, 0, 'm' },
		{ "slice-us", required_argument, 0, 'S' },
		{ "exit-after", required_argument, 0, 'x' },
		{ "uart-log", required_argument, 0, 'u' },
		{ "keep-int-polling", no_argument, 0, 'k' },
		{ "control", no_argument, 0, 'c' },
		{ "uart-byte-us", required_argument, 0, 'U' },
		{ "pca9685", required_argument, 0, 'P' },
		{ "pca9685-osc", required_argument, 0, 'O' },
		{ "pca9685-held", required_argument, 0, 'H' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': opt.pulse_log = optarg; break;
		case 'l': opt.pty_link = optarg; break;
		case 'f': opt.free_run = 1; break;
		case 's': opt.speed = atof(optarg); break;
		case 'r': opt.reset_on_open = 1; break;
		case 'm': opt.max_pulse_us = atof(optarg); break;
		case 'S': opt.slice_us = (uint32_t)atoi(optarg); break;
		case 'x': opt.exit_after_s = atof(optarg); break;
		case 'u': opt.uart_log = optarg; break;
		case 'k': opt.keep_int_polling = 1; break;
		case 'c': opt.control = 1; break;
		case 'U': opt.uart_byte_us = atof(optarg); break;
		case 'P': opt.pca_addr = (int)strtol(optarg, NULL, 0); break;
		case 'O': opt.pca_osc_hz = atof(optarg); break;
		case 'H': opt.pca_held = optarg; break;
		default: usage();
		}
	}
	if (opt.pca_addr >= 0 && (opt.pca_addr < 0x40 || opt.pca_addr > 0x7F || opt.pca_osc_hz < 1e6))
		usage();
	if (optind != argc - 1 || opt.speed <= 0 || opt.slice_us < 1)
		usage();
	opt.hex = argv[optind];
}

/* Run one slice of simulated time; returns non-zero if the MCU halted. */
static int run_slice(uint64_t cycles)
{
	uint64_t target = avr->cycle + cycles;
	while (avr->cycle < target) {
		uint64_t before = avr->cycle;
		int state = avr_run(avr);
		if (avr->cycle < before) { /* the core reset itself */
			cycle_base += before - avr->cycle;
			target = avr->cycle + cycles;
		}
		if (state == cpu_Done || state == cpu_Crashed) {
			fprintf(stderr, "virtual_uno: MCU %s at %.1f us\n",
				state == cpu_Done ? "stopped (sleep with interrupts off)" : "crashed",
				cycles_us(abs_cycles()));
			log_event("halt %s", state == cpu_Done ? "done" : "crashed");
			return 1;
		}
	}
	apply_uart_speed();
	return 0;
}

static void flush_logs(void)
{
	if (plog)
		fflush(plog);
	if (ulog)
		fflush(ulog);
	plog_dirty = 0;
}

static int realtime_loop(void)
{
	const uint64_t slice = (uint64_t)opt.slice_us * CYCLES_PER_US;
	/* in free-run the pty is still serviced every slice so host round
	 * trips stay short in wall time */
	double wall_ref = mono_now(), last_flush = wall_ref;
	uint64_t sim_ref = abs_cycles();

	while (!stop_req) {
		if (reset_req) {
			reset_req = 0;
			mcu_reset("signal");
		}
		if (run_slice(slice))
			return 3;
		service_pty();

		double now = mono_now();
		if (opt.exit_after_s > 0 && cycles_us(abs_cycles()) >= opt.exit_after_s * 1e6)
			break;
		if (!opt.free_run) {
			double sim_s = cycles_us(abs_cycles() - sim_ref) * 1e-6 / opt.speed;
			double ahead = sim_s - (now - wall_ref);
			if (ahead > 50e-6) {
				struct timespec ts = { 0, (long)(ahead * 1e9) };
				nanosleep(&ts, NULL);
			} else if (ahead < -0.05) {
				/* too slow to keep up: re-anchor rather than run in bursts */
				log_event("slip %.1f", -ahead * 1e3);
				wall_ref = now;
				sim_ref = abs_cycles();
			}
		}
		if (plog_dirty && now - last_flush > 0.002) {
			flush_logs();
			last_flush = now;
		}
	}
	return 0;
}

static int hexdigit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int to_host_has_newline(void)
{
	for (size_t i = 0; i < to_host.len; i++)
		if (to_host.buf[(to_host.head + i) % RING] == '\n')
			return 1;
	return 0;
}

/* run up to absolute simulated time t_us (or, with stop_at_line, until a
 * line is complete), then report UART output and time */
static int control_run_until(double t_us, int stop_at_line)
{
	const uint64_t slice = (uint64_t)(stop_at_line ? 10 : opt.slice_us) * CYCLES_PER_US;
	uint64_t target = (uint64_t)(t_us * CYCLES_PER_US);
	int rc = 0;
	while (abs_cycles() < target && !rc && !(stop_at_line && to_host_has_newline())) {
		uint64_t left = target - abs_cycles();
		rc = run_slice(left < slice ? left : slice);
		pump_to_avr();
	}
	if (to_host.len) {
		fputs("rx ", info);
		int b;
		while ((b = ring_pop(&to_host)) >= 0)
			fprintf(info, "%02x", b);
		fputc('\n', info);
	}
	fprintf(info, "t %.4f\n", cycles_us(abs_cycles()));
	fflush(info);
	flush_logs();
	return rc;
}

static int control_loop(void)
{
	char line[8192];
	while (!stop_req && fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\r\n")] = 0;
		if (!strncmp(line, "tx ", 3)) {
			for (char *h = line + 3; h[0] && h[1]; h += 2) {
				int hi = hexdigit(h[0]), lo = hexdigit(h[1]);
				if (hi < 0 || lo < 0)
					break;
				ring_push(&to_avr, (uint8_t)(hi << 4 | lo));
			}
			pump_to_avr();
			fputs("ok\n", info);
		} else if (!strncmp(line, "run ", 4)) {
			if (control_run_until(cycles_us(abs_cycles()) + atof(line + 4), 0))
				return 3;
			continue;
		} else if (!strncmp(line, "line ", 5)) {
			if (control_run_until(cycles_us(abs_cycles()) + atof(line + 5), 1))
				return 3;
			continue;
		} else if (!strncmp(line, "until ", 6)) {
			if (control_run_until(atof(line + 6), 0))
				return 3;
			continue;
		} else if (!strcmp(line, "reset")) {
			mcu_reset("control");
			fputs("ok\n", info);
		} else if (!strcmp(line, "quit")) {
			break;
		} else {
			fprintf(info, "error unknown command: %s\n", line);
		}
		fflush(info);
	}
	return 0;
}

int main(int argc, char **argv)
{
	parse_args(argc, argv);

	/* our own lines go to the real stdout; simavr's printf chatter to stderr */
	int out_fd = dup(STDOUT_FILENO);
	dup2(STDERR_FILENO, STDOUT_FILENO);
	info = fdopen(out_fd, "w");

	if (opt.pulse_log) {
		plog = strcmp(opt.pulse_log, "-") ? fopen(opt.pulse_log, "w") : info;
		if (!plog) {
			perror(opt.pulse_log);
			return 2;
		}
		fprintf(plog, "# virtual_uno pulse log v1: P t_us pin width_us mono_s | E t_us mono_s event\n");
	}
	if (opt.uart_log && !(ulog = fopen(opt.uart_log, "w"))) {
		perror(opt.uart_log);
		return 2;
	}

	avr = avr_make_mcu_by_name("atmega328p");
	if (!avr)
		return 2;
	avr_init(avr);
	avr->frequency = F_CPU_HZ;
	avr->log = LOG_ERROR;
	avr->sleep = sleep_noop;
	load_hex(opt.hex);

	uart_in_irq = avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_INPUT);
	avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUTPUT), uart_out, NULL);
	avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUT_XON), uart_xon, NULL);
	avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUT_XOFF), uart_xoff, NULL);
	for (int n = 0; n < 3; n++)
		avr_irq_register_notify(avr_iomem_getirq(avr, TCCRB_ADDR[n], NULL, AVR_IOMEM_IRQ_ALL), tccrb_written,
					(void *)(intptr_t)n);
	find_uart0();
	hook_pins();
	pca_attach();

	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	int rc;
	if (opt.control) {
		client_open = 1; /* the command channel is always connected */
		fprintf(info, "CONTROL\n");
		fflush(info);
		mcu_reset("power-on");
		rc = control_loop();
	} else {
		open_pty();
		mcu_reset("power-on");
		fprintf(info, "PTY %s\n", pty_name);
		fflush(info);
		rc = realtime_loop();
	}
	log_event("exit");
	if (plog)
		fflush(plog);
	if (ulog)
		fclose(ulog);
	if (opt.pty_link)
		unlink(opt.pty_link);
	return rc;
}
