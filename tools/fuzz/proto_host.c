/*
 * The firmware's protocol core on the host with a virtual clock (see proto_host.h).
 */
#include "proto_host.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/* proto_host.h's state layout has PH_NCH channels: it must be the firmware's count */
typedef char ph_nch_is_proto_nch[PH_NCH == PROTO_NCH ? 1 : -1];

struct ph {
	proto_t p;
	uint64_t now;    /* ticks since boot */
	uint64_t frames; /* boundaries run (the firmware's counter is 32 bits) */
	char *out;
	size_t out_len, out_cap;
	char bad_line[160]; /* the first malformed line the board sent, if any */
	uint16_t stored[PROTO_NCH][2]; /* limits written to "EEPROM" (on_limits), 0 = never */
};

/* proto.c's emit callback has no context: the instance being driven */
static ph_t *g_cur;

static void set_why(char *why, size_t cap, const char *fmt, ...)
{
	if (!why || !cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
}

/* a board line: at most 128 bytes, printable ASCII, " *XXXX\n" with the CRC of what precedes '*' */
static int line_ok(const char *s, uint8_t n)
{
	if (n < 8 || n > PROTO_BOARD_LINE_MAX || s[n - 1] != '\n' || s[n - 7] != ' ' || s[n - 6] != '*')
		return 0;
	for (uint8_t i = 0; i + 1 < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7E)
			return 0;
	uint16_t want = 0;
	for (uint8_t i = 0; i < 4; i++) {
		char c = s[n - 5 + i];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (v < 0)
			return 0;
		want = (uint16_t)(want << 4 | v);
	}
	return proto_crc16(s, (uint8_t)(n - 6)) == want;
}

static void emit(const char *s, uint8_t n)
{
	ph_t *h = g_cur;
	if (!line_ok(s, n) && !h->bad_line[0])
		snprintf(h->bad_line, sizeof(h->bad_line), "%.*s", (int)(n < 120 ? n : 120), s);
	if (h->out_len + n > h->out_cap) {
		size_t cap = h->out_cap ? h->out_cap : 4096;
		while (cap < h->out_len + n)
			cap *= 2;
		char *grown = realloc(h->out, cap);
		if (!grown)
			abort();
		h->out = grown;
		h->out_cap = cap;
	}
	memcpy(h->out + h->out_len, s, n);
	h->out_len += n;
}

/* main.c's EEPROM write: here a record the invariants compare with the limits in use */
static void store_limits(uint8_t ch, uint16_t lo, uint16_t hi)
{
	g_cur->stored[ch][0] = lo;
	g_cur->stored[ch][1] = hi;
}

void ph_reset(ph_t *h, uint16_t boot)
{
	proto_init(&h->p, boot, emit);
	h->p.on_limits = store_limits;
	memset(h->stored, 0, sizeof(h->stored));
	h->now = 0;
	h->frames = 0;
	h->out_len = 0;
	h->bad_line[0] = 0;
}

ph_t *ph_new(uint16_t boot)
{
	ph_t *h = calloc(1, sizeof(*h));
	if (!h)
		abort();
	ph_reset(h, boot);
	return h;
}

void ph_free(ph_t *h)
{
	if (!h)
		return;
	free(h->out);
	free(h);
}

void ph_banner(ph_t *h)
{
	g_cur = h;
	proto_banner(&h->p);
}

void ph_advance(ph_t *h, uint64_t t)
{
	g_cur = h;
	for (;;) {
		uint64_t boundary = (h->frames + 1) * (uint64_t)PROTO_FRAME_TICKS;
		uint64_t deadline = h->p.wd_deadline; /* times stay below 2^31: no wrap */
		if (h->p.wd_armed && deadline <= t && deadline < boundary) {
			proto_poll(&h->p, (uint32_t)deadline);
		} else if (boundary <= t) {
			h->frames++;
			proto_boundary(&h->p);
		} else {
			break;
		}
	}
	if (t > h->now)
		h->now = t;
}

void ph_feed(ph_t *h, const uint8_t *data, size_t n, uint64_t t)
{
	ph_advance(h, t);
	g_cur = h;
	for (size_t i = 0; i < n; i++)
		proto_feed(&h->p, data[i], (uint32_t)h->now);
}

uint64_t ph_now(const ph_t *h) { return h->now; }

size_t ph_pending(const ph_t *h) { return h->out_len; }

size_t ph_take(ph_t *h, char *buf, size_t cap)
{
	size_t n = h->out_len < cap ? h->out_len : cap;
	memcpy(buf, h->out, n);
	memmove(h->out, h->out + n, h->out_len - n);
	h->out_len -= n;
	return n;
}

static uint32_t left_frames(const proto_t *p)
{
	uint32_t left = 0;
	for (uint8_t k = 0; k < p->q_len; k++)
		left += p->queue[(p->q_head + k) % PROTO_DEPTH].frames;
	if (p->cur_active)
		left += (uint32_t)(p->cur.frames - p->cur_done);
	return left;
}

void ph_state(const ph_t *h, int64_t *out, size_t n)
{
	int64_t s[PH_STATE_LEN];
	const proto_t *p = &h->p;
	s[PH_FRAME] = p->frame;
	s[PH_EXPECT] = p->expect;
	s[PH_FREE] = proto_free(p);
	s[PH_SYNCED] = p->synced;
	s[PH_MASK] = p->mask;
	for (int ch = 0; ch < PROTO_NCH; ch++) {
		s[PH_WIDTH0 + ch] = p->width[ch];
		s[PH_OUT0 + ch] = p->out[ch];
		s[PH_LO0 + ch] = p->lo[ch];
		s[PH_HI0 + ch] = p->hi[ch];
	}
	for (int k = 0; k < PC_COUNT; k++)
		s[PH_COUNT0 + k] = p->count[k];
	s[PH_LEFT] = left_frames(p);
	s[PH_WD_ARMED] = p->wd_armed;
	s[PH_WD_DEADLINE] = p->wd_armed ? (int64_t)p->wd_deadline : -1;
	s[PH_WD_MS] = p->wd_ms;
	s[PH_WD_MODE] = p->wd_mode;
	memcpy(out, s, (n < PH_STATE_LEN ? n : PH_STATE_LEN) * sizeof(int64_t));
}

int ph_check(const ph_t *h, char *why, size_t cap)
{
	const proto_t *p = &h->p;
	if (h->bad_line[0]) {
		set_why(why, cap, "the board sent a malformed line: %s", h->bad_line);
		return 1;
	}
	if (p->q_len > PROTO_DEPTH || p->q_head >= PROTO_DEPTH) {
		set_why(why, cap, "queue q_len %u q_head %u", p->q_len, p->q_head);
		return 1;
	}
	if (p->mask >> PROTO_NCH) {
		set_why(why, cap, "mask %X has bits above the channels", p->mask);
		return 1;
	}
	if (p->cur_active && (!p->cur.frames || p->cur_done > p->cur.frames)) {
		set_why(why, cap, "executing move at %u of %u frames", p->cur_done, p->cur.frames);
		return 1;
	}
	if (p->wd_armed && p->wd_ms < 20) {
		set_why(why, cap, "watchdog armed with %u ms", p->wd_ms);
		return 1;
	}
	for (int ch = 0; ch < PROTO_NCH; ch++) {
		uint16_t lo = p->lo[ch], hi = p->hi[ch];
		int on = p->mask >> ch & 1;
		if (lo < PROTO_LIMIT_MIN || lo >= hi || hi > PROTO_LIMIT_MAX) {
			set_why(why, cap, "channel %d limits %u..%u ticks", ch, lo, hi);
			return 1;
		}
		if (h->stored[ch][0] && (h->stored[ch][0] != lo || h->stored[ch][1] != hi)) {
			set_why(why, cap, "channel %d uses limits %u..%u ticks, stored %u..%u", ch, lo, hi, h->stored[ch][0],
				h->stored[ch][1]);
			return 1;
		}
		uint16_t w = p->width[ch];
		if (w && (!on || w < lo || w > hi)) {
			set_why(why, cap, "channel %d (%s) holds width %u ticks, limits %u..%u", ch, on ? "on" : "off", w, lo, hi);
			return 1;
		}
		uint16_t o = p->out[ch];
		if (o && (o < PROTO_LIMIT_MIN || o > PROTO_LIMIT_MAX)) {
			set_why(why, cap, "channel %d outputs %u ticks", ch, o);
			return 1;
		}
		/* a disabled channel: no move holds a number for it (protocol.md section 3, E) */
		uint16_t e = p->cur_active ? p->cur.ends[ch] : 0;
		if (p->cur_active && (p->cur_start[ch] && !e)) {
			set_why(why, cap, "channel %d has a start width but no end in the executing move", ch);
			return 1;
		}
		if (e && (!on || e < lo || e > hi)) {
			set_why(why, cap, "channel %d (%s): executing move ends at %u ticks, limits %u..%u", ch,
				on ? "on" : "off", e, lo, hi);
			return 1;
		}
		for (uint8_t k = 0; k < p->q_len; k++) {
			e = p->queue[(p->q_head + k) % PROTO_DEPTH].ends[ch];
			if (e && (!on || e < lo || e > hi)) {
				set_why(why, cap, "channel %d (%s): queued move %u ends at %u ticks, limits %u..%u", ch,
					on ? "on" : "off", k, e, lo, hi);
				return 1;
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------ scripts */

typedef struct {
	void (*feed)(void *ctx, const uint8_t *data, size_t n);
	void (*wait)(void *ctx, uint64_t ticks);
	void *ctx;
} sink_t;

static void put_crc_hex(uint8_t *dst, uint16_t crc)
{
	static const char HEX[] = "0123456789ABCDEF";
	for (int i = 0; i < 4; i++)
		dst[i] = (uint8_t)HEX[(crc >> (12 - 4 * i)) & 0xF];
}

static void decode(const uint8_t *in, size_t n, const sink_t *sink)
{
	uint16_t crc = 0xFFFF; /* of the line so far */
	uint64_t t = 0;
	size_t run = 0; /* start of the plain bytes not yet fed */
	size_t i = 0;
	while (i < n) {
		uint8_t b = in[i];
		if (b == 0x01 || b == 0x02) {
			if (i > run)
				sink->feed(sink->ctx, in + run, i - run);
			if (i + 1 >= n) {
				run = n;
				break;
			}
			uint64_t dt = (uint64_t)(in[i + 1] + 1) * (b == 0x01 ? 1000u : PROTO_FRAME_TICKS);
			if (t + dt > PH_T_MAX)
				dt = PH_T_MAX - t;
			if (dt) {
				t += dt;
				sink->wait(sink->ctx, dt);
			}
			i += 2;
			run = i;
		} else if (b == 0x03) {
			if (i > run)
				sink->feed(sink->ctx, in + run, i - run);
			uint8_t tail[7] = { ' ', '*', 0, 0, 0, 0, '\n' };
			put_crc_hex(tail + 2, proto_crc16_update(crc, ' '));
			sink->feed(sink->ctx, tail, sizeof(tail));
			crc = 0xFFFF;
			i++;
			run = i;
		} else {
			crc = b == '\n' ? 0xFFFF : proto_crc16_update(crc, b);
			i++;
		}
	}
	if (run < n)
		sink->feed(sink->ctx, in + run, n - run);
}

typedef struct {
	uint8_t *out;
	size_t cap, len;
} rec_t;

static void rec_put(rec_t *r, const void *data, size_t n)
{
	if (r->len + n <= r->cap)
		memcpy(r->out + r->len, data, n);
	r->len += n;
}

static void rec_feed(void *ctx, const uint8_t *data, size_t n)
{
	uint8_t head[5] = { 'F', (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24) };
	rec_put(ctx, head, sizeof(head));
	rec_put(ctx, data, n);
}

static void rec_wait(void *ctx, uint64_t ticks)
{
	uint8_t rec[9] = { 'W' };
	for (int k = 0; k < 8; k++)
		rec[1 + k] = (uint8_t)(ticks >> (8 * k));
	rec_put(ctx, rec, sizeof(rec));
}

size_t ph_decode(const uint8_t *script, size_t n, uint8_t *out, size_t cap)
{
	rec_t r = { out, cap, 0 };
	sink_t sink = { rec_feed, rec_wait, &r };
	decode(script, n, &sink);
	return r.len;
}

typedef struct {
	ph_t *h;
	char *why;
	size_t cap;
	int failed;
	unsigned op;
} run_t;

static void run_after(run_t *r)
{
	char why[200];
	if (!r->failed && ph_check(r->h, why, sizeof(why))) {
		r->failed = 1;
		set_why(r->why, r->cap, "after op %u (t = %llu ticks): %s", r->op, (unsigned long long)r->h->now, why);
	}
	r->op++;
}

static void run_feed(void *ctx, const uint8_t *data, size_t n)
{
	run_t *r = ctx;
	ph_feed(r->h, data, n, r->h->now);
	run_after(r);
}

static void run_wait(void *ctx, uint64_t ticks)
{
	run_t *r = ctx;
	ph_advance(r->h, r->h->now + ticks);
	run_after(r);
}

int ph_run(ph_t *h, const uint8_t *script, size_t n, char *why, size_t cap)
{
	run_t r = { h, why, cap, 0, 0 };
	sink_t sink = { run_feed, run_wait, &r };
	decode(script, n, &sink);
	return r.failed;
}
