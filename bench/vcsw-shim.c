// SPDX-License-Identifier: GPL-2.0
/*
 * LD_PRELOAD shim for fio: counts the voluntary context switches (sleeps)
 * of the submitting thread inside each submission call, which fio's own
 * "ctx" cannot tell apart from involuntary switches and completion waits.
 *
 *   libaio    io_submit()
 *   io_uring  syscall(__NR_io_uring_enter) with something to submit and
 *             no wait for completions (fio's engine calls it through
 *             syscall())
 *
 * At exit the totals go to the file named by $VCSW_OUT, one line:
 * "calls N slept N switches N".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_io_uring_enter
#define __NR_io_uring_enter	426
#endif
#define ENTER_GETEVENTS		1U	/* IORING_ENTER_GETEVENTS */

struct iocb;
typedef struct io_context *io_context_t;

static long calls, slept, switches;

static long nvcsw(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return 0;
	return ru.ru_nvcsw;
}

static void account(long before)
{
	long d = nvcsw() - before;

	__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
	if (d > 0) {
		__atomic_add_fetch(&slept, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&switches, d, __ATOMIC_RELAXED);
	}
}

int io_submit(io_context_t ctx, long nr, struct iocb **iocbs)
{
	static int (*real)(io_context_t, long, struct iocb **);
	long before;
	int ret;

	if (!real)
		real = dlsym(RTLD_NEXT, "io_submit");
	before = nvcsw();
	ret = real(ctx, nr, iocbs);
	account(before);
	return ret;
}

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6], before, ret;
	va_list ap;
	int i;

	if (!real)
		real = dlsym(RTLD_NEXT, "syscall");
	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	/* io_uring_enter(fd, to_submit, min_complete, flags, ...) */
	if (nr != __NR_io_uring_enter || !a[1] ||
	    ((a[3] & ENTER_GETEVENTS) && a[2]))
		return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	before = nvcsw();
	ret = real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	account(before);
	return ret;
}

__attribute__((destructor)) static void report(void)
{
	const char *path = getenv("VCSW_OUT");
	FILE *f;

	if (!path || !calls)
		return;
	f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "calls %ld slept %ld switches %ld\n", calls, slept,
		switches);
	fclose(f);
}
