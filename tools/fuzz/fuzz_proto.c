/*
 * libFuzzer target over the firmware's line handler (firmware/proto.c):
 * each input is a fuzz script (proto_host.h) run on a freshly reset board
 * under AddressSanitizer and UndefinedBehaviorSanitizer; the board's
 * invariants (ph_check) are checked after every operation and a violation
 * aborts, so libFuzzer saves the input as a crash.
 *
 *   make -C tools/fuzz smoke        (see the Makefile)
 */
#include <stdio.h>
#include <stdlib.h>

#include "proto_host.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static ph_t *h;
	if (!h)
		h = ph_new(0x3F2A);
	ph_reset(h, size ? (uint16_t)(data[0] * 257u) : 0x3F2A);
	ph_banner(h);
	char why[256];
	if (ph_run(h, data, size, why, sizeof(why))) {
		fprintf(stderr, "proto invariant violated %s\n", why);
		abort();
	}
	return 0;
}
