// SPDX-License-Identifier: GPL-2.0
/*
 * Order of requests on one file within one io_submit() call.
 *
 * Stock AIO runs a buffered write to completion inside io_submit() before
 * it looks at the next iocb, so later iocbs on the same file see its
 * effect: the last of several overlapping writes wins, and a read after a
 * write returns the new data.  With AIO offload such a write goes to a
 * worker (ext4 has no NOWAIT buffered writes; XFS's may go either way),
 * and the requests behind it on the same file must not overtake it.  The
 * same holds for O_DIRECT writes that are handed off because the
 * filesystem is frozen.  Every case runs on ext4 and XFS.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#define BLK		4096
#define NR_WRITES	16
#define BIG		(256 * BLK)
#define FILE_LEN	BIG
#define TARGET_OFF	(3 * BLK)
#define BUF_LEN		(BIG + (NR_WRITES + 1) * BLK)

struct order_state {
	aio_context_t ctx;
	int fd;
	const char *fstype;
	char mnt[64];
	bool frozen;
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
	if (getpid() == self->owner) {
		if (st->ctx)
			sys_io_destroy(st->ctx);
		if (st->fd >= 0)
			close(st->fd);
		aio_free_buf(st->buf, BUF_LEN);
	}
	if (st->mnt[0] && aio_scratch_umount(st->mnt))
		TH_LOG("umount %s failed: %s", st->mnt, strerror(errno));
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

TEST_HARNESS_MAIN
