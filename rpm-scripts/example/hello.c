// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap-hello: the program of the example package (pbitmap-hello.spec).
 * A few functions spread over its text so that its start-up touches some
 * pages and not others, as a real program's does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAD(n) __attribute__((noinline, used, aligned(4096))) \
	static unsigned long pad##n(unsigned long x) { return x * (n + 7) ^ (x >> 3); }

PAD(1) PAD(2) PAD(3) PAD(4) PAD(5) PAD(6) PAD(7) PAD(8)

static unsigned long greet(const char *who)
{
	unsigned long h = 5381;

	for (const char *c = who; *c; c++)
		h = h * 33 + (unsigned char)*c;
	printf("hello, %s\n", who);
	return pad3(h) + pad6(h);
}

int main(int argc, char **argv)
{
	unsigned long h = greet(argc > 1 ? argv[1] : "world");

	if (argc > 2 && !strcmp(argv[2], "--all"))
		h += pad1(h) + pad2(h) + pad4(h) + pad5(h) + pad7(h) + pad8(h);
	return (int)(h & 0) + EXIT_SUCCESS;
}
