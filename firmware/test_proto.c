/*
 * Host unit tests of the protocol core (proto.c), built with the host's C
 * compiler and run by `make -C firmware test` (and from pytest).
 * Frames are advanced by calling proto_boundary() directly; time is in
 * 0.5 us ticks.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

static char got[8192];
static size_t got_len;
static int failures, checks;

static void emit(const char *s, uint8_t n)
{
	if (got_len + n < sizeof(got)) {
		memcpy(got + got_len, s, n);
		got_len += n;
		got[got_len] = 0;
	}
}

#define CHECK(cond) do { checks++; if (!(cond)) { failures++; \
	fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)

static void check_str(const char *want, const char *what, int line)
{
	checks++;
	if (strcmp(got, want)) {
		failures++;
		fprintf(stderr, "test_proto.c:%d: %s\n  want: %s\n  got:  %s\n", line, what, want, got);
	}
}
#define EXPECT(want) check_str(want, "reply", __LINE__)

static void feed_raw(proto_t *p, const char *s, size_t n, uint32_t now)
{
	got_len = 0;
	got[0] = 0;
	for (size_t i = 0; i < n; i++)
		proto_feed(p, (uint8_t)s[i], now);
}

/* send "<body>" with its CRC appended */
static void send(proto_t *p, uint32_t now, const char *fmt, ...)
{
	char body[256], line[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	size_t n = strlen(body);
	body[n++] = ' ';
	body[n] = 0;
	snprintf(line, sizeof(line), "%s*%04X\n", body, proto_crc16(body, (uint8_t)n));
	feed_raw(p, line, strlen(line), now);
}

/* the reply text without its " *XXXX\n" tail, after checking that tail */
static const char *body_of_reply(void)
{
	static char b[256];
	size_t n = strlen(got);
	checks++;
	if (n < 8 || got[n - 1] != '\n' || got[n - 7] != ' ' || got[n - 6] != '*') {
		failures++;
		fprintf(stderr, "malformed reply: %s\n", got);
		return "";
	}
	unsigned crc = (unsigned)strtoul(got + n - 5, NULL, 16);
	checks++;
	if (crc != proto_crc16(got, (uint8_t)(n - 6))) {
		failures++;
		fprintf(stderr, "bad reply CRC: %s\n", got);
	}
	memcpy(b, got, n - 7);
	b[n - 7] = 0;
	return b;
}

static void check_body(const char *want, int line)
{
	const char *b = body_of_reply();
	checks++;
	if (strcmp(b, want)) {
		failures++;
		fprintf(stderr, "test_proto.c:%d:\n  want: %s\n  got:  %s\n", line, want, b);
	}
}
#define BODY(want) check_body(want, __LINE__)

static void frames(proto_t *p, int n)
{
	while (n--)
		proto_boundary(p);
}

static void fresh(proto_t *p, uint16_t boot)
{
	proto_init(p, boot, emit);
	send(p, 0, "0 H");
}

/* ------------------------------------------------------------------ */

static uint16_t crc_bitwise(uint16_t crc, uint8_t b) /* section 1, verbatim semantics */
{
	crc ^= (uint16_t)b << 8;
	for (uint8_t i = 0; i < 8; i++)
		crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
	return crc;
}

static void test_crc(void)
{
	for (uint32_t c = 0; c < 0x10000; c += 7)
		for (uint16_t b = 0; b < 256; b++)
			if (proto_crc16_update((uint16_t)c, (uint8_t)b) != crc_bitwise((uint16_t)c, (uint8_t)b)) {
				CHECK(0);
				return;
			}
	CHECK(proto_crc16("123456789", 9) == 0x29B1);
	CHECK(proto_crc16("0 H ", 4) == 0x8EE8);
}

static void feed_str(proto_t *p, const char *s) { feed_raw(p, s, strlen(s), 0); }

/* docs/protocol.md section 6, byte for byte */
static void test_example_session(void)
{
	proto_t p;
	proto_init(&p, 0x3F2A, emit);
	feed_str(&p, "0 H *8EE8\n");
	EXPECT("0 H armctl-fw 2 8 16 20000 3F2A 1000:5000 1000:5000 1000:5000 1000:5000 1000:5000 1000:5000 "
	       "1000:5000 1000:5000 *CB0E\n");
	feed_str(&p, "1 E FF *0C5E\n");
	EXPECT("1 A 2 16 *2A59\n");
	feed_str(&p, "2 M 50 3000 2901 - - - - - - *EB55\n");
	EXPECT("2 A 3 15 *F81F\n");
	frames(&p, 1);
	CHECK(p.out[0] == 3000 && p.out[1] == 2901 && !p.out[2] && !p.out[3] && !p.out[7]);
	feed_str(&p, "3 W 500 H *5250\n");
	EXPECT("3 A 4 16 *21BB\n");
	feed_str(&p, "4 M 1 6000 - - - - - - - *61B8\n");
	EXPECT("4 R 5 16 RANGE *09EB\n");
	frames(&p, 411);
	feed_str(&p, "5 Q *8B46\n");
	EXPECT("5 S 412 5 16 FF 3000 2901 - - - - - - 0 0 0 0 1 0 0 1 0 3F2A *3DE9\n");
	/* Q is immediate and does not use up 5: the next sequenced line is 5 */
	feed_str(&p, "5 M 1 3000 2900 - - - - - - *A54B\n");
	EXPECT("- N 5 16 CRC *0472\n");
	feed_str(&p, "5 M 1 3000 2900 - - - - - - *A54A\n");
	EXPECT("5 A 6 15 *6AE3\n");
	feed_str(&p, "5 M 1 3000 2900 - - - - - - *A54A\n");
	EXPECT("5 A 6 15 *6AE3\n");
	feed_str(&p, "6 X *AA02\n");
	EXPECT("6 A 6 16 *12F4\n");
	CHECK(p.count[PC_DUP] == 1 && p.count[PC_CRC] == 1);
}

static void test_numbers(void)
{
	/* frame counters are 32-bit: check the decimal writer across its paths */
	static const uint32_t frames_[] = { 0, 9, 10, 65535, 65536, 99999, 100000, 100001, 4294967295UL };
	for (unsigned k = 0; k < sizeof(frames_) / sizeof(frames_[0]); k++) {
		proto_t p;
		fresh(&p, 1);
		p.frame = frames_[k];
		send(&p, 0, "1 Q");
		char want[96];
		snprintf(want, sizeof(want), "1 S %lu 1 16 FF - - - - - - - - 0 0 0 0 0 0 0 0 0 0001",
			 (unsigned long)frames_[k]);
		BODY(want);
	}
}

static void test_banner(void)
{
	proto_t p;
	proto_init(&p, 0xBEEF, emit);
	got_len = 0;
	proto_banner(&p);
	BODY("- ! BOOT armctl-fw 2 BEEF");
}

static void test_interpolation(void)
{
	proto_t p;
	fresh(&p, 1);
	send(&p, 0, "1 M 1 2000 - - 4000 - - - 4000");
	frames(&p, 1);
	CHECK(p.out[0] == 2000 && p.out[3] == 4000 && p.out[7] == 4000);
	/* 2000 -> 2003 ticks over 4 frames: d=3, w_i = 2000 + (6i+4)/8 = 1,2,2,3 */
	send(&p, 0, "2 M 4 2003 - - 3997 - - - 3997");
	for (int i = 1; i <= 4; i++) {
		frames(&p, 1);
		static const int up[] = { 0, 2001, 2002, 2002, 2003 };
		static const int down[] = { 0, 3999, 3998, 3998, 3997 };
		CHECK(p.out[0] == up[i]);
		CHECK(p.out[3] == down[i] && p.out[7] == down[i]);
		CHECK(p.out[1] == 0 && p.out[2] == 0 && p.out[4] == 0); /* never given: no pulse */
	}
	/* 65535 frames of a 4000-tick swing: no overflow, exact end */
	send(&p, 0, "3 M 65535 5000 - - 1000 - - - 5000");
	frames(&p, 32768);
	CHECK(p.out[0] == 2003 + (2UL * 2997 * 32768 + 65535) / (2UL * 65535));
	frames(&p, 32767);
	CHECK(p.out[0] == 5000 && p.out[3] == 1000 && p.out[7] == 5000);
}

static void test_back_to_back_and_empty(void)
{
	proto_t p;
	fresh(&p, 1);
	send(&p, 0, "1 M 2 3000 - - - - - - -");
	send(&p, 0, "2 M 2 3200 - - - - - - -");
	BODY("2 A 3 14");
	frames(&p, 1);
	CHECK(p.out[0] == 3000);
	frames(&p, 1);
	CHECK(p.out[0] == 3000);
	frames(&p, 1); /* second move starts right after, no gap */
	CHECK(p.out[0] == 3100);
	frames(&p, 1);
	CHECK(p.out[0] == 3200);
	CHECK(p.count[PC_EMPTY] == 0);
	send(&p, 0, "3 Q");
	BODY("3 S 4 3 16 FF 3200 - - - - - - - 0 0 0 0 0 0 0 0 0 0001");
	frames(&p, 1);
	CHECK(p.count[PC_EMPTY] == 1);
	frames(&p, 5);
	CHECK(p.count[PC_EMPTY] == 1 && p.out[0] == 3200); /* idle holds */
}

static void test_stop_holds_current(void)
{
	proto_t p;
	fresh(&p, 1);
	send(&p, 0, "1 M 1 2000 - - - - - - -");
	send(&p, 0, "2 M 10 4000 - - - - - - -");
	send(&p, 0, "3 M 10 2000 - - - - - - -");
	frames(&p, 4); /* 2000, then 3 frames of the 10-frame move */
	uint16_t held = p.out[0];
	CHECK(held == 2000 + 3 * 200);
	send(&p, 0, "4 X");
	BODY("4 A 4 16");
	frames(&p, 3);
	CHECK(p.out[0] == held);
	send(&p, 0, "4 Q");
	BODY("4 S 7 4 16 FF 2600 - - - - - - - 0 0 0 0 0 0 0 0 0 0001");
}

static void test_enable_disable(void)
{
	proto_t p;
	fresh(&p, 1);
	send(&p, 0, "1 M 1 3000 3000 - - - - - -");
	frames(&p, 1);
	send(&p, 0, "2 E FD"); /* channel 1 off */
	BODY("2 A 3 16");
	CHECK(p.out[1] == 3000); /* from the next frame */
	frames(&p, 1);
	CHECK(p.out[1] == 0 && p.out[0] == 3000);
	send(&p, 0, "3 M 1 - 3200 - - - - - -");
	BODY("3 R 4 16 OFF");
	send(&p, 0, "4 E FF");
	frames(&p, 2);
	CHECK(p.out[1] == 0); /* forgot its width: still no pulse */
	send(&p, 0, "5 M 1 - 3200 - - - - - -");
	frames(&p, 1);
	CHECK(p.out[1] == 3200);
	send(&p, 0, "6 E 1FF");
	BODY("6 R 7 16 RANGE");
	send(&p, 0, "7 E FFF"); /* well formed, too large */
	BODY("7 R 8 16 RANGE");
	send(&p, 0, "8 E G");
	BODY("8 R 9 16 ARG");
	send(&p, 0, "9 E 0");
	frames(&p, 1);
	for (int ch = 0; ch < PROTO_NCH; ch++)
		CHECK(!p.out[ch]);
	send(&p, 0, "10 Q");
	BODY("10 S 6 10 16 0 - - - - - - - - 0 0 0 0 4 0 0 2 0 0001");
}

static void test_watchdog(void)
{
	proto_t p;
	const uint32_t MS = 2000; /* ticks per ms */
	fresh(&p, 1);
	send(&p, 0, "1 M 1 3000 - - - - - - -");
	send(&p, 0, "2 W 100 H");
	BODY("2 A 3 15");
	send(&p, 10 * MS, "3 M 100 4000 - - - - - - -");
	frames(&p, 3);
	proto_poll(&p, 109 * MS); /* 99 ms after the last line: not yet */
	CHECK(p.count[PC_WDOG] == 0);
	send(&p, 50 * MS, "3 Q"); /* any good line restarts it */
	got_len = 0;
	proto_poll(&p, 149 * MS);
	CHECK(p.count[PC_WDOG] == 0);
	proto_poll(&p, 150 * MS);
	CHECK(p.count[PC_WDOG] == 1);
	BODY("- ! WDOG 3");
	uint16_t held = p.out[0];
	frames(&p, 5);
	CHECK(p.out[0] == held && held > 3000 && held < 4000); /* hold: the move was ended */
	got_len = 0;
	proto_poll(&p, 1000 * MS); /* disabled after firing */
	CHECK(p.count[PC_WDOG] == 1 && got_len == 0);
	/* mode O stops the pulses and forgets the widths */
	send(&p, 1000 * MS, "4 W 20 O");
	send(&p, 1000 * MS + 1, "4 W 20 O"); /* a duplicate: acked, not executed, but restarts the timer */
	BODY("4 A 5 16");
	proto_poll(&p, 1020 * MS);
	CHECK(p.count[PC_WDOG] == 1);
	proto_poll(&p, 1020 * MS + 1);
	CHECK(p.count[PC_WDOG] == 2);
	frames(&p, 1);
	CHECK(p.out[0] == 0);
	send(&p, 0, "5 W 19 H");
	BODY("5 R 6 16 RANGE");
	send(&p, 0, "6 W 65536 H");
	BODY("6 R 7 16 RANGE");
	send(&p, 0, "7 W 100 X");
	BODY("7 R 8 16 ARG");
	send(&p, 0, "8 W 0 O");
	BODY("8 A 9 16");
}

static void test_limits(void)
{
	proto_t p;
	fresh(&p, 1);
	send(&p, 0, "1 M 1 3000 - - - - - - -");
	send(&p, 0, "2 L 0 3200 4000");
	BODY("2 R 3 15 RANGE"); /* the queued 3000 falls outside */
	frames(&p, 1);
	send(&p, 0, "3 L 0 2000 4001");
	BODY("3 A 4 16");
	send(&p, 0, "4 M 1 4002 - - - - - - -");
	BODY("4 R 5 16 RANGE");
	send(&p, 0, "5 M 1 4001 - - - - - - -");
	BODY("5 A 6 15");
	send(&p, 0, "6 L 7 1200 4800");
	BODY("6 A 7 15");
	send(&p, 0, "7 H");
	BODY("7 H armctl-fw 2 8 16 20000 0001 2000:4001 1000:5000 1000:5000 1000:5000 1000:5000 1000:5000 1000:5000 "
	     "1200:4800");
	send(&p, 0, "8 L 8 2000 4000");
	BODY("8 R 9 15 RANGE");
	send(&p, 0, "9 L 256 2000 4000");
	BODY("9 R 10 15 RANGE");
	send(&p, 0, "10 L 1 999 4000");
	BODY("10 R 11 15 RANGE");
	send(&p, 0, "11 L 1 4000 4000");
	BODY("11 R 12 15 RANGE");
	send(&p, 0, "12 L 1 - 4000");
	BODY("12 R 13 15 ARG");
	send(&p, 0, "13 L 1 2000");
	BODY("13 R 14 15 ARG");
	send(&p, 0, "14 L 1 1000.5 4000"); /* a version 1 width */
	BODY("14 R 15 15 ARG");
	send(&p, 0, "15 L 1 1000 5001");
	BODY("15 R 16 15 RANGE");
}

/* issue 6: accepted limits go to the store (EEPROM on the board), rejected ones do not; limits read
 * back at boot are taken only if valid (an erased EEPROM reads 0xFFFF) */
static uint8_t stored_ch;
static uint16_t stored_lo, stored_hi;
static int stores;
static void store(uint8_t ch, uint16_t lo, uint16_t hi)
{
	stored_ch = ch;
	stored_lo = lo;
	stored_hi = hi;
	stores++;
}

static void test_limits_store(void)
{
	proto_t p;
	fresh(&p, 1);
	p.on_limits = store;
	send(&p, 0, "1 L 2 1600 4401");
	BODY("1 A 2 16");
	CHECK(stores == 1 && stored_ch == 2 && stored_lo == 1600 && stored_hi == 4401);
	send(&p, 0, "2 L 2 4400 1600");
	BODY("2 R 3 16 RANGE");
	CHECK(stores == 1);
	proto_init(&p, 2, p.emit); /* a reset: RAM limits gone, restored from the store */
	CHECK(p.lo[2] == 1000 && p.hi[2] == 5000);
	CHECK(proto_restore_limits(&p, 2, stored_lo, stored_hi) == 1);
	CHECK(p.lo[2] == 1600 && p.hi[2] == 4401);
	CHECK(proto_restore_limits(&p, 1, 0xFFFF, 0xFFFF) == 0 && p.lo[1] == 1000 && p.hi[1] == 5000);
	CHECK(proto_restore_limits(&p, 7, 1600, 4000) == 1 && p.lo[7] == 1600);
	CHECK(proto_restore_limits(&p, 8, 1600, 4000) == 0);
	CHECK(proto_restore_limits(&p, 0, 999, 4000) == 0 && p.lo[0] == 1000);
}

static void test_move_args(void)
{
	proto_t p;
	fresh(&p, 1);
#define D7 " - - - - - - -" /* the other seven channels: no change */
	static const struct { const char *args; const char *reason; } cases[] = {
		{ "0 3000" D7, "RANGE" },
		{ "65536 3000" D7, "RANGE" },
		{ "1000000000 3000" D7, "RANGE" },
		{ "1000000001 3000" D7, "RANGE" },
		{ "12345678901 3000" D7, "RANGE" }, /* any number of digits: the value decides */
		{ "01 3000" D7, "ARG" },              /* a leading zero is malformed */
		{ "00 3000" D7, "ARG" },
		{ "1 0" D7, "RANGE" },                /* issue 11: a width of 0 is no '-' */
		{ "1 - 0 - - - - - -", "RANGE" },
		{ "1 1" D7, "RANGE" },
		{ "1 00" D7, "ARG" },
		{ "1 0500" D7, "ARG" },
		{ "1 00.5" D7, "ARG" },
		{ "1 3000 - - - - - - 0", "RANGE" },
		{ "x 3000" D7, "ARG" },
		{ "1 3000.0" D7, "ARG" },
		{ "1 1500.5" D7, "ARG" },             /* microseconds with .5: version 1, not 2 */
		{ "1 3e3" D7, "ARG" },
		{ "1 .5" D7, "ARG" },
		{ "1 +3000" D7, "ARG" },
		{ "1 3000 - - - - - -", "ARG" },      /* 7 widths */
		{ "1 3000 - - - - - - - -", "ARG" },  /* 9 widths */
		{ "1 3000 - -", "ARG" },
		{ "1 99999999999999999999" D7, "RANGE" },
		{ "1 999" D7, "RANGE" },
		{ "1 5001" D7, "RANGE" },
		{ "1 - - - - - - - 5200 x", "ARG" },
		{ "0 3000 - - - - - - x", "ARG" }, /* every argument is parsed before ranges are checked */
		{ "1 6000 0 - - - - - -", "RANGE" },
		{ "1 - 0500 - - - - - 0", "ARG" },
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t s = (uint8_t)(1 + i);
		send(&p, 0, "%u M %s", s, cases[i].args);
		char want[64];
		snprintf(want, sizeof(want), "%u R %u 16 %s", s, (uint8_t)(s + 1), cases[i].reason);
		BODY(want);
	}
	CHECK(p.count[PC_REJ] == sizeof(cases) / sizeof(cases[0]));
	send(&p, 0, "%u M 1 1000 5000 1001 4999 1002 4998 3000 3001", 1 + (unsigned)(sizeof(cases) / sizeof(cases[0])));
	frames(&p, 1);
	static const uint16_t want[PROTO_NCH] = { 1000, 5000, 1001, 4999, 1002, 4998, 3000, 3001 };
	for (int ch = 0; ch < PROTO_NCH; ch++)
		CHECK(p.out[ch] == want[ch]);
}

static void test_line_errors(void)
{
	proto_t p;
	proto_init(&p, 1, emit);
	send(&p, 0, "0 M 1 3000" D7);
	BODY("- N 0 16 SYNC");
	send(&p, 0, "0 Q");
	BODY("0 S 0 0 16 FF - - - - - - - - 0 0 0 0 0 0 0 0 0 0001"); /* immediate: works unsynced */
	send(&p, 0, "5 H");
	BODY("5 H armctl-fw 2 8 16 20000 0001 1000:5000 1000:5000 1000:5000 1000:5000 1000:5000 1000:5000 1000:5000 "
	     "1000:5000");
	send(&p, 0, "7 E FF");
	BODY("- N 6 16 SEQ");
	send(&p, 0, "5 E FF");
	BODY("5 A 6 16"); /* duplicate of an old number */
	send(&p, 0, "- E FF");
	BODY("- R 6 16 ARG");
	send(&p, 0, "256 E FF");
	BODY("- R 6 16 ARG");
	send(&p, 0, "6 Z");
	BODY("6 R 6 16 CMD");
	send(&p, 0, "6 EE FF");
	BODY("6 R 6 16 CMD");
	send(&p, 0, "6 Q 1");
	BODY("6 R 6 16 ARG");
	send(&p, 0, "6  E FF");
	BODY("- R 6 16 ARG");
	send(&p, 0, "6");
	BODY("- R 6 16 ARG");
	/* missing, malformed and wrong checksums */
	feed_raw(&p, "6 E F\n", 6, 0);
	BODY("- N 6 16 CRC");
	feed_raw(&p, "6 E F *C48\n", 11, 0);
	BODY("- N 6 16 CRC");
	feed_raw(&p, "6 E F*C48E\n", 11, 0);
	BODY("- N 6 16 CRC");
	feed_raw(&p, "*FFFF\n", 6, 0);
	BODY("- N 6 16 CRC");
	/* lower-case CRC and CRLF are fine; empty lines are ignored */
	char line[80];
	uint16_t crc = proto_crc16("6 E FF ", 7);
	snprintf(line, sizeof(line), "\n\r\n6 E FF *%04x\r\n", crc);
	feed_raw(&p, line, strlen(line), 0);
	BODY("6 A 7 16");
	/* 63 bytes + '\n' is the longest line; one more is LONG */
	char body[80];
	memset(body, 0, sizeof(body));
	strcpy(body, "7 M 1 3000" D7);
	size_t n = strlen(body);
	while (n < 57)
		body[n++] = ' '; /* padding spaces make empty fields: a reject, but not LONG */
	body[n++] = ' ';
	snprintf(line, sizeof(line), "%.*s*%04X\n", (int)n, body, proto_crc16(body, (uint8_t)n));
	CHECK(strlen(line) == 64);
	feed_raw(&p, line, strlen(line), 0);
	BODY("- R 7 16 ARG");
	char longline[200];
	memset(longline, 'A', 64);
	longline[64] = '\n';
	feed_raw(&p, longline, 65, 0);
	BODY("- N 7 16 LONG");
	feed_raw(&p, longline, 63, 0);
	feed_raw(&p, "\n", 1, 0);
	BODY("- N 7 16 CRC");
	/* a non-ASCII byte with a good CRC */
	send(&p, 0, "7 E \xC6");
	BODY("- R 7 16 ARG");
	send(&p, 0, "7 Q");
	BODY("7 S 0 7 16 FF - - - - - - - - 0 5 1 1 9 0 1 0 0 0001");
}

static void test_full(void)
{
	proto_t p;
	fresh(&p, 1);
	for (int i = 1; i <= PROTO_DEPTH; i++)
		send(&p, 0, "%d M 10 3000" D7, i);
	BODY("16 A 17 0");
	send(&p, 0, "17 M 1 3000" D7);
	BODY("- N 17 0 FULL");
	send(&p, 0, "17 E FF"); /* only moves wait for room */
	BODY("17 A 18 0");
	frames(&p, 1);
	send(&p, 0, "18 M 1 3000" D7);
	BODY("18 A 19 0");
	send(&p, 0, "19 Q");
	BODY("19 S 1 19 0 FF 3000 - - - - - - - 160 0 0 0 0 1 0 0 0 0001");
}

static void test_sequence_wrap(void)
{
	proto_t p;
	proto_init(&p, 1, emit);
	send(&p, 0, "254 H");
	send(&p, 0, "255 E FF");
	BODY("255 A 0 16");
	send(&p, 0, "0 E FF");
	BODY("0 A 1 16");
	send(&p, 0, "129 E FF"); /* d = 128: still a duplicate */
	BODY("129 A 1 16");
	send(&p, 0, "128 E FF"); /* d = 129: from the future */
	BODY("- N 1 16 SEQ");
}

/* issue 11: a channel disabled while its move executes, or with moves queued for it, forgets the
 * width and those moves' numbers for it: re-enabled, it stays silent until a new move sets it */
static void test_disable_forgets_moves(void)
{
	proto_t p;
	fresh(&p, 1);
	send(&p, 0, "1 M 1 2000 2000 - - - - - 2000");
	send(&p, 0, "2 M 10 4000 4000 - - - - - 4000"); /* executing when channels 0 and 7 are disabled */
	send(&p, 0, "3 M 5 3000 3000 - - - - - 3000");  /* queued */
	frames(&p, 4);
	CHECK(p.out[0] == 2600 && p.out[1] == 2600 && p.out[7] == 2600);
	send(&p, 0, "4 E 7E");
	BODY("4 A 5 15");
	frames(&p, 1);
	CHECK(p.out[0] == 0 && p.out[7] == 0 && p.out[1] == 2800); /* channel 1 moves on */
	send(&p, 0, "5 E FF"); /* enabled again before the queued move starts */
	frames(&p, 20);
	/* no pulse: not the executing move's 4000, not the queued 3000 */
	CHECK(p.out[0] == 0 && p.width[0] == 0 && p.out[7] == 0 && p.width[7] == 0);
	CHECK(p.out[1] == 3000);
	send(&p, 0, "6 L 0 1200 1400"); /* nothing queued for channel 0 any more */
	BODY("6 A 7 16");
	send(&p, 0, "7 M 1 1300" D7);
	frames(&p, 1);
	CHECK(p.out[0] == 1300); /* a move after the enable sets it */
	send(&p, 0, "8 Q");
	BODY("8 S 26 8 16 FF 1300 3000 - - - - - - 0 0 0 0 0 0 0 1 0 0001");
}

/* issue 11: X in the frame a channel was disabled must not give the channel back its width */
static void test_stop_after_disable(void)
{
	proto_t p;
	fresh(&p, 1);
	send(&p, 0, "1 M 1 3000 3000 - - - - - -");
	frames(&p, 1);
	send(&p, 0, "2 E 2");
	CHECK(p.out[0] == 3000); /* this frame still pulses */
	send(&p, 0, "2 X");
	BODY("2 A 3 16");
	send(&p, 0, "3 E FF");
	frames(&p, 3);
	CHECK(p.out[0] == 0 && p.out[1] == 3000);
}

/* a move that starts while cmd_E is still clearing the queue (on the AVR the frame interrupt can come
 * between its per-move critical sections) is cleared as it starts: it never drives a disabled channel */
static void test_start_clears_disabled(void)
{
	proto_t p;
	fresh(&p, 1);
	send(&p, 0, "1 M 3 3000 3000 - - - - - 3000");
	p.mask = 0x7E; /* as cmd_E leaves it before it reaches the queue */
	proto_boundary(&p);
	CHECK(p.cur_active && p.cur.ends[0] == 0 && p.cur.ends[7] == 0 && p.cur_start[0] == 0);
	CHECK(p.out[0] == 0 && p.out[7] == 0 && p.out[1] == 3000);
}

/* section 1: canonical numbers; a malformed field is ARG, a well-formed value out of range is RANGE */
static void test_number_forms(void)
{
	proto_t p;
	fresh(&p, 1);
	static const struct { const char *line; const char *reply; } cases[] = {
		{ "1 L 0 00 4800", "1 R 2 16 ARG" },
		{ "2 L 0 0 4800", "2 R 3 16 RANGE" },
		{ "3 L 00 1200 4800", "3 R 4 16 ARG" },
		{ "4 L 0 1200 04800", "4 R 5 16 ARG" },
		{ "5 L 99999999999999999999 1200 4800", "5 R 6 16 RANGE" },
		{ "6 E 0F", "6 R 7 16 ARG" },
		{ "7 E 00", "7 R 8 16 ARG" },
		{ "8 E 10000000000000", "8 R 9 16 RANGE" },
		{ "9 W 020 H", "9 R 10 16 ARG" },
		{ "10 W 00 H", "10 R 11 16 ARG" },
		{ "11 W 99999999999 H", "11 R 12 16 RANGE" },
		{ "012 Q", "- R 12 16 ARG" },
		{ "00 Q", "- R 12 16 ARG" },
		{ "12 E ff", "12 A 13 16" },
		{ "13 E 0", "13 A 14 16" },
		{ "14 W 0 H", "14 A 15 16" },
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		send(&p, 0, "%s", cases[i].line);
		BODY(cases[i].reply);
	}
}

static void test_fuzz(void)
{
	proto_t p;
	proto_init(&p, 1, emit);
	uint32_t x = 12345;
	for (int i = 0; i < 200000; i++) {
		x = x * 1103515245u + 12345u;
		uint8_t b = (uint8_t)(x >> 16);
		if ((x >> 8 & 7) == 0)
			b = '\n';
		else if ((x >> 8 & 7) < 3)
			b = "0123456789 *HQXMEWL-.ABCDEF"[(x >> 20) % 27];
		got_len = 0;
		proto_feed(&p, b, (uint32_t)i * 100);
		if ((i & 1023) == 0)
			proto_boundary(&p);
		proto_poll(&p, (uint32_t)i * 100);
		for (int ch = 0; ch < PROTO_NCH; ch++)
			CHECK(p.out[ch] == 0 || (p.out[ch] >= p.lo[ch] && p.out[ch] <= p.hi[ch]));
	}
	CHECK(p.q_len <= PROTO_DEPTH);
}

int main(void)
{
	test_crc();
	test_example_session();
	test_banner();
	test_numbers();
	test_interpolation();
	test_back_to_back_and_empty();
	test_stop_holds_current();
	test_enable_disable();
	test_watchdog();
	test_limits();
	test_limits_store();
	test_move_args();
	test_line_errors();
	test_full();
	test_sequence_wrap();
	test_disable_forgets_moves();
	test_stop_after_disable();
	test_start_clears_disabled();
	test_number_forms();
	test_fuzz();
	if (failures) {
		fprintf(stderr, "test_proto: %d of %d checks failed\n", failures, checks);
		return 1;
	}
	printf("test_proto: all %d checks passed\n", checks);
	return 0;
}
