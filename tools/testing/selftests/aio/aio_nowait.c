// SPDX-License-Identifier: GPL-2.0
/*
 * The filesystem under NOWAIT: direct writes whose mapping is not in
 * memory, or that need a transaction, must not sleep in the submitting
 * thread, neither in io_submit() with the offload on (which tries each
 * request with IOCB_NOWAIT and hands what would block to a worker) nor
 * in io_uring_enter() (which does the same with io-wq).  Both depend on
 * the filesystem answering -EAGAIN instead of sleeping.
 *
 * The file: FRAG_BLOCKS blocks, the even ones written and the odd ones
 * fallocated (unwritten), so one extent per block (ext4 does not merge
 * written with unwritten extents, nor does XFS), then HOLE_BLOCKS of hole
 * inside i_size.
 *
 *   cold_overwrites	overwrites of written blocks right after a remount
 *			and a cache drop: the extent tree (ext4) or list
 *			(XFS) is on disk, and reading it would sleep;
 *   cold_reads		reads of them, each checked against the data
 *			(a cache miss taken for a hole reads zeroes);
 *   unwritten_writes	writes into unwritten blocks, extents cached: a
 *			transaction (conversion at completion, ext4's split
 *			at submission), timestamps; then into the hole,
 *			fallocated, so that ext4 splits one extent in three;
 *   spanning_and_hole_writes
 *			4 KiB writes straddling two blocks (sub-block
 *			aligned), 64 KiB and 1 MiB ones spanning many
 *			extents, 4 KiB ones into the hole: allocation.
 *
 * Each runs NR_CALLS calls through io_submit() and NR_CALLS through
 * io_uring, one request per call, and asserts that none of them took a
 * voluntary context switch; then reads everything back.  On ext4 the
 * ext4_dio_nowait_eagain tracepoint must also have given the case's
 * reason for an -EAGAIN; but ext4 splits unwritten extents without
 * blocking, so there it must have refused at most 1 in 20 writes on an
 * idle filesystem (on a busy one, the count by reason is logged).
 * Variants: ext4
 * and XFS, each on an idle filesystem and on a busy one (a thread writing
 * and fdatasync()ing another file, so that journal commits and log forces
 * run during the calls).  Control: cold_overwrites also submits through
 * a context made with fs.aio-offload at 0, as stock, and on an idle ext4
 * asserts that this does sleep (reading extent leaves).  Not on XFS,
 * which reads a file's whole extent list at once: prime()'s write did.
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
#include <linux/falloc.h>
#include <linux/io_uring.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#define OFFLOAD_SYSCTL	"/proc/sys/fs/aio-offload"
#define BLK		4096
/* >= 8k extents of each kind: ext4 needs tens of leaf blocks for them. */
#define FRAG_BLOCKS	16384
#define HOLE_BLOCKS	1024
#define FILE_LEN	((off_t)(FRAG_BLOCKS + HOLE_BLOCKS) * BLK)
#define NR_CALLS	512
#define BUF_LEN		(16 << 20)
#define POISON		0xa5
#define NOWAIT_EVENT	"ext4/ext4_dio_nowait_eagain"
#define NOWAIT_LINE	"ext4_dio_nowait_eagain:"

enum iface { LIBAIO, URING };

struct nowait_state {
	aio_context_t ctx;
	struct aio_uring ring;
	struct aio_syncer syncer;
	char mnt[64];
	char *buf, *rbuf;
	uint64_t file_seed;	/* the pattern make_file() wrote */
	int fd;
	bool sysctl_off;
	bool tracing;		/* NOWAIT_EVENT enabled (ext4) */
};

/* _PARENT teardown: see the note in aio_util.h */
FIXTURE(nowait) {
	pid_t owner;
	struct nowait_state st;
};

FIXTURE_VARIANT(nowait) {
	const char *fstype;
	bool busy;
};

FIXTURE_VARIANT_ADD(nowait, ext4) { .fstype = "ext4", .busy = false };
FIXTURE_VARIANT_ADD(nowait, ext4_busy) { .fstype = "ext4", .busy = true };
FIXTURE_VARIANT_ADD(nowait, xfs) { .fstype = "xfs", .busy = false };
FIXTURE_VARIANT_ADD(nowait, xfs_busy) { .fstype = "xfs", .busy = true };

static int open_file(struct nowait_state *st)
{
	char path[sizeof(st->mnt) + 8];

	snprintf(path, sizeof(path), "%s/f", st->mnt);
	st->fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0600);
	return st->fd < 0 ? -errno : 0;
}

/* Even blocks written (a pattern), odd ones unwritten, then the hole. */
static void make_file(struct __test_metadata *_metadata,
		      struct nowait_state *st)
{
	char path[sizeof(st->mnt) + 8];

	snprintf(path, sizeof(path), "%s/f", st->mnt);
	st->file_seed = aio_new_seed();
	ASSERT_EQ(0, aio_make_frag_file(path, FRAG_BLOCKS, HOLE_BLOCKS, BLK,
					st->file_seed, st->buf));
}

/*
 * Rewrite block 0 with what it holds, through AIO: the mount's first
 * async direct I/O makes its completion workqueue (which a NOWAIT try
 * leaves to a worker) and the inode's first write checks privileges
 * (S_NOSEC, exclusive lock): state of the file, not of its extents, which
 * this leaves cold but for block 0's.
 */
static void prime(struct __test_metadata *_metadata, struct nowait_state *st)
{
	struct iocb cb, *list = &cb;
	struct io_event ev;

	ASSERT_EQ(BLK, pread(st->fd, st->rbuf, BLK, 0));
	aio_prep_rw(&cb, IOCB_CMD_PWRITE, st->fd, st->rbuf, BLK, 0, 0);
	ASSERT_EQ(1, sys_io_submit(st->ctx, 1, &list));
	ASSERT_EQ(1, aio_reap(st->ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC));
	ASSERT_EQ(BLK, ev.res);
}

FIXTURE_SETUP(nowait)
{
	struct nowait_state *st = &self->st;
	const char *dev = aio_dev_path();
	int ret;

	self->owner = getpid();
	memset(st, 0, sizeof(*st));
	st->fd = -1;
	st->ring.fd = -1;
	st->syncer.fd = -1;
	st->buf = aio_alloc_buf(BUF_LEN);
	st->rbuf = aio_alloc_buf(BUF_LEN);
	ASSERT_NE(NULL, st->buf);
	ASSERT_NE(NULL, st->rbuf);
	ASSERT_EQ(0, aio_lock_memory());
	if (aio_offload_enabled() != 1)
		SKIP(return, "needs fs.aio-offload=1");
	if (!dev)
		SKIP(return, "AIO_TEST_DEV not set");
	if (!aio_dev_holds_data())
		SKIP(return, "the device does not store data");
	ret = aio_scratch_mount(dev, variant->fstype, st->mnt,
				sizeof(st->mnt));
	if (ret == AIO_MKFS_NOT_FOUND)
		SKIP(return, "mkfs.%s not available", variant->fstype);
	ASSERT_EQ(0, ret) TH_LOG("%s on %s: %d", variant->fstype, dev, ret);
	ret = aio_uring_init(&st->ring, NR_CALLS);
	if (ret)
		SKIP(return, "io_uring: %s", strerror(-ret));
	ASSERT_EQ(0, sys_io_setup(NR_CALLS, &st->ctx));
	make_file(_metadata, st);
	ASSERT_EQ(0, open_file(st));
	prime(_metadata, st);
	if (variant->busy)
		ASSERT_EQ(0, aio_syncer_start(&st->syncer, st->mnt));
	/* Each -EAGAIN of ext4's with its reason; older kernels lack it. */
	if (!strcmp(variant->fstype, "ext4"))
		st->tracing = !aio_trace_event(NOWAIT_EVENT, true);
}

FIXTURE_TEARDOWN_PARENT(nowait)
{
	struct nowait_state *st = &self->st;

	if (st->tracing && aio_trace_event(NOWAIT_EVENT, false))
		TH_LOG("cannot disable %s", NOWAIT_EVENT);
	if (st->sysctl_off && aio_write_file(OFFLOAD_SYSCTL, "1"))
		TH_LOG("cannot set %s back to 1", OFFLOAD_SYSCTL);
	if (getpid() == self->owner) {
		if (st->syncer.fd >= 0 && aio_syncer_stop(&st->syncer) <= 0)
			TH_LOG("the sync loop did not run");
		if (st->fd >= 0)
			close(st->fd);
		if (st->ctx)
			sys_io_destroy(st->ctx);
		if (st->ring.fd >= 0)
			aio_uring_exit(&st->ring);
		aio_free_buf(st->buf, BUF_LEN);
		aio_free_buf(st->rbuf, BUF_LEN);
	}
	if (st->mnt[0] && aio_scratch_umount(st->mnt))
		TH_LOG("umount %s failed: %s", st->mnt, strerror(errno));
}

/*
 * Unmount and mount again, and drop the caches: the file's inode, its
 * extents and the blocks holding them are read again on first use.
 */
static void remount_cold(struct __test_metadata *_metadata,
			 struct nowait_state *st, const char *fstype,
			 bool busy)
{
	/* Stopped (it holds a file open), started again on the new mount. */
	if (busy)
		ASSERT_LE(0, aio_syncer_stop(&st->syncer));
	close(st->fd);
	st->fd = -1;
	ASSERT_EQ(0, aio_remount_cold(fstype, st->mnt, sizeof(st->mnt)));
	ASSERT_EQ(0, open_file(st));
	prime(_metadata, st);
	if (busy)
		ASSERT_EQ(0, aio_syncer_start(&st->syncer, st->mnt));
}

/* Wait for one completion of @iface: its result, *@data its tag. */
static long long reap_one(struct __test_metadata *_metadata,
			  struct nowait_state *st, enum iface iface,
			  aio_context_t ctx, long long *data)
{
	struct io_uring_cqe cqe;
	struct io_event ev;

	if (iface == LIBAIO) {
		if (aio_reap(ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC) != 1)
			return -ETIMEDOUT;
		*data = ev.data;
		return ev.res;
	}
	if (aio_uring_reap(&st->ring, &cqe))
		return -EIO;
	*data = cqe.user_data;
	return cqe.res;
}

/*
 * Write (@write) or read @n ranges of @len bytes at @offs[], one request
 * per call through @iface (@ctx for libaio), from or into st->buf, the
 * data @seed's pattern; each completes before the next is submitted, so
 * that every one is tried inline (the offload queues a request behind
 * one of the same file that a worker still has).  Check each moved @len
 * (and read the pattern).  Return how many calls took a voluntary
 * context switch.
 */
static int submit_ranges(struct __test_metadata *_metadata,
			 struct nowait_state *st, enum iface iface,
			 aio_context_t ctx, bool write, const off_t *offs,
			 int n, size_t len, uint64_t seed)
{
	long long res, data = -1;
	int i, slept = 0;
	long nvcsw;

	for (i = 0; i < n; i++) {
		char *b = st->buf + (size_t)i * len;
		struct iocb cb, *list = &cb;

		if (write)
			aio_fill_pattern(b, len, seed, offs[i]);
		else
			memset(b, POISON, len);
		if (iface == LIBAIO) {
			aio_prep_rw(&cb, write ? IOCB_CMD_PWRITE :
				    IOCB_CMD_PREAD, st->fd, b, len, offs[i], i);
			EXPECT_EQ(1, aio_submit_nvcsw(ctx, 1, &list, &nvcsw))
				TH_LOG("io_submit %d: %s", i, strerror(errno));
		} else {
			EXPECT_EQ(1, aio_uring_rw_nvcsw(&st->ring, write ?
							IORING_OP_WRITE :
							IORING_OP_READ,
							st->fd, b, len, offs[i],
							i, &nvcsw))
				TH_LOG("io_uring_enter %d: %s", i,
				       strerror(errno));
		}
		ASSERT_LE(0, nvcsw);
		slept += nvcsw > 0;
		res = reap_one(_metadata, st, iface, ctx, &data);
		EXPECT_EQ((long long)len, res)
			TH_LOG("%s %d at %lld: %lld", write ? "write" : "read",
			       i, (long long)offs[i], res);
		EXPECT_EQ(i, data);
		if (!write)
			EXPECT_EQ(-1, aio_verify_pattern(b, len, seed, offs[i]))
				TH_LOG("read %d (%zu at %lld): wrong data", i,
				       len, (long long)offs[i]);
	}
	return slept;
}

/* Every range holds its pattern of @seed. */
static void check_ranges(struct __test_metadata *_metadata,
			 struct nowait_state *st, const off_t *offs, int n,
			 size_t len, uint64_t seed)
{
	/* O_DIRECT reads: whole blocks around each range. */
	off_t start, end;
	int i;

	for (i = 0; i < n; i++) {
		start = offs[i] & ~(off_t)(BLK - 1);
		end = (offs[i] + len + BLK - 1) & ~(off_t)(BLK - 1);
		memset(st->rbuf, POISON, end - start);
		ASSERT_EQ(end - start, pread(st->fd, st->rbuf, end - start,
					     start));
		EXPECT_EQ(-1, aio_verify_pattern(st->rbuf + (offs[i] - start),
						 len, seed, offs[i]))
			TH_LOG("range %d (%zu at %lld): wrong data", i, len,
			       (long long)offs[i]);
	}
}

static const char *const reasons[] = {
	"cache_miss", "lock", "privs", "allocation", "journal", "span",
};

/*
 * One submission interface's turn: slept calls asserted 0, data checked.
 * Reads (!@write) read what make_file() wrote.  On ext4, ext4 must have
 * said -EAGAIN at least once, for @reason (the tracepoint's word); with
 * @reason NULL the counts by reason are logged.  Returns how many times
 * ext4 said -EAGAIN, or -1 where that is not known.
 *
 * Both only on NVMe: on SD the offload hands direct I/O off before ext4
 * sees it (mmc dispatches in the submitter), so io_submit() must not
 * sleep but ext4 says nothing, and io_uring_enter() sleeps in mmc's
 * ->queue_rq() whatever ext4 does, so its turn is not run there.
 */
static long run_turn(struct __test_metadata *_metadata,
		     struct nowait_state *st, enum iface iface, bool write,
		     const char *what, const off_t *offs, int n, size_t len,
		     const char *reason)
{
	uint64_t seed = write ? aio_new_seed() : st->file_seed;
	const char *name = iface == LIBAIO ? "io_submit" : "io_uring_enter";
	bool nvme = !strcmp(aio_dev_class(), "nvme");
	char needle[64];
	long all, hits;
	unsigned int r;
	int slept;

	if (iface == URING && !nvme) {
		TH_LOG("%s, %s: not run on %s", what, name, aio_dev_class());
		return -1;
	}
	if (st->tracing)
		ASSERT_EQ(0, aio_trace_clear());
	slept = submit_ranges(_metadata, st, iface, st->ctx, write, offs, n,
			      len, seed);
	EXPECT_EQ(0, slept)
		TH_LOG("%s, %s: %d of %d calls slept", what, name, slept, n);
	if (write)
		check_ranges(_metadata, st, offs, n, len, seed);
	if (!st->tracing || !nvme)
		return -1;
	all = aio_trace_count(NOWAIT_LINE, NULL);
	if (!reason) {
		TH_LOG("%s, %s: ext4 said -EAGAIN %ld times in %d calls",
		       what, name, all, n);
		for (r = 0; r < ARRAY_SIZE(reasons); r++) {
			snprintf(needle, sizeof(needle), "reason %s",
				 reasons[r]);
			hits = aio_trace_count(NOWAIT_LINE, needle);
			if (hits)
				TH_LOG("  %ld for %s", hits, reasons[r]);
		}
		return all;
	}
	snprintf(needle, sizeof(needle), "reason %s", reason);
	hits = aio_trace_count(NOWAIT_LINE, needle);
	TH_LOG("%s, %s: ext4 said -EAGAIN %ld times, %ld for %s", what, name,
	       all, hits, reason);
	EXPECT_LT(0, hits);
	EXPECT_EQ(all, hits) TH_LOG("-EAGAIN for other reasons");
	return all;
}

TEST_F_TIMEOUT(nowait, cold_overwrites, AIO_DEV_TEST_TIMEOUT)
{
	static off_t offs[3 * NR_CALLS];
	struct nowait_state *st = &self->st;
	uint64_t seed = aio_new_seed();
	aio_context_t ctx = 0;
	int slept;

	srandom(seed);
	aio_pick_blocks(offs, 3 * NR_CALLS, FRAG_BLOCKS, false, BLK);
	remount_cold(_metadata, st, variant->fstype, variant->busy);
	run_turn(_metadata, st, LIBAIO, true, "cold overwrites", offs,
		 NR_CALLS, BLK, "cache_miss");
	remount_cold(_metadata, st, variant->fstype, variant->busy);
	run_turn(_metadata, st, URING, true, "cold overwrites",
		 offs + NR_CALLS, NR_CALLS, BLK, "cache_miss");

	/* The control: as stock, the same writes read the extents. */
	remount_cold(_metadata, st, variant->fstype, variant->busy);
	ASSERT_EQ(0, aio_write_file(OFFLOAD_SYSCTL, "0"));
	st->sysctl_off = true;
	ASSERT_EQ(0, sys_io_setup(NR_CALLS, &ctx));
	slept = submit_ranges(_metadata, st, LIBAIO, ctx, true,
			      offs + 2 * NR_CALLS, NR_CALLS, BLK, seed);
	EXPECT_EQ(0, sys_io_destroy(ctx));
	ASSERT_EQ(0, aio_write_file(OFFLOAD_SYSCTL, "1"));
	st->sysctl_off = false;
	check_ranges(_metadata, st, offs + 2 * NR_CALLS, NR_CALLS, BLK, seed);
	TH_LOG("control (fs.aio-offload=0): %d of %d calls slept", slept,
	       NR_CALLS);
	if (!variant->busy && !strcmp(variant->fstype, "ext4"))
		EXPECT_LT(0, slept)
			TH_LOG("control: with the offload off no call slept");
}

/*
 * Reads of the file's data right after a remount: nothing to write, so
 * only the extent lookup can sleep, and a lookup that took a cache miss
 * for a hole would return zeroes.
 */
TEST_F_TIMEOUT(nowait, cold_reads, AIO_DEV_TEST_TIMEOUT)
{
	static off_t offs[2 * NR_CALLS];
	struct nowait_state *st = &self->st;

	srandom(aio_new_seed());
	aio_pick_blocks(offs, 2 * NR_CALLS, FRAG_BLOCKS, false, BLK);
	remount_cold(_metadata, st, variant->fstype, variant->busy);
	run_turn(_metadata, st, LIBAIO, false, "cold reads", offs, NR_CALLS,
		 BLK, "cache_miss");
	remount_cold(_metadata, st, variant->fstype, variant->busy);
	run_turn(_metadata, st, URING, false, "cold reads", offs + NR_CALLS,
		 NR_CALLS, BLK, "cache_miss");
}

/* Read the whole file: its extents are in memory afterwards. */
static void warm_extents(struct __test_metadata *_metadata,
			 struct nowait_state *st)
{
	off_t off;

	for (off = 0; off < FILE_LEN; off += BUF_LEN)
		ASSERT_LT(0, pread(st->fd, st->rbuf, BUF_LEN, off));
}

/*
 * On an idle ext4, at most 1 in 20 NOWAIT writes into unwritten extents
 * may be refused (a handle start or the leaf's buffer meeting a commit, a
 * leaf to split for room).  @refused is -1 where ext4 was not watched.
 */
static void check_refusals(struct __test_metadata *_metadata, bool busy,
			   const char *what, long refused, int n)
{
	if (refused < 0 || busy)
		return;
	EXPECT_GE(n / 20, refused)
		TH_LOG("%s: %ld of %d writes refused", what, refused, n);
}

TEST_F_TIMEOUT(nowait, unwritten_writes, AIO_DEV_TEST_TIMEOUT)
{
	static off_t offs[2 * NR_CALLS];
	struct nowait_state *st = &self->st;
	bool busy = variant->busy;
	long refused;
	int i;

	srandom(aio_new_seed());
	aio_pick_blocks(offs, 2 * NR_CALLS, FRAG_BLOCKS, true, BLK);
	warm_extents(_metadata, st);
	refused = run_turn(_metadata, st, LIBAIO, true, "unwritten", offs,
			   NR_CALLS, BLK, NULL);
	check_refusals(_metadata, busy, "unwritten", refused, NR_CALLS);
	refused = run_turn(_metadata, st, URING, true, "unwritten",
			   offs + NR_CALLS, NR_CALLS, BLK, NULL);
	check_refusals(_metadata, busy, "unwritten", refused, NR_CALLS);

	/*
	 * The hole, fallocated: one extent, which each write splits in up
	 * to three, every 4th block in a random order.
	 */
	ASSERT_EQ(0, fallocate(st->fd, FALLOC_FL_KEEP_SIZE,
			       (off_t)FRAG_BLOCKS * BLK,
			       (off_t)HOLE_BLOCKS * BLK));
	for (i = 0; i < HOLE_BLOCKS / 4; i++)
		offs[i] = (off_t)(FRAG_BLOCKS + 4 * i) * BLK;
	for (i = HOLE_BLOCKS / 4 - 1; i > 0; i--) {
		int j = random() % (i + 1);
		off_t t = offs[i];

		offs[i] = offs[j];
		offs[j] = t;
	}
	warm_extents(_metadata, st);
	refused = run_turn(_metadata, st, LIBAIO, true, "split", offs,
			   HOLE_BLOCKS / 8, BLK, NULL);
	check_refusals(_metadata, busy, "split", refused,
		       HOLE_BLOCKS / 8);
	refused = run_turn(_metadata, st, URING, true, "split",
			   offs + HOLE_BLOCKS / 8, HOLE_BLOCKS / 8, BLK, NULL);
	check_refusals(_metadata, busy, "split", refused,
		       HOLE_BLOCKS / 8);
}

/* @n ranges of @len, @step apart from @first. */
static void spaced(off_t *offs, int n, off_t first, off_t step)
{
	int i;

	for (i = 0; i < n; i++)
		offs[i] = first + i * step;
}

/*
 * Fewer calls of the big sizes: what matters is that each spans extents.
 * The two interfaces write disjoint ranges.
 */
TEST_F_TIMEOUT(nowait, spanning_and_hole_writes, AIO_DEV_TEST_TIMEOUT)
{
	static const struct {
		const char *what;
		size_t len;
		int n;
		off_t first, step;
		const char *reason;
	} cases[] = {
		{ "4 KiB across two blocks", BLK, 256, BLK / 2, 2 * BLK,
		  "span" },
		{ "64 KiB across 16 extents", 64 << 10, 64, 0, 128 << 10,
		  "span" },
		{ "1 MiB across 256 extents", 1 << 20, 8, 16 << 20, 2 << 20,
		  "span" },
		{ "4 KiB into the hole", BLK, 256,
		  (off_t)FRAG_BLOCKS * BLK, 2 * BLK, "allocation" },
	};
	static off_t offs[256];
	struct nowait_state *st = &self->st;
	unsigned int c;

	warm_extents(_metadata, st);
	for (c = 0; c < ARRAY_SIZE(cases); c++) {
		/* libaio takes the even ranges, io_uring the odd ones. */
		spaced(offs, cases[c].n, cases[c].first, 2 * cases[c].step);
		run_turn(_metadata, st, LIBAIO, true, cases[c].what, offs,
			 cases[c].n, cases[c].len, cases[c].reason);
		spaced(offs, cases[c].n, cases[c].first + cases[c].step,
		       2 * cases[c].step);
		run_turn(_metadata, st, URING, true, cases[c].what, offs,
			 cases[c].n, cases[c].len, cases[c].reason);
	}
}

TEST_HARNESS_MAIN
