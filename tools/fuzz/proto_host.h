/*
 * The firmware's protocol core (firmware/proto.c, protocol version 2) on the
 * host, driven by a virtual clock: the libFuzzer target (fuzz_proto.c) and the
 * Python differential runner (proto_diff.py, through ctypes) both use it.
 *
 * Time is in ticks of 0.5 us since boot. ph_advance() runs what the board does
 * on its own up to a time, in the order the simulator's board model
 * (armctl/sim/board.py, Board.advance_to) does: a watchdog deadline strictly
 * before the next frame boundary fires first, a boundary at or before the
 * deadline comes first; ph_feed() advances, then feeds the bytes at that time.
 *
 * A fuzz script is bytes for the board with three escapes:
 *   0x01 k   let (k + 1) * 0.5 ms pass      (0.5 .. 128 ms)
 *   0x02 k   let (k + 1) frames of 20 ms pass
 *   0x03     end the line with a good checksum: " *XXXX\n", the CRC of the line so far plus its space
 * Everything else goes to the board as it is. A trailing 0x01/0x02 without k
 * is ignored; the clock stops at PH_T_MAX (about 18 minutes).
 */
#ifndef ARMCTL_PROTO_HOST_H
#define ARMCTL_PROTO_HOST_H

#include <stddef.h>
#include <stdint.h>

#define PH_T_MAX (1ULL << 31) /* ticks: the firmware's uint32 clock never wraps in a script */

typedef struct ph ph_t;

ph_t *ph_new(uint16_t boot);
void ph_free(ph_t *h);
/* the firmware at reset again (RAM cleared, limits at their defaults), clock at 0 */
void ph_reset(ph_t *h, uint16_t boot);
/* the "- ! BOOT" line, as main.c sends it once the UART is ready */
void ph_banner(ph_t *h);
void ph_advance(ph_t *h, uint64_t t);
void ph_feed(ph_t *h, const uint8_t *data, size_t n, uint64_t t);
uint64_t ph_now(const ph_t *h);

/* board output not taken yet: its length, and take up to cap bytes of it */
size_t ph_pending(const ph_t *h);
size_t ph_take(ph_t *h, char *buf, size_t cap);

/* the board's state as numbers, in this order (PH_STATE_LEN of them) */
enum {
	PH_NCH = 8, /* the firmware's channels (PROTO_NCH; proto_host.c checks) */
	PH_FRAME = 0, PH_EXPECT, PH_FREE, PH_SYNCED, PH_MASK,
	PH_WIDTH0, PH_OUT0 = PH_WIDTH0 + PH_NCH, PH_LO0 = PH_OUT0 + PH_NCH, PH_HI0 = PH_LO0 + PH_NCH,
	PH_COUNT0 = PH_HI0 + PH_NCH, PH_LEFT = PH_COUNT0 + 8,
	PH_WD_ARMED, PH_WD_DEADLINE, PH_WD_MS, PH_WD_MODE,
	PH_STATE_LEN
};
void ph_state(const ph_t *h, int64_t *out, size_t n);

/* the board's invariants (and every line it sent being well formed); 0 if they hold, else 1
 * and the first violation in why */
int ph_check(const ph_t *h, char *why, size_t cap);

/* a fuzz script as operations: records 'F' <u32 n> <n bytes> (feed) and 'W' <u64 ticks>
 * (let time pass), little-endian; returns the bytes needed (at most 12 * n + 16) */
size_t ph_decode(const uint8_t *script, size_t n, uint8_t *out, size_t cap);

/* run a fuzz script on h (from its current time): 0, or 1 with why at the first op after which
 * an invariant fails */
int ph_run(ph_t *h, const uint8_t *script, size_t n, char *why, size_t cap);

#endif
