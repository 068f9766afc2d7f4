/*
 * armctl firmware for the Arduino Uno (ATmega328P, 16 MHz): the hardware side.
 *
 * - UART0 at 115200 baud (U2X, UBRR 16), interrupt driven, with receive and
 *   transmit rings; the protocol (proto.c) runs in the main loop.
 * - Timer1 runs free at 16 MHz / 8 = 0.5 us ticks (normal mode, never
 *   reset). Compare B marks the 20 ms frame boundaries (OCR1B += 40000);
 *   compare A times the pulse edges.
 * - Channels 0-3 are Arduino pins D9-D12 (PB1-PB4). In each frame the
 *   channels that have a width pulse one after another, starting 1 ms after
 *   the boundary; the falling edge of one and the rising edge of the next
 *   are a single write to PORTB. Each edge is scheduled a little early
 *   (EDGE_LEAD) and then placed exactly by polling TCNT1, so interrupt
 *   latency does not change a width (error < 1 tick = 0.5 us).
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
#define FIRST_EDGE 2000u      /* ticks after the boundary: 1 ms to compute the frame */
#define EDGE_LEAD 100u        /* ticks: compare A fires 50 us before the edge */

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

static volatile uint16_t edge_t[PROTO_NCH + 1];
static volatile uint8_t edge_pat[PROTO_NCH + 1];
static volatile uint8_t edge_n, edge_k;
static volatile uint32_t frame_start_ticks; /* absolute tick count of the last boundary */

/* Frame boundary. Runs with interrupts enabled so the UART keeps receiving
 * while the frame's widths are computed; nothing else touches Timer1's
 * 16-bit registers while it runs (no edges are pending between frames, and
 * the main loop reads TCNT1 only with interrupts off). */
ISR(TIMER1_COMPB_vect, ISR_NOBLOCK)
{
	uint16_t b = OCR1B;
	OCR1B = b + (uint16_t)PROTO_FRAME_TICKS;
	frame_start_ticks += PROTO_FRAME_TICKS;
	proto_boundary(&P);

	uint16_t t = b + FIRST_EDGE;
	uint8_t n = 0;
	for (uint8_t ch = 0; ch < PROTO_NCH; ch++) {
		uint16_t w = P.out[ch];
		if (!w)
			continue;
		edge_t[n] = t;
		edge_pat[n] = (uint8_t)(1 << (ch + CH_SHIFT));
		n++;
		t += w;
	}
	if (!n)
		return;
	edge_t[n] = t; /* the last falling edge */
	edge_pat[n] = 0;
	cli();
	edge_n = (uint8_t)(n + 1);
	edge_k = 0;
	OCR1A = edge_t[0] - EDGE_LEAD;
	TIFR1 = _BV(OCF1A);
	TIMSK1 |= _BV(OCIE1A);
}

/* One pulse edge: wait for its exact tick, then switch the channel pins. */
ISR(TIMER1_COMPA_vect)
{
	uint8_t k = edge_k;
	if (k >= edge_n) {
		TIMSK1 &= (uint8_t)~_BV(OCIE1A);
		return;
	}
	uint16_t t = edge_t[k];
	uint8_t pat = edge_pat[k];
	uint8_t keep = CH_PORT & (uint8_t)~CH_MASK;
	while ((int16_t)(TCNT1 - t) < 0)
		;
	CH_PORT = keep | pat;
	edge_k = ++k;
	if (k < edge_n)
		OCR1A = edge_t[k] - EDGE_LEAD;
	else
		TIMSK1 &= (uint8_t)~_BV(OCIE1A);
}

static void timer_init(void)
{
	CH_PORT &= (uint8_t)~CH_MASK;
	CH_DDR |= CH_MASK;
	TCCR1A = 0;             /* normal mode: counts 0..0xFFFF and wraps */
	TCCR1B = 0;
	TCNT1 = 0;
	OCR1B = (uint16_t)PROTO_FRAME_TICKS; /* first boundary 20 ms after boot */
	TIFR1 = _BV(OCF1A) | _BV(OCF1B);
	TIMSK1 = _BV(OCIE1B);
	TCCR1B = _BV(CS11);     /* clk/8: 0.5 us ticks */
}

/* ticks since boot (wraps after 35 minutes; only differences are used) */
static uint32_t now_ticks(void)
{
	uint8_t sreg = SREG;
	cli();
	uint16_t tc = TCNT1;
	uint16_t last_b = OCR1B - (uint16_t)PROTO_FRAME_TICKS;
	uint32_t base = frame_start_ticks;
	/* a boundary that has passed but whose interrupt has not run yet */
	if (TIFR1 & _BV(OCF1B)) {
		tc = TCNT1;
		base += PROTO_FRAME_TICKS;
		last_b += (uint16_t)PROTO_FRAME_TICKS;
	}
	SREG = sreg;
	return base + (uint16_t)(tc - last_b);
}

/* ------------------------------------------------------------ main */

static uint16_t next_boot_id(void)
{
	uint16_t *addr = (uint16_t *)0;
	uint16_t id = (uint16_t)(eeprom_read_word(addr) + 1);
	eeprom_update_word(addr, id);
	return id;
}

int main(void)
{
	MCUSR = 0;
	wdt_disable();
	proto_init(&P, next_boot_id(), uart_emit);
	uart_init();
	timer_init();
	wdt_enable(WDTO_500MS);
	sei();
	proto_banner(&P);

	for (;;) {
		wdt_reset();
		uint32_t now = now_ticks();
		while (rx_tail != rx_head) {
			uint8_t b = rx_buf[rx_tail];
			rx_tail = (uint8_t)((rx_tail + 1) % RX_SIZE);
			proto_feed(&P, b, now);
		}
		proto_poll(&P, now);
	}
}
