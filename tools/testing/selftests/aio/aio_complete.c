// SPDX-License-Identifier: GPL-2.0
/*
 * Where a direct write's completion runs.
 *
 * When every bio of a direct write completes before iomap drops its
 * submission reference (a device that completes in the submitting
 * thread, as brd does; a fast device, sometimes), iomap used
 * to complete the write in the submitter, running the filesystem's
 * ->end_io there.  For a write into an unwritten extent that is a
 * journal (ext4) or log (XFS) transaction converting it, which may
 * sleep, inside an io_submit() that tried the write with NOWAIT.  Such a
 * completion now goes to the filesystem's dio workqueue, as when a bio
 * completes last.
 *
 *   unwritten_end_io_not_in_submitter
 *	NR_WRITES 4 KiB O_DIRECT writes into fallocated space, each tried
 *	inline (aio.stat inline grows): the iomap_dio_complete tracepoint
 *	never fires in the submitting thread; the data reads back.  (ext4
 *	hands the first few off: splitting the extents held in the inode
 *	itself, then growing the tree, block; the later splits, in a leaf
 *	with room, do not.)
 *
 * On ext4 and XFS, on the RAM disk /dev/ram0 (CONFIG_BLK_DEV_RAM), whatever
 * AIO_TEST_DEV is.  (A memory-backed null_blk would not do: it is
 * BLK_MQ_F_BLOCKING, so the offload never tries direct I/O to it inline.)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#define BLK		4096
#define NR_WRITES	64
#define FILE_LEN	(4 * NR_WRITES * BLK)
#define RAM_DEV		"/dev/ram0"
#define TRACING		"/sys/kernel/tracing"
#define EVENT		"iomap_dio_complete"
#define IOMAP_EVENT	"iomap/" EVENT
#define EVENT_ENABLE	TRACING "/events/" IOMAP_EVENT "/enable"
#define ROOT_STAT	"/sys/fs/cgroup/aio.stat"

struct complete_state {
	char mnt[64];
	bool tracing;
	char *buf;
};

/* _PARENT teardown: see the note in aio_util.h */
FIXTURE(complete) {
	pid_t owner;
	struct complete_state st;
};

FIXTURE_VARIANT(complete) {
	const char *fstype;
};

FIXTURE_VARIANT_ADD(complete, ext4) {
	.fstype = "ext4",
};

FIXTURE_VARIANT_ADD(complete, xfs) {
	.fstype = "xfs",
};

FIXTURE_SETUP(complete)
{
	struct complete_state *st = &self->st;
	int ret;

	self->owner = getpid();
	st->mnt[0] = '\0';
	st->tracing = false;
	st->buf = aio_alloc_buf(2 * NR_WRITES * BLK);
	ASSERT_NE(NULL, st->buf);
	if (aio_offload_enabled() != 1)
		SKIP(return, "needs fs.aio-offload=1 (the NOWAIT try)");
	if (access(RAM_DEV, W_OK))
		SKIP(return, "no %s (CONFIG_BLK_DEV_RAM)", RAM_DEV);
	ret = aio_scratch_mount(RAM_DEV, variant->fstype, st->mnt,
				sizeof(st->mnt));
	if (ret == AIO_MKFS_NOT_FOUND)
		SKIP(return, "mkfs.%s not available", variant->fstype);
	ASSERT_EQ(0, ret) TH_LOG("%s on %s: %d", variant->fstype, RAM_DEV, ret);
	if (access(EVENT_ENABLE, W_OK))
		mount("tracefs", TRACING, "tracefs", 0, NULL);
	if (access(EVENT_ENABLE, W_OK))
		SKIP(return, "no %s", EVENT_ENABLE);
}

FIXTURE_TEARDOWN_PARENT(complete)
{
	struct complete_state *st = &self->st;

	if (st->tracing && aio_trace_event(IOMAP_EVENT, false))
		TH_LOG("cannot disable %s", EVENT);
	if (getpid() == self->owner)
		aio_free_buf(st->buf, 2 * NR_WRITES * BLK);
	if (st->mnt[0] && aio_scratch_umount(st->mnt))
		TH_LOG("umount %s failed: %s", st->mnt, strerror(errno));
}

/*
 * Successful completions in the trace buffer: how many, and how many by
 * the thread @tid ("<comm>-<pid> [cpu] ...: EVENT: ... error 0 ...").  A
 * NOWAIT try that fails (-EAGAIN) is completed, with its error, where it
 * was issued, so that the caller sees the error at once: not counted.
 */
static int count_events(pid_t tid, int *by_tid)
{
	char line[512];
	int n = 0;
	FILE *f;

	*by_tid = 0;
	f = fopen(TRACING "/trace", "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *ev = strstr(line, " " EVENT ": "), *cpu, *dash;

		if (!ev || !strstr(ev, " error 0 "))
			continue;
		n++;
		cpu = strstr(line, " [");
		if (!cpu || cpu > ev)
			continue;
		*cpu = '\0';
		dash = strrchr(line, '-');
		if (dash && atoi(dash + 1) == tid)
			(*by_tid)++;
	}
	fclose(f);
	return n;
}

TEST_F_TIMEOUT(complete, unwritten_end_io_not_in_submitter, 300)
{
	struct complete_state *st = &self->st;
	char path[sizeof(st->mnt) + 8];
	uint64_t seed = aio_new_seed();
	long long inline0, inline1;
	struct iocb cb, *list = &cb;
	aio_context_t ctx = 0;
	int fd, i, events, mine;
	struct io_event ev;
	ssize_t bad;

	snprintf(path, sizeof(path), "%s/f", st->mnt);
	fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0600);
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", path, strerror(errno));
	ASSERT_EQ(0, fallocate(fd, 0, 0, FILE_LEN));
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, sys_io_setup(8, &ctx));
	aio_fill_pattern(st->buf, NR_WRITES * BLK, seed, 0);

	ASSERT_EQ(0, aio_trace_clear());
	ASSERT_EQ(0, aio_trace_event(IOMAP_EVENT, true));
	st->tracing = true;
	inline0 = aio_read_key(ROOT_STAT, "inline");
	/* Every other block: each write splits an unwritten extent. */
	for (i = 0; i < NR_WRITES; i++) {
		/*
		 * XFS on 6.12 refuses a NOWAIT write whose c/mtime must
		 * change: set them to the coarse clock's now first, so that
		 * a write in the same tick finds nothing to update (on a
		 * slow debug kernel, writes a tick apart all punted).
		 */
		ASSERT_EQ(0, futimens(fd, NULL));
		aio_prep_rw(&cb, IOCB_CMD_PWRITE, fd, st->buf + i * BLK, BLK,
			    (off_t)2 * i * BLK, i);
		ASSERT_EQ(1, sys_io_submit(ctx, 1, &list))
			TH_LOG("io_submit %d: %s", i, strerror(errno));
		ASSERT_EQ(1, aio_reap(ctx, &ev, 1, 60));
		EXPECT_EQ(BLK, ev.res)
			TH_LOG("write %d: %lld", i, (long long)ev.res);
	}
	inline1 = aio_read_key(ROOT_STAT, "inline");
	ASSERT_EQ(0, aio_trace_event(IOMAP_EVENT, false));
	st->tracing = false;
	events = count_events(aio_gettid(), &mine);

	TH_LOG("%d completions traced, %d in the submitter; aio.stat inline +%lld",
	       events, mine, inline1 - inline0);
	EXPECT_EQ(NR_WRITES, events);
	EXPECT_EQ(0, mine)
		TH_LOG("%d of %d completions ran the filesystem's end_io in io_submit()",
		       mine, events);
	if (inline0 >= 0)
		EXPECT_LT(0, inline1 - inline0)
			TH_LOG("no write was tried inline: the case did not run");

	for (i = 0; i < NR_WRITES; i++) {
		ASSERT_EQ(BLK, pread(fd, st->buf + NR_WRITES * BLK, BLK,
				     (off_t)2 * i * BLK));
		bad = aio_verify_pattern(st->buf + NR_WRITES * BLK, BLK, seed,
					 (uint64_t)i * BLK);
		EXPECT_EQ(-1, bad) TH_LOG("block %d: bad byte at %zd", i, bad);
	}
	EXPECT_EQ(0, sys_io_destroy(ctx));
	close(fd);
}

TEST_HARNESS_MAIN
