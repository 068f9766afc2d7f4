/*
 * PCA9685 over the ATmega328P's TWI, polled (no interrupt), 400 kHz. Registers and rules: NXP
 * datasheet Rev. 4 (docs/pca9685.md): PRE_SCALE is written only in SLEEP, the oscillator needs
 * 500 us after waking, RESTART resumes the channels a sleep stopped, and with auto-increment (AI)
 * one transaction writes neighbouring channels, latched together at the STOP.
 */
#include <avr/io.h>
#include <avr/interrupt.h>
#include <avr/wdt.h>
#include <util/delay.h>

#include "pca9685.h"

#define MODE1 0x00
#define LED0 0x06
#define PRE_SCALE 0xFE
#define RESTART 0x80
#define AI 0x20
#define SLEEP 0x10
#define FULL 0x10

static uint8_t pca_start(proto_t *p);

static volatile uint16_t want[PROTO_NCH]; /* ticks, 0 = no pulses */
static volatile uint8_t due;
static uint16_t sent[PROTO_NCH];
static uint8_t ok;

/* ---- TWI master, bounded waits (a missing chip must not hang the firmware) ----
 * Each operation is started with TWIE set and ends when the TWI interrupt says TWINT rose; the
 * interrupt only masks itself (TWINT written 0 leaves the flag, which the next operation clears).
 * Polling TWINT alone would do on the chip, but simavr 1.6 keeps TWINT set once raised ("sticky"),
 * so only its interrupt tells when an operation has ended. */

static volatile uint8_t twi_done;

ISR(TWI_vect)
{
	TWCR = (uint8_t)(TWCR & ~(_BV(TWIE) | _BV(TWINT) | _BV(TWSTA) | _BV(TWSTO)));
	twi_done = 1;
}

static uint8_t twi_op(uint8_t cmd)
{
	twi_done = 0;
	TWCR = (uint8_t)(cmd | _BV(TWINT) | _BV(TWEN) | _BV(TWIE));
	uint16_t n = 0;
	while (!twi_done)
		if (!++n)
			return 0;
	return 1;
}

static void twi_stop(void)
{
	TWCR = _BV(TWINT) | _BV(TWSTO) | _BV(TWEN);
	uint16_t n = 0;
	while ((TWCR & _BV(TWSTO)) && ++n)
		;
}

static uint8_t twi_start(uint8_t sla)
{
	if (!twi_op(_BV(TWSTA)))
		return 0;
	uint8_t st = TWSR & 0xF8;
	if (st != 0x08 && st != 0x10) /* START / repeated START sent */
		return 0;
	TWDR = sla;
	if (!twi_op(0))
		return 0;
	st = TWSR & 0xF8;
	/* SLA+W / SLA+R acknowledged (simavr 1.6 reports an acknowledged SLA+W as 0x28, data ACK: a code the
	 * real TWI never gives after an address, so taking it as an ACK changes nothing on hardware) */
	return st == 0x18 || st == 0x40 || st == 0x28;
}

static uint8_t twi_byte(uint8_t b)
{
	TWDR = b;
	return twi_op(0) && (TWSR & 0xF8) == 0x28;
}

static uint8_t pca_write(uint8_t reg, const uint8_t *data, uint8_t n)
{
	uint8_t good = twi_start((uint8_t)(PCA9685_ADDR << 1)) && twi_byte(reg);
	while (good && n--)
		good = twi_byte(*data++);
	twi_stop();
	return good;
}

static uint8_t pca_write1(uint8_t reg, uint8_t v)
{
	return pca_write(reg, &v, 1);
}

/* The pointer is set in a write of its own, then read from in a second transaction (the chip keeps
 * the pointer across a STOP; no repeated START, which simavr 1.6's TWI model mistimes). */
static uint8_t pca_read(uint8_t reg, uint8_t *buf, uint8_t n)
{
	if (!pca_write(reg, 0, 0))
		return 0;
	uint8_t good = twi_start((uint8_t)((PCA9685_ADDR << 1) | 1));
	while (good && n) {
		good = twi_op(n > 1 ? _BV(TWEA) : 0); /* ACK all but the last */
		*buf++ = TWDR;
		n--;
	}
	twi_stop();
	return good;
}

/* ---- the chip ---- */

/* The 16 channels' registers read at PRE_SCALE ``pre``: each pulsing channel rewritten (ON 0) to the
 * count of the same width at ours (a count is (PRE_SCALE + 1) / osc: the oscillator cancels out), full
 * off if ours cannot make it. Returns 1 if any channel pulses. */
static uint8_t rescale(uint8_t *regs, uint8_t pre)
{
	uint8_t any = 0;
	for (uint8_t ch = 0; ch < 16; ch++) {
		uint8_t *r = regs + 4 * ch;
		uint16_t on = (uint16_t)(r[0] | r[1] << 8), off = (uint16_t)(r[2] | r[3] << 8);
		if ((off & (FULL << 8)) || (on & (FULL << 8)) || !((off - on) & 0x0FFF))
			continue;
		uint32_t c = ((uint32_t)((off - on) & 0x0FFF) * (pre + 1UL) + (PCA9685_PRESCALE + 1UL) / 2) /
			     (PCA9685_PRESCALE + 1UL);
		r[0] = r[1] = 0;
		r[2] = c > 0 && c < 4096 ? (uint8_t)c : 0;
		r[3] = c > 0 && c < 4096 ? (uint8_t)(c >> 8) : FULL;
		any = 1;
	}
	return any;
}

uint8_t pca9685_init(proto_t *p)
{
	uint8_t sreg = SREG;
	sei(); /* the TWI interrupt ends each operation (nothing else is running yet) */
	uint8_t found = pca_start(p);
	SREG = sreg;
	return found;
}

static uint8_t pca_start(proto_t *p)
{
	TWAR = 0; /* master only */
	TWSR = 0;
	TWBR = 12; /* 400 kHz at 16 MHz: F_CPU / (16 + 2 * 12) */
	TWCR = _BV(TWEN);
	uint8_t mode1, pre;
	if (!pca_read(MODE1, &mode1, 1) || !pca_read(PRE_SCALE, &pre, 1))
		return ok = 0;
	if (!(mode1 & (SLEEP | RESTART)) && pre == PCA9685_PRESCALE) {
		if (!(mode1 & AI))
			pca_write1(MODE1, (uint8_t)(mode1 | AI));
	} else {
		uint8_t base = mode1 & (uint8_t)~(RESTART | SLEEP);
		/* a chip left at another period (another program) holding servos: the same counts would be
		 * other widths at ours (20 % longer from 60 Hz), a jump of every servo; rewrite them in SLEEP
		 * to the same widths in our counts */
		uint8_t all[4 * 16], keep = 0;
		if (pre != PCA9685_PRESCALE) {
			if (!(mode1 & AI))
				pca_write1(MODE1, (uint8_t)((mode1 & (uint8_t)~RESTART) | AI)); /* to read 64 bytes */
			keep = pca_read(LED0, all, sizeof all) && rescale(all, pre);
		}
		if (!(mode1 & SLEEP))
			pca_write1(MODE1, (uint8_t)(base | SLEEP | AI)); /* PRE_SCALE only in SLEEP */
		pca_write1(PRE_SCALE, PCA9685_PRESCALE);
		if (keep)
			pca_write(LED0, all, sizeof all);
		pca_write1(MODE1, (uint8_t)(base | AI));
		_delay_us(600); /* oscillator start: 500 us */
		if (pca_read(MODE1, &mode1, 1) && (mode1 & RESTART))
			pca_write1(MODE1, (uint8_t)(base | AI | RESTART));
	}
	/* what channels 0-7 output now: a Uno that reset under a powered chip starts from there */
	uint8_t regs[4 * PROTO_NCH];
	if (!pca_read(LED0, regs, sizeof regs))
		return ok = 0;
	for (uint8_t ch = 0; ch < PROTO_NCH; ch++) {
		const uint8_t *r = regs + 4 * ch;
		uint16_t on = (uint16_t)(r[0] | r[1] << 8), off = (uint16_t)(r[2] | r[3] << 8);
		uint16_t t = 0;
		if (!(off & (FULL << 8)) && !(on & (FULL << 8)))
			t = PCA9685_TICKS((off - on) & 0x0FFF);
		if (t < PROTO_LIMIT_MIN || t > PROTO_LIMIT_MAX)
			t = 0; /* no pulses, or none a servo takes: left alone until the host sets it */
		sent[ch] = want[ch] = t;
		p->width[ch] = p->out[ch] = t;
	}
	return ok = 1;
}

void pca9685_frame(const uint16_t *out)
{
	for (uint8_t ch = 0; ch < PROTO_NCH; ch++)
		want[ch] = out[ch];
	due = 1;
}

static void put_channel(uint8_t *b, uint16_t t)
{
	if (!t) { /* full off */
		b[0] = b[1] = b[2] = 0;
		b[3] = FULL;
		return;
	}
	uint16_t c = PCA9685_COUNTS(t);
	b[0] = b[1] = 0;
	b[2] = (uint8_t)c;
	b[3] = (uint8_t)(c >> 8);
}

void pca9685_poll(void)
{
	if (!due || !ok)
		return;
	uint16_t w[PROTO_NCH];
	cli();
	for (uint8_t ch = 0; ch < PROTO_NCH; ch++)
		w[ch] = want[ch];
	due = 0;
	sei();
	/* each run of neighbouring changed channels in one auto-increment write */
	uint8_t ch = 0;
	while (ch < PROTO_NCH) {
		if (w[ch] == sent[ch]) {
			ch++;
			continue;
		}
		uint8_t first = ch, buf[4 * PROTO_NCH];
		while (ch < PROTO_NCH && w[ch] != sent[ch]) {
			put_channel(buf + 4 * (ch - first), w[ch]);
			ch++;
		}
		if (pca_write((uint8_t)(LED0 + 4 * first), buf, (uint8_t)(4 * (ch - first))))
			for (uint8_t k = first; k < ch; k++)
				sent[k] = w[k];
		wdt_reset();
	}
}
