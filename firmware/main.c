/*
 * armctl firmware for the Arduino Uno (ATmega328P, 16 MHz): the hardware side.
 *
 * - UART0 at 115200 baud (U2X, UBRR 16), interrupt driven, with receive and
 *   transmit rings; the protocol (proto.c, version 2) runs in the main loop.
 * - Timer2 makes the 20 ms frame boundaries; Timer1 (counting CPU cycles)
 *   times the pulse edges. Widths arrive in 0.5 us ticks (8 cycles) and
 *   every edge is placed to the exact cycle.
 * - 8 channels: 0-3 on D9-D12 (PB1-PB4, as in version 1), 4-6 on D5-D7
 *   (PD5-PD7), 7 on D8 (PB0). Not D13: the bootloader blinks its LED at
 *   reset, which a servo would take for pulses.
 * - Two lanes of four channels pulse side by side: in each lane the channels
 *   that have a width pulse one after another, the falling edge of one and
 *   the rising edge of the next being one port write. Lane A (channels 0-3)
 *   starts 1.5 ms after the boundary; lane B (4-7) starts with it, shifted
 *   later just enough that each of its edges either falls on one of lane A's
 *   (one write sets both) or lies at least EDGE_GAP away, so every edge gets
 *   its own exact interrupt. One lane of 8 would not fit the frame: 1.5 ms +
 *   8 x 2.5 ms > 20 ms (docs/protocol.md, "Channels on an Uno").
 * - Widths change only at frame boundaries: proto_boundary() computes the
 *   frame's widths inside the boundary interrupt, before its first edge.
 * - The AVR's hardware watchdog (500 ms) resets a hung firmware; the boot id
 *   in EEPROM is incremented at every start so the host notices any reset.
 */
#include <avr/eeprom.h>
#include <avr/interrupt.h>
#include <avr/io.h>
#include <avr/wdt.h>
#include <stdint.h>

#include "proto.h"
#ifdef ARMCTL_PCA9685
#include "pca9685.h"
#endif

#define BAUD_UBRR 16          /* 115200 baud with U2X at 16 MHz (2.1% fast, like the Arduino core) */

#ifndef ARMCTL_PCA9685
/* each channel's pin: a bit in PORTB or in PORTD */
static const uint8_t CH_PB[PROTO_NCH] = { _BV(PB1), _BV(PB2), _BV(PB3), _BV(PB4), 0, 0, 0, _BV(PB0) };
static const uint8_t CH_PD[PROTO_NCH] = { 0, 0, 0, 0, _BV(PD5), _BV(PD6), _BV(PD7), 0 };
#define PB_CH_MASK (_BV(PB0) | _BV(PB1) | _BV(PB2) | _BV(PB3) | _BV(PB4))
#define PD_CH_MASK (_BV(PD5) | _BV(PD6) | _BV(PD7))
#define LANE 4                /* channels per lane: 0-3 (A) and 4-7 (B) */
#endif

static proto_t P;

/* ------------------------------------------------------------ UART */

#define RX_SIZE 128
#define TX_SIZE 256
static volatile uint8_t rx_buf[RX_SIZE];
static volatile uint8_t rx_head, rx_tail;
static volatile uint8_t tx_buf[TX_SIZE];
static volatile uint8_t tx_head, tx_tail;

ISR(USART_RX_vect)
{
	uint8_t status = UCSR0A; /* the status must be read before the data */
	uint8_t b = UDR0;
	uint8_t next = (uint8_t)((rx_head + 1) % RX_SIZE);
	if (status & (_BV(FE0) | _BV(DOR0)))
		b = 0xFF; /* a damaged byte: keep its place so the line's CRC fails */
	if (next != rx_tail) {
		rx_buf[rx_head] = b;
		rx_head = next;
	}
	/* a full ring drops the byte: the line's CRC fails and the host resends */
}

ISR(USART_UDRE_vect)
{
	if (tx_head == tx_tail) {
		UCSR0B &= (uint8_t)~_BV(UDRIE0);
		return;
	}
	UDR0 = tx_buf[tx_tail];
	tx_tail = (uint8_t)(tx_tail + 1); /* TX_SIZE is 256: wraps by itself */
}

static void uart_emit(const char *s, uint8_t n)
{
	while (n--) {
		uint8_t next = (uint8_t)(tx_head + 1);
		while (next == tx_tail)
			wdt_reset(); /* ring full: wait for the UDRE interrupt to drain it */
		tx_buf[tx_head] = (uint8_t)*s++;
		tx_head = next;
		UCSR0B |= _BV(UDRIE0);
	}
}

static void uart_init(void)
{
	UBRR0H = 0;
	UBRR0L = BAUD_UBRR;
	UCSR0A = _BV(U2X0);
	UCSR0C = _BV(UCSZ01) | _BV(UCSZ00); /* 8N1 */
	UCSR0B = _BV(RXEN0) | _BV(TXEN0) | _BV(RXCIE0);
}

/* ---------------------------------------------------------- pulses */

/*
 * Frames: Timer2 in CTC mode at clk/256 with TOP 249 interrupts every 4 ms;
 * every 5th is a 20 ms frame boundary. Its registers are never written
 * after start, so the frame clock never drifts.
 *
 * Edges: Timer1 counts CPU cycles (clk/1) and is restarted from 0 at the
 * boundary and right after every edge, so it never overflows while edges
 * are pending and every edge is timed from the previous one. Compare A
 * fires EDGE_LEAD cycles early; the handler polls TCNT1 up to the target,
 * measures how late it is (0..SLED cycles) and waits out the rest, so the
 * port writes land a fixed number of cycles after the target whatever the
 * interrupt latency: widths are exact to the cycle (1/16 us). An edge writes
 * both ports, PORTB then PORTD one cycle later, every time: a channel's
 * rising and falling edges come from the same write, so its width is exact.
 */
#define T2_PERIODS 5u         /* 5 x 4 ms = 20 ms */
static volatile uint8_t t2_period;            /* 4 ms periods since the last boundary */
static volatile uint32_t frame_start_ticks;   /* 0.5 us ticks since boot at the last boundary */

#ifndef ARMCTL_PCA9685
#define CYCLES_PER_TICK 8u    /* protocol ticks are 0.5 us */
#define FIRST_EDGE 24000u     /* cycles after the boundary: 1.5 ms to compute the frame */
#define EDGE_LEAD 1600u       /* cycles: compare A fires 100 us before the edge */
#define SLED 16u              /* lateness the edge handler absorbs, cycles */
/* cycles from the first port write to the Timer1 restart that follows it,
 * plus from the end of polling to the next port write (measured in simavr:
 * widths come out exact; real hardware may differ by a cycle, 0.06 us) */
#define EDGE_FIXED 32u
/* Ticks between an edge of lane B and one of lane A, unless they coincide:
 * the edge interrupt returns ~5 us after its write and the next one must be
 * armed EDGE_LEAD before its edge, so 125 us. */
#define EDGE_GAP 250u
#define MAX_EDGES (2 * (LANE + 1))

static volatile uint16_t edge_w[MAX_EDGES];   /* cycles from each edge to the next (minus EDGE_FIXED) */
static volatile uint8_t edge_pb[MAX_EDGES], edge_pd[MAX_EDGES]; /* channel pins high after each edge */
static volatile uint8_t edge_n, edge_k;
static volatile uint16_t edge_target;         /* TCNT1 value of the next edge */

/* One lane's pulses, back to back: edge k at t[k] ticks from the lane's start
 * raises ch[k] (k < n) and lowers the one before; edge n only lowers. */
typedef struct {
	uint16_t t[LANE + 1];
	uint8_t ch[LANE];
	uint8_t n;
} lane_t;

static void lane_build(lane_t *l, const uint16_t *w, uint8_t first_ch)
{
	uint16_t t = 0;
	l->n = 0;
	for (uint8_t k = 0; k < LANE; k++) {
		if (!w[first_ch + k])
			continue;
		l->t[l->n] = t;
		l->ch[l->n] = (uint8_t)(first_ch + k);
		t += w[first_ch + k];
		l->n++;
	}
	l->t[l->n] = t;
}

/*
 * Lane B's start (ticks after lane A's): the least offset at which none of
 * its edges lies within EDGE_GAP of one of lane A's without falling exactly
 * on it. Each move passes one pair of edges for good and moves less than
 * 2 * EDGE_GAP, and there are at most 5 x 5 pairs: the offset stays below
 * 50 * EDGE_GAP = 6.25 ms, so lane B ends by 1.5 + 6.25 + 4 x 2.5 = 17.75 ms.
 */
static uint16_t lane_offset(const lane_t *a, const lane_t *b)
{
	uint16_t off = 0;
	if (!a->n || !b->n)
		return 0;
	for (;;) {
		uint8_t moved = 0;
		for (uint8_t i = 0; i <= a->n; i++)
			for (uint8_t j = 0; j <= b->n; j++) {
				int32_t d = (int32_t)off + b->t[j] - a->t[i];
				if (d != 0 && d > -(int32_t)EDGE_GAP && d < (int32_t)EDGE_GAP) {
					off = (uint16_t)(off + EDGE_GAP - d);
					moved = 1;
				}
			}
		if (!moved)
			return off;
	}
}

/* The frame's edges, both lanes merged in time order, into edge_*; returns how many. */
static uint8_t frame_edges(const uint16_t *w)
{
	lane_t a, b;
	lane_build(&a, w, 0);
	lane_build(&b, w, LANE);
	uint16_t off = lane_offset(&a, &b);
	uint8_t i = 0, j = 0, n = 0, hi_a = 0xFF, hi_b = 0xFF;
	uint8_t ia = a.n ? a.n + 1 : 0, jb = b.n ? b.n + 1 : 0; /* edges per lane */
	uint16_t prev = 0;
	while (i < ia || j < jb) {
		uint16_t ta = i < ia ? a.t[i] : 0xFFFF;
		uint16_t tb = j < jb ? (uint16_t)(off + b.t[j]) : 0xFFFF;
		uint16_t t = ta < tb ? ta : tb;
		if (ta == t) {
			hi_a = i < a.n ? a.ch[i] : 0xFF;
			i++;
		}
		if (tb == t) {
			hi_b = j < b.n ? b.ch[j] : 0xFF;
			j++;
		}
		uint8_t pb = 0, pd = 0;
		if (hi_a != 0xFF)
			pb |= CH_PB[hi_a], pd |= CH_PD[hi_a];
		if (hi_b != 0xFF)
			pb |= CH_PB[hi_b], pd |= CH_PD[hi_b];
		edge_pb[n] = pb;
		edge_pd[n] = pd;
		if (n) /* edges at most 2.5 ms apart (a width, or EDGE_GAP): fits 16 bits of cycles */
			edge_w[n - 1] = (uint16_t)((t - prev) * CYCLES_PER_TICK - EDGE_FIXED);
		prev = t;
		n++;
	}
	return n;
}

#endif

ISR(TIMER2_COMPA_vect)
{
	if (++t2_period < T2_PERIODS)
		return;
	t2_period = 0;
	TCNT1 = 0; /* edges of this frame count from here */
	TIMSK1 = 0;
	frame_start_ticks += PROTO_FRAME_TICKS;
	/* Compute the frame with interrupts on so the UART keeps running; no
	 * edge is pending between frames, and the main loop cannot run until
	 * this handler returns. */
	sei();
	proto_boundary(&P);
#ifdef ARMCTL_PCA9685
	pca9685_frame(P.out); /* the main loop writes it to the chip */
}
#else
	uint16_t w[PROTO_NCH];
	for (uint8_t ch = 0; ch < PROTO_NCH; ch++)
		w[ch] = P.out[ch];
	uint8_t n = frame_edges(w);
	cli();

	if (!n)
		return;
	edge_n = n;
	edge_k = 0;
	uint16_t first = FIRST_EDGE;
	if (TCNT1 > first - EDGE_LEAD - 200) /* the computation ran long: start later, widths unchanged */
		first = TCNT1 + EDGE_LEAD + 400;
	edge_target = first;
	OCR1A = first - EDGE_LEAD;
	TIFR1 = _BV(OCF1A);
	TIMSK1 = _BV(OCIE1A);
}

/* One edge: the port writes that end one pulse and start the next of each
 * lane that has an edge here (the other lane's pins are written unchanged). */
ISR(TIMER1_COMPA_vect)
{
	uint8_t k = edge_k;
	if (k >= edge_n) {
		TIMSK1 = 0;
		return;
	}
	uint16_t t = edge_target;
	uint8_t vb = (uint8_t)((PORTB & (uint8_t)~PB_CH_MASK) | edge_pb[k]);
	uint8_t vd = (uint8_t)((PORTD & (uint8_t)~PD_CH_MASK) | edge_pd[k]);
	while (TCNT1 < t)
		;
	uint8_t late = (uint8_t)(TCNT1L - (uint8_t)t);
	if (late > SLED)
		late = SLED; /* only if this handler started too late: the edge is late */
	/* skip `late` of SLED nops, write the ports, restart Timer1: all at a
	 * fixed number of cycles after TCNT1 reached t */
	__asm__ __volatile__(
		"ldi r30, lo8(pm(1f))\n\t"
		"ldi r31, hi8(pm(1f))\n\t"
		"add r30, %[late]\n\t"
		"adc r31, __zero_reg__\n\t"
		"ijmp\n\t"
		"1:\n\t"
		"nop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\t"
		"nop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\t"
		"out %[portb], %[vb]\n\t"
		"out %[portd], %[vd]\n\t"
		"sts %[tcnth], __zero_reg__\n\t"
		"sts %[tcntl], __zero_reg__\n\t"
		:
		: [late] "r"(late), [portb] "I"(_SFR_IO_ADDR(PORTB)), [vb] "r"(vb), [portd] "I"(_SFR_IO_ADDR(PORTD)),
		  [vd] "r"(vd), [tcnth] "n"(_SFR_MEM_ADDR(TCNT1H)), [tcntl] "n"(_SFR_MEM_ADDR(TCNT1L))
		: "r30", "r31");
	if (k + 1 < edge_n) {
		uint16_t next = edge_w[k];
		edge_target = next;
		OCR1A = next - EDGE_LEAD;
		edge_k = (uint8_t)(k + 1);
	} else {
		edge_k = edge_n;
		TIMSK1 = 0;
	}
}

#endif /* ARMCTL_PCA9685 */

static void timer_init(void)
{
#ifndef ARMCTL_PCA9685
	PORTB &= (uint8_t)~PB_CH_MASK;
	PORTD &= (uint8_t)~PD_CH_MASK;
	DDRB |= PB_CH_MASK;
	DDRD |= PD_CH_MASK;
	/* Timer1: normal mode, clk/1, compare A enabled per frame */
	TCCR1A = 0;
	TIMSK1 = 0;
	TCNT1 = 0;
	TCCR1B = _BV(CS10);
#endif
	/* Timer2: CTC, TOP 249, clk/256: a compare A interrupt every 4 ms */
	TCCR2A = _BV(WGM21);
	OCR2A = 249;
	TCNT2 = 0;
	TIFR2 = _BV(OCF2A);
	TIMSK2 = _BV(OCIE2A);
	t2_period = 0;
	TCCR2B = _BV(CS22) | _BV(CS21);
}

/* 0.5 us ticks since boot, 16 us resolution (wraps after 35 minutes; only differences are used) */
static uint32_t now_ticks(void)
{
	uint8_t sreg = SREG;
	cli();
	uint8_t pending = TIFR2 & _BV(OCF2A);
	uint8_t tc = TCNT2;
	if (!pending && (TIFR2 & _BV(OCF2A))) { /* the period ended just now */
		pending = 1;
		tc = TCNT2;
	}
	uint8_t per = t2_period;
	uint32_t base = frame_start_ticks;
	SREG = sreg;
	if (pending) /* its interrupt has not run yet */
		per++;
	return base + (uint32_t)per * 8000u + (uint32_t)tc * 32u;
}

/* ------------------------------------------------------------ main */

static uint16_t next_boot_id(void)
{
	uint16_t *addr = (uint16_t *)0;
	uint16_t id = (uint16_t)(eeprom_read_word(addr) + 1);
	eeprom_update_word(addr, id);
	return id;
}

/*
 * Per-channel limits in EEPROM (issue 6): from byte 16, per channel the
 * words lo, hi (ticks) and a check word lo ^ hi ^ LIMITS_CHECK, written in
 * that order, so a record cut short by a power loss fails its check and the
 * channel boots at the 500..2500 us defaults (which the host then replaces).
 */
#define LIMITS_EEPROM ((uint16_t *)16)
#define LIMITS_CHECK 0xA5C3u

static void store_limits(uint8_t ch, uint16_t lo, uint16_t hi)
{
	uint16_t *a = LIMITS_EEPROM + 3 * ch;
	eeprom_update_word(a + 2, 0); /* invalid while the record changes */
	eeprom_update_word(a, lo);
	eeprom_update_word(a + 1, hi);
	eeprom_update_word(a + 2, (uint16_t)(lo ^ hi ^ LIMITS_CHECK));
}

static void load_limits(void)
{
	for (uint8_t ch = 0; ch < PROTO_NCH; ch++) {
		uint16_t *a = LIMITS_EEPROM + 3 * ch;
		uint16_t lo = eeprom_read_word(a), hi = eeprom_read_word(a + 1);
		if (eeprom_read_word(a + 2) == (uint16_t)(lo ^ hi ^ LIMITS_CHECK))
			proto_restore_limits(&P, ch, lo, hi);
	}
	P.on_limits = store_limits;
}

int main(void)
{
	MCUSR = 0;
	wdt_disable();
	proto_init(&P, next_boot_id(), uart_emit);
	load_limits();
#ifdef ARMCTL_PCA9685
	/* before the first frame: what the chip outputs becomes the board's widths; no chip answering: the
	 * handshake says so (the host refuses the board, protocol.md section 11) */
	if (!pca9685_init(&P))
		P.fw_name = PROTO_FW_NAME "-nochip";
#endif
	uart_init();
	timer_init();
	wdt_enable(WDTO_500MS);
	sei();
	proto_banner(&P);

	for (;;) {
		wdt_reset();
#ifdef ARMCTL_PCA9685
		pca9685_poll();
#endif
		uint32_t now = now_ticks();
		/* the watchdog first: a deadline at or before the bytes' arrival fires before they are
		 * handled (and restart it), as in the simulator's board (Board.receive) */
		proto_poll(&P, now);
		while (rx_tail != rx_head) {
			uint8_t b = rx_buf[rx_tail];
			rx_tail = (uint8_t)((rx_tail + 1) % RX_SIZE);
			proto_feed(&P, b, now);
		}
	}
}
