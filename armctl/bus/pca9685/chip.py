"""The PCA9685 16-channel PWM chip: its registers and its arithmetic, in one place.

Facts from the NXP datasheet (Rev. 4, 2015), sections 7.3-7.3.5 (see also ``docs/pca9685.md``):

- 7-bit addresses 0x40..0x7F (all address pins low: 0x40); 0x70 is LED All Call after power-on.
- MODE1 (0x00) resets to 0x11: SLEEP (oscillator off) and ALLCALL. PRE_SCALE (0xFE) resets to 30 and
  can only be written while SLEEP is set. After clearing SLEEP the oscillator needs 500 us.
- Channel n has four registers at 0x06 + 4n: ON_L, ON_H, OFF_L, OFF_H. A 12-bit counter runs 0..4095 each
  period; the output is high from the ON count to the OFF count. Bit 4 of ON_H is "full on", bit 4 of
  OFF_H "full off" (full off wins); after power-on every OFF_H has bit 4 set: no output pulses at all
  until the host writes a channel, so the first pulse a servo sees is one the host chose.
- The period is ``(PRE_SCALE + 1) * 4096 / osc`` with osc the 25 MHz internal oscillator (boards vary by
  a few percent: ``osc_hz`` trims it).
"""

from __future__ import annotations

MODE1, MODE2 = 0x00, 0x01
SUBADR1, ALLCALLADR = 0x02, 0x05
LED0 = 0x06  # LEDn_ON_L at LED0 + 4n
ALL_LED = 0xFA  # ALL_LED_ON_L .. ALL_LED_OFF_H (write only)
PRE_SCALE = 0xFE
TEST_MODE = 0xFF
LAST_LED_REG = LED0 + 4 * 16 - 1  # 0x45

# MODE1 bits
RESTART, EXTCLK, AI, SLEEP, ALLCALL = 0x80, 0x40, 0x20, 0x10, 0x01
FULL_BIT = 0x10  # bit 4 of ON_H / OFF_H: full on / full off

CHANNELS = 16
COUNTS = 4096
OSC_HZ = 25_000_000.0
PRESCALE_RANGE = (3, 255)
ADDRESS_RANGE = (0x40, 0x7F)
RESET_MODE1, RESET_MODE2, RESET_PRESCALE = 0x11, 0x04, 0x1E
OSC_START_S = 500e-6  # datasheet 7.3.1.1: oscillator start-up after SLEEP is cleared


def channel_reg(channel: int) -> int:
    """The first register (ON_L) of ``channel`` (0..15)."""
    return LED0 + 4 * channel


def prescale_for(pwm_hz: float, osc_hz: float = OSC_HZ) -> int:
    """PRE_SCALE for a PWM frequency (datasheet eq. 1: round(osc / (4096 f)) - 1); ValueError outside 3..255."""
    p = round(osc_hz / (COUNTS * pwm_hz)) - 1
    if not PRESCALE_RANGE[0] <= p <= PRESCALE_RANGE[1]:
        lo = osc_hz / (COUNTS * (PRESCALE_RANGE[1] + 1))
        hi = osc_hz / (COUNTS * (PRESCALE_RANGE[0] + 1))
        raise ValueError(f"a PWM frequency of {pwm_hz:g} Hz is outside what the chip makes ({lo:.0f}..{hi:.0f} Hz)")
    return p


def count_us(prescale: int, osc_hz: float = OSC_HZ) -> float:
    """One count of the 12-bit counter, in microseconds."""
    return (prescale + 1) / osc_hz * 1e6


def period_us(prescale: int, osc_hz: float = OSC_HZ) -> float:
    """The PWM period in microseconds."""
    return COUNTS * count_us(prescale, osc_hz)


def counts_for_us(us: float, prescale: int, osc_hz: float = OSC_HZ) -> int:
    """The OFF count (ON at 0) nearest a pulse of ``us`` microseconds."""
    return int(round(us / count_us(prescale, osc_hz)))


def us_range(prescale: int, osc_hz: float = OSC_HZ) -> tuple[float, float]:
    """The shortest and longest pulses (us) a channel makes as a pulse (1 and 4095 counts)."""
    c = count_us(prescale, osc_hz)
    return (c, (COUNTS - 1) * c)


def channel_bytes(off_counts: int | None) -> bytes:
    """The four channel registers (ON_L, ON_H, OFF_L, OFF_H) for a pulse from count 0 to ``off_counts``;
    None: full off (no pulses)."""
    if off_counts is None:
        return bytes((0, 0, 0, FULL_BIT))
    if not 0 < off_counts < COUNTS:
        raise ValueError(f"{off_counts} counts is not a pulse (1..{COUNTS - 1})")
    return bytes((0, 0, off_counts & 0xFF, off_counts >> 8))


def decode_channel(regs: bytes) -> tuple[int, int, float | None]:
    """(on, off, width in counts or None) of a channel's four registers: None when full off (or never
    written), 4096 when full on."""
    on = regs[0] | (regs[1] << 8)
    off = regs[2] | (regs[3] << 8)
    if off & (FULL_BIT << 8):
        return on, off, None
    if on & (FULL_BIT << 8):
        return on, off, float(COUNTS)
    width = (off - on) % COUNTS
    return on, off, (float(width) if width else None)


def rescale_channels(regs: bytes, old_prescale: int, new_prescale: int) -> dict[int, int | None]:
    """For the 64 channel registers ``regs`` of a chip running at ``old_prescale``: the OFF count (ON at 0)
    that gives each pulsing channel the same width at ``new_prescale`` (one count is ``(PRE_SCALE + 1) /
    osc``, so the oscillator cancels out); None for a width the new period cannot make (full off). Channels
    with no pulses, or full on, are left out."""
    out: dict[int, int | None] = {}
    for ch in range(CHANNELS):
        _, _, counts = decode_channel(regs[4 * ch : 4 * ch + 4])
        if counts is None or counts >= COUNTS:
            continue
        new = int(round(counts * (old_prescale + 1) / (new_prescale + 1)))
        out[ch] = new if 0 < new < COUNTS else None
    return out


def identify(regs: bytes, prescale: int | None = None) -> str | None:
    """Why registers 0x00..0x05 (MODE1, MODE2, SUBADR1-3, ALLCALLADR) and PRE_SCALE read from a device are
    not a PCA9685's (None: they are). MODE2's bits 7:5 are reserved (read 0), bit 0 of each sub-address and
    of the All Call address is read-only 0, and the chip holds PRE_SCALE at 3 or more; a register file that
    reads all 0x00 or all 0xFF is no PCA9685 either."""
    if prescale is not None and prescale < PRESCALE_RANGE[0]:
        return f"PRE_SCALE reads {prescale} (at least {PRESCALE_RANGE[0]} on a PCA9685)"
    if len(regs) < 6:
        return f"answered {len(regs)} bytes for 6 registers"
    if all(b == 0xFF for b in regs[:6]) or all(b == 0 for b in regs[:6]):
        return f"its registers read {regs[0]:02x} everywhere"
    if regs[MODE2] & 0xE0:
        return f"MODE2 reads 0x{regs[MODE2]:02x} (bits 7:5 are 0 on a PCA9685)"
    for reg in range(SUBADR1, ALLCALLADR + 1):
        if regs[reg] & 1:
            return f"register 0x{reg:02x} reads 0x{regs[reg]:02x} (bit 0 is 0 on a PCA9685)"
    return None
