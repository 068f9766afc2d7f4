/*
 * The armctl serial protocol, version 2: board side. See proto.h and
 * docs/protocol.md; section numbers below refer to that document. The Python
 * reference board (armctl/sim/board.py) makes the same decisions in the same
 * order, so both produce the same bytes for the test vectors.
 */
#include "proto.h"

#include <string.h>

#define MAXF (PROTO_NCH + 4) /* fields kept per line; the longest valid line (M) has NCH + 3 */

/* ---------------------------------------------------------------- CRC */

/* CRC-16/CCITT-FALSE one byte at a time (the bitwise loop of section 1
 * unrolled algebraically); avr-libc's hand-written _crc_xmodem_update is the
 * same polynomial and update, about 20 cycles a byte */
#ifdef __AVR__
#include <util/crc16.h>
uint16_t proto_crc16_update(uint16_t crc, uint8_t b) { return _crc_xmodem_update(crc, b); }
#else
uint16_t proto_crc16_update(uint16_t crc, uint8_t b)
{
	uint8_t x = (uint8_t)((crc >> 8) ^ b);
	x ^= x >> 4;
	return (uint16_t)((crc << 8) ^ ((uint16_t)x << 12) ^ ((uint16_t)x << 5) ^ x);
}
#endif

uint16_t proto_crc16(const char *s, uint8_t n)
{
	uint16_t crc = 0xFFFF;
	while (n--)
		crc = proto_crc16_update(crc, (uint8_t)*s++);
	return crc;
}

/* ------------------------------------------------------ reply builder */

typedef struct {
	char buf[PROTO_BOARD_LINE_MAX];
	uint8_t n;
} outline_t;

static void o_ch(outline_t *o, char c)
{
	if (o->n < PROTO_BOARD_LINE_MAX - 7) /* room for " *XXXX\n" */
		o->buf[o->n++] = c;
}

static void o_str(outline_t *o, const char *s)
{
	while (*s)
		o_ch(o, *s++);
}

static void o_sp(outline_t *o) { o_ch(o, ' '); }

/* decimal by subtracting powers of ten: no 32-bit division on the AVR, and
 * 16-bit arithmetic for the common small numbers */
static const uint16_t POW10_16[] = { 10000, 1000, 100, 10 };

static void o_u16(outline_t *o, uint16_t v, uint8_t started)
{
	for (uint8_t k = 0; k < 4; k++) {
		char d = '0';
		while (v >= POW10_16[k]) {
			v -= POW10_16[k];
			d++;
		}
		if (d != '0' || started) {
			o_ch(o, d);
			started = 1;
		}
	}
	o_ch(o, (char)('0' + v));
}

static void o_u32(outline_t *o, uint32_t v)
{
	if (v < 65536UL) {
		o_u16(o, (uint16_t)v, 0);
		return;
	}
	/* rare (frame counters past 65535): the last five digits by division */
	uint32_t hi = v / 100000UL;
	uint32_t lo = v - hi * 100000UL;
	if (hi)
		o_u32(o, hi);
	char d[5];
	for (int8_t k = 4; k >= 0; k--) {
		d[k] = (char)('0' + lo % 10);
		lo /= 10;
	}
	for (uint8_t k = 0; k < 5; k++)
		o_ch(o, d[k]); /* v >= 65536: five digits even without hi */
}

static const char HEX[] = "0123456789ABCDEF";

static void o_hex(outline_t *o, uint16_t v, uint8_t digits)
{
	for (int8_t s = (int8_t)((digits - 1) * 4); s >= 0; s -= 4)
		o_ch(o, HEX[(v >> s) & 0xF]);
}

/* hex with no leading zeros (the enable mask) */
static void o_hexmin(outline_t *o, uint8_t v)
{
	if (v >> 4)
		o_ch(o, HEX[v >> 4]);
	o_ch(o, HEX[v & 0xF]);
}

/* a width in ticks, '-' for none (version 2: ticks on the wire) */
static void o_width(outline_t *o, uint16_t ticks)
{
	if (!ticks)
		o_ch(o, '-');
	else
		o_u16(o, ticks, 0);
}

/* start a line: "<seq> <kind>"; seq < 0 is '-' */
static void o_begin(outline_t *o, int16_t seq, char kind)
{
	o->n = 0;
	if (seq < 0)
		o_ch(o, '-');
	else
		o_u32(o, (uint32_t)seq);
	o_sp(o);
	o_ch(o, kind);
}

static void o_send(proto_t *p, outline_t *o)
{
	o->buf[o->n++] = ' ';
	uint16_t crc = proto_crc16(o->buf, o->n);
	o->buf[o->n++] = '*';
	o_hex(o, crc, 4);
	o->buf[o->n++] = '\n';
	p->emit(o->buf, o->n);
}

/* ------------------------------------------------------------- state */

uint8_t proto_free(const proto_t *p) { return (uint8_t)(PROTO_DEPTH - p->q_len); }

void proto_init(proto_t *p, uint16_t boot, proto_emit_fn emit)
{
	memset(p, 0, sizeof(*p));
	p->boot = boot;
	p->emit = emit;
	p->fw_name = PROTO_FW_NAME;
	p->mask = (1u << PROTO_NCH) - 1;
	p->wd_mode = 'H';
	for (uint8_t ch = 0; ch < PROTO_NCH; ch++) {
		p->lo[ch] = PROTO_LIMIT_MIN;
		p->hi[ch] = PROTO_LIMIT_MAX;
	}
}

uint8_t proto_restore_limits(proto_t *p, uint8_t ch, uint16_t lo, uint16_t hi)
{
	if (ch >= PROTO_NCH || lo < PROTO_LIMIT_MIN || lo >= hi || hi > PROTO_LIMIT_MAX)
		return 0;
	p->lo[ch] = lo;
	p->hi[ch] = hi;
	return 1;
}

void proto_banner(proto_t *p)
{
	outline_t o;
	o_begin(&o, -1, '!');
	o_str(&o, " BOOT ");
	o_str(&o, p->fw_name);
	o_sp(&o);
	o_u32(&o, PROTO_VERSION);
	o_sp(&o);
	o_hex(&o, p->boot, 4);
	o_send(p, &o);
}

/*
 * Replies carry expect and free as they were when the line was handled
 * (section 4): a move that starts in the frame interrupt between handling
 * and sending must not change them. snap() runs inside the same critical
 * section as the change it reports.
 */
static void snap(proto_t *p)
{
	p->r_expect = p->expect;
	p->r_free = proto_free(p);
}

static void snap_now(proto_t *p)
{
	PROTO_CRIT_BEGIN();
	snap(p);
	PROTO_CRIT_END();
}

/* "expect free" after a reply's kind: the tail of A, N and R lines */
static void o_expect_free(outline_t *o, uint8_t expect, uint8_t free_)
{
	o_sp(o);
	o_u32(o, expect);
	o_sp(o);
	o_u32(o, free_);
}

static void send_nak(proto_t *p, const char *reason)
{
	outline_t o;
	o_begin(&o, -1, 'N');
	snap_now(p);
	o_expect_free(&o, p->r_expect, p->r_free);
	o_sp(&o);
	o_str(&o, reason);
	o_send(p, &o);
}

/* a reject that changed nothing: snapshot now */
static void send_reject_snapped(proto_t *p, int16_t seq, const char *reason);
static void send_reject(proto_t *p, int16_t seq, const char *reason)
{
	snap_now(p);
	send_reject_snapped(p, seq, reason);
}

static void send_reject_snapped(proto_t *p, int16_t seq, const char *reason)
{
	outline_t o;
	p->count[PC_REJ]++;
	o_begin(&o, seq, 'R');
	o_expect_free(&o, p->r_expect, p->r_free);
	o_sp(&o);
	o_str(&o, reason);
	o_send(p, &o);
}

static void send_ack(proto_t *p, uint8_t seq)
{
	outline_t o;
	o_begin(&o, seq, 'A');
	o_expect_free(&o, p->r_expect, p->r_free);
	o_send(p, &o);
}

/* ------------------------------------------------------------ frames */

void proto_boundary(proto_t *p)
{
	p->frame++;
	uint8_t ended = 0;
	if (p->cur_active && p->cur_done >= p->cur.frames) {
		p->cur_active = 0;
		ended = 1;
	}
	if (!p->cur_active && p->q_len) {
		p->cur = p->queue[p->q_head];
		p->q_head = (uint8_t)((p->q_head + 1) % PROTO_DEPTH);
		p->q_len--;
		p->cur_active = 1;
		p->cur_done = 0;
		for (uint8_t ch = 0; ch < PROTO_NCH; ch++) {
			uint16_t e = p->cur.ends[ch];
			if (!(p->mask >> ch & 1))
				e = p->cur.ends[ch] = 0; /* disabled while cmd_E was still clearing the queue */
			if (!e)
				p->cur_start[ch] = 0;
			else /* a channel with no width yet starts at its end width */
				p->cur_start[ch] = p->width[ch] ? p->width[ch] : e;
		}
	} else if (!p->cur_active && ended) {
		p->count[PC_EMPTY]++;
	}
	if (p->cur_active) {
		uint16_t n = p->cur.frames;
		uint16_t i = ++p->cur_done;
		for (uint8_t ch = 0; ch < PROTO_NCH; ch++) {
			uint16_t s = p->cur_start[ch], e = p->cur.ends[ch];
			if (!s || !e)
				continue;
			/* linear from s to e, rounded half away from zero (section 3) */
			uint16_t d = e >= s ? e - s : s - e;
			uint16_t step = (uint16_t)((2UL * d * i + n) / (2UL * n));
			p->width[ch] = e >= s ? s + step : s - step;
		}
	}
	for (uint8_t ch = 0; ch < PROTO_NCH; ch++)
		p->out[ch] = (p->mask >> ch & 1) ? p->width[ch] : 0;
}

static void flush_moves(proto_t *p)
{
	p->q_len = 0;
	p->cur_active = 0;
}

/* ---------------------------------------------------------- watchdog */

static void watchdog_restart(proto_t *p, uint32_t now)
{
	if (p->wd_ms) {
		p->wd_deadline = now + (uint32_t)p->wd_ms * (1000UL * PROTO_TICKS_PER_US);
		p->wd_armed = 1;
	}
}

void proto_poll(proto_t *p, uint32_t now)
{
	if (!p->wd_armed || (int32_t)(now - p->wd_deadline) < 0)
		return;
	PROTO_CRIT_BEGIN();
	flush_moves(p);
	if (p->wd_mode == 'O')
		memset(p->width, 0, sizeof(p->width));
	uint32_t frame = p->frame;
	PROTO_CRIT_END();
	p->count[PC_WDOG]++;
	p->wd_ms = 0;
	p->wd_armed = 0;
	outline_t o;
	o_begin(&o, -1, '!');
	o_str(&o, " WDOG ");
	o_u32(&o, frame);
	o_send(p, &o);
}

/* ----------------------------------------------------------- parsing */

typedef struct {
	const char *s;
	uint8_t n;
} field_t;

/*
 * Numbers (section 1): canonical decimal, "0" or a digit 1-9 followed by
 * digits, any length. A malformed field is ARG; a well-formed value outside
 * its range is RANGE, however many digits it has, so values saturate.
 */
#define MALFORMED 0xFFFFFFFFUL
#define HUGE_NUM 0xFFFFFFFEUL /* well formed, larger than every limit (all are <= 65535) */

static uint8_t is_digit(char c) { return c >= '0' && c <= '9'; }

static uint32_t parse_uint(field_t f)
{
	if (!f.n || (f.s[0] == '0' && f.n > 1))
		return MALFORMED; /* empty, or a leading zero */
	uint32_t v = 0;
	for (uint8_t i = 0; i < f.n; i++) {
		char c = f.s[i];
		if (!is_digit(c))
			return MALFORMED;
		v = v < 1000000UL ? v * 10 + (uint32_t)(c - '0') : HUGE_NUM;
	}
	return v;
}

enum { W_BAD, W_DASH, W_NUM };

/*
 * A width field: '-' (W_DASH) or a number of ticks (W_NUM, *ticks saturated
 * at 0xFFFF; 0 is a well-formed width of 0 us, out of every range); anything
 * else (a version 1 "1450.5" too) is W_BAD.
 */
static uint8_t parse_width(field_t f, uint16_t *ticks)
{
	if (f.n == 1 && f.s[0] == '-')
		return W_DASH;
	uint32_t v = parse_uint(f);
	if (v == MALFORMED)
		return W_BAD;
	*ticks = v < 0xFFFFUL ? (uint16_t)v : 0xFFFF;
	return W_NUM;
}

static int8_t hexval(char c)
{
	if (c >= '0' && c <= '9')
		return (int8_t)(c - '0');
	if (c >= 'A' && c <= 'F')
		return (int8_t)(c - 'A' + 10);
	if (c >= 'a' && c <= 'f')
		return (int8_t)(c - 'a' + 10);
	return -1;
}

/* ---------------------------------------------------------- commands */

static void cmd_H(proto_t *p, uint8_t seq)
{
	outline_t o;
	PROTO_CRIT_BEGIN();
	p->expect = (uint8_t)(seq + 1);
	p->synced = 1;
	PROTO_CRIT_END();
	o_begin(&o, seq, 'H');
	o_sp(&o);
	o_str(&o, p->fw_name);
	o_sp(&o);
	o_u32(&o, PROTO_VERSION);
	o_sp(&o);
	o_u32(&o, PROTO_NCH);
	o_sp(&o);
	o_u32(&o, PROTO_DEPTH);
	o_sp(&o);
	o_u32(&o, PROTO_FRAME_US);
	o_sp(&o);
	o_hex(&o, p->boot, 4);
	for (uint8_t ch = 0; ch < PROTO_NCH; ch++) {
		o_sp(&o);
		o_width(&o, p->lo[ch]);
		o_ch(&o, ':');
		o_width(&o, p->hi[ch]);
	}
	o_send(p, &o);
}

static void cmd_Q(proto_t *p, uint8_t seq)
{
	uint32_t frame, left;
	uint8_t expect, free_, mask;
	uint16_t out[PROTO_NCH];
	PROTO_CRIT_BEGIN();
	frame = p->frame;
	expect = p->expect;
	free_ = proto_free(p);
	mask = p->mask;
	memcpy(out, p->out, sizeof(out));
	left = 0;
	for (uint8_t k = 0; k < p->q_len; k++)
		left += p->queue[(p->q_head + k) % PROTO_DEPTH].frames;
	if (p->cur_active)
		left += p->cur.frames - p->cur_done;
	PROTO_CRIT_END();

	outline_t o;
	o_begin(&o, seq, 'S');
	o_sp(&o);
	o_u32(&o, frame);
	o_expect_free(&o, expect, free_);
	o_sp(&o);
	o_hexmin(&o, mask);
	for (uint8_t ch = 0; ch < PROTO_NCH; ch++) {
		o_sp(&o);
		o_width(&o, out[ch]);
	}
	o_sp(&o);
	o_u32(&o, left);
	for (uint8_t k = 0; k < PC_COUNT; k++) {
		o_sp(&o);
		o_u32(&o, p->count[k]);
	}
	o_sp(&o);
	o_hex(&o, p->boot, 4);
	o_send(p, &o);
}

static void cmd_X(proto_t *p, uint8_t seq)
{
	PROTO_CRIT_BEGIN();
	flush_moves(p);
	/* hold what this frame outputs; a channel disabled during this frame
	 * still outputs its last pulse, but it has forgotten its width */
	for (uint8_t ch = 0; ch < PROTO_NCH; ch++)
		p->width[ch] = (p->mask >> ch & 1) ? p->out[ch] : 0;
	snap(p);
	PROTO_CRIT_END();
	send_ack(p, seq);
}

/* sequenced commands return a reject reason or NULL; argv/argc are the arguments */

static const char *cmd_M(proto_t *p, const field_t *a, uint8_t argc)
{
	if (argc != 1 + PROTO_NCH)
		return "ARG";
	/* every argument is parsed (ARG) before any range is checked (RANGE, OFF) */
	uint32_t frames = parse_uint(a[0]);
	if (frames == MALFORMED)
		return "ARG";
	proto_move_t m;
	uint8_t given = 0;
	for (uint8_t ch = 0; ch < PROTO_NCH; ch++) {
		uint8_t kind = parse_width(a[1 + ch], &m.ends[ch]);
		if (kind == W_BAD)
			return "ARG";
		if (kind == W_NUM)
			given |= (uint8_t)(1u << ch);
		else
			m.ends[ch] = 0;
	}
	if (frames < 1 || frames > 65535)
		return "RANGE";
	m.frames = (uint16_t)frames;
	const char *why = NULL;
	PROTO_CRIT_BEGIN();
	/* channel by channel from 0: the first channel at fault names the reason */
	for (uint8_t ch = 0; ch < PROTO_NCH && !why; ch++) {
		uint16_t e = m.ends[ch];
		if (!(given >> ch & 1))
			continue;
		if (!(p->mask >> ch & 1))
			why = "OFF";
		else if (e < p->lo[ch] || e > p->hi[ch])
			why = "RANGE"; /* a width of 0 too: lo is at least 500 us */
	}
	if (!why) { /* every end is now in range, so not 0: 0 in the queue means '-' */
		p->queue[(p->q_head + p->q_len) % PROTO_DEPTH] = m;
		p->q_len++;
	}
	p->expect++;
	snap(p);
	PROTO_CRIT_END();
	return why;
}

/* a hex number (the enable mask): "0" or no leading zero, any length; MALFORMED if not, saturated */
static uint32_t parse_hex(field_t f)
{
	if (!f.n || (f.s[0] == '0' && f.n > 1))
		return MALFORMED;
	uint32_t v = 0;
	for (uint8_t i = 0; i < f.n; i++) {
		int8_t h = hexval(f.s[i]);
		if (h < 0)
			return MALFORMED;
		v = v < 0x100000UL ? v << 4 | (uint8_t)h : HUGE_NUM;
	}
	return v;
}

static const char *cmd_E(proto_t *p, const field_t *a, uint8_t argc)
{
	if (argc != 1)
		return "ARG";
	uint32_t mask = parse_hex(a[0]);
	if (mask == MALFORMED)
		return "ARG";
	if (mask >> PROTO_NCH)
		return "RANGE";
	/* A disabled channel forgets its width, and every move forgets its
	 * number for it: no pulse on it until a move accepted after it is
	 * enabled again gives it one (section 3). */
	{
		PROTO_CRIT_BEGIN();
		for (uint8_t ch = 0; ch < PROTO_NCH; ch++) {
			if (mask >> ch & 1)
				continue;
			p->width[ch] = 0;
			p->cur.ends[ch] = 0;
			p->cur_start[ch] = 0;
		}
		p->mask = (uint8_t)mask;
		p->expect++;
		snap(p);
		PROTO_CRIT_END();
	}
	/* The queue one move at a time, so interrupts wait at most one move's
	 * worth (the edge interrupt starts 100 us early, not more); a move the
	 * frame interrupt starts meanwhile is cleared there (proto_boundary). */
	for (uint8_t k = 0; k < PROTO_DEPTH; k++) {
		PROTO_CRIT_BEGIN();
		for (uint8_t ch = 0; ch < PROTO_NCH; ch++)
			if (!(mask >> ch & 1))
				p->queue[k].ends[ch] = 0;
		PROTO_CRIT_END();
	}
	return NULL;
}

static const char *cmd_W(proto_t *p, const field_t *a, uint8_t argc, uint32_t now)
{
	if (argc != 2 || a[1].n != 1 || (a[1].s[0] != 'H' && a[1].s[0] != 'O'))
		return "ARG";
	uint32_t ms = parse_uint(a[0]);
	if (ms == MALFORMED)
		return "ARG";
	if (ms != 0 && (ms < 20 || ms > 65535))
		return "RANGE";
	p->wd_ms = (uint16_t)ms;
	p->wd_mode = (uint8_t)a[1].s[0];
	p->wd_armed = 0;
	watchdog_restart(p, now);
	return NULL;
}

static const char *cmd_L(proto_t *p, const field_t *a, uint8_t argc)
{
	if (argc != 3)
		return "ARG";
	uint32_t ch = parse_uint(a[0]);
	uint16_t lo, hi;
	if (ch == MALFORMED || parse_width(a[1], &lo) != W_NUM || parse_width(a[2], &hi) != W_NUM)
		return "ARG";
	if (ch >= PROTO_NCH || lo < PROTO_LIMIT_MIN || lo >= hi || hi > PROTO_LIMIT_MAX)
		return "RANGE";
	const char *why = NULL;
	PROTO_CRIT_BEGIN();
	/* the channel's width, every queued end and the executing move's end must fit */
	uint16_t w = p->width[ch];
	if (w && (w < lo || w > hi))
		why = "RANGE";
	for (uint8_t k = 0; k < p->q_len && !why; k++) {
		w = p->queue[(p->q_head + k) % PROTO_DEPTH].ends[ch];
		if (w && (w < lo || w > hi))
			why = "RANGE";
	}
	w = p->cur_active ? p->cur.ends[ch] : 0;
	if (!why && w && (w < lo || w > hi))
		why = "RANGE";
	if (!why) {
		p->lo[ch] = lo;
		p->hi[ch] = hi;
	}
	p->expect++;
	snap(p);
	PROTO_CRIT_END();
	if (!why && p->on_limits)
		p->on_limits((uint8_t)ch, lo, hi); /* persist (EEPROM: ~20 ms, outside the critical section) */
	return why;
}

/* ------------------------------------------------------- one line */

/* Section 4: one complete line without its '\n' (and without one '\r'). Not
 * inlined into proto_feed: its 200-byte frame and saved registers would be set
 * up for every received byte, not once a line. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void handle_line(proto_t *p, const char *s, uint8_t n, uint32_t now)
{
	/* 2. the checksum: " *XXXX" at the very end */
	int16_t star = -1;
	for (int16_t i = (int16_t)n - 1; i >= 0; i--)
		if (s[i] == '*') {
			star = i;
			break;
		}
	uint16_t want = 0;
	uint8_t ok = star >= 1 && n - star == 5 && s[star - 1] == ' ';
	for (uint8_t i = 1; ok && i <= 4; i++) {
		int8_t h = hexval(s[star + i]);
		if (h < 0)
			ok = 0;
		want = (uint16_t)(want << 4 | (uint8_t)h);
	}
	if (!ok || proto_crc16(s, (uint8_t)star) != want) {
		p->count[PC_CRC]++;
		send_nak(p, "CRC");
		return;
	}
	watchdog_restart(p, now); /* any line with a good CRC, duplicates too */

	/* split the body (it ends with the space before '*') into fields */
	field_t f[MAXF];
	uint8_t nf = 0, bad = 0, start = 0;
	for (uint8_t i = 0; i < (uint8_t)star; i++) {
		if ((uint8_t)s[i] >= 0x80)
			bad = 1; /* not ASCII */
		if (s[i] != ' ')
			continue;
		if (i == start)
			bad = 1; /* empty field */
		if (nf < MAXF)
			f[nf].s = s + start, f[nf].n = (uint8_t)(i - start);
		nf++;
		start = (uint8_t)(i + 1);
	}
	/* 3. a readable head */
	if (bad || nf < 2) {
		send_reject(p, -1, "ARG");
		return;
	}
	uint32_t seq32 = parse_uint(f[0]);
	if (seq32 > 255) { /* MALFORMED too */
		send_reject(p, -1, "ARG");
		return;
	}
	uint8_t seq = (uint8_t)seq32;
	char kind = f[1].n == 1 ? f[1].s[0] : 0;
	if (!kind || !strchr("HQXMEWL", kind)) {
		send_reject(p, seq, "CMD");
		return;
	}
	uint8_t argc = nf - 2;
	if (argc > MAXF - 2)
		argc = MAXF - 1; /* more fields than any command takes: wrong count */
	/* 4. immediate commands */
	if (kind == 'H' || kind == 'Q' || kind == 'X') {
		if (argc)
			send_reject(p, seq, "ARG");
		else if (kind == 'H')
			cmd_H(p, seq);
		else if (kind == 'Q')
			cmd_Q(p, seq);
		else
			cmd_X(p, seq);
		return;
	}
	/* 5. sequenced commands need a handshake first */
	if (!p->synced) {
		send_nak(p, "SYNC");
		return;
	}
	/* 6. order */
	uint8_t d = (uint8_t)(p->expect - seq);
	if (d > 128) {
		p->count[PC_SEQ]++;
		send_nak(p, "SEQ");
		return;
	}
	if (d >= 1) {
		p->count[PC_DUP]++;
		snap_now(p);
		send_ack(p, seq);
		return;
	}
	if (kind == 'M' && !proto_free(p)) {
		p->count[PC_FULL]++;
		send_nak(p, "FULL");
		return;
	}
	const char *why;
	uint8_t before = p->expect;
	if (kind == 'M')
		why = cmd_M(p, f + 2, argc);
	else if (kind == 'E')
		why = cmd_E(p, f + 2, argc);
	else if (kind == 'W')
		why = cmd_W(p, f + 2, argc, now);
	else
		why = cmd_L(p, f + 2, argc);
	if (p->expect == before) { /* rejected before reaching its critical section */
		PROTO_CRIT_BEGIN();
		p->expect++; /* the number is used up, executed or rejected */
		snap(p);
		PROTO_CRIT_END();
	}
	if (why)
		send_reject_snapped(p, seq, why);
	else
		send_ack(p, seq);
}

void proto_feed(proto_t *p, uint8_t b, uint32_t now)
{
	if (b == '\n') {
		uint8_t n = p->len;
		p->len = 0;
		if (p->discarding) {
			p->discarding = 0;
			p->count[PC_LONG]++;
			send_nak(p, "LONG");
			return;
		}
		if (n && p->line[n - 1] == '\r')
			n--;
		if (n)
			handle_line(p, p->line, n, now);
		return;
	}
	if (p->discarding)
		return;
	p->line[p->len++] = (char)b;
	if (p->len >= PROTO_HOST_LINE_MAX) { /* no room left for the '\n' */
		p->len = 0;
		p->discarding = 1;
	}
}
