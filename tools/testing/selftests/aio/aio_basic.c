// SPDX-License-Identifier: GPL-2.0
/*
 * AIO round trips with data verification: one io_submit() carrying writes
 * of mixed sizes and opcodes at distinct offsets, then reads of the same
 * ranges into fresh buffers through the other opcode family, on the raw
 * scratch device and on files of freshly made ext4 and xfs filesystems.
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
#define MIB		(1024 * 1024)
#define POISON		0xa5
#define MAX_SEGS	3
/* Unwritten gap between regions, and between iovec segments in memory. */
#define GAP		BLK
/* Leave the start of the raw device alone (partition tables, old sbs). */
#define RAW_BASE	MIB
/* mkfs.xfs refuses devices smaller than this. */
#define XFS_MIN_SIZE	(300ULL * MIB)

/*
 * Sizes from 4 KiB to 1 MiB, alternating PWRITE and PWRITEV.  Each region
 * is read back with the other family, so flat writes are checked through
 * scattered reads and vice versa.
 */
static const struct {
	size_t len;
	bool vec;
} layout[] = {
	{ 4 * 1024,	false },
	{ 1024 * 1024,	true },
	{ 8 * 1024,	false },
	{ 12 * 1024,	true },
	{ 64 * 1024,	false },
	{ 256 * 1024,	true },
	{ 128 * 1024,	false },
	{ 20 * 1024,	true },
};

#define NR_REGIONS	ARRAY_SIZE(layout)
#define BUF_LEN(i)	(layout[i].len + MAX_SEGS * GAP)

/* What the helpers below work on; the fixture embeds it. */
struct basic_state {
	aio_context_t ctx;
	int fd;
	char mnt[64];
	uint64_t seed;
	off_t off[NR_REGIONS];
	char *wbuf[NR_REGIONS];
	char *rbuf[NR_REGIONS];
	struct iocb cb[NR_REGIONS];
	struct iovec iov[NR_REGIONS][MAX_SEGS];
};

/* _PARENT teardown: see the note in aio_util.h */
FIXTURE(basic) {
	pid_t owner;
	struct basic_state st;
};

FIXTURE_VARIANT(basic) {
	const char *fstype;	/* NULL: the raw device */
};

FIXTURE_VARIANT_ADD(basic, raw) {
	.fstype = NULL,
};

FIXTURE_VARIANT_ADD(basic, ext4) {
	.fstype = "ext4",
};

FIXTURE_VARIANT_ADD(basic, xfs) {
	.fstype = "xfs",
};

FIXTURE_SETUP(basic)
{
	struct basic_state *st = &self->st;
	unsigned int i;

	self->owner = getpid();
	st->ctx = 0;
	st->fd = -1;
	st->mnt[0] = '\0';
	ASSERT_EQ(0, aio_lock_memory());
	ASSERT_EQ(0, sys_io_setup(64, &st->ctx));
	for (i = 0; i < NR_REGIONS; i++) {
		st->wbuf[i] = aio_alloc_buf(BUF_LEN(i));
		st->rbuf[i] = aio_alloc_buf(BUF_LEN(i));
		ASSERT_NE(NULL, st->wbuf[i]);
		ASSERT_NE(NULL, st->rbuf[i]);
	}
	st->seed = aio_new_seed();
}

FIXTURE_TEARDOWN_PARENT(basic)
{
	struct basic_state *st = &self->st;
	unsigned int i;

	if (getpid() == self->owner) {
		/* io_destroy() waits for anything still in flight. */
		if (st->ctx)
			sys_io_destroy(st->ctx);
		if (st->fd >= 0)
			close(st->fd);
		for (i = 0; i < NR_REGIONS; i++) {
			aio_free_buf(st->wbuf[i], BUF_LEN(i));
			aio_free_buf(st->rbuf[i], BUF_LEN(i));
		}
	}
	if (st->mnt[0] && aio_scratch_umount(st->mnt))
		TH_LOG("umount %s failed: %s", st->mnt, strerror(errno));
}

/*
 * Cut len into up to MAX_SEGS block multiples, unequal so that a segment
 * boundary never coincides with a region-relative power of two.
 */
static int split(size_t len, bool vec, size_t *seg)
{
	size_t rest;

	if (!vec || len <= BLK) {
		seg[0] = len;
		return 1;
	}
	seg[0] = BLK;
	rest = len - BLK;
	seg[1] = (rest / 2) & ~(size_t)(BLK - 1);
	if (!seg[1]) {
		seg[1] = rest;
		return 2;
	}
	seg[2] = rest - seg[1];
	return 3;
}

/*
 * Describe region i in buf as an iovec: segments are GAP apart in memory,
 * so data the kernel puts in the wrong segment or between them shows up.
 */
static int region_iov(struct basic_state *st, unsigned int i, char *buf,
		      bool vec)
{
	size_t seg[MAX_SEGS], pos = 0;
	int n, k;

	n = split(layout[i].len, vec, seg);
	for (k = 0; k < n; k++) {
		st->iov[i][k].iov_base = buf + pos + k * GAP;
		st->iov[i][k].iov_len = seg[k];
		pos += seg[k];
	}
	return n;
}

static void prep_region(struct basic_state *st, unsigned int i,
			bool write, bool vec)
{
	char *buf = write ? st->wbuf[i] : st->rbuf[i];
	int n = region_iov(st, i, buf, vec);
	int op;

	if (vec) {
		op = write ? IOCB_CMD_PWRITEV : IOCB_CMD_PREADV;
		aio_prep_rwv(&st->cb[i], op, st->fd, st->iov[i], n,
			     st->off[i], 0xa10000 + i);
	} else {
		op = write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
		aio_prep_rw(&st->cb[i], op, st->fd, buf, layout[i].len,
			    st->off[i], 0xa10000 + i);
	}
}

/* Submit all regions in one call and check every completion event. */
static void submit_all(struct __test_metadata *_metadata,
		       struct basic_state *st)
{
	struct iocb *list[NR_REGIONS];
	struct io_event ev[NR_REGIONS];
	bool seen[NR_REGIONS] = { false };
	unsigned int i;

	for (i = 0; i < NR_REGIONS; i++)
		list[i] = &st->cb[i];
	ASSERT_EQ((long)NR_REGIONS, sys_io_submit(st->ctx, NR_REGIONS, list))
		TH_LOG("io_submit: %s", strerror(errno));
	ASSERT_EQ((long)NR_REGIONS, aio_reap(st->ctx, ev, NR_REGIONS,
					     AIO_REAP_TIMEOUT_SEC));

	/* Completion order is up to the device; match by aio_data. */
	for (i = 0; i < NR_REGIONS; i++) {
		uint64_t idx = ev[i].data - 0xa10000;

		ASSERT_GT(NR_REGIONS, idx)
			TH_LOG("bad data %llx", (unsigned long long)ev[i].data);
		ASSERT_FALSE(seen[idx]);
		seen[idx] = true;
		ASSERT_EQ((uintptr_t)&st->cb[idx], ev[i].obj);
		ASSERT_EQ((int64_t)layout[idx].len, ev[i].res)
			TH_LOG("region %llu: res %lld",
			       (unsigned long long)idx, (long long)ev[i].res);
		ASSERT_EQ(0, ev[i].res2);
	}
}

/* TH_LOG() pastes its format into another literal: it must be a macro. */
#define BAD_BYTE_FMT	"region %u (%zu bytes at %llu) segment %d: first bad byte at file offset %llu"

static void verify_region(struct __test_metadata *_metadata,
			  struct basic_state *st, unsigned int i, bool vec)
{
	size_t seg[MAX_SEGS], pos = 0, j;
	const unsigned char *buf = (unsigned char *)st->rbuf[i];
	uint64_t off = st->off[i];
	ssize_t bad;
	int n, k;

	n = split(layout[i].len, vec, seg);
	for (k = 0; k < n; k++) {
		const unsigned char *s = buf + pos + k * GAP;

		bad = aio_verify_pattern(s, seg[k], st->seed, off + pos);
		EXPECT_EQ(-1, bad)
			TH_LOG(BAD_BYTE_FMT, i, layout[i].len,
			       (unsigned long long)off, k,
			       (unsigned long long)(off + pos + bad));
		/* The gap after each segment must not have been written. */
		for (j = 0; j < GAP; j++)
			if (s[seg[k] + j] != POISON)
				break;
		EXPECT_EQ((size_t)GAP, j)
			TH_LOG("region %u: read past segment %d", i, k);
		pos += seg[k];
	}
}

/*
 * Open the target of the variant (fstype NULL: the raw device); returns a
 * reason to skip, or NULL.  For the filesystems, the scratch device is
 * reformatted.
 */
static const char *open_target(struct __test_metadata *_metadata,
			       struct basic_state *st, const char *fstype,
			       bool direct, off_t shift)
{
	static char reason[128];
	const char *dev = aio_dev_path();
	int flags = O_RDWR | (direct ? O_DIRECT : 0);
	uint64_t size = 0, need;
	off_t off;
	unsigned int i;
	int ret, fd;

	if (!dev)
		return "AIO_TEST_DEV not set";
	if (fstype && !aio_dev_holds_data())
		return "null_blk does not store data: no filesystem on it";

	fd = open(dev, O_RDONLY);
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", dev, strerror(errno));
	ASSERT_EQ(0, aio_dev_size(fd, &size));
	close(fd);

	off = fstype ? 0 : RAW_BASE;
	off += shift;
	for (i = 0; i < NR_REGIONS; i++) {
		st->off[i] = off;
		off += layout[i].len + GAP;
	}
	need = off;
	if (fstype && !strcmp(fstype, "xfs"))
		need = XFS_MIN_SIZE;
	if (size < need) {
		snprintf(reason, sizeof(reason),
			 "%s has %llu bytes, need %llu", dev,
			 (unsigned long long)size, (unsigned long long)need);
		return reason;
	}

	if (!fstype) {
		st->fd = open(dev, flags);
		ASSERT_LE(0, st->fd) TH_LOG("open %s: %s", dev,
					    strerror(errno));
		return NULL;
	}

	ret = aio_scratch_mount(dev, fstype, st->mnt, sizeof(st->mnt));
	if (ret == AIO_MKFS_NOT_FOUND) {
		snprintf(reason, sizeof(reason), "mkfs.%s not available",
			 fstype);
		return reason;
	}
	ASSERT_EQ(0, ret) TH_LOG("mkfs/mount %s on %s: %d", fstype, dev, ret);

	{
		char path[sizeof(st->mnt) + 16];

		snprintf(path, sizeof(path), "%s/data", st->mnt);
		st->fd = open(path, flags | O_CREAT | O_TRUNC, 0600);
		ASSERT_LE(0, st->fd) TH_LOG("open %s: %s", path,
					    strerror(errno));
	}
	return NULL;
}

static void round_trip(struct __test_metadata *_metadata,
		       struct basic_state *st)
{
	size_t seg[MAX_SEGS], pos;
	unsigned int i;
	int n, k;

	for (i = 0; i < NR_REGIONS; i++) {
		memset(st->wbuf[i], POISON, BUF_LEN(i));
		n = split(layout[i].len, layout[i].vec, seg);
		pos = 0;
		for (k = 0; k < n; k++) {
			aio_fill_pattern(st->wbuf[i] + pos + k * GAP, seg[k],
					 st->seed, st->off[i] + pos);
			pos += seg[k];
		}
		prep_region(st, i, true, layout[i].vec);
	}
	submit_all(_metadata, st);

	for (i = 0; i < NR_REGIONS; i++) {
		memset(st->rbuf[i], POISON, BUF_LEN(i));
		prep_region(st, i, false, !layout[i].vec);
	}
	submit_all(_metadata, st);
}

TEST_F_TIMEOUT(basic, odirect_round_trip, AIO_DEV_TEST_TIMEOUT)
{
	struct basic_state *st = &self->st;
	const char *skip;
	unsigned int i;

	skip = open_target(_metadata, st, variant->fstype, true, 0);
	if (skip)
		SKIP(return, "%s", skip);

	round_trip(_metadata, st);

	/*
	 * null_blk completes writes without storing anything and reads back
	 * zeroes, so there only the completion events can be checked.
	 */
	if (!aio_dev_holds_data())
		SKIP(return, "%s does not store data: events checked, data not",
		     aio_dev_path());
	for (i = 0; i < NR_REGIONS; i++)
		verify_region(_metadata, st, i, !layout[i].vec);
}

TEST_F_TIMEOUT(basic, buffered_round_trip, AIO_DEV_TEST_TIMEOUT)
{
	struct basic_state *st = &self->st;
	const char *skip;
	unsigned int i;

	/* Dropped from the page cache below, the data must come back. */
	if (!variant->fstype && !aio_dev_holds_data())
		SKIP(return, "%s does not store data", aio_dev_path());
	/* Page cache I/O has no alignment rules: use odd offsets. */
	skip = open_target(_metadata, st, variant->fstype, false, 123);
	if (skip)
		SKIP(return, "%s", skip);

	round_trip(_metadata, st);
	for (i = 0; i < NR_REGIONS; i++)
		verify_region(_metadata, st, i, !layout[i].vec);

	/* And it reached the filesystem, not only the page cache. */
	ASSERT_EQ(0, fsync(st->fd));
	ASSERT_EQ(0, posix_fadvise(st->fd, 0, 0, POSIX_FADV_DONTNEED));
	for (i = 0; i < NR_REGIONS; i++) {
		memset(st->rbuf[i], POISON, BUF_LEN(i));
		prep_region(st, i, false, !layout[i].vec);
	}
	submit_all(_metadata, st);
	for (i = 0; i < NR_REGIONS; i++)
		verify_region(_metadata, st, i, !layout[i].vec);
}

TEST_HARNESS_MAIN
