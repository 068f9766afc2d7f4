/*
 * The PCA9685 build (make pca9685): the protocol's channels 0-7 are the outputs 0-7 of a PCA9685
 * PWM board on the Uno's TWI (A4 = SDA, A5 = SCL) instead of timer-driven pins. The chip makes the
 * pulses; the firmware writes each channel's width, in the chip's counts, when it changes.
 */
#ifndef ARMCTL_PCA9685_H
#define ARMCTL_PCA9685_H

#include <stdint.h>

#include "proto.h"

#ifndef PCA9685_ADDR
#define PCA9685_ADDR 0x40            /* 7-bit address: all address pads open */
#endif
#ifndef PCA9685_OSC_HZ
#define PCA9685_OSC_HZ 25000000UL    /* the chip's oscillator; boards vary by a few %: trim at build */
#endif
/* 50 Hz: PRE_SCALE = round(osc / (4096 * 50)) - 1 (datasheet eq. 1) */
#define PCA9685_PRESCALE ((uint8_t)((PCA9685_OSC_HZ + 4096UL * 25) / (4096UL * 50) - 1))

/* Wake the chip at 50 Hz with auto-increment (skipped when it already runs so: a reset Uno does not
 * interrupt a powered chip's pulses) and read back what channels 0-7 output into the protocol's
 * widths, so the host sees where the servos were left. Returns 0 if no PCA9685 answers. */
uint8_t pca9685_init(proto_t *p);
/* From the frame interrupt: the widths (ticks) of the frame that starts. */
void pca9685_frame(const uint16_t *out);
/* From the main loop: write the channels whose width changed since they were last written. */
void pca9685_poll(void);

/* ticks (0.5 us) <-> chip counts at PCA9685_PRESCALE, rounded */
#define PCA9685_COUNTS(t) ((uint16_t)(((uint32_t)(t) * (PCA9685_OSC_HZ / 1000UL) + 1000UL * (PCA9685_PRESCALE + 1UL)) / (2000UL * (PCA9685_PRESCALE + 1UL))))
#define PCA9685_TICKS(c) ((uint16_t)(((uint32_t)(c) * 2000UL * (PCA9685_PRESCALE + 1UL) + PCA9685_OSC_HZ / 2000UL) / (PCA9685_OSC_HZ / 1000UL)))

#endif
