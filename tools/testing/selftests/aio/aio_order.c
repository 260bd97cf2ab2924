// SPDX-License-Identifier: GPL-2.0
/*
 * Order of requests on one file, within one io_submit() call and across
 * the contexts of a process.
 *
 * Stock AIO runs a buffered write to completion inside io_submit() before
 * it looks at the next iocb, so later iocbs on the same file see its
 * effect: the last of several overlapping writes wins, and a read after a
 * write returns the new data.  With AIO offload such a write goes to a
 * worker (ext4 has no NOWAIT buffered writes; XFS's may go either way),
 * and the requests behind it on the same file must not overtake it.  The
 * same holds for O_DIRECT writes that are handed off because the
 * filesystem is frozen.  Every case runs on ext4 and XFS.
 *
 * Requests that must not skip the order either:
 *   rwf_nowait_behind_queued_write  the user's RWF_NOWAIT read of a block a
 *                                   queued write will change gets -EAGAIN
 *                                   (it would have to wait), not old data;
 *   sysctl_off_keeps_order          after fs.aio-offload is set to 0,
 *                                   reads of the block and of another
 *                                   still wait for the write queued
 *                                   before them on the file.
 *   append_holds_the_whole_file     a read of the end of the file waits
 *                                   for an O_APPEND write in flight before
 *                                   it, whatever offset the iocb gave;
 *   read_across_eof_waits_for_extending_write
 *                                   a read across the end of the file
 *                                   waits for a queued write that extends
 *                                   the file past a gap, and returns the
 *                                   new size's bytes, not a short count.
 * And what must not wait:
 *   direct_requests_pass_by_range   while a worker holds an O_DIRECT write
 *                                   (it waits in a userfaultfd fault),
 *                                   O_DIRECT reads and writes of other
 *                                   blocks of the file complete; only the
 *                                   write and read of its block wait;
 *   fsync_does_not_hold_later_writes  O_DIRECT writes submitted after a
 *                                   slow fdatasync (log on dm-delay)
 *                                   complete before it, as in stock.
 * Across contexts (InnoDB writes through one and reads through another):
 *   other_context_read_sees_write   a read on a second context waits for
 *                                   the write queued on the first, even
 *                                   while io_destroy() of the first waits
 *                                   for that write;
 *   other_context_reads_100         100 buffered writes on one context,
 *                                   each read back at once through
 *                                   another, cold cache: no old data.
 * And no more than that:
 *   stuck_write_holds_no_other_file a buffered write whose worker waits in
 *                                   a userfaultfd fault holds up reads of
 *                                   none of 2048 other files.
 * A block device is one file however it is opened:
 *   bdev_nodes_share_order          a read through a second device node
 *                                   waits for a write queued through the
 *                                   first (no filesystem; runs once).
 * A zoned device takes writes in one order only:
 *   zoned_writes_in_order           a batch of sequential writes to a
 *                                   sequential zone of a null_blk zoned
 *                                   device (configfs) all succeed, each
 *                                   handed to a worker without a NOWAIT
 *                                   try (aio.stat punt_zoned, then
 *                                   punt_ordered behind it; no inline).
 * An allocation that fails in io_submit() (fail-nth, CONFIG_FAILSLAB):
 *   order_entry_fallback            the write whose order entry could not
 *                                   be allocated still holds up a read of
 *                                   its block;
 *   failed_allocations_lose_nothing writes behind a queued one, each with
 *                                   its Nth allocation failed: each either
 *                                   fails io_submit() (-EAGAIN, -ENOMEM)
 *                                   and writes nothing, or is accepted
 *                                   and lands in order.
 * And what each request is:
 *   buffered_write_one_call         a buffered write is one filesystem
 *                                   call, by a worker (aio.stat
 *                                   punt_buffered), never a NOWAIT try
 *                                   that a worker finishes;
 *   read_to_eof_is_final            a cached read that stops at EOF is
 *                                   complete inline: no worker hop;
 *   reflink_subblock_write_one_call a sub-block direct write to a
 *                                   reflinked XFS file, which XFS redoes
 *                                   as a buffered write, is handed off
 *                                   whole, not tried under NOWAIT.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/blkzoned.h>

#ifndef FICLONE
#define FICLONE		_IOW(0x94, 9, int)
#endif

#include "../kselftest_harness.h"
#include "aio_util.h"

#define BLK		4096
#define NR_WRITES	16
#define BIG		(256 * BLK)
#define FILE_LEN	BIG
#define TARGET_OFF	(3 * BLK)
#define BUF_LEN		(BIG + (NR_WRITES + 1) * BLK)

#define OFFLOAD_SYSCTL	"/proc/sys/fs/aio-offload"
#define POISON_BYTE	0x5a
#define FAIL_NTH	"/proc/thread-self/fail-nth"
#define FAILSLAB_GFP	"/sys/kernel/debug/failslab/ignore-gfp-wait"
#define FAILSLAB_VERBOSE "/sys/kernel/debug/failslab/verbose"
#define DM_FS		"aio-order-fs"
#define DM_LOG		"aio-order-log"
#define ROOT_STAT	"/sys/fs/cgroup/aio.stat"
/* direct_requests_pass_by_range: iocbs and where they go */
#define PASS_NR		16
#define PASS_RD		32		/* first block the reads read */
#define PASS_OW		(2 * PASS_NR)	/* the write of the held block */
#define PASS_OR		(2 * PASS_NR + 1) /* and the read of it */
#define PASS_REQS	(2 * PASS_NR + 2)
#define PASS_WAIT_SEC	10
#define EOF_WAIT_SEC	3

struct order_state {
	aio_context_t ctx;
	int fd;
	const char *fstype;
	char mnt[64];
	bool frozen;
	bool sysctl_off;	/* the test set fs.aio-offload to 0 */
	bool dm;		/* the test made DM_FS */
	bool dm_log;		/* and DM_LOG */
	bool failslab;		/* the test set FAILSLAB_GFP to N */
	char verbose[16];	/* FAILSLAB_VERBOSE before the test, or "" */
	char *buf;
};

/* _PARENT teardown: see the note in aio_util.h */
FIXTURE(order) {
	pid_t owner;
	struct order_state st;
};

FIXTURE_VARIANT(order) {
	const char *fstype;
};

FIXTURE_VARIANT_ADD(order, ext4) {
	.fstype = "ext4",
};

FIXTURE_VARIANT_ADD(order, xfs) {
	.fstype = "xfs",
};

FIXTURE_SETUP(order)
{
	struct order_state *st = &self->st;

	self->owner = getpid();
	st->ctx = 0;
	st->fd = -1;
	st->fstype = variant->fstype;
	st->mnt[0] = '\0';
	st->frozen = false;
	st->sysctl_off = false;
	st->dm = false;
	st->dm_log = false;
	st->failslab = false;
	st->verbose[0] = '\0';
	st->buf = NULL;
	ASSERT_EQ(0, aio_lock_memory());
	ASSERT_EQ(0, sys_io_setup(64, &st->ctx));
	st->buf = aio_alloc_buf(BUF_LEN);
	ASSERT_NE(NULL, st->buf);
}

FIXTURE_TEARDOWN_PARENT(order)
{
	struct order_state *st = &self->st;

	if (st->frozen && aio_fs_thaw(st->mnt))
		TH_LOG("thaw %s failed: %s", st->mnt, strerror(errno));
	if (st->sysctl_off && aio_write_file(OFFLOAD_SYSCTL, "1"))
		TH_LOG("cannot set %s back to 1", OFFLOAD_SYSCTL);
	if (st->failslab && aio_write_file(FAILSLAB_GFP, "Y"))
		TH_LOG("cannot set %s back to Y", FAILSLAB_GFP);
	if (st->verbose[0] && aio_write_file(FAILSLAB_VERBOSE, st->verbose))
		TH_LOG("cannot set %s back to %s", FAILSLAB_VERBOSE, st->verbose);
	if (getpid() == self->owner) {
		if (st->ctx)
			sys_io_destroy(st->ctx);
		if (st->fd >= 0)
			close(st->fd);
		aio_free_buf(st->buf, BUF_LEN);
	}
	if (st->mnt[0] && aio_scratch_umount(st->mnt))
		TH_LOG("umount %s failed: %s", st->mnt, strerror(errno));
	if (st->dm && aio_dm_remove(DM_FS))
		TH_LOG("dmsetup remove %s failed", DM_FS);
	if (st->dm_log && aio_dm_remove(DM_LOG))
		TH_LOG("dmsetup remove %s failed", DM_LOG);
}

/*
 * The variant's filesystem on the scratch device and a FILE_LEN file on
 * it; NULL or why not.
 */
static const char *setup_file(struct __test_metadata *_metadata,
			      struct order_state *st, int flags)
{
	const char *dev = aio_dev_path();
	char path[sizeof(st->mnt) + 8];
	int ret;

	if (!dev)
		return "AIO_TEST_DEV not set";
	if (!aio_dev_holds_data())
		return "the device does not store data";
	ret = aio_scratch_mount(dev, st->fstype, st->mnt, sizeof(st->mnt));
	if (ret == AIO_MKFS_NOT_FOUND)
		return "mkfs not available";
	ASSERT_EQ(0, ret) TH_LOG("%s on %s: %d", st->fstype, dev, ret);
	snprintf(path, sizeof(path), "%s/f", st->mnt);
	st->fd = open(path, O_RDWR | O_CREAT | flags, 0600);
	ASSERT_LE(0, st->fd) TH_LOG("open %s: %s", path, strerror(errno));
	memset(st->buf, 0, BLK);
	for (ret = 0; ret < FILE_LEN / BLK; ret++)
		ASSERT_EQ(BLK, pwrite(st->fd, st->buf, BLK, ret * BLK));
	ASSERT_EQ(0, fsync(st->fd));
	return NULL;
}

/* Submit, thaw if frozen, reap: each request moved all its bytes. */
static void submit_and_reap(struct __test_metadata *_metadata,
			    struct order_state *st, struct iocb *cbs, int nr)
{
	struct io_event ev[NR_WRITES + 1];
	struct iocb *list[NR_WRITES + 1];
	int i;

	for (i = 0; i < nr; i++)
		list[i] = &cbs[i];
	ASSERT_EQ(nr, sys_io_submit(st->ctx, nr, list))
		TH_LOG("io_submit: %s", strerror(errno));
	if (st->frozen) {
		ASSERT_EQ(0, aio_fs_thaw(st->mnt));
		st->frozen = false;
	}
	ASSERT_EQ(nr, aio_reap(st->ctx, ev, nr, 60));
	for (i = 0; i < nr; i++) {
		ASSERT_GT((__u64)nr, ev[i].data);
		EXPECT_EQ((__s64)cbs[ev[i].data].aio_nbytes, ev[i].res)
			TH_LOG("iocb %llu: res %lld", (unsigned long long)ev[i].data,
			       (long long)ev[i].res);
	}
}

TEST_F_TIMEOUT(order, overlapping_buffered_writes_last_wins, 300)
{
	struct order_state *st = &self->st;
	struct iocb cbs[NR_WRITES];
	uint64_t seed[NR_WRITES];
	const char *skip;
	ssize_t bad;
	int i;

	skip = setup_file(_metadata, st, 0);
	if (skip)
		SKIP(return, "%s", skip);
	for (i = 0; i < NR_WRITES; i++) {
		seed[i] = aio_new_seed();
		aio_fill_pattern(st->buf + i * BLK, BLK, seed[i], TARGET_OFF);
		aio_prep_rw(&cbs[i], IOCB_CMD_PWRITE, st->fd,
			    st->buf + i * BLK, BLK, TARGET_OFF, i);
	}
	submit_and_reap(_metadata, st, cbs, NR_WRITES);

	ASSERT_EQ(BLK, pread(st->fd, st->buf + NR_WRITES * BLK, BLK,
			     TARGET_OFF));
	bad = aio_verify_pattern(st->buf + NR_WRITES * BLK, BLK,
				 seed[NR_WRITES - 1], TARGET_OFF);
	for (i = 0; bad >= 0 && i < NR_WRITES - 1; i++)
		if (aio_verify_pattern(st->buf + NR_WRITES * BLK, BLK,
				       seed[i], TARGET_OFF) < 0)
			break;
	ASSERT_EQ(-1, bad)
		TH_LOG("the block holds write %d of %d, not the last", i + 1,
		       NR_WRITES);
}

TEST_F_TIMEOUT(order, read_after_buffered_write_sees_it, 300)
{
	struct order_state *st = &self->st;
	struct iocb cbs[2];
	const char *skip;
	uint64_t seed;

	skip = setup_file(_metadata, st, 0);
	if (skip)
		SKIP(return, "%s", skip);
	seed = aio_new_seed();
	aio_fill_pattern(st->buf, BLK, seed, TARGET_OFF);
	memset(st->buf + BLK, 0x5a, BLK);
	aio_prep_rw(&cbs[0], IOCB_CMD_PWRITE, st->fd, st->buf, BLK,
		    TARGET_OFF, 0);
	aio_prep_rw(&cbs[1], IOCB_CMD_PREAD, st->fd, st->buf + BLK, BLK,
		    TARGET_OFF, 1);
	submit_and_reap(_metadata, st, cbs, 2);
	ASSERT_EQ(-1, aio_verify_pattern(st->buf + BLK, BLK, seed,
					 TARGET_OFF))
		TH_LOG("the read did not see the write before it");
}

/*
 * Workers on several CPUs issue to several hardware queues, where a small
 * write overtakes a big one unless it waits for its completion: make the
 * first write big, and give the race a few rounds.
 */
#define FROZEN_ROUNDS	4

TEST_F_TIMEOUT(order, overlapping_direct_writes_while_frozen, 300)
{
	struct order_state *st = &self->st;
	struct iocb cbs[NR_WRITES];
	uint64_t seed[NR_WRITES];
	char *got = st->buf + BIG + (NR_WRITES - 1) * BLK;
	const char *skip;
	int round, i;

	if (aio_offload_enabled() != 1)
		SKIP(return, "needs fs.aio-offload=1: stock io_submit() blocks");
	skip = setup_file(_metadata, st, O_DIRECT);
	if (skip)
		SKIP(return, "%s", skip);
	for (round = 0; round < FROZEN_ROUNDS; round++) {
		ASSERT_EQ(0, aio_fs_freeze(st->mnt));
		st->frozen = true;
		/* 0: all of the file; 1..: the target block, 4 KiB each. */
		seed[0] = aio_new_seed();
		aio_fill_pattern(st->buf, BIG, seed[0], 0);
		aio_prep_rw(&cbs[0], IOCB_CMD_PWRITE, st->fd, st->buf, BIG, 0, 0);
		for (i = 1; i < NR_WRITES; i++) {
			char *p = st->buf + BIG + (i - 1) * BLK;

			seed[i] = aio_new_seed();
			aio_fill_pattern(p, BLK, seed[i], TARGET_OFF);
			aio_prep_rw(&cbs[i], IOCB_CMD_PWRITE, st->fd, p, BLK,
				    TARGET_OFF, i);
		}
		/* Handed off while frozen, they run after the thaw, in order. */
		submit_and_reap(_metadata, st, cbs, NR_WRITES);
		ASSERT_EQ(BLK, pread(st->fd, got, BLK, TARGET_OFF));
		for (i = NR_WRITES - 1; i >= 0; i--)
			if (aio_verify_pattern(got, BLK, seed[i], TARGET_OFF) < 0)
				break;
		ASSERT_EQ(NR_WRITES - 1, i)
			TH_LOG("round %d: the block holds write %d of %d",
			       round + 1, i + 1, NR_WRITES);
		/* The big write landed around the target. */
		ASSERT_EQ(BLK, pread(st->fd, got, BLK, 0));
		ASSERT_EQ(-1, aio_verify_pattern(got, BLK, seed[0], 0));
		ASSERT_EQ(BLK, pread(st->fd, got, BLK, BIG - BLK));
		ASSERT_EQ(-1, aio_verify_pattern(got, BLK, seed[0], BIG - BLK));
	}
}

/* "key N" of the root cgroup's aio.stat; -1 without the controller. */
static long long root_stat(const char *key)
{
	return aio_read_key(ROOT_STAT, key);
}

/*
 * Requests handed off for the filesystem's or the device's own reasons:
 * every punt in the root's aio.stat but the order's and O_DSYNC's (the
 * tests' own hand-offs).  The root counts the whole machine: the rig
 * runs one test at a time.
 */
static long long root_fs_punts(void)
{
	static const char * const keys[] = { "punt_no_nowait",
		"punt_blocking_queue", "punt_frozen", "punt_eagain",
		"punt_eopnotsupp", "punt_short", "punt_append",
		"punt_buffered", "punt_zoned" };
	long long v, sum = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		v = root_stat(keys[i]);
		if (v < 0)
			return -1;
		sum += v;
	}
	return sum;
}

/*
 * With the filesystem frozen, queue an O_DIRECT write of new data to
 * TARGET_OFF (a worker waits in the freeze with it) and cache the old
 * block through a buffered fd, which is returned.
 */
static int queue_frozen_write(struct __test_metadata *_metadata,
			      struct order_state *st, struct iocb *cb,
			      uint64_t seed)
{
	struct iocb *list = cb;
	char path[sizeof(st->mnt) + 8];
	int bfd;

	snprintf(path, sizeof(path), "%s/f", st->mnt);
	bfd = open(path, O_RDONLY);
	if (bfd < 0)
		return -1;
	if (pread(bfd, st->buf + 2 * BLK, BLK, TARGET_OFF) != BLK) {
		close(bfd);
		return -1;
	}
	if (aio_fs_freeze(st->mnt)) {
		close(bfd);
		return -1;
	}
	st->frozen = true;
	aio_fill_pattern(st->buf, BLK, seed, TARGET_OFF);
	aio_prep_rw(cb, IOCB_CMD_PWRITE, st->fd, st->buf, BLK, TARGET_OFF, 0);
	if (sys_io_submit(st->ctx, 1, &list) != 1) {
		close(bfd);
		return -1;
	}
	return bfd;
}

/*
 * The user's RWF_NOWAIT asks not to wait: a read of a block that a queued
 * write will change cannot be served without waiting for it, so it gets
 * -EAGAIN.  Issued inline regardless, it would return the old data, which
 * stock (whose write finished inside io_submit()) never shows.
 */
TEST_F_TIMEOUT(order, rwf_nowait_behind_queued_write, 300)
{
	struct order_state *st = &self->st;
	struct iocb cbs[2], *list = &cbs[1];
	struct io_event ev[2];
	const char *skip;
	uint64_t seed;
	long submitted, got;
	int bfd, i;

	if (aio_offload_enabled() != 1)
		SKIP(return, "needs fs.aio-offload=1: stock io_submit() blocks");
	skip = setup_file(_metadata, st, O_DIRECT);
	if (skip)
		SKIP(return, "%s", skip);
	seed = aio_new_seed();
	bfd = queue_frozen_write(_metadata, st, &cbs[0], seed);
	ASSERT_LE(0, bfd);

	memset(st->buf + BLK, 0x5a, BLK);
	aio_prep_rw(&cbs[1], IOCB_CMD_PREAD, bfd, st->buf + BLK, BLK,
		    TARGET_OFF, 1);
	cbs[1].aio_rw_flags = RWF_NOWAIT;
	submitted = sys_io_submit(st->ctx, 1, &list);
	got = submitted == 1 ? aio_reap(st->ctx, ev, 1, 10) : 0;
	for (i = 0; i < BLK; i++)
		if ((unsigned char)st->buf[BLK + i] != 0x5a)
			break;
	/* Thawed before any ASSERT: a frozen worker would hold the exit. */
	ASSERT_EQ(0, aio_fs_thaw(st->mnt));
	st->frozen = false;
	ASSERT_EQ(1, submitted);
	ASSERT_EQ(1, got) TH_LOG("no event for the RWF_NOWAIT read");
	ASSERT_EQ(1ULL, ev[0].data);
	EXPECT_EQ(-EAGAIN, ev[0].res)
		TH_LOG("RWF_NOWAIT read behind a queued write: res %lld",
		       (long long)ev[0].res);
	EXPECT_EQ(BLK, i) TH_LOG("the -EAGAIN read wrote the buffer");

	ASSERT_EQ(1, aio_reap(st->ctx, ev, 1, 60));
	EXPECT_EQ(BLK, ev[0].res);
	ASSERT_EQ(BLK, pread(bfd, st->buf + BLK, BLK, TARGET_OFF));
	EXPECT_EQ(-1, aio_verify_pattern(st->buf + BLK, BLK, seed,
					 TARGET_OFF));
	close(bfd);
}

/*
 * fs.aio-offload=0 stops new punts, not the order: reads submitted after
 * the sysctl went to 0 still wait for the write queued before them, one
 * of its block and one of another: with the sysctl at 0 a request is
 * issued blocking, so it waits for anything queued on the file.
 */
TEST_F_TIMEOUT(order, sysctl_off_keeps_order, 300)
{
	struct order_state *st = &self->st;
	struct iocb cbs[3], *list[2] = { &cbs[1], &cbs[2] };
	struct timespec zero = { 0, 0 };
	struct io_event ev[3];
	const char *skip;
	long submitted, early = -1;
	uint64_t seed;
	int bfd, i, ret;

	if (aio_offload_enabled() != 1)
		SKIP(return, "needs fs.aio-offload=1: stock io_submit() blocks");
	skip = setup_file(_metadata, st, O_DIRECT);
	if (skip)
		SKIP(return, "%s", skip);
	seed = aio_new_seed();
	bfd = queue_frozen_write(_metadata, st, &cbs[0], seed);
	ASSERT_LE(0, bfd);
	st->sysctl_off = true;
	ret = aio_write_file(OFFLOAD_SYSCTL, "0");

	/* Cached old data: issued inline it would return at once. */
	memset(st->buf + BLK, 0x5a, BLK);
	aio_prep_rw(&cbs[1], IOCB_CMD_PREAD, bfd, st->buf + BLK, BLK,
		    TARGET_OFF, 1);
	/*
	 * And a block the write does not touch: issued without offload
	 * it would be issued blocking, which could pass the queued write
	 * (and, were it a write, take the space stock gave that one).
	 */
	aio_prep_rw(&cbs[2], IOCB_CMD_PREAD, bfd, st->buf + 2 * BLK, BLK,
		    TARGET_OFF + 8 * BLK, 2);
	submitted = ret ? -1 : sys_io_submit(st->ctx, 2, list);
	if (submitted == 2)
		early = sys_io_getevents(st->ctx, 0, 3, ev, &zero);
	/* Thawed before any ASSERT: a frozen worker would hold the exit. */
	ASSERT_EQ(0, aio_write_file(OFFLOAD_SYSCTL, "1"));
	st->sysctl_off = false;
	ASSERT_EQ(0, aio_fs_thaw(st->mnt));
	st->frozen = false;
	ASSERT_EQ(0, ret);
	ASSERT_EQ(2, submitted);
	EXPECT_EQ(0, early)
		TH_LOG("%ld reads completed ahead of the queued write", early);
	if (early < 0)
		early = 0;
	ASSERT_EQ(3 - early, aio_reap(st->ctx, ev, 3 - early, 60));
	for (i = 0; i < 3 - early; i++)
		EXPECT_EQ(BLK, ev[i].res);
	EXPECT_EQ(-1, aio_verify_pattern(st->buf + BLK, BLK, seed,
					 TARGET_OFF))
		TH_LOG("the read overtook the write queued before it");
	close(bfd);
}

/*
 * A buffered write is one filesystem call, made by a worker: a NOWAIT try
 * could stop part way and leave the rest to a second call, which a
 * concurrent reader could see in between (XFS holds the iolock across
 * one call) and which would run timestamps and privilege stripping twice.
 */
#define ONE_CALL_NR	8

TEST_F_TIMEOUT(order, buffered_write_one_call, 300)
{
	struct order_state *st = &self->st;
	struct iocb cbs[ONE_CALL_NR];
	long long buf0, buf1, inl0, inl1, ord0, ord1;
	uint64_t seed;
	const char *skip;
	int i;

	if (aio_offload_enabled() != 1)
		SKIP(return, "needs fs.aio-offload=1");
	skip = setup_file(_metadata, st, 0);
	if (skip)
		SKIP(return, "%s", skip);
	buf0 = root_stat("punt_buffered");
	ord0 = root_stat("punt_ordered");
	inl0 = root_stat("inline");
	if (inl0 < 0)
		SKIP(return, "no %s", ROOT_STAT);
	EXPECT_LE(0, buf0) TH_LOG("no punt_buffered in %s", ROOT_STAT);
	seed = aio_new_seed();
	aio_fill_pattern(st->buf, ONE_CALL_NR * BLK, seed, 0);
	/* Cached blocks: a NOWAIT try would succeed inline on XFS. */
	for (i = 0; i < ONE_CALL_NR; i++)
		aio_prep_rw(&cbs[i], IOCB_CMD_PWRITE, st->fd, st->buf + i * BLK,
			    BLK, (off_t)i * BLK, i);
	submit_and_reap(_metadata, st, cbs, ONE_CALL_NR);
	buf1 = root_stat("punt_buffered");
	ord1 = root_stat("punt_ordered");
	inl1 = root_stat("inline");
	/* Each as buffered, or behind an earlier one as ordered. */
	EXPECT_LE(1, buf1 - buf0);
	EXPECT_EQ(ONE_CALL_NR, buf1 - buf0 + ord1 - ord0);
	EXPECT_EQ(0, inl1 - inl0) TH_LOG("buffered writes tried inline");
	ASSERT_EQ(ONE_CALL_NR * BLK,
		  pread(st->fd, st->buf + BIG, ONE_CALL_NR * BLK, 0));
	EXPECT_EQ(-1, aio_verify_pattern(st->buf + BIG, ONE_CALL_NR * BLK,
					 seed, 0));
}

/*
 * A cached buffered read across EOF stops there: that is its complete
 * result, as a blocking read's, so it completes inline instead of going
 * to a worker to find the same end.
 */
TEST_F_TIMEOUT(order, read_to_eof_is_final, 300)
{
	struct order_state *st = &self->st;
	struct iocb cb, *list = &cb;
	long long short0, short1, inl0, inl1;
	struct io_event ev;
	char path[sizeof(st->mnt) + 8];
	uint64_t seed;
	const char *skip;
	int fd;

	if (aio_offload_enabled() != 1)
		SKIP(return, "needs fs.aio-offload=1");
	skip = setup_file(_metadata, st, 0);
	if (skip)
		SKIP(return, "%s", skip);
	seed = aio_new_seed();
	snprintf(path, sizeof(path), "%s/eof", st->mnt);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, fd);
	aio_fill_pattern(st->buf, 3 * BLK / 2, seed, 0);
	ASSERT_EQ(3 * BLK / 2, pwrite(fd, st->buf, 3 * BLK / 2, 0));
	/* Cached: the read finds all of it without I/O. */
	ASSERT_EQ(3 * BLK / 2, pread(fd, st->buf + BIG, 2 * BLK, 0));

	short0 = root_stat("punt_short");
	inl0 = root_stat("inline");
	if (short0 < 0)
		SKIP(return, "no %s", ROOT_STAT);
	memset(st->buf + BIG, 0x5a, 2 * BLK);
	aio_prep_rw(&cb, IOCB_CMD_PREAD, fd, st->buf + BIG, 2 * BLK, 0, 0);
	ASSERT_EQ(1, sys_io_submit(st->ctx, 1, &list));
	ASSERT_EQ(1, aio_reap(st->ctx, &ev, 1, 60));
	short1 = root_stat("punt_short");
	inl1 = root_stat("inline");
	EXPECT_EQ(3 * BLK / 2, ev.res);
	EXPECT_EQ(-1, aio_verify_pattern(st->buf + BIG, 3 * BLK / 2, seed, 0));
	EXPECT_EQ(0, short1 - short0) TH_LOG("the read went to a worker");
	EXPECT_EQ(1, inl1 - inl0);
	close(fd);
}

struct destroy_arg {
	aio_context_t ctx;
	pid_t tid;
	long ret;
};

static void *destroy_thread(void *p)
{
	struct destroy_arg *a = p;

	__atomic_store_n(&a->tid, aio_gettid(), __ATOMIC_SEQ_CST);
	a->ret = sys_io_destroy(a->ctx);
	return NULL;
}

/*
 * Stock AIO finished the write inside io_submit(), so a read submitted
 * after it on another context of the process saw it.  With the write
 * queued behind a freeze, the read on the second context (of a cached
 * block: inline it would return at once) must wait for it, also while
 * io_destroy() of the first context waits for the write: io_destroy()
 * cancels no write, and the read behind it is served after it.
 */
TEST_F_TIMEOUT(order, other_context_read_sees_write, 300)
{
	struct order_state *st = &self->st;
	struct iocb cbs[2], *list = &cbs[1];
	struct destroy_arg da = { .tid = 0, .ret = -2 };
	aio_context_t ctx2 = 0;
	struct io_event ev;
	pthread_t thr;
	const char *skip;
	long submitted;
	char state = 0;
	uint64_t seed;
	int bfd, i;

	if (aio_offload_enabled() != 1)
		SKIP(return, "needs fs.aio-offload=1: stock io_submit() blocks");
	skip = setup_file(_metadata, st, O_DIRECT);
	if (skip)
		SKIP(return, "%s", skip);
	ASSERT_EQ(0, sys_io_setup(8, &ctx2));
	seed = aio_new_seed();
	bfd = queue_frozen_write(_metadata, st, &cbs[0], seed);
	ASSERT_LE(0, bfd);

	memset(st->buf + BLK, 0x5a, BLK);
	aio_prep_rw(&cbs[1], IOCB_CMD_PREAD, bfd, st->buf + BLK, BLK,
		    TARGET_OFF, 1);
	submitted = sys_io_submit(ctx2, 1, &list);
	/* io_destroy() of the first context, waiting for the frozen write. */
	da.ctx = st->ctx;
	i = pthread_create(&thr, NULL, destroy_thread, &da);
	if (!i) {
		st->ctx = 0;
		for (int n = 0; n < 1000 && state != 'D'; n++) {
			pid_t tid = __atomic_load_n(&da.tid, __ATOMIC_SEQ_CST);

			usleep(10000);
			state = tid ? aio_thread_state(tid) : 0;
		}
	}
	/* Thawed before any ASSERT: a frozen worker would hold the exit. */
	ASSERT_EQ(0, aio_fs_thaw(st->mnt));
	st->frozen = false;
	ASSERT_EQ(0, i);
	ASSERT_EQ(0, pthread_join(thr, NULL));
	EXPECT_EQ('D', state) TH_LOG("io_destroy() did not wait for the write");
	EXPECT_EQ(0, da.ret);
	ASSERT_EQ(1, submitted) TH_LOG("io_submit: %s", strerror(errno));
	ASSERT_EQ(1, aio_reap(ctx2, &ev, 1, 60));
	EXPECT_EQ(BLK, ev.res);
	EXPECT_EQ(-1, aio_verify_pattern(st->buf + BLK, BLK, seed,
					 TARGET_OFF))
		TH_LOG("the read on the second context returned old data");
	ASSERT_EQ(BLK, pread(bfd, st->buf + BLK, BLK, TARGET_OFF));
	EXPECT_EQ(-1, aio_verify_pattern(st->buf + BLK, BLK, seed,
					 TARGET_OFF));
	EXPECT_EQ(0, sys_io_destroy(ctx2));
	close(bfd);
}

/*
 * The same without a freeze, as a program would see it: a buffered write
 * of a cold block on one context, then a buffered read of it on another,
 * reaped together, OTHER_READS times at different blocks.
 */
#define OTHER_READS	100

TEST_F_TIMEOUT(order, other_context_reads_100, 300)
{
	struct order_state *st = &self->st;
	struct iocb cbs[2], *list[2] = { &cbs[0], &cbs[1] };
	aio_context_t ctx2 = 0;
	struct io_event ev;
	const char *skip;
	int i, stale = 0;
	uint64_t seed;

	skip = setup_file(_metadata, st, 0);
	if (skip)
		SKIP(return, "%s", skip);
	ASSERT_EQ(0, sys_io_setup(8, &ctx2));
	/* Cold: the next read of each block has to go to the device. */
	ASSERT_EQ(0, posix_fadvise(st->fd, 0, FILE_LEN, POSIX_FADV_DONTNEED));
	for (i = 0; i < OTHER_READS; i++) {
		off_t off = (off_t)(i % (FILE_LEN / BLK)) * BLK;

		seed = aio_new_seed();
		aio_fill_pattern(st->buf, BLK, seed, off);
		memset(st->buf + BLK, 0x5a, BLK);
		aio_prep_rw(&cbs[0], IOCB_CMD_PWRITE, st->fd, st->buf, BLK,
			    off, 0);
		aio_prep_rw(&cbs[1], IOCB_CMD_PREAD, st->fd, st->buf + BLK,
			    BLK, off, 1);
		ASSERT_EQ(1, sys_io_submit(st->ctx, 1, &list[0]));
		ASSERT_EQ(1, sys_io_submit(ctx2, 1, &list[1]));
		ASSERT_EQ(1, aio_reap(ctx2, &ev, 1, 60));
		EXPECT_EQ(BLK, ev.res);
		if (aio_verify_pattern(st->buf + BLK, BLK, seed, off) >= 0)
			stale++;
		ASSERT_EQ(1, aio_reap(st->ctx, &ev, 1, 60));
		EXPECT_EQ(BLK, ev.res);
	}
	EXPECT_EQ(0, stale)
		TH_LOG("%d of %d reads on the second context returned old data",
		       stale, OTHER_READS);
	EXPECT_EQ(0, sys_io_destroy(ctx2));
}

/*
 * Order is kept per file, not per hash bucket of files: a buffered write
 * whose worker waits in a userfaultfd fault (the process's own handler,
 * or a FUSE server, has not answered yet) must not hold up requests on
 * other files, which stock issued without waiting for it.  A read of each
 * of MANY_FILES cached files is submitted while the write waits; each
 * must complete, with its data.  With 256 buckets, as before per-file
 * entries, about 8 of them shared the write's bucket and waited.
 */
#define MANY_FILES	2048
#define MANY_BATCH	32
#define MANY_WAIT_SEC	10

TEST_F_TIMEOUT(order, stuck_write_holds_no_other_file, 300)
{
	struct order_state *st = &self->st;
	struct iocb wcb, cbs[MANY_BATCH], *list[MANY_BATCH], *wlist = &wcb;
	struct io_event ev[MANY_BATCH + 1];
	char path[sizeof(st->mnt) + 16], *wbuf = st->buf + MANY_BATCH * BLK;
	int fds[MANY_BATCH], i = 0, j, n = 0;
	int done = 0, stuck = 0, wrong = 0, early = 0;
	struct aio_uffd u;
	uint64_t seed, wseed;
	const char *skip;
	bool faulted;
	long got;

	if (aio_offload_enabled() != 1)
		SKIP(return, "needs fs.aio-offload=1: stock waits in the fault");
	skip = setup_file(_metadata, st, 0);
	if (skip)
		SKIP(return, "%s", skip);
	i = aio_uffd_create(&u, BLK);
	if (i)
		SKIP(return, "userfaultfd: %s", strerror(-i));

	seed = aio_new_seed();
	snprintf(path, sizeof(path), "%s/m", st->mnt);
	ASSERT_EQ(0, mkdir(path, 0700));
	for (i = 0; i < MANY_FILES; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/m/%d", st->mnt, i);
		fd = open(path, O_RDWR | O_CREAT, 0600);
		ASSERT_LE(0, fd) TH_LOG("open %s: %s", path, strerror(errno));
		aio_fill_pattern(st->buf, BLK, seed, (uint64_t)i * BLK);
		ASSERT_EQ(BLK, pwrite(fd, st->buf, BLK, 0));
		close(fd);
	}

	/* A worker takes the write and waits in the fault on the region. */
	aio_prep_rw(&wcb, IOCB_CMD_PWRITE, st->fd, u.region, BLK, 0,
		    MANY_BATCH);
	ASSERT_EQ(1, sys_io_submit(st->ctx, 1, &wlist));
	faulted = aio_uffd_wait_fault(&u, MANY_WAIT_SEC * 1000);

	for (i = 0; faulted && !stuck && i < MANY_FILES; i += n) {
		n = MANY_FILES - i < MANY_BATCH ? MANY_FILES - i : MANY_BATCH;
		for (j = 0; j < n; j++) {
			snprintf(path, sizeof(path), "%s/m/%d", st->mnt, i + j);
			fds[j] = open(path, O_RDONLY);
			if (fds[j] < 0)
				break;
			memset(st->buf + j * BLK, 0x5a, BLK);
			aio_prep_rw(&cbs[j], IOCB_CMD_PREAD, fds[j],
				    st->buf + j * BLK, BLK, 0, j);
			list[j] = &cbs[j];
		}
		got = -1;
		if (j == n)
			got = sys_io_submit(st->ctx, n, list) == n ?
			      aio_reap(st->ctx, ev, n, MANY_WAIT_SEC) : -1;
		while (j--)
			close(fds[j]);
		if (got < 0) {
			stuck = -1;
			break;
		}
		for (j = 0; j < got; j++) {
			int k = ev[j].data;

			if (k == MANY_BATCH) {
				early++;
				continue;
			}
			done++;
			if (ev[j].res != BLK ||
			    aio_verify_pattern(st->buf + k * BLK, BLK, seed,
					       (uint64_t)(i + k) * BLK) >= 0)
				wrong++;
		}
		stuck = n - (got - early);
	}

	/* Let the write go, whatever happened, so that it completes. */
	wseed = aio_new_seed();
	aio_fill_pattern(wbuf, BLK, wseed, 0);
	EXPECT_EQ(0, aio_uffd_fill(&u, wbuf));
	got = aio_reap(st->ctx, ev, 1 - early + (stuck > 0 ? stuck : 0), 60);

	ASSERT_TRUE(faulted) TH_LOG("the write did not fault on the region");
	ASSERT_LE(0, stuck) TH_LOG("open or io_submit of file %d failed: %s",
				   i, strerror(errno));
	EXPECT_EQ(0, stuck)
		TH_LOG("%d reads of files %d.. waited for the write on another file",
		       stuck, i - n);
	EXPECT_EQ(MANY_FILES, done);
	EXPECT_EQ(0, wrong) TH_LOG("%d reads returned wrong data", wrong);
	EXPECT_EQ(0, early) TH_LOG("the write completed before its fault was resolved");
	EXPECT_EQ(1 - early + stuck, got);
	ASSERT_EQ(BLK, pread(st->fd, st->buf, BLK, 0));
	EXPECT_EQ(-1, aio_verify_pattern(st->buf, BLK, wseed, 0))
		TH_LOG("the write's data is not in the file");
	aio_uffd_destroy(&u);
}

/*
 * Requests on a block device are ordered by the device, not by the device
 * node they came through: stock finished a buffered write to the device
 * inside io_submit(), so a read submitted after it through another node
 * of the same device (a second mknod, a udev link's target) saw it.  The
 * write's worker waits in a userfaultfd fault for as long as the test
 * wants; the read of the same cached block through the second node must
 * wait for it, then return the new data.
 */
#define NODE_PATH	"/tmp/aio-order-node"
#define NODE_OFF	(64 * BLK)
#define NODE_WAIT_SEC	2

TEST(bdev_nodes_share_order)
{
	struct iocb cbs[2], *list0 = &cbs[0], *list1 = &cbs[1];
	const char *dev = aio_dev_path();
	uint64_t seed0 = aio_new_seed(), seed1 = aio_new_seed();
	int fd1, fd2, early, reaped, i;
	aio_context_t ctx = 0;
	struct io_event ev[2];
	struct aio_uffd u;
	struct stat sb;
	bool faulted;
	char *buf;

	if (aio_offload_enabled() != 1)
		SKIP(return, "needs fs.aio-offload=1: stock waits in the fault");
	if (!dev)
		SKIP(return, "AIO_TEST_DEV not set");
	if (!aio_dev_holds_data())
		SKIP(return, "the device does not store data");
	ASSERT_EQ(0, stat(dev, &sb));
	ASSERT_TRUE(S_ISBLK(sb.st_mode));
	unlink(NODE_PATH);
	ASSERT_EQ(0, mknod(NODE_PATH, S_IFBLK | 0600, sb.st_rdev))
		TH_LOG("mknod %s %u:%u: %s", NODE_PATH, major(sb.st_rdev),
		       minor(sb.st_rdev), strerror(errno));
	fd1 = open(dev, O_RDWR);
	fd2 = open(NODE_PATH, O_RDWR);
	unlink(NODE_PATH);
	ASSERT_LE(0, fd1);
	ASSERT_LE(0, fd2);
	buf = aio_alloc_buf(2 * BLK);
	ASSERT_NE(NULL, buf);
	/* The old block, cached: a read of it would complete at once. */
	aio_fill_pattern(buf, BLK, seed0, NODE_OFF);
	ASSERT_EQ(BLK, pwrite(fd1, buf, BLK, NODE_OFF));
	ASSERT_EQ(0, fsync(fd1));
	ASSERT_EQ(BLK, pread(fd2, buf, BLK, NODE_OFF));

	i = aio_uffd_create(&u, BLK);
	if (i)
		SKIP(return, "userfaultfd: %s", strerror(-i));

	ASSERT_EQ(0, sys_io_setup(8, &ctx));
	aio_prep_rw(&cbs[0], IOCB_CMD_PWRITE, fd1, u.region, BLK, NODE_OFF, 0);
	aio_prep_rw(&cbs[1], IOCB_CMD_PREAD, fd2, buf + BLK, BLK, NODE_OFF, 1);
	memset(buf + BLK, POISON_BYTE, BLK);
	ASSERT_EQ(1, sys_io_submit(ctx, 1, &list0));
	faulted = aio_uffd_wait_fault(&u, 10000);
	ASSERT_EQ(1, sys_io_submit(ctx, 1, &list1));
	/* The write waits in its fault: nothing may complete. */
	early = aio_reap(ctx, ev, 1, NODE_WAIT_SEC);
	if (early < 0)
		early = 0;

	aio_fill_pattern(buf, BLK, seed1, NODE_OFF);
	EXPECT_EQ(0, aio_uffd_fill(&u, buf));
	reaped = aio_reap(ctx, ev + early, 2 - early, 60);

	ASSERT_TRUE(faulted) TH_LOG("the write did not fault on the region");
	EXPECT_EQ(0, early)
		TH_LOG("iocb %llu completed while the write waited (res %lld)",
		       (unsigned long long)ev[0].data, (long long)ev[0].res);
	ASSERT_EQ(2 - early, reaped);
	for (i = 0; i < 2; i++)
		EXPECT_EQ(BLK, ev[i].res);
	EXPECT_EQ(-1, aio_verify_pattern(buf + BLK, BLK, seed1, NODE_OFF))
		TH_LOG("the read through the second node returned old data");
	ASSERT_EQ(BLK, pread(fd2, buf, BLK, NODE_OFF));
	EXPECT_EQ(-1, aio_verify_pattern(buf, BLK, seed1, NODE_OFF));
	EXPECT_EQ(0, sys_io_destroy(ctx));
	aio_uffd_destroy(&u);
	aio_free_buf(buf, 2 * BLK);
	close(fd1);
	close(fd2);
}

/*
 * A sequential zone takes writes only at its write pointer, so the order
 * stock issues a batch in is the only one that works.  Writes to a zoned
 * device are never tried with the offload's NOWAIT (a try that issued
 * part of a write before -EAGAIN would leave the rest to be issued after
 * later writes): each goes to a worker, and the pool issues them in
 * order.  ZONED_NR sequential writes in one io_submit() must all succeed,
 * move the write pointer by all of them and read back.  The device is a
 * null_blk made through configfs, memory backed.
 */
#define ZONED_NAME	"aio-zoned"
#define ZONED_NR	64

TEST(zoned_writes_in_order)
{
	struct iocb cbs[ZONED_NR], *list[ZONED_NR];
	struct io_event ev[ZONED_NR];
	static const char * const zoned_attrs[] = {
		"zoned=1", "blocksize=4096", "size=64", "zone_size=4",
		"zone_nr_conv=0", "memory_backed=1", NULL };
	uint64_t seed = aio_new_seed();
	char dev[64];
	struct blk_zone_report *rep;
	long long zoned0, zoned1, inline0, inline1;
	aio_context_t ctx = 0;
	int fd, i, bad, offload, ret;
	char *buf;

	ret = aio_nullb_create(ZONED_NAME, zoned_attrs, dev, sizeof(dev));
	if (ret == -ENOENT)
		SKIP(return, "no null_blk configfs");
	if (ret == -EINVAL || ret == -EOPNOTSUPP) {
		aio_nullb_remove(ZONED_NAME);
		SKIP(return, "null_blk without zoned devices (CONFIG_BLK_DEV_ZONED)");
	}
	ASSERT_EQ(0, ret) TH_LOG("null_blk %s: %s", ZONED_NAME, strerror(-ret));
	fd = open(dev, O_RDWR | O_DIRECT);
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", dev, strerror(errno));
	buf = aio_alloc_buf(2 * ZONED_NR * BLK);
	ASSERT_NE(NULL, buf);
	rep = calloc(1, sizeof(*rep) + sizeof(struct blk_zone));
	ASSERT_NE(NULL, rep);

	ASSERT_EQ(0, sys_io_setup(ZONED_NR, &ctx));
	offload = aio_offload_enabled();
	/* The first is punt_zoned, those behind it punt_ordered. */
	zoned0 = root_stat("punt_zoned") + root_stat("punt_ordered");
	inline0 = root_stat("inline");
	aio_fill_pattern(buf, ZONED_NR * BLK, seed, 0);
	for (i = 0; i < ZONED_NR; i++) {
		aio_prep_rw(&cbs[i], IOCB_CMD_PWRITE, fd, buf + i * BLK, BLK,
			    (off_t)i * BLK, i);
		list[i] = &cbs[i];
	}
	ASSERT_EQ(ZONED_NR, sys_io_submit(ctx, ZONED_NR, list))
		TH_LOG("io_submit: %s", strerror(errno));
	ASSERT_EQ(ZONED_NR, aio_reap(ctx, ev, ZONED_NR, 60));
	zoned1 = root_stat("punt_zoned") + root_stat("punt_ordered");
	inline1 = root_stat("inline");
	for (i = 0, bad = -1; i < ZONED_NR; i++)
		if (ev[i].res != BLK && bad < 0)
			bad = i;
	EXPECT_EQ(-1, bad)
		TH_LOG("write %llu: %lld", (unsigned long long)ev[bad].data,
		       (long long)ev[bad].res);
	if (offload == 1 && inline0 >= 0) {
		EXPECT_EQ(ZONED_NR, zoned1 - zoned0)
			TH_LOG("aio.stat punt_zoned + punt_ordered %lld -> %lld",
			       zoned0, zoned1);
		EXPECT_EQ(0, inline1 - inline0)
			TH_LOG("%lld writes were tried with NOWAIT",
			       inline1 - inline0);
	}

	rep->sector = 0;
	rep->nr_zones = 1;
	ASSERT_EQ(0, ioctl(fd, BLKREPORTZONE, rep));
	ASSERT_EQ(1U, rep->nr_zones);
	EXPECT_EQ((__u64)ZONED_NR * BLK / 512,
		  rep->zones[0].wp - rep->zones[0].start);
	ASSERT_EQ(ZONED_NR * BLK, pread(fd, buf + ZONED_NR * BLK,
					ZONED_NR * BLK, 0));
	EXPECT_EQ(-1, aio_verify_pattern(buf + ZONED_NR * BLK, ZONED_NR * BLK,
					 seed, 0));

	EXPECT_EQ(0, sys_io_destroy(ctx));
	free(rep);
	aio_free_buf(buf, 2 * ZONED_NR * BLK);
	close(fd);
	EXPECT_EQ(0, aio_nullb_remove(ZONED_NAME));
}

/*
 * Each injected failure of an allocation that may warn logs a stack
 * trace, which the rig takes for a kernel bug: make failslab quiet
 * (debugfs, mounted if need be), until the teardown.
 */
static int quiet_failslab(struct order_state *st)
{
	int ret;

	if (access(FAILSLAB_VERBOSE, W_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	ret = aio_read_file(FAILSLAB_VERBOSE, st->verbose,
			    sizeof(st->verbose));
	if (ret) {
		st->verbose[0] = '\0';
		return ret;
	}
	return aio_write_file(FAILSLAB_VERBOSE, "0");
}

/*
 * io_submit() of one iocb with the @nth slab allocation of this thread
 * failing (the thread's fail-nth, open as @fnth): io_submit()'s return,
 * errno kept; *@hit: the failure was injected.
 */
static long submit_failing(int fnth, aio_context_t ctx, struct iocb **list,
			   int nth, bool *hit)
{
	char num[16] = "";
	long ret;
	int err;

	snprintf(num, sizeof(num), "%d", nth);
	if (pwrite(fnth, num, strlen(num), 0) < 0)
		return -2;
	ret = sys_io_submit(ctx, 1, list);
	err = errno;
	memset(num, 0, sizeof(num));
	*hit = pread(fnth, num, sizeof(num) - 1, 0) > 0 && !atoi(num);
	if (pwrite(fnth, "0", 1, 0) < 0)
		*hit = false;
	errno = err;
	return ret;
}

/*
 * What both fault-injection tests need: the offload, this thread's
 * fail-nth (opened into *@fnth), failslab's knob for sleeping
 * allocations if @sleeping, the file, and a userfaultfd region of one
 * block (@u) for a write to wait on.  NULL, or why the test skips.
 */
static const char *fault_setup(struct __test_metadata *_metadata,
			       struct order_state *st, bool sleeping,
			       int *fnth, struct aio_uffd *u)
{
	static char why[128];
	const char *skip;
	int ret;

	if (aio_offload_enabled() != 1)
		return "needs fs.aio-offload=1: stock waits in the fault";
	*fnth = open(FAIL_NTH, O_RDWR | O_CLOEXEC);
	if (*fnth < 0) {
		snprintf(why, sizeof(why), "%s: %s (CONFIG_FAULT_INJECTION)",
			 FAIL_NTH, strerror(errno));
		return why;
	}
	if (sleeping && access(FAILSLAB_GFP, W_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	if (sleeping && access(FAILSLAB_GFP, W_OK)) {
		snprintf(why, sizeof(why), "%s: %s (CONFIG_FAILSLAB, debugfs)",
			 FAILSLAB_GFP, strerror(errno));
		goto skip;
	}
	skip = setup_file(_metadata, st, 0);
	if (skip) {
		snprintf(why, sizeof(why), "%s", skip);
		goto skip;
	}
	ret = aio_uffd_create(u, BLK);
	if (!ret)
		return NULL;
	snprintf(why, sizeof(why), "userfaultfd: %s", strerror(-ret));
skip:
	close(*fnth);
	return why;
}

/*
 * The first request queued on a file makes its order entry without
 * sleeping; if that allocation fails, it takes the pool's fallback entry,
 * which must order it as its own would: a read of the block behind a
 * write waiting in a userfaultfd fault waits for it.  Only allocations
 * that cannot sleep are failed here (failslab's default), and the first
 * one of io_submit() is that entry.
 */
TEST_F_TIMEOUT(order, order_entry_fallback, 300)
{
	struct order_state *st = &self->st;
	struct iocb cbs[2], *list0 = &cbs[0], *list1 = &cbs[1];
	uint64_t seed = aio_new_seed();
	struct io_event ev[2];
	struct aio_uffd u;
	bool hit = false, faulted;
	int fnth, early, reaped, i;
	const char *skip;
	long submitted;

	skip = fault_setup(_metadata, st, false, &fnth, &u);
	if (skip)
		SKIP(return, "%s", skip);
	/* The old block, cached: a read of it would complete at once. */
	ASSERT_EQ(BLK, pread(st->fd, st->buf + BLK, BLK, TARGET_OFF));
	/* Best effort: the entry's allocation does not warn anyway. */
	quiet_failslab(st);

	aio_prep_rw(&cbs[0], IOCB_CMD_PWRITE, st->fd, u.region, BLK,
		    TARGET_OFF, 0);
	aio_prep_rw(&cbs[1], IOCB_CMD_PREAD, st->fd, st->buf + BLK, BLK,
		    TARGET_OFF, 1);
	submitted = submit_failing(fnth, st->ctx, &list0, 1, &hit);
	ASSERT_EQ(1, submitted) TH_LOG("io_submit: %s", strerror(errno));
	faulted = aio_uffd_wait_fault(&u, 10000);
	memset(st->buf + BLK, POISON_BYTE, BLK);
	ASSERT_EQ(1, sys_io_submit(st->ctx, 1, &list1));
	early = aio_reap(st->ctx, ev, 1, NODE_WAIT_SEC);
	if (early < 0)
		early = 0;
	aio_fill_pattern(st->buf, BLK, seed, TARGET_OFF);
	EXPECT_EQ(0, aio_uffd_fill(&u, st->buf));
	reaped = aio_reap(st->ctx, ev + early, 2 - early, 60);

	ASSERT_TRUE(hit) TH_LOG("no allocation failed in io_submit()");
	ASSERT_TRUE(faulted) TH_LOG("the write did not fault on the region");
	EXPECT_EQ(0, early)
		TH_LOG("iocb %llu completed while the write waited",
		       (unsigned long long)ev[0].data);
	ASSERT_EQ(2 - early, reaped);
	for (i = 0; i < 2; i++)
		EXPECT_EQ(BLK, ev[i].res);
	EXPECT_EQ(-1, aio_verify_pattern(st->buf + BLK, BLK, seed, TARGET_OFF))
		TH_LOG("the read returned old data");
	ASSERT_EQ(BLK, pread(st->fd, st->buf, BLK, TARGET_OFF));
	EXPECT_EQ(-1, aio_verify_pattern(st->buf, BLK, seed, TARGET_OFF));
	aio_uffd_destroy(&u);
	close(fnth);
}

/*
 * Bad luck with memory gets a clear error and loses nothing, and what is
 * accepted keeps its order.  Behind a write waiting in a userfaultfd
 * fault, FAIL_ROUNDS vectored writes of the same block are submitted,
 * round N with the Nth allocation of io_submit() failing, sleeping ones
 * too: the request (-EAGAIN, as stock), the copy of its iovec a worker
 * needs (-ENOMEM: the file is busy, so issuing it inline would overtake
 * the queued write), none.  A rejected write must write nothing, an
 * accepted one must wait for the write before it: no event before the
 * fault is resolved, and the last accepted write's data in the file.
 */
#define FAIL_ROUNDS	6

TEST_F_TIMEOUT(order, failed_allocations_lose_nothing, 300)
{
	struct order_state *st = &self->st;
	struct iocb cbs[FAIL_ROUNDS + 1], *list[FAIL_ROUNDS + 1];
	struct io_event ev[FAIL_ROUNDS + 1];
	struct iovec iov[FAIL_ROUNDS + 1][2];
	uint64_t seed[FAIL_ROUNDS + 1];
	int fnth, nth, last = 0, accepted = 0, enomem = 0, injected = 0;
	long early, reaped, i;
	struct aio_uffd u;
	const char *skip;
	bool faulted, hit;

	skip = fault_setup(_metadata, st, true, &fnth, &u);
	if (skip)
		SKIP(return, "%s", skip);

	for (nth = 0; nth <= FAIL_ROUNDS; nth++) {
		char *b = st->buf + nth * BLK;

		seed[nth] = aio_new_seed();
		aio_fill_pattern(b, BLK, seed[nth], TARGET_OFF);
		iov[nth][0].iov_base = b;
		iov[nth][0].iov_len = BLK / 2;
		iov[nth][1].iov_base = b + BLK / 2;
		iov[nth][1].iov_len = BLK / 2;
		list[nth] = &cbs[nth];
	}
	aio_prep_rw(&cbs[0], IOCB_CMD_PWRITE, st->fd, u.region, BLK,
		    TARGET_OFF, 0);
	ASSERT_EQ(1, sys_io_submit(st->ctx, 1, &list[0]));
	faulted = aio_uffd_wait_fault(&u, 10000);

	ASSERT_EQ(0, quiet_failslab(st));
	ASSERT_EQ(0, aio_write_file(FAILSLAB_GFP, "N"));
	st->failslab = true;
	for (nth = 1; nth <= FAIL_ROUNDS; nth++) {
		long ret;

		aio_prep_rwv(&cbs[nth], IOCB_CMD_PWRITEV, st->fd, iov[nth], 2,
			     TARGET_OFF, nth);
		hit = false;
		ret = submit_failing(fnth, st->ctx, &list[nth], nth, &hit);
		injected += hit;
		if (ret == 1) {
			accepted++;
			last = nth;
			continue;
		}
		EXPECT_EQ(-1, ret);
		if (errno == ENOMEM)
			enomem++;
		else
			EXPECT_EQ(EAGAIN, errno)
				TH_LOG("round %d: io_submit: %s", nth,
				       strerror(errno));
	}
	ASSERT_EQ(0, aio_write_file(FAILSLAB_GFP, "Y"));
	st->failslab = false;

	early = aio_reap(st->ctx, ev, 1, NODE_WAIT_SEC);
	if (early < 0)
		early = 0;
	EXPECT_EQ(0, aio_uffd_fill(&u, st->buf));
	reaped = aio_reap(st->ctx, ev + early, 1 + accepted - early, 60);

	ASSERT_TRUE(faulted) TH_LOG("the write did not fault on the region");
	EXPECT_LT(0, injected) TH_LOG("no allocation failed in io_submit()");
	EXPECT_LT(0, enomem) TH_LOG("no io_submit() failed with -ENOMEM");
	EXPECT_LT(0, accepted);
	EXPECT_EQ(0, early)
		TH_LOG("write %llu completed before the one queued before it",
		       (unsigned long long)ev[0].data);
	ASSERT_EQ(1 + accepted - early, reaped);
	for (i = 0; i < reaped + early; i++)
		EXPECT_EQ(BLK, ev[i].res)
			TH_LOG("write %llu: %lld", (unsigned long long)ev[i].data,
			       (long long)ev[i].res);
	ASSERT_EQ(BLK, pread(st->fd, st->buf, BLK, TARGET_OFF));
	EXPECT_EQ(-1, aio_verify_pattern(st->buf, BLK, seed[last], TARGET_OFF))
		TH_LOG("the file does not hold the last accepted write (%d)",
		       last);
	aio_uffd_destroy(&u);
	close(fnth);
}

/*
 * An fdatasync holds up nothing submitted after it: stock runs AIO fsync
 * in a kworker, alongside later I/O, so O_DIRECT writes submitted while a
 * slow fdatasync of the same file is in flight complete before it does.
 * The journal (ext4) or log (XFS) is on dm-delay, SLOW_LOG_MS per I/O,
 * at the end of the device; the filesystem is on dm-linear before it.
 */
#define SLOW_LOG_MS	200
#define SLOW_LOG_LEN	(128ULL << 20)
#define SLOW_WRITES	16

static const char *setup_slow_log(struct __test_metadata *_metadata,
				  struct order_state *st)
{
	char path[sizeof(st->mnt) + 8];
	int ret, made;

	if (!aio_dev_path())
		return "AIO_TEST_DEV not set";
	if (!aio_dev_holds_data())
		return "the device does not store data";
	ret = aio_slow_log_fs(st->fstype, DM_FS, DM_LOG, SLOW_LOG_LEN,
			      SLOW_LOG_MS, st->mnt, sizeof(st->mnt), &made);
	st->dm = made & AIO_DM_FS;
	st->dm_log = made & AIO_DM_LOG;
	if (ret == -ENOSPC)
		return "the device is too small for a filesystem and a log";
	if (ret == AIO_MKFS_NOT_FOUND)
		return "dmsetup or mkfs not available";
	ASSERT_EQ(0, ret) TH_LOG("a filesystem with its log on dm-delay");
	snprintf(path, sizeof(path), "%s/f", st->mnt);
	st->fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0600);
	ASSERT_LE(0, st->fd);
	return NULL;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

TEST_F_TIMEOUT(order, fsync_does_not_hold_later_writes, 300)
{
	struct order_state *st = &self->st;
	struct iocb cbs[SLOW_WRITES + 1], *list[SLOW_WRITES + 1];
	char path[sizeof(st->mnt) + 8];
	uint64_t seed[SLOW_WRITES];
	double t0, fsync_ms = 0;
	int i, n, fsync_at = -1;
	const char *skip;
	struct io_event ev;
	int bfd;

	/*
	 * XFS holds the inode's ILOCK shared across the fdatasync's log
	 * force (xfs_fsync_flush_log()), and a direct write's timestamp
	 * update takes it exclusive: a write that needs one waits for the
	 * fdatasync in stock too, unless it got in before the log force.
	 * Under NOWAIT, XFS says -EAGAIN for the timestamp update, so our
	 * writes go to workers and lose that race more often than stock's
	 * inline ones (3-9 of 16 in some runs, 0 in others).
	 */
	if (!strcmp(st->fstype, "xfs"))
		SKIP(return, "XFS: %s",
		     "timestamp updates wait for the fsync's log force");
	skip = setup_slow_log(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);
	/* Allocated, written and committed: overwrites need no metadata. */
	memset(st->buf, 0, FILE_LEN);
	ASSERT_EQ(FILE_LEN, pwrite(st->fd, st->buf, FILE_LEN, 0));
	ASSERT_EQ(0, fsync(st->fd));
	/* A buffered append: the fdatasync has to commit its allocation. */
	snprintf(path, sizeof(path), "%s/f", st->mnt);
	bfd = open(path, O_WRONLY);
	ASSERT_LE(0, bfd);
	ASSERT_EQ(BLK, pwrite(bfd, st->buf, BLK, FILE_LEN));

	memset(&cbs[0], 0, sizeof(cbs[0]));
	cbs[0].aio_fildes = st->fd;
	cbs[0].aio_lio_opcode = IOCB_CMD_FDSYNC;
	cbs[0].aio_data = SLOW_WRITES;
	list[0] = &cbs[0];
	for (i = 0; i < SLOW_WRITES; i++) {
		seed[i] = aio_new_seed();
		aio_fill_pattern(st->buf + i * BLK, BLK, seed[i], i * BLK);
		aio_prep_rw(&cbs[i + 1], IOCB_CMD_PWRITE, st->fd,
			    st->buf + i * BLK, BLK, i * BLK, i);
		list[i + 1] = &cbs[i + 1];
	}
	t0 = now_ms();
	ASSERT_EQ(SLOW_WRITES + 1, sys_io_submit(st->ctx, SLOW_WRITES + 1,
						 list));
	for (n = 0; n < SLOW_WRITES + 1; n++) {
		ASSERT_EQ(1, aio_reap(st->ctx, &ev, 1, 60));
		if (ev.data == SLOW_WRITES) {
			fsync_at = n;
			fsync_ms = now_ms() - t0;
			EXPECT_EQ(0, ev.res);
		} else {
			EXPECT_EQ(BLK, ev.res);
		}
	}
	close(bfd);
	/* Otherwise nothing here could tell a wait. */
	ASSERT_LE(SLOW_LOG_MS, fsync_ms)
		TH_LOG("the fdatasync took %.0f ms: the log is not slow",
		       fsync_ms);
	EXPECT_EQ(SLOW_WRITES, fsync_at)
		TH_LOG("%d of %d writes submitted after the fdatasync (%.0f ms) completed after it",
		       SLOW_WRITES - fsync_at, SLOW_WRITES, fsync_ms);
	for (i = 0; i < SLOW_WRITES; i++) {
		ASSERT_EQ(BLK, pread(st->fd, st->buf + BIG, BLK, i * BLK));
		EXPECT_EQ(-1, aio_verify_pattern(st->buf + BIG, BLK, seed[i],
						 i * BLK));
	}
}

/*
 * The variant's filesystem made on the scratch device and mounted through
 * dm-delay, its writes held @write_ms each (reads not delayed), with a
 * FILE_LEN file; NULL or why not.
 */
static const char *setup_delayed_fs(struct __test_metadata *_metadata,
				    struct order_state *st, int write_ms)
{
	const char *dev = aio_dev_path();
	char table[256], path[sizeof(st->mnt) + 8];
	uint64_t size;
	int fd, ret;

	if (!dev)
		return "AIO_TEST_DEV not set";
	if (!aio_dev_holds_data())
		return "the device does not store data";
	ret = aio_mkfs(dev, st->fstype);
	if (ret == AIO_MKFS_NOT_FOUND)
		return "mkfs not available";
	ASSERT_EQ(0, ret);
	fd = open(dev, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, aio_dev_size(fd, &size));
	close(fd);
	snprintf(table, sizeof(table), "0 %llu delay %s 0 0 %s 0 %d",
		 (unsigned long long)(size >> 9), dev, dev, write_ms);
	ret = aio_dm_create(DM_FS, table);
	if (ret == AIO_MKFS_NOT_FOUND)
		return "dmsetup not available";
	ASSERT_EQ(0, ret) TH_LOG("dm-delay: %s", table);
	st->dm = true;
	ret = aio_mount_tmp("/dev/mapper/" DM_FS, st->fstype, NULL, st->mnt,
			    sizeof(st->mnt));
	ASSERT_EQ(0, ret) TH_LOG("mount: %s", strerror(-ret));
	snprintf(path, sizeof(path), "%s/f", st->mnt);
	st->fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0600);
	ASSERT_LE(0, st->fd);
	memset(st->buf, 0, FILE_LEN);
	ASSERT_EQ(FILE_LEN, pwrite(st->fd, st->buf, FILE_LEN, 0));
	ASSERT_EQ(0, fsync(st->fd));
	return NULL;
}

/*
 * Where an O_APPEND write lands is known only when it runs: the offset in
 * its iocb is ignored.  So while it is in flight it holds the whole file:
 * a read of the end of the file (below the ignored offset), submitted
 * after it, returns what it appended, as after stock's append.  Holding
 * [offset, MAX) instead, the read would start while the append's bio is
 * held by dm-delay and find the old end of file.  O_DIRECT on dm-delay
 * (no NOWAIT there): both go to workers; the append's call returns with
 * its bio in flight, so only the range it holds keeps the read back.
 */
#define APPEND_WRITE_MS	300

TEST_F_TIMEOUT(order, append_holds_the_whole_file, 300)
{
	struct order_state *st = &self->st;
	struct iocb cbs[2], *list[2] = { &cbs[0], &cbs[1] };
	char path[sizeof(st->mnt) + 8];
	struct io_event ev[2];
	long long res[2] = { -1, -1 };
	const char *skip;
	uint64_t seed;
	int afd, i;

	if (aio_offload_enabled() != 1)
		SKIP(return, "needs fs.aio-offload=1: stock io_submit() blocks");
	skip = setup_delayed_fs(_metadata, st, APPEND_WRITE_MS);
	if (skip)
		SKIP(return, "%s", skip);
	snprintf(path, sizeof(path), "%s/f", st->mnt);
	afd = open(path, O_WRONLY | O_APPEND | O_DIRECT);
	ASSERT_LE(0, afd);
	seed = aio_new_seed();
	aio_fill_pattern(st->buf, BLK, seed, FILE_LEN);
	memset(st->buf + BLK, 0x5a, BLK);
	/* The ignored offset is far past the end; the append lands at it. */
	aio_prep_rw(&cbs[0], IOCB_CMD_PWRITE, afd, st->buf, BLK,
		    16 * FILE_LEN, 0);
	aio_prep_rw(&cbs[1], IOCB_CMD_PREAD, st->fd, st->buf + BLK, BLK,
		    FILE_LEN, 1);
	ASSERT_EQ(2, sys_io_submit(st->ctx, 2, list));
	ASSERT_EQ(2, aio_reap(st->ctx, ev, 2, 60));
	for (i = 0; i < 2; i++)
		res[ev[i].data] = ev[i].res;
	EXPECT_EQ(BLK, res[0]);
	EXPECT_EQ(BLK, res[1])
		TH_LOG("the read of the end returned %lld: it did not wait",
		       res[1]);
	EXPECT_EQ(-1, aio_verify_pattern(st->buf + BLK, BLK, seed, FILE_LEN));
	ASSERT_EQ(BLK, pread(st->fd, st->buf + 2 * BLK, BLK, FILE_LEN));
	EXPECT_EQ(-1, aio_verify_pattern(st->buf + 2 * BLK, BLK, seed,
					 FILE_LEN))
		TH_LOG("the append did not land at the end");
	close(afd);
}

/*
 * XFS cannot write a sub-block range of a reflinked file as direct I/O:
 * it redoes the write as a buffered one.  Under NOWAIT that buffered
 * write could stop part way, and a worker would write the rest in a
 * second call (a reader could see half of it, timestamps run twice), so
 * XFS must answer -EAGAIN there and the write go to a worker whole:
 * nothing completes inline (aio.stat).  One write after another, as
 * XFS answers -EAGAIN under NOWAIT anyway when the c/mtime must change
 * (once per clock tick): most writes come within the tick of the one
 * before.  The last write lands, the clone keeps the old data.  Runs
 * where FICLONE works (XFS), with 512-byte sectors, and not on the SD
 * card, whose blocking queue has every direct write handed off before
 * the filesystem sees it.
 */
#define SUB_LEN		512
#define SUB_NR		64

TEST_F_TIMEOUT(order, reflink_subblock_write_one_call, 300)
{
	struct order_state *st = &self->st;
	char path[sizeof(st->mnt) + 8];
	struct iocb cb, *list = &cb;
	long long inl0, inl1;
	struct io_event ev;
	uint64_t a, b = 0;
	const char *skip;
	int cfd, i, bad = 0;

	if (aio_offload_enabled() != 1)
		SKIP(return, "needs fs.aio-offload=1");
	if (root_stat("inline") < 0)
		SKIP(return, "no %s", ROOT_STAT);
	if (!strcmp(aio_dev_class(), "flash"))
		SKIP(return, "SD: every direct write is handed off untried");
	skip = setup_file(_metadata, st, O_DIRECT);
	if (skip)
		SKIP(return, "%s", skip);
	cfd = open(aio_dev_path(), O_RDONLY);
	ASSERT_LE(0, cfd);
	ASSERT_EQ(0, aio_dev_lbs(cfd, &i));
	close(cfd);
	if (i > SUB_LEN)
		SKIP(return, "%d-byte sectors", i);
	a = aio_new_seed();
	b = aio_new_seed();
	aio_fill_pattern(st->buf, 2 * BLK, a, 0);
	ASSERT_EQ(2 * BLK, pwrite(st->fd, st->buf, 2 * BLK, 0));
	snprintf(path, sizeof(path), "%s/c", st->mnt);
	cfd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0600);
	ASSERT_LE(0, cfd);
	if (ioctl(cfd, FICLONE, st->fd)) {
		close(cfd);
		SKIP(return, "FICLONE on %s: %s", st->fstype, strerror(errno));
	}

	inl0 = root_stat("inline");
	for (i = 0; i < SUB_NR; i++) {
		b = aio_new_seed();
		aio_fill_pattern(st->buf, SUB_LEN, b, BLK + SUB_LEN);
		aio_prep_rw(&cb, IOCB_CMD_PWRITE, st->fd, st->buf, SUB_LEN,
			    BLK + SUB_LEN, i);
		ASSERT_EQ(1, sys_io_submit(st->ctx, 1, &list));
		ASSERT_EQ(1, aio_reap(st->ctx, &ev, 1, 60));
		if (ev.res != SUB_LEN)
			bad++;
	}
	inl1 = root_stat("inline");
	EXPECT_EQ(0, bad) TH_LOG("%d writes did not write %d bytes", bad,
				 SUB_LEN);
	EXPECT_EQ(0, inl1 - inl0)
		TH_LOG("%lld of %d buffered fallbacks ran under NOWAIT, inline",
		       inl1 - inl0, SUB_NR);

	ASSERT_EQ(BLK, pread(st->fd, st->buf, BLK, BLK));
	EXPECT_EQ(-1, aio_verify_pattern(st->buf, SUB_LEN, a, BLK));
	EXPECT_EQ(-1, aio_verify_pattern(st->buf + SUB_LEN, SUB_LEN, b,
					 BLK + SUB_LEN))
		TH_LOG("the write did not land");
	EXPECT_EQ(-1, aio_verify_pattern(st->buf + 2 * SUB_LEN,
					 BLK - 2 * SUB_LEN, a,
					 BLK + 2 * SUB_LEN));
	ASSERT_EQ(BLK, pread(cfd, st->buf, BLK, BLK));
	EXPECT_EQ(-1, aio_verify_pattern(st->buf, BLK, a, BLK))
		TH_LOG("the clone changed");
	close(cfd);
}

/*
 * What the held-write tests need: the offload, the file, aio.stat and a
 * userfaultfd buffer in @u.  NULL, or why not.
 */
static const char *setup_held(struct __test_metadata *_metadata,
			      struct order_state *st, struct aio_uffd *u)
{
	static char why[64];
	const char *skip;
	int ret;

	if (aio_offload_enabled() != 1)
		return "needs fs.aio-offload=1: stock waits in the fault";
	skip = setup_file(_metadata, st, O_DIRECT);
	if (skip)
		return skip;
	if (root_stat("punt_ordered") < 0)
		return "no " ROOT_STAT;
	ret = aio_uffd_create(u, BLK);
	if (!ret)
		return NULL;
	snprintf(why, sizeof(why), "userfaultfd: %s", strerror(-ret));
	return why;
}

/*
 * Start an O_DSYNC O_DIRECT write of block @blk from a userfaultfd buffer:
 * O_DSYNC goes to a worker without a NOWAIT try, and the worker then
 * holds the write, waiting in the fault, until the test fills the buffer.
 * 1 once it waits there, 0 if it never faulted, -1 if io_submit() failed.
 */
static int start_held_write(struct order_state *st, struct aio_uffd *u,
			    struct iocb *cb, off_t blk, uint64_t data)
{
	struct iocb *list = cb;

	aio_prep_rw(cb, IOCB_CMD_PWRITE, st->fd, u->region, BLK, blk * BLK,
		    data);
	cb->aio_rw_flags = RWF_DSYNC;
	if (sys_io_submit(st->ctx, 1, &list) != 1)
		return -1;
	return aio_uffd_wait_fault(u, PASS_WAIT_SEC * 1000);
}

/*
 * The order holds a request back only behind what it overlaps.  Stock
 * has O_DIRECT requests to different blocks in flight together, issued
 * one after the other, and so must the offload: a write held by a worker
 * (start_held_write(), block 0) keeps back a later write and read of its
 * own block (aio.stat punt_ordered) and nothing else: reads and writes
 * of other blocks complete while it waits, unless the filesystem or the
 * device hands one off itself (on XFS an O_DIRECT write that must update
 * the timestamps answers -EAGAIN under NOWAIT on 6.12; BLK_STS_AGAIN),
 * which then waits in the pool, as a file's queued requests start in
 * order and none while one of its writes is issued: each of the others
 * is one or the other.  Once the held write is let go, the later write
 * of its block lands after it, and the read returns that.
 */
TEST_F_TIMEOUT(order, direct_requests_pass_by_range, 300)
{
	struct order_state *st = &self->st;
	struct iocb wcb, cbs[PASS_REQS], *list[PASS_REQS];
	struct io_event ev[PASS_REQS + 1];
	char *rbuf = st->buf + PASS_NR * BLK;
	char *obuf = st->buf + 2 * PASS_NR * BLK;
	int i, faulted, early_r = 0, early_w = 0, early_held = 0, wrong = 0;
	long long ord0, ord1, fs0, fs1, bq0, bq1;
	uint64_t seed, rseed, oseed;
	struct aio_uffd u;
	const char *skip;
	long submitted, got, late;

	skip = setup_held(_metadata, st, &u);
	if (skip)
		SKIP(return, "%s", skip);
	seed = aio_new_seed();
	rseed = aio_new_seed();
	oseed = aio_new_seed();
	/* What the reads will find: blocks PASS_RD.. hold rseed's pattern. */
	aio_fill_pattern(rbuf, PASS_NR * BLK, rseed, PASS_RD * BLK);
	ASSERT_EQ(PASS_NR * BLK,
		  pwrite(st->fd, rbuf, PASS_NR * BLK, PASS_RD * BLK));

	/* Writes of blocks 2.., reads of PASS_RD.., a write and read of 0. */
	aio_fill_pattern(st->buf, PASS_NR * BLK, seed, 2 * BLK);
	for (i = 0; i < PASS_NR; i++) {
		aio_prep_rw(&cbs[i], IOCB_CMD_PWRITE, st->fd, st->buf + i * BLK,
			    BLK, (off_t)(2 + i) * BLK, i);
		memset(rbuf + i * BLK, POISON_BYTE, BLK);
		aio_prep_rw(&cbs[PASS_NR + i], IOCB_CMD_PREAD, st->fd,
			    rbuf + i * BLK, BLK, (off_t)(PASS_RD + i) * BLK,
			    PASS_NR + i);
	}
	aio_fill_pattern(obuf, BLK, oseed, 0);
	aio_prep_rw(&cbs[PASS_OW], IOCB_CMD_PWRITE, st->fd, obuf, BLK, 0,
		    PASS_OW);
	memset(obuf + BLK, POISON_BYTE, BLK);
	aio_prep_rw(&cbs[PASS_OR], IOCB_CMD_PREAD, st->fd, obuf + BLK, BLK, 0,
		    PASS_OR);
	for (i = 0; i < PASS_REQS; i++)
		list[i] = &cbs[i];

	ord0 = root_stat("punt_ordered");
	fs0 = root_fs_punts();
	bq0 = root_stat("punt_blocking_queue");
	faulted = start_held_write(st, &u, &wcb, 0, PASS_REQS);
	submitted = faulted == 1 ? sys_io_submit(st->ctx, PASS_REQS, list) : -1;
	/* What completes while the write is held. */
	got = submitted == PASS_REQS ?
	      aio_reap(st->ctx, ev, 2 * PASS_NR, PASS_WAIT_SEC) : 0;
	ord1 = root_stat("punt_ordered");
	fs1 = root_fs_punts();
	bq1 = root_stat("punt_blocking_queue");
	for (i = 0; i < got; i++) {
		if (ev[i].data < PASS_NR)
			early_w++;
		else if (ev[i].data < 2 * PASS_NR)
			early_r++;
		else
			early_held++;
		if (ev[i].res != BLK)
			wrong++;
	}

	/* Let the held write go, whatever happened, so that it completes. */
	aio_fill_pattern(obuf + 2 * BLK, BLK, seed, 0);
	EXPECT_EQ(0, aio_uffd_fill(&u, obuf + 2 * BLK));
	late = faulted < 0 ? 0 : 1 + (submitted > 0 ? submitted : 0) - got;
	ASSERT_EQ(late, aio_reap(st->ctx, ev, late, 60));
	aio_uffd_destroy(&u);

	ASSERT_EQ(1, faulted) TH_LOG("the O_DSYNC write did not fault");
	ASSERT_EQ(PASS_REQS, submitted)
		TH_LOG("io_submit: %s", strerror(errno));
	for (i = 0; i < late; i++)
		if (ev[i].res != BLK)
			wrong++;
	TH_LOG("%s, while the write was held: %d of %d writes, %d of %d reads",
	       st->fstype, early_w, PASS_NR, early_r, PASS_NR);
	TH_LOG("  of other blocks; %lld handed off by the fs", fs1 - fs0);
	EXPECT_EQ(0, wrong) TH_LOG("%d requests did not move one block", wrong);
	EXPECT_EQ(0, early_held)
		TH_LOG("a request on the held write's block overtook it");
	EXPECT_EQ(2, ord1 - ord0)
		TH_LOG("punt_ordered +%lld: only block 0's 2 wait", ord1 - ord0);
	EXPECT_EQ(2 * PASS_NR, early_r + early_w + fs1 - fs0)
		TH_LOG("requests of other blocks waited for the held write");
	/* Where direct I/O is tried inline: reads pass; ext4 writes too. */
	if (bq1 == bq0) {
		EXPECT_EQ(PASS_NR, early_r);
		if (!strcmp(st->fstype, "ext4"))
			EXPECT_EQ(PASS_NR, early_w);
	}

	/* Read back: each write where it went, the later one on block 0. */
	EXPECT_EQ(-1, aio_verify_pattern(obuf + BLK, BLK, oseed, 0))
		TH_LOG("the read of block 0 did not return the write before it");
	EXPECT_EQ(-1, aio_verify_pattern(rbuf, PASS_NR * BLK, rseed,
					 PASS_RD * BLK));
	ASSERT_EQ(BLK, pread(st->fd, obuf, BLK, 0));
	EXPECT_EQ(-1, aio_verify_pattern(obuf, BLK, oseed, 0))
		TH_LOG("block 0 does not hold the later write");
	ASSERT_EQ(PASS_NR * BLK, pread(st->fd, rbuf, PASS_NR * BLK, 2 * BLK));
	EXPECT_EQ(-1, aio_verify_pattern(rbuf, PASS_NR * BLK, seed, 2 * BLK));
}

/*
 * A write that extends the file holds everything from the old end of the
 * file on, not only its own blocks: stock finished a write that had to
 * wait before it looked at the next iocb, so a read across the old end
 * of the file, submitted after an extending write past a gap, returned
 * the new size's bytes (the gap reads as zeros), not a short count.
 * The extending write (O_DSYNC, so queued) waits behind a held write of
 * block 0 (the pool starts a file's writes one at a time), which also
 * lets a read of another block pass both.  The read across EOF must be
 * held back by the order (punt_ordered), not by a hand-off of its own
 * that would make it wait in the pool anyway.
 */
TEST_F_TIMEOUT(order, read_across_eof_waits_for_extending_write, 300)
{
	struct order_state *st = &self->st;
	struct iocb wcb, cbs[3], *list[3];
	struct io_event ev[4];
	char *xbuf = st->buf + 4 * BLK;
	int i, faulted, early_r = 0, early_x = 0;
	long long ord0, ord1, fs0, fs1;
	uint64_t seed, xseed, oseed;
	long submitted, got, late;
	struct aio_uffd u;
	const char *skip;
	struct stat sb;

	skip = setup_held(_metadata, st, &u);
	if (skip)
		SKIP(return, "%s", skip);
	oseed = aio_new_seed();
	seed = aio_new_seed();
	xseed = aio_new_seed();
	/* The last block of the file and block 5 hold oseed's pattern. */
	aio_fill_pattern(st->buf, BLK, oseed, FILE_LEN - BLK);
	ASSERT_EQ(BLK, pwrite(st->fd, st->buf, BLK, FILE_LEN - BLK));
	aio_fill_pattern(st->buf, BLK, oseed, 5 * BLK);
	ASSERT_EQ(BLK, pwrite(st->fd, st->buf, BLK, 5 * BLK));

	/* Extend past a one-block gap; read across EOF; read block 5. */
	aio_fill_pattern(xbuf, BLK, xseed, FILE_LEN + BLK);
	aio_prep_rw(&cbs[0], IOCB_CMD_PWRITE, st->fd, xbuf, BLK,
		    FILE_LEN + BLK, 0);
	cbs[0].aio_rw_flags = RWF_DSYNC;
	memset(st->buf, POISON_BYTE, 3 * BLK);
	aio_prep_rw(&cbs[1], IOCB_CMD_PREAD, st->fd, st->buf, 2 * BLK,
		    FILE_LEN - BLK, 1);
	aio_prep_rw(&cbs[2], IOCB_CMD_PREAD, st->fd, st->buf + 2 * BLK, BLK,
		    5 * BLK, 2);
	for (i = 0; i < 3; i++)
		list[i] = &cbs[i];

	ord0 = root_stat("punt_ordered");
	fs0 = root_fs_punts();
	faulted = start_held_write(st, &u, &wcb, 0, 3);
	submitted = faulted == 1 ? sys_io_submit(st->ctx, 3, list) : -1;
	/* The read of block 5 comes at once; wait a while for any other. */
	got = submitted == 3 ? aio_reap(st->ctx, ev, 3, EOF_WAIT_SEC) : 0;
	ord1 = root_stat("punt_ordered");
	fs1 = root_fs_punts();
	for (i = 0; i < got; i++) {
		if (ev[i].data == 2 && ev[i].res == BLK)
			early_r++;
		else
			early_x++;
	}

	aio_fill_pattern(xbuf + BLK, BLK, seed, 0);
	EXPECT_EQ(0, aio_uffd_fill(&u, xbuf + BLK));
	late = faulted < 0 ? 0 : 1 + (submitted > 0 ? submitted : 0) - got;
	ASSERT_EQ(late, aio_reap(st->ctx, ev, late, 60));
	aio_uffd_destroy(&u);

	ASSERT_EQ(1, faulted) TH_LOG("the O_DSYNC write did not fault");
	ASSERT_EQ(3, submitted) TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(1, ord1 - ord0)
		TH_LOG("punt_ordered +%lld: the read across EOF only",
		       ord1 - ord0);
	EXPECT_EQ(1, early_r + fs1 - fs0)
		TH_LOG("the read of block 5 waited for the held write");
	EXPECT_EQ(0, early_x)
		TH_LOG("a request behind the held write completed early");
	for (i = 0; i < late; i++) {
		long long want = ev[i].data == 1 ? 2 * BLK : BLK;

		EXPECT_EQ(want, ev[i].res)
			TH_LOG("iocb %llu: res %lld (1: across EOF, 2 blocks)",
			       (unsigned long long)ev[i].data,
			       (long long)ev[i].res);
	}
	EXPECT_EQ(-1, aio_verify_pattern(st->buf, BLK, oseed, FILE_LEN - BLK));
	for (i = 0; i < BLK; i++)
		if (st->buf[BLK + i])
			break;
	EXPECT_EQ(BLK, i) TH_LOG("the gap did not read as zeros at %d", i);
	EXPECT_EQ(-1, aio_verify_pattern(st->buf + 2 * BLK, BLK, oseed,
					 5 * BLK));
	ASSERT_EQ(0, fstat(st->fd, &sb));
	EXPECT_EQ(FILE_LEN + 2 * BLK, sb.st_size);
	ASSERT_EQ(BLK, pread(st->fd, st->buf, BLK, FILE_LEN + BLK));
	EXPECT_EQ(-1, aio_verify_pattern(st->buf, BLK, xseed, FILE_LEN + BLK));
	ASSERT_EQ(BLK, pread(st->fd, st->buf, BLK, 0));
	EXPECT_EQ(-1, aio_verify_pattern(st->buf, BLK, seed, 0));
}

TEST_HARNESS_MAIN
