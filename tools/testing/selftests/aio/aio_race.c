// SPDX-License-Identifier: GPL-2.0
/*
 * Direct I/O racing what changes a file's extents, through io_submit()
 * (offload on: tried inline under NOWAIT, else handed to a worker) and
 * io_uring (tried under NOWAIT, else io-wq) at once: the paths that make
 * ext4's NOWAIT answers honest (extent lookups from the status cache, the
 * non-blocking split of unwritten extents, the timestamps carried to the
 * journal later) must not lose or expose data where stock's blocking
 * calls did not.
 *
 *   appends_racing_reads
 *	extending 4 KiB writes, one at a time, alternately through an
 *	O_APPEND fd (io_submit(), offset ignored) and at the end of the
 *	file (io_uring), while a thread reads the next block to be
 *	appended, through io_submit() and io_uring of its own: a read
 *	returns nothing (EOF) or the whole appended block, never zeroes or
 *	stale data; then the file holds every append, in order.
 *   writes_racing_punch
 *	4 KiB writes, 16 in flight, in a random order over a fallocated
 *	(unwritten) file while a thread punches holes into the odd 64 KiB
 *	chunks and fallocates them again, and truncates the file's tail
 *	away and back: every block of an even chunk holds its write; a
 *	block of an odd chunk or of the tail holds its write or zeroes,
 *	never stale data; fsck is clean.
 *   subblock_unaligned
 *	512-byte-aligned direct writes of 1-3 sectors, 8 at a time into
 *	disjoint sectors of the same four blocks (written, unwritten, hole,
 *	unwritten): ext4 and XFS must serialise such writes into one block
 *	(zeroing the rest of an unwritten or new block around one write
 *	must not wipe another's), so after each round the four blocks hold
 *	exactly what a model of the writes says.
 *
 * On ext4 (4 KiB blocks) and XFS, on a dm-linear part of the NVMe
 * filled with tagged stale blocks first (aio_fill_stale()): NVMe is where
 * the NOWAIT paths run inline; on SD every direct write is handed off
 * before the filesystem sees it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <linux/falloc.h>
#include <linux/io_uring.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#define BLK		4096
#define SECT		512
#define DEV_MB		320		/* XFS's smallest */
#define DM_NAME		"aio-race"
#define DM_DEV		"/dev/mapper/" DM_NAME

#define APPENDS		512
#define PUNCH_BLOCKS	2048		/* 8 MiB */
#define PUNCH_CHUNK	16		/* blocks: 64 KiB */
#define TAIL_BLOCKS	256
#define IN_FLIGHT	16
#define SUB_ROUNDS	256
#define SUB_BLOCKS	4
#define SUB_WRITES	8

FIXTURE(race) {
	pid_t owner;
	char mnt[64];
	char path[96];
	struct aio_uring ring;
	aio_context_t ctx;
	bool dm, mounted;
};

FIXTURE_VARIANT(race) {
	const char *fstype;
};

FIXTURE_VARIANT_ADD(race, ext4) { .fstype = "ext4" };
FIXTURE_VARIANT_ADD(race, xfs) { .fstype = "xfs" };

FIXTURE_SETUP(race)
{
	char * const ext4[] = { "mkfs.ext4", "-F", "-q", "-b", "4096", "-E",
				"nodiscard", DM_DEV, NULL };
	char * const xfs[] = { "mkfs.xfs", "-f", "-q", "-K", DM_DEV, NULL };
	bool is_ext4 = !strcmp(variant->fstype, "ext4");
	const char *why;
	uint64_t size;
	int ret;

	self->owner = getpid();
	self->ring.fd = -1;
	ret = aio_dev_fit("nvme", (uint64_t)DEV_MB << 20, &size, &why);
	ASSERT_LE(0, ret) TH_LOG("%s: %s", aio_dev_path(), strerror(-ret));
	if (ret)
		SKIP(return, "%s", why);
	ret = aio_uring_init(&self->ring, 2 * IN_FLIGHT);
	if (ret)
		SKIP(return, "io_uring: %s", strerror(-ret));
	ASSERT_EQ(0, sys_io_setup(2 * IN_FLIGHT, &self->ctx));
	ret = aio_dm_linear(DM_NAME, aio_dev_path(), 0, (uint64_t)DEV_MB << 20);
	if (ret == AIO_MKFS_NOT_FOUND)
		SKIP(return, "dmsetup not available");
	ASSERT_EQ(0, ret);
	self->dm = true;
	ASSERT_EQ(0, aio_fill_stale(DM_DEV, (uint64_t)DEV_MB << 20));
	ret = aio_run(is_ext4 ? ext4 : xfs);
	if (ret == AIO_MKFS_NOT_FOUND) {
		aio_dm_remove(DM_NAME);
		SKIP(return, "mkfs.%s not available", variant->fstype);
	}
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, aio_mount_tmp(DM_DEV, variant->fstype, NULL, self->mnt,
				   sizeof(self->mnt)));
	self->mounted = true;
	snprintf(self->path, sizeof(self->path), "%s/f", self->mnt);
}

/* _PARENT teardown: see the note in aio_util.h */
FIXTURE_TEARDOWN_PARENT(race)
{
	if (getpid() == self->owner) {
		if (self->ring.fd >= 0)
			aio_uring_exit(&self->ring);
		if (self->ctx)
			sys_io_destroy(self->ctx);
	}
	if (self->mounted && aio_scratch_umount(self->mnt))
		TH_LOG("umount %s: %s", self->mnt, strerror(errno));
	if (self->dm && aio_dm_remove(DM_NAME))
		TH_LOG("dmsetup remove %s failed", DM_NAME);
}

/* Unmount, then the filesystem's checker finds nothing to repair. */
static void umount_fsck(struct __test_metadata *_metadata, const char *mnt,
			bool *mounted, const char *fstype)
{
	char * const e2fsck[] = { "e2fsck", "-fn", DM_DEV, NULL };
	char * const xfs_repair[] = { "xfs_repair", "-n", DM_DEV, NULL };

	ASSERT_EQ(0, aio_scratch_umount(mnt));
	*mounted = false;
	EXPECT_EQ(0, aio_run(strcmp(fstype, "ext4") ? xfs_repair : e2fsck));
}

static bool is_zero(const char *b, size_t len)
{
	return !b[0] && !memcmp(b, b + 1, len - 1);
}

/* One request through io_submit() or io_uring; 1 when queued. */
static long submit_one(aio_context_t ctx, struct aio_uring *ring, bool uring,
		       int op, int fd, void *buf, size_t len, off_t off,
		       uint64_t tag)
{
	struct iocb cb, *list = &cb;
	long nvcsw;

	if (uring)
		return aio_uring_rw_nvcsw(ring, op == IOCB_CMD_PREAD ?
					  IORING_OP_READ : IORING_OP_WRITE,
					  fd, buf, len, off, tag, &nvcsw);
	aio_prep_rw(&cb, op, fd, buf, len, off, tag);
	return sys_io_submit(ctx, 1, &list);
}

struct reader {
	const char *path;
	uint64_t seed;
	int stop;
	long reads, eofs, hits, bad;
	int err;
};

/*
 * Read the block after the last one seen, until it is there: each read
 * gives EOF or the whole block as appended.
 */
static void *read_appends(void *arg)
{
	struct reader *r = arg;
	struct aio_uring ring = { .fd = -1 };
	aio_context_t ctx = 0;
	off_t pos = 0;
	char *buf;
	int fd;

	buf = aio_alloc_buf(BLK);
	fd = open(r->path, O_RDONLY | O_DIRECT);
	if (!buf || fd < 0 || sys_io_setup(1, &ctx) ||
	    aio_uring_init(&ring, 1)) {
		r->err = errno ? errno : ENOMEM;
		goto out;
	}
	errno = 0;
	while (pos < (off_t)APPENDS * BLK) {
		bool uring = r->reads % 2;
		uint64_t tag;
		long long res;

		if (__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
			break;
		memset(buf, 0xa5, BLK);
		if (submit_one(ctx, &ring, uring, IOCB_CMD_PREAD, fd, buf, BLK,
			       pos, pos) != 1) {
			r->err = errno ? errno : EIO;
			break;
		}
		res = aio_reap_either(ctx, &ring, uring, &tag);
		r->reads++;
		if (res == 0) {
			r->eofs++;
			sched_yield();	/* let the writer on, on one CPU */
			continue;
		}
		if (res != BLK ||
		    aio_verify_pattern(buf, BLK, r->seed, pos) != -1) {
			if (r->bad++ < 8)
				fprintf(stderr, "# read at %lld: %lld bytes, %s\n",
					(long long)pos, res,
					res != BLK ? "short" :
					is_zero(buf, BLK) ? "zeroes" :
					aio_is_stale(buf) ? "stale" :
					"not the append");
		}
		r->hits++;
		pos += BLK;
	}
out:
	if (ring.fd >= 0)
		aio_uring_exit(&ring);
	if (ctx)
		sys_io_destroy(ctx);
	if (fd >= 0)
		close(fd);
	aio_free_buf(buf, BLK);
	return NULL;
}

TEST_F_TIMEOUT(race, appends_racing_reads, AIO_DEV_TEST_TIMEOUT)
{
	struct reader r = { .path = self->path, .seed = aio_new_seed() };
	int fd, afd, i, bad = 0;
	pthread_t thr;
	struct stat sb;
	uint64_t tag;
	char *buf;

	buf = aio_alloc_buf(BLK);
	ASSERT_NE(NULL, buf);
	fd = open(self->path, O_RDWR | O_CREAT | O_DIRECT, 0600);
	ASSERT_LE(0, fd);
	afd = open(self->path, O_WRONLY | O_APPEND | O_DIRECT);
	ASSERT_LE(0, afd);
	ASSERT_EQ(0, pthread_create(&thr, NULL, read_appends, &r));
	for (i = 0; i < APPENDS; i++) {
		bool uring = i % 2;
		off_t off = (off_t)i * BLK;
		long long res;

		aio_fill_pattern(buf, BLK, r.seed, off);
		/* O_APPEND: the offset given (0) is ignored. */
		ASSERT_EQ(1, submit_one(self->ctx, &self->ring, uring,
					IOCB_CMD_PWRITE, uring ? fd : afd, buf,
					BLK, uring ? off : 0, i));
		res = aio_reap_either(self->ctx, &self->ring, uring, &tag);
		ASSERT_EQ(BLK, res) TH_LOG("append %d: %lld", i, res);
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, pthread_join(thr, NULL));
	ASSERT_EQ(0, r.err) TH_LOG("reader: %s", strerror(r.err));
	TH_LOG("%ld reads: %ld saw an append, %ld EOF, %ld wrong", r.reads,
	       r.hits, r.eofs, r.bad);
	EXPECT_EQ(0, r.bad);
	/* Reads found appends (EOF reads, the race, are timing: logged). */
	EXPECT_LT(0, r.hits);

	ASSERT_EQ(0, fstat(fd, &sb));
	EXPECT_EQ((off_t)APPENDS * BLK, sb.st_size);
	for (i = 0; i < APPENDS; i++) {
		off_t off = (off_t)i * BLK;

		ASSERT_EQ(BLK, pread(fd, buf, BLK, off));
		if (aio_verify_pattern(buf, BLK, r.seed, off) != -1 &&
		    bad++ < 8)
			TH_LOG("block %d does not hold its append", i);
	}
	EXPECT_EQ(0, bad);
	close(afd);
	close(fd);
	aio_free_buf(buf, BLK);
	umount_fsck(_metadata, self->mnt, &self->mounted,
		    variant->fstype);
}

struct puncher {
	int fd;
	unsigned int seed;
	int stop;
	long punches, truncates;
	int err;
};

static void *punch_odd_chunks(void *arg)
{
	struct puncher *p = arg;
	unsigned int rnd = p->seed;

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		int chunk = 2 * (rand_r(&rnd) % (PUNCH_BLOCKS / PUNCH_CHUNK / 2)) + 1;
		int first = chunk * PUNCH_CHUNK + rand_r(&rnd) % PUNCH_CHUNK;
		int len = 1 + rand_r(&rnd) % (PUNCH_CHUNK - first % PUNCH_CHUNK);
		off_t off = (off_t)first * BLK;

		if (fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      off, (off_t)len * BLK) ||
		    fallocate(p->fd, FALLOC_FL_KEEP_SIZE, off,
			      (off_t)len * BLK)) {
			p->err = errno;
			break;
		}
		/* From the first round on: a short run must truncate too. */
		if (++p->punches % 16 != 1)
			continue;
		/* The tail away and back, fallocated again. */
		if (ftruncate(p->fd, (off_t)PUNCH_BLOCKS * BLK) ||
		    ftruncate(p->fd, (off_t)(PUNCH_BLOCKS + TAIL_BLOCKS) * BLK) ||
		    fallocate(p->fd, FALLOC_FL_KEEP_SIZE,
			      (off_t)PUNCH_BLOCKS * BLK,
			      (off_t)TAIL_BLOCKS * BLK)) {
			p->err = errno;
			break;
		}
		p->truncates++;
	}
	return NULL;
}

TEST_F_TIMEOUT(race, writes_racing_punch, AIO_DEV_TEST_TIMEOUT)
{
	const int nblocks = PUNCH_BLOCKS + TAIL_BLOCKS;
	struct puncher p = { 0 };
	uint64_t seed = aio_new_seed(), tag;
	int *order, i, inflight[2] = { 0 }, fd;
	long kept = 0, zeroed = 0, wrong = 0;
	bool *done;
	pthread_t thr;
	char *wb, *rb;

	order = calloc(nblocks, sizeof(*order));
	done = calloc(nblocks, sizeof(*done));
	wb = aio_alloc_buf((size_t)nblocks * BLK);
	rb = aio_alloc_buf(BLK);
	ASSERT_TRUE(order && done && wb && rb);
	fd = open(self->path, O_RDWR | O_CREAT | O_DIRECT, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fallocate(fd, 0, 0, (off_t)nblocks * BLK));
	ASSERT_EQ(0, fsync(fd));
	/* Every block once, in a random order. */
	for (i = 0; i < nblocks; i++)
		order[i] = i;
	srand(seed);
	for (i = nblocks - 1; i > 0; i--) {
		int j = rand() % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	p.fd = fd;
	p.seed = seed;
	ASSERT_EQ(0, pthread_create(&thr, NULL, punch_odd_chunks, &p));
	for (i = 0; i < nblocks; i++) {
		int b = order[i];
		bool uring = i % 2;
		off_t off = (off_t)b * BLK;
		char *buf = wb + (size_t)b * BLK;
		long long res;

		aio_fill_pattern(buf, BLK, seed, off);
		ASSERT_EQ(1, submit_one(self->ctx, &self->ring, uring,
					IOCB_CMD_PWRITE, fd, buf, BLK, off, b));
		if (++inflight[uring] < IN_FLIGHT / 2)
			continue;
		res = aio_reap_either(self->ctx, &self->ring, uring, &tag);
		ASSERT_GT((uint64_t)nblocks, tag);
		EXPECT_EQ(BLK, res) TH_LOG("write to block %llu: %lld",
					   (unsigned long long)tag, res);
		done[tag] = res == BLK;
		inflight[uring]--;
	}
	for (i = 0; i < 2; i++)
		while (inflight[i]--) {
			long long res = aio_reap_either(self->ctx,
							&self->ring, i, &tag);

			ASSERT_GT((uint64_t)nblocks, tag);
			EXPECT_EQ(BLK, res);
			done[tag] = res == BLK;
		}
	__atomic_store_n(&p.stop, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, pthread_join(thr, NULL));
	ASSERT_EQ(0, p.err) TH_LOG("puncher: %s", strerror(p.err));
	/* The tail back where the writes may have left it short. */
	ASSERT_EQ(0, ftruncate(fd, (off_t)nblocks * BLK));
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, aio_write_file("/proc/sys/vm/drop_caches", "3"));

	for (i = 0; i < nblocks; i++) {
		off_t off = (off_t)i * BLK;
		bool racy = i >= PUNCH_BLOCKS || (i / PUNCH_CHUNK) % 2;

		ASSERT_EQ(BLK, pread(fd, rb, BLK, off));
		if (done[i] && aio_verify_pattern(rb, BLK, seed, off) == -1) {
			kept++;
			continue;
		}
		if (racy && is_zero(rb, BLK)) {
			zeroed++;
			continue;
		}
		if (wrong++ < 8)
			TH_LOG("block %d (%s chunk): %s", i,
			       racy ? "punched" : "untouched",
			       aio_is_stale(rb) ? "stale data" :
			       is_zero(rb, BLK) ? "zeroes" : "not its write");
	}
	TH_LOG("%ld punches, %ld truncates; %ld blocks kept their write, %ld zeroed",
	       p.punches, p.truncates, kept, zeroed);
	EXPECT_EQ(0, wrong);
	/* The race happened: writes were punched away and some survived. */
	EXPECT_LT(0, p.truncates);
	EXPECT_LT(0, zeroed);
	close(fd);
	free(order);
	free(done);
	aio_free_buf(wb, (size_t)nblocks * BLK);
	aio_free_buf(rb, BLK);
	umount_fsck(_metadata, self->mnt, &self->mounted,
		    variant->fstype);
}

/*
 * SUB_WRITES disjoint runs of 1-3 sectors inside SUB_BLOCKS blocks: pick
 * a random free start, grow while free.  Runs may share blocks.
 */
static int pick_runs(unsigned int *rnd, int start[], int len[])
{
	bool used[SUB_BLOCKS * BLK / SECT] = { false };
	const int nsect = SUB_BLOCKS * BLK / SECT;
	int n = 0, tries;

	for (tries = 0; n < SUB_WRITES && tries < 64; tries++) {
		int s = rand_r(rnd) % nsect, want = 1 + rand_r(rnd) % 3, l;

		for (l = 0; l < want && s + l < nsect && !used[s + l]; l++)
			used[s + l] = true;
		if (!l)
			continue;
		start[n] = s;
		len[n++] = l;
	}
	return n;
}

TEST_F_TIMEOUT(race, subblock_unaligned, AIO_DEV_TEST_TIMEOUT)
{
	const size_t span = SUB_BLOCKS * BLK;
	int start[SUB_WRITES], len[SUB_WRITES], fd, lbs, r, i, n;
	uint64_t seed = aio_new_seed(), tag;
	long bad_rounds = 0, writes = 0;
	unsigned int rnd = seed;
	char *model, *wb, *rb;
	struct statvfs vfs;

	fd = open(aio_dev_path(), O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, aio_dev_lbs(fd, &lbs));
	close(fd);
	if (lbs > SECT)
		SKIP(return, "logical block size %d: no sub-block direct I/O",
		     lbs);
	model = aio_alloc_buf(span);
	wb = aio_alloc_buf(SUB_WRITES * 4 * SECT);
	rb = aio_alloc_buf(span);
	ASSERT_TRUE(model && wb && rb);
	fd = open(self->path, O_RDWR | O_CREAT | O_DIRECT, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fstatvfs(fd, &vfs));
	ASSERT_EQ((unsigned long)BLK, vfs.f_bsize);
	ASSERT_EQ(0, ftruncate(fd, (off_t)SUB_ROUNDS * span));

	for (r = 0; r < SUB_ROUNDS; r++) {
		off_t base = (off_t)r * span;
		int inflight[2] = { 0 };

		/* Block 0 written, 1 and 3 unwritten, 2 a hole. */
		aio_fill_pattern(model, span, ~seed, base);
		memset(model + BLK, 0, span - BLK);
		ASSERT_EQ(BLK, pwrite(fd, model, BLK, base));
		ASSERT_EQ(0, fallocate(fd, FALLOC_FL_KEEP_SIZE, base + BLK,
				       BLK));
		ASSERT_EQ(0, fallocate(fd, FALLOC_FL_KEEP_SIZE,
				       base + 3 * BLK, BLK));
		if (r % 8 == 0)
			ASSERT_EQ(0, fsync(fd));

		n = pick_runs(&rnd, start, len);
		for (i = 0; i < n; i++) {
			char *buf = wb + i * 4 * SECT;
			off_t off = base + (off_t)start[i] * SECT;
			bool uring = i % 2;

			aio_fill_pattern(buf, len[i] * SECT, seed + r * 64 + i,
					 off);
			memcpy(model + start[i] * SECT, buf, len[i] * SECT);
			ASSERT_EQ(1, submit_one(self->ctx, &self->ring, uring,
						IOCB_CMD_PWRITE, fd, buf,
						len[i] * SECT, off, i));
			inflight[uring]++;
		}
		for (i = 0; i < 2; i++)
			while (inflight[i]--) {
				long long res = aio_reap_either(self->ctx,
							&self->ring, i, &tag);

				ASSERT_GT((uint64_t)n, tag);
				EXPECT_EQ(len[tag] * SECT, res)
					TH_LOG("round %d write %llu: %lld", r,
					       (unsigned long long)tag, res);
			}
		writes += n;
		ASSERT_EQ((ssize_t)span, pread(fd, rb, span, base));
		if (memcmp(rb, model, span)) {
			for (i = 0; i < (int)(span / SECT); i++)
				if (memcmp(rb + i * SECT, model + i * SECT,
					   SECT))
					break;
			if (bad_rounds++ < 8)
				TH_LOG("round %d: sector %d (block %d) is %s",
				       r, i, i * SECT / BLK,
				       aio_is_stale(rb + i / 8 * BLK) ?
				       "stale" : is_zero(rb + i * SECT, SECT) ?
				       "zeroes" : "not what was written");
		}
	}
	TH_LOG("%ld sub-block writes in %d rounds, %ld rounds wrong", writes,
	       SUB_ROUNDS, bad_rounds);
	EXPECT_EQ(0, bad_rounds);
	close(fd);
	aio_free_buf(model, span);
	aio_free_buf(wb, SUB_WRITES * 4 * SECT);
	aio_free_buf(rb, span);
	umount_fsck(_metadata, self->mnt, &self->mounted,
		    variant->fstype);
}

TEST_HARNESS_MAIN
