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
 * It also times each call and counts the involuntary switches in it: a
 * call that was preempted (another task took the CPU; on the rig's two
 * vCPUs, the scenario's own load or a worker) is slow for a reason that
 * is not the submission path.  The call-time percentiles of all calls
 * and of the "quiet" ones (no switch of either kind) tell the two apart.
 *
 * With $SHIM_PIN set, every regular file fio opens for O_DIRECT writing
 * is pinned (ext4's EXT4_IOC_PIN_EXTENTS) right after the open: the
 * "patched on + ext4 pin" column, without a fio change.
 *
 * At exit the totals go to the file named by $VCSW_OUT, one line:
 * "calls N slept N switches N preempted N p999_us X quiet N
 * quiet_p999_us X pinned N pin_failed N" (the times are of the first
 * MAX_TIMED calls).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef __NR_io_uring_enter
#define __NR_io_uring_enter	426
#endif
#define ENTER_GETEVENTS		1U	/* IORING_ENTER_GETEVENTS */

struct iocb;
typedef struct io_context *io_context_t;

#define MAX_TIMED	(1L << 21)
#ifndef EXT4_IOC_PIN_EXTENTS
#define EXT4_IOC_PIN_EXTENTS	_IO('f', 45)
#endif

static long calls, slept, switches, preempted, timed, quiet;
static long pinned, pin_failed;
/* Call times in ns, quiet calls' negated, so one array holds both. */
static long *ns;

struct mark {
	long nvcsw, nivcsw;
	struct timespec t;
};

static void mark(struct mark *m)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		ru.ru_nvcsw = ru.ru_nivcsw = 0;
	m->nvcsw = ru.ru_nvcsw;
	m->nivcsw = ru.ru_nivcsw;
	clock_gettime(CLOCK_MONOTONIC, &m->t);
}

static void account(const struct mark *b)
{
	struct mark a;
	long d, i, t;

	/* The clock first: the call's time, not getrusage()'s. */
	clock_gettime(CLOCK_MONOTONIC, &a.t);
	t = (a.t.tv_sec - b->t.tv_sec) * 1000000000L +
	    a.t.tv_nsec - b->t.tv_nsec;
	mark(&a);
	d = a.nvcsw - b->nvcsw;
	__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
	if (d > 0) {
		__atomic_add_fetch(&slept, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&switches, d, __ATOMIC_RELAXED);
	}
	if (a.nivcsw > b->nivcsw)
		__atomic_add_fetch(&preempted, 1, __ATOMIC_RELAXED);
	if (!ns)
		return;
	i = __atomic_fetch_add(&timed, 1, __ATOMIC_RELAXED);
	if (i >= MAX_TIMED)
		return;
	if (d == 0 && a.nivcsw == b->nivcsw) {
		__atomic_add_fetch(&quiet, 1, __ATOMIC_RELAXED);
		t = -t - 1;
	}
	ns[i] = t;
}

__attribute__((constructor)) static void setup(void)
{
	ns = malloc(MAX_TIMED * sizeof(*ns));
}

/* $SHIM_PIN: pin a regular file just opened O_DIRECT for writing. */
static void maybe_pin(int fd, int flags)
{
	const char *pin = getenv("SHIM_PIN");
	struct stat st;
	int saved = errno;

	if (fd < 0 || !pin || !*pin || !(flags & O_DIRECT) ||
	    (flags & O_ACCMODE) == O_RDONLY || fstat(fd, &st) ||
	    !S_ISREG(st.st_mode))
		return;
	if (ioctl(fd, EXT4_IOC_PIN_EXTENTS))
		__atomic_add_fetch(&pin_failed, 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&pinned, 1, __ATOMIC_RELAXED);
	errno = saved;
}

static int open_common(const char *sym, const char *path, int flags,
		       va_list ap)
{
	int (*real)(const char *, int, ...) = dlsym(RTLD_NEXT, sym);
	mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
	int fd = real(path, flags, mode);

	maybe_pin(fd, flags);
	return fd;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	int fd;

	va_start(ap, flags);
	fd = open_common("open", path, flags, ap);
	va_end(ap);
	return fd;
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	int fd;

	va_start(ap, flags);
	fd = open_common("open64", path, flags, ap);
	va_end(ap);
	return fd;
}

int io_submit(io_context_t ctx, long nr, struct iocb **iocbs)
{
	static int (*real)(io_context_t, long, struct iocb **);
	struct mark b;
	int ret;

	if (!real)
		real = dlsym(RTLD_NEXT, "io_submit");
	mark(&b);
	ret = real(ctx, nr, iocbs);
	account(&b);
	return ret;
}

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6], ret;
	struct mark b;
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
	mark(&b);
	ret = real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	account(&b);
	return ret;
}

static int cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* p99.9 in us of v[0..n-1] (sorted), 0 if empty. */
static double p999(const long *v, long n)
{
	return n ? v[(n * 999 - 1) / 1000] / 1e3 : 0;
}

__attribute__((destructor)) static void report(void)
{
	const char *path = getenv("VCSW_OUT");
	long n = timed < MAX_TIMED ? timed : MAX_TIMED, i, q = 0;
	double all = 0, qp = 0;
	FILE *f;

	if (!path || !calls)
		return;
	if (ns && n) {
		/* Quiet calls (negative) first, in reverse order. */
		qsort(ns, n, sizeof(*ns), cmp);
		while (q < n && ns[q] < 0)
			q++;
		for (i = 0; i < q / 2; i++) {
			long t = ns[i];

			ns[i] = ns[q - 1 - i];
			ns[q - 1 - i] = t;
		}
		for (i = 0; i < q; i++)
			ns[i] = -ns[i] - 1;
		qp = p999(ns, q);
		qsort(ns, n, sizeof(*ns), cmp);
		all = p999(ns, n);
	}
	f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "calls %ld slept %ld switches %ld preempted %ld p999_us %.1f quiet %ld quiet_p999_us %.1f pinned %ld pin_failed %ld\n",
		calls, slept, switches, preempted, all, q, qp, pinned,
		pin_failed);
	fclose(f);
}
