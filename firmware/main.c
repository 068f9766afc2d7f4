/*
 * armctl firmware for the Arduino Uno (ATmega328P, 16 MHz): the hardware side.
 *
 * - UART0 at 115200 baud (U2X, UBRR 16), interrupt driven, with receive and
 *   transmit rings; the protocol (proto.c) runs in the main loop.
 * - Timer2 makes the 20 ms frame boundaries; Timer1 (counting CPU cycles)
 *   times the pulse edges. Widths arrive in 0.5 us ticks (8 cycles) and
 *   every edge is placed to the exact cycle.
 * - Channels 0-3 are Arduino pins D9-D12 (PB1-PB4). In each frame the
 *   channels that have a width pulse one after another, starting 1.5 ms
 *   after the boundary; the falling edge of one and the rising edge of the
 *   next are a single write to PORTB.
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

#define BAUD_UBRR 16          /* 115200 baud with U2X at 16 MHz (2.1% fast, like the Arduino core) */
#define CH_PORT PORTB
#define CH_DDR DDRB
#define CH_SHIFT 1            /* channel 0 = PB1 = D9 ... channel 3 = PB4 = D12 */
#define CH_MASK (((1 << PROTO_NCH) - 1) << CH_SHIFT)

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
 * port write lands a fixed number of cycles after the target whatever the
 * interrupt latency: widths are exact to the cycle (1/16 us).
 */
#define CYCLES_PER_TICK 8u    /* protocol ticks are 0.5 us */
#define T2_PERIODS 5u         /* 5 x 4 ms = 20 ms */
#define FIRST_EDGE 24000u     /* cycles after the boundary: 1.5 ms to compute the frame */
#define EDGE_LEAD 1600u       /* cycles: compare A fires 100 us before the edge */
#define SLED 16u              /* lateness the edge handler absorbs, cycles */
/* cycles from one port write to the Timer1 restart that follows it, plus
 * from the end of polling to the next port write (measured in simavr:
 * widths come out exact; real hardware may differ by a cycle, 0.06 us) */
#define EDGE_FIXED 31u

static volatile uint16_t edge_w[PROTO_NCH];   /* cycles from each edge to the next */
static volatile uint8_t edge_pat[PROTO_NCH + 1];
static volatile uint8_t edge_n, edge_k;
static volatile uint16_t edge_target;         /* TCNT1 value of the next edge */
static volatile uint8_t t2_period;            /* 4 ms periods since the last boundary */
static volatile uint32_t frame_start_ticks;   /* 0.5 us ticks since boot at the last boundary */

ISR(TIMER2_COMPA_vect)
{
	if (++t2_period < T2_PERIODS)
		return;
	t2_period = 0;
	TCNT1 = 0; /* edges of this frame count from here */
	frame_start_ticks += PROTO_FRAME_TICKS;
	/* Compute the frame with interrupts on so the UART keeps running; no
	 * edge is pending between frames, and the main loop cannot run until
	 * this handler returns. */
	sei();
	proto_boundary(&P);
	uint16_t w[PROTO_NCH];
	for (uint8_t ch = 0; ch < PROTO_NCH; ch++)
		w[ch] = P.out[ch];
	cli();

	uint8_t n = 0;
	for (uint8_t ch = 0; ch < PROTO_NCH; ch++) {
		if (!w[ch])
			continue;
		edge_w[n] = (uint16_t)(w[ch] * CYCLES_PER_TICK - EDGE_FIXED);
		edge_pat[n] = (uint8_t)(1 << (ch + CH_SHIFT));
		n++;
	}
	if (!n)
		return;
	edge_pat[n] = 0; /* the last falling edge */
	edge_n = (uint8_t)(n + 1);
	edge_k = 0;
	uint16_t first = FIRST_EDGE;
	if (TCNT1 > first - EDGE_LEAD - 200) /* the computation ran long: start later, widths unchanged */
		first = TCNT1 + EDGE_LEAD + 400;
	edge_target = first;
	OCR1A = first - EDGE_LEAD;
	TIFR1 = _BV(OCF1A);
	TIMSK1 = _BV(OCIE1A);
}

/* One pulse edge: the falling edge of one channel and the rising edge of
 * the next are a single write to the port. */
ISR(TIMER1_COMPA_vect)
{
	uint8_t k = edge_k;
	if (k >= edge_n) {
		TIMSK1 = 0;
		return;
	}
	uint16_t t = edge_target;
	uint8_t val = (uint8_t)((CH_PORT & (uint8_t)~CH_MASK) | edge_pat[k]);
	while (TCNT1 < t)
		;
	uint8_t late = (uint8_t)(TCNT1L - (uint8_t)t);
	if (late > SLED)
		late = SLED; /* only if this handler started too late: the edge is late */
	/* skip `late` of SLED nops, write the port, restart Timer1: both at a
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
		"out %[port], %[val]\n\t"
		"sts %[tcnth], __zero_reg__\n\t"
		"sts %[tcntl], __zero_reg__\n\t"
		:
		: [late] "r"(late), [port] "I"(_SFR_IO_ADDR(CH_PORT)), [val] "r"(val),
		  [tcnth] "n"(_SFR_MEM_ADDR(TCNT1H)), [tcntl] "n"(_SFR_MEM_ADDR(TCNT1L))
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

static void timer_init(void)
{
	CH_PORT &= (uint8_t)~CH_MASK;
	CH_DDR |= CH_MASK;
	/* Timer1: normal mode, clk/1, compare A enabled per frame */
	TCCR1A = 0;
	TIMSK1 = 0;
	TCNT1 = 0;
	TCCR1B = _BV(CS10);
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
	uart_init();
	timer_init();
	wdt_enable(WDTO_500MS);
	sei();
	proto_banner(&P);

	for (;;) {
		wdt_reset();
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
