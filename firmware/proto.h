/*
 * The armctl serial protocol, version 2 (docs/protocol.md): the board side.
 *
 * Plain C99 with no hardware access, so the same file runs on the ATmega328P
 * and in the host unit tests. The hardware layer (main.c) feeds received
 * bytes to proto_feed() from the main loop, calls proto_boundary() at every
 * 20 ms frame boundary (from the Timer1 interrupt) and reads out[] to shape
 * the pulses of that frame, and calls proto_poll() for the watchdog.
 *
 * Times are in ticks of 0.5 us, as a wrapping uint32. Widths are in ticks too,
 * on the wire as well (version 2; version 1 wrote microseconds with ".5");
 * 0 means "no width" (the wire's '-').
 */
#ifndef ARMCTL_PROTO_H
#define ARMCTL_PROTO_H

#include <stdint.h>

#define PROTO_VERSION 2
#ifndef PROTO_FW_NAME
#define PROTO_FW_NAME "armctl-fw"  /* the PCA9685 build: "armctl-fw-pca9685" (Makefile) */
#endif
#define PROTO_NCH 8             /* at most 8: the enable mask is a byte */
#define PROTO_DEPTH 16
#define PROTO_FRAME_US 20000UL
#define PROTO_TICKS_PER_US 2
#define PROTO_FRAME_TICKS (PROTO_FRAME_US * PROTO_TICKS_PER_US)
#define PROTO_HOST_LINE_MAX 64  /* bytes including '\n' */
#define PROTO_BOARD_LINE_MAX 160 /* version 2; the longest (S, 8 channels) is 134 */
#define PROTO_LIMIT_MIN 1000    /* ticks: 500 us */
#define PROTO_LIMIT_MAX 5000    /* ticks: 2500 us */

/*
 * Interrupt masking around state shared with proto_boundary(), which runs in
 * the frame interrupt on the AVR. On the host these do nothing.
 */
#ifdef __AVR__
#include <avr/io.h>
#include <avr/interrupt.h>
#define PROTO_CRIT_BEGIN() uint8_t proto_sreg_ = SREG; cli()
#define PROTO_CRIT_END() SREG = proto_sreg_
#else
#define PROTO_CRIT_BEGIN() do { } while (0)
#define PROTO_CRIT_END() do { } while (0)
#endif

typedef struct {
	uint16_t frames;
	uint16_t ends[PROTO_NCH]; /* ticks, 0 = '-' (no change) */
} proto_move_t;

/* the counters, in the order of the status line */
enum {
	PC_CRC, PC_SEQ, PC_DUP, PC_REJ, PC_FULL, PC_LONG, PC_EMPTY, PC_WDOG, PC_COUNT
};

typedef void (*proto_emit_fn)(const char *line, uint8_t len);
/* called (main loop, interrupts enabled) after an L command changed a channel's limits (ticks) */
typedef void (*proto_limits_fn)(uint8_t ch, uint16_t lo, uint16_t hi);

typedef struct {
	/* link */
	uint8_t expect;
	uint8_t synced;
	uint8_t r_expect, r_free;       /* for the reply: as when the line was handled */
	uint16_t boot;
	proto_emit_fn emit;
	const char *fw_name;            /* in the banner and handshake: PROTO_FW_NAME, or what the build sets */

	/* line assembly (main loop only) */
	char line[PROTO_HOST_LINE_MAX];
	uint8_t len;
	uint8_t discarding;

	/* channels: shared with the frame interrupt */
	uint8_t mask;                   /* enabled channels */
	uint16_t width[PROTO_NCH];      /* planned width, 0 = none */
	uint16_t out[PROTO_NCH];        /* output in the current frame, 0 = none */
	uint16_t lo[PROTO_NCH], hi[PROTO_NCH];

	/* the executing move and the queue: shared with the frame interrupt */
	uint8_t cur_active;
	proto_move_t cur;
	uint16_t cur_done;
	uint16_t cur_start[PROTO_NCH];  /* 0 = channel not moved by this move */
	proto_move_t queue[PROTO_DEPTH];
	uint8_t q_head, q_len;

	volatile uint32_t frame;

	/* watchdog */
	uint16_t wd_ms;
	uint8_t wd_mode;                /* 'H' or 'O' */
	uint8_t wd_armed;
	uint32_t wd_deadline;           /* ticks */

	uint16_t count[PC_COUNT];

	/* main.c keeps the limits in EEPROM through this (NULL: RAM only, as in the unit tests) */
	proto_limits_fn on_limits;
} proto_t;

void proto_init(proto_t *p, uint16_t boot, proto_emit_fn emit);
/* limits read back at boot (EEPROM), in ticks; ignored (returns 0) unless
 * PROTO_LIMIT_MIN <= lo < hi <= PROTO_LIMIT_MAX, so an erased or half-written
 * EEPROM leaves the channel at the defaults */
uint8_t proto_restore_limits(proto_t *p, uint8_t ch, uint16_t lo, uint16_t hi);
/* the "- ! BOOT" event, sent once when the UART is ready */
void proto_banner(proto_t *p);
/* one received byte at time now (ticks); may emit a reply */
void proto_feed(proto_t *p, uint8_t byte, uint32_t now);
/* a frame boundary: count it and compute out[] for the frame that starts */
void proto_boundary(proto_t *p);
/* the watchdog: call often with the current time (ticks) */
void proto_poll(proto_t *p, uint32_t now);

/* exposed for the unit tests */
uint16_t proto_crc16_update(uint16_t crc, uint8_t b);
uint16_t proto_crc16(const char *s, uint8_t n);
uint8_t proto_free(const proto_t *p);

#endif
