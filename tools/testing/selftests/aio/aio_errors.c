// SPDX-License-Identifier: GPL-2.0
/*
 * io_submit() error semantics: which failures are reported by the syscall
 * itself, which ones through the completion event, how a batch that fails
 * part way is accounted, and how nr is bounded by the ring.
 *
 * Everything except the O_DIRECT alignment cases runs on a regular file in
 * /tmp and needs no scratch device.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#define FILE_LEN	(64 * 1024)
#define BLK		4096
#define POISON		0xa5

/*
 * Two pages, the second PROT_NONE: objects placed right at the end of the
 * first page are followed by memory that faults.
 */
static void *map_guarded(size_t *page)
{
	char *p;

	*page = sysconf(_SC_PAGESIZE);
	p = mmap(NULL, 2 * *page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (mprotect(p + *page, *page, PROT_NONE)) {
		munmap(p, 2 * *page);
		return NULL;
	}
	return p;
}

static int fill_file(int fd, size_t len, uint64_t seed)
{
	char *buf = aio_alloc_buf(len);
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	aio_fill_pattern(buf, len, seed, 0);
	n = pwrite(fd, buf, len, 0);
	aio_free_buf(buf, len);
	return n == (ssize_t)len ? 0 : -EIO;
}

/* No event may be waiting: failed submissions must not post one. */
static long pending_events(aio_context_t ctx)
{
	struct timespec zero = { 0, 0 };
	struct io_event ev[4];

	return sys_io_getevents(ctx, 0, 4, ev, &zero);
}

FIXTURE(errors) {
	aio_context_t ctx;
	int fd;
	int rdonly_fd;
	uint64_t seed;
	char *buf;
};

FIXTURE_SETUP(errors)
{
	char path[] = "/tmp/aio-errors-XXXXXX";

	self->fd = -1;
	self->rdonly_fd = -1;
	self->ctx = 0;
	self->buf = NULL;
	ASSERT_EQ(0, aio_lock_memory());
	ASSERT_EQ(0, sys_io_setup(32, &self->ctx));

	self->fd = mkstemp(path);
	ASSERT_LE(0, self->fd);
	self->rdonly_fd = open(path, O_RDONLY);
	unlink(path);
	ASSERT_LE(0, self->rdonly_fd);

	self->seed = aio_new_seed();
	ASSERT_EQ(0, fill_file(self->fd, FILE_LEN, self->seed));
	self->buf = aio_alloc_buf(FILE_LEN);
	ASSERT_NE(NULL, self->buf);
	memset(self->buf, POISON, FILE_LEN);
}

FIXTURE_TEARDOWN(errors)
{
	if (self->ctx)
		sys_io_destroy(self->ctx);
	if (self->fd >= 0)
		close(self->fd);
	if (self->rdonly_fd >= 0)
		close(self->rdonly_fd);
	aio_free_buf(self->buf, FILE_LEN);
}

TEST_F(errors, bad_fd)
{
	struct iocb cb, *list[1] = { &cb };
	int fd;

	/* An fd number that was valid a moment ago but is closed now. */
	fd = open("/dev/null", O_RDONLY);
	ASSERT_LE(0, fd);
	close(fd);

	aio_prep_rw(&cb, IOCB_CMD_PREAD, fd, self->buf, BLK, 0, 1);
	EXPECT_EQ(-1, sys_io_submit(self->ctx, 1, list));
	EXPECT_EQ(EBADF, errno);

	aio_prep_rw(&cb, IOCB_CMD_PREAD, -1, self->buf, BLK, 0, 1);
	EXPECT_EQ(-1, sys_io_submit(self->ctx, 1, list));
	EXPECT_EQ(EBADF, errno);

	EXPECT_EQ(0, pending_events(self->ctx));
}

TEST_F(errors, wrong_access_mode)
{
	struct iocb cb, *list[1] = { &cb };

	/* The fd is valid, but not for writing. */
	aio_prep_rw(&cb, IOCB_CMD_PWRITE, self->rdonly_fd, self->buf, BLK, 0,
		    1);
	EXPECT_EQ(-1, sys_io_submit(self->ctx, 1, list));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(0, pending_events(self->ctx));
}

TEST_F(errors, bad_opcode)
{
	/* 4 is the retired PREADX, NOOP was never implemented */
	static const unsigned short ops[] = { 4, IOCB_CMD_NOOP, 9, 0xffff };
	struct iocb cb, *list[1] = { &cb };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		aio_prep_rw(&cb, IOCB_CMD_PREAD, self->fd, self->buf, BLK, 0,
			    1);
		cb.aio_lio_opcode = ops[i];
		EXPECT_EQ(-1, sys_io_submit(self->ctx, 1, list))
			TH_LOG("opcode %u accepted", ops[i]);
		EXPECT_EQ(EINVAL, errno);
	}
	EXPECT_EQ(0, pending_events(self->ctx));
}

TEST_F(errors, efault_iocb_pointer)
{
	struct iocb *list[1];
	size_t page;
	char *map;

	map = map_guarded(&page);
	ASSERT_NE(NULL, map);

	/* The array is readable but its entry points at a PROT_NONE page. */
	list[0] = (struct iocb *)(map + page);
	EXPECT_EQ(-1, sys_io_submit(self->ctx, 1, list));
	EXPECT_EQ(EFAULT, errno);

	list[0] = NULL;
	EXPECT_EQ(-1, sys_io_submit(self->ctx, 1, list));
	EXPECT_EQ(EFAULT, errno);

	/* An iocb straddling into the guard page is just as unreadable. */
	list[0] = (struct iocb *)(map + page - sizeof(struct iocb) / 2);
	EXPECT_EQ(-1, sys_io_submit(self->ctx, 1, list));
	EXPECT_EQ(EFAULT, errno);

	EXPECT_EQ(0, pending_events(self->ctx));
	munmap(map, 2 * page);
}

TEST_F(errors, efault_iocb_array)
{
	size_t page;
	char *map;

	map = map_guarded(&page);
	ASSERT_NE(NULL, map);

	EXPECT_EQ(-1, sys_io_submit(self->ctx, 1,
				    (struct iocb **)(map + page)));
	EXPECT_EQ(EFAULT, errno);

	EXPECT_EQ(0, pending_events(self->ctx));
	munmap(map, 2 * page);
}

TEST_F(errors, reserved2_set)
{
	struct iocb cb, *list[1] = { &cb };

	aio_prep_rw(&cb, IOCB_CMD_PREAD, self->fd, self->buf, BLK, 0, 1);
	cb.aio_reserved2 = 1;
	EXPECT_EQ(-1, sys_io_submit(self->ctx, 1, list));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, pending_events(self->ctx));
}

TEST_F(errors, nbytes_overflow)
{
	struct iocb cb, *list[1] = { &cb };

	/* aio_nbytes that is negative as ssize_t */
	aio_prep_rw(&cb, IOCB_CMD_PREAD, self->fd, self->buf, BLK, 0, 1);
	cb.aio_nbytes = 1ULL << 63;
	EXPECT_EQ(-1, sys_io_submit(self->ctx, 1, list));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, pending_events(self->ctx));
}

TEST_F(errors, unknown_rw_flag)
{
	struct iocb cb, *list[1] = { &cb };

	aio_prep_rw(&cb, IOCB_CMD_PREAD, self->fd, self->buf, BLK, 0, 1);
	cb.aio_rw_flags = 0x80000000;
	EXPECT_EQ(-1, sys_io_submit(self->ctx, 1, list));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(0, pending_events(self->ctx));
}

TEST_F(errors, invalid_ctx)
{
	struct iocb cb, *list[1] = { &cb };
	struct timespec zero = { 0, 0 };
	aio_context_t bogus[3];
	struct io_event ev;
	unsigned int id = 0;
	size_t page;
	char *map;
	int i;

	map = map_guarded(&page);
	ASSERT_NE(NULL, map);

	/*
	 * NULL, an unmapped address and mapped memory that merely looks like
	 * a ring header whose id is that of our real context.
	 */
	memcpy(map, &id, sizeof(id));
	bogus[0] = 0;
	bogus[1] = (uintptr_t)(map + page);
	bogus[2] = (uintptr_t)map;

	aio_prep_rw(&cb, IOCB_CMD_PREAD, self->fd, self->buf, BLK, 0, 1);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(-1, sys_io_submit(bogus[i], 1, list))
			TH_LOG("bogus ctx %d accepted by io_submit", i);
		EXPECT_EQ(EINVAL, errno);
		EXPECT_EQ(-1, sys_io_getevents(bogus[i], 0, 1, &ev, &zero));
		EXPECT_EQ(EINVAL, errno);
		EXPECT_EQ(-1, sys_io_destroy(bogus[i]));
		EXPECT_EQ(EINVAL, errno);
	}

	/* The real context must not have been affected by any of this. */
	EXPECT_EQ(1, sys_io_submit(self->ctx, 1, list));
	ASSERT_EQ(1, aio_reap(self->ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC));
	EXPECT_EQ(BLK, ev.res);
	EXPECT_EQ(-1, aio_verify_pattern(self->buf, BLK, self->seed, 0));
	munmap(map, 2 * page);
}

TEST_F(errors, negative_nr)
{
	struct iocb cb, *list[1] = { &cb };

	aio_prep_rw(&cb, IOCB_CMD_PREAD, self->fd, self->buf, BLK, 0, 1);
	EXPECT_EQ(-1, sys_io_submit(self->ctx, -1, list));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, sys_io_submit(self->ctx, LONG_MIN, list));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, pending_events(self->ctx));
	/* Untouched: a rejected call must not scribble on the buffer. */
	EXPECT_EQ(POISON, (unsigned char)self->buf[0]);
}

TEST_F(errors, zero_nr)
{
	/* nr == 0 does not even look at the (here NULL) array */
	EXPECT_EQ(0, sys_io_submit(self->ctx, 0, NULL));
	EXPECT_EQ(0, pending_events(self->ctx));
}

TEST_F(errors, partial_batch)
{
	struct iocb cb[3], *list[3] = { &cb[0], &cb[1], &cb[2] };
	struct io_event ev[3];

	/*
	 * The first iocb is queued, the second fails, the third is never
	 * looked at: the syscall reports 1 and only one event is posted.
	 */
	aio_prep_rw(&cb[0], IOCB_CMD_PREAD, self->fd, self->buf, BLK, BLK,
		    0x1111);
	aio_prep_rw(&cb[1], IOCB_CMD_PREAD, -1, self->buf + BLK, BLK, 0,
		    0x2222);
	aio_prep_rw(&cb[2], IOCB_CMD_PREAD, self->fd, self->buf + 2 * BLK,
		    BLK, 0, 0x3333);
	ASSERT_EQ(1, sys_io_submit(self->ctx, 3, list));

	ASSERT_EQ(1, aio_reap(self->ctx, ev, 1, AIO_REAP_TIMEOUT_SEC));
	EXPECT_EQ(0x1111ULL, ev[0].data);
	EXPECT_EQ((uintptr_t)&cb[0], ev[0].obj);
	EXPECT_EQ(BLK, ev[0].res);
	EXPECT_EQ(0, ev[0].res2);
	EXPECT_EQ(-1, aio_verify_pattern(self->buf, BLK, self->seed, BLK));
	EXPECT_EQ(0, pending_events(self->ctx));
	EXPECT_EQ(POISON, (unsigned char)self->buf[2 * BLK]);
}

TEST_F(errors, first_iocb_invalid)
{
	struct iocb cb[2], *list[2] = { &cb[0], &cb[1] };

	/* Nothing was queued, so the error itself is returned. */
	aio_prep_rw(&cb[0], IOCB_CMD_PREAD, -1, self->buf, BLK, 0, 1);
	aio_prep_rw(&cb[1], IOCB_CMD_PREAD, self->fd, self->buf + BLK, BLK,
		    0, 2);
	EXPECT_EQ(-1, sys_io_submit(self->ctx, 2, list));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(0, pending_events(self->ctx));
	EXPECT_EQ(POISON, (unsigned char)self->buf[BLK]);
}

/*
 * nr larger than the ring is not an error.  fs/aio.c clamps nr to the ring
 * size (ring->nr) and then stops at the first iocb for which no completion
 * slot can be reserved.  Slots are handed out through per-CPU caches filled
 * in batches of req_batch = (nr - 1) / (4 * num_possible_cpus()) from a pool
 * of nr - 1, and a batch is only taken while the pool still holds a whole
 * one.  Pinned to one CPU, a fresh context therefore accepts exactly
 * floor((nr - 1) / req_batch) * req_batch iocbs in one call, which is at
 * most nr - 1 and can be less.  Events still sitting in the ring are not
 * given back, so the next io_submit() gets -EAGAIN until they are reaped.
 */
TEST_F(errors, nr_above_ring_size_is_clamped)
{
	aio_context_t ctx = 0;
	struct aio_ring_hdr *ring;
	struct iocb *cbs, **arr;
	struct io_event *ev;
	unsigned int n, batch, expect, i;
	size_t page, arr_len, data_len;
	char *arr_map, *data;
	unsigned char *seen;
	uint64_t seed;
	int ncpus, fd;
	long got;

	ASSERT_LE(0, aio_pin_to_current_cpu());
	ncpus = aio_possible_cpus();
	ASSERT_LT(0, ncpus);

	ASSERT_EQ(0, sys_io_setup(1, &ctx));
	ring = aio_ring(ctx);
	ASSERT_EQ(AIO_RING_MAGIC_VALUE, ring->magic);
	n = ring->nr;
	/* io_setup() sizes for at least 8 events per possible CPU */
	ASSERT_LE(8U * ncpus, n);

	batch = (n - 1) / (4 * ncpus);
	if (!batch)
		batch = 1;
	expect = (n - 1) / batch * batch;
	TH_LOG("ring nr %u, %d possible cpus, batch %u: expect %u accepted",
	       n, ncpus, batch, expect);

	/* One 4k block per iocb, read from a file of n distinct blocks. */
	fd = self->fd;
	seed = aio_new_seed();
	data_len = (size_t)n * BLK;
	ASSERT_EQ(0, fill_file(fd, data_len, seed));
	data = aio_alloc_buf(data_len);
	ASSERT_NE(NULL, data);
	memset(data, POISON, data_len);
	cbs = calloc(n, sizeof(*cbs));
	ev = calloc(n, sizeof(*ev));
	seen = calloc(n, 1);
	ASSERT_NE(NULL, cbs);
	ASSERT_NE(NULL, ev);
	ASSERT_NE(NULL, seen);

	/* Exactly n pointers, the last one right before a PROT_NONE page. */
	page = sysconf(_SC_PAGESIZE);
	arr_len = ((size_t)n * sizeof(*arr) + page - 1) / page * page;
	arr_map = mmap(NULL, arr_len + page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, arr_map);
	ASSERT_EQ(0, mprotect(arr_map + arr_len, page, PROT_NONE));
	arr = (struct iocb **)(arr_map + arr_len) - n;

	for (i = 0; i < n; i++) {
		aio_prep_rw(&cbs[i], IOCB_CMD_PREAD, fd, data + (size_t)i * BLK,
			    BLK, (off_t)i * BLK, i);
		arr[i] = &cbs[i];
	}

	EXPECT_EQ(expect, sys_io_submit(ctx, n + 1000L, arr))
		TH_LOG("errno %d", errno);
	ASSERT_LE(expect, n - 1);

	/* Pool and this CPU's cache are both short of a slot now. */
	EXPECT_EQ(-1, sys_io_submit(ctx, 1, &arr[expect]));
	EXPECT_EQ(EAGAIN, errno);

	got = aio_reap(ctx, ev, expect, AIO_REAP_TIMEOUT_SEC);
	ASSERT_EQ(expect, got);
	for (i = 0; i < expect; i++) {
		uint64_t idx = ev[i].data;

		ASSERT_GT(expect, idx);
		EXPECT_EQ(0, seen[idx]);
		seen[idx] = 1;
		EXPECT_EQ((uintptr_t)&cbs[idx], ev[i].obj);
		EXPECT_EQ(BLK, ev[i].res);
		EXPECT_EQ(-1, aio_verify_pattern(data + idx * BLK, BLK, seed,
						 idx * BLK))
			TH_LOG("block %llu bad", (unsigned long long)idx);
	}
	/* Nothing past the accepted ones was submitted. */
	EXPECT_EQ(0, pending_events(ctx));
	for (i = expect; i < n; i++)
		EXPECT_EQ(POISON, (unsigned char)data[(size_t)i * BLK]);

	/* Reaping gave the slots back. */
	EXPECT_EQ(1, sys_io_submit(ctx, 1, &arr[expect]));
	ASSERT_EQ(1, aio_reap(ctx, ev, 1, AIO_REAP_TIMEOUT_SEC));
	EXPECT_EQ(expect, ev[0].data);
	EXPECT_EQ(BLK, ev[0].res);
	EXPECT_EQ(-1, aio_verify_pattern(data + (size_t)expect * BLK, BLK,
					 seed, (uint64_t)expect * BLK));

	EXPECT_EQ(0, sys_io_destroy(ctx));
	munmap(arr_map, arr_len + page);
	aio_free_buf(data, data_len);
	free(cbs);
	free(ev);
	free(seen);
}

/*
 * O_DIRECT alignment: the block layer rejects misaligned direct I/O from
 * ->read_iter, after io_submit() has already accepted the iocb, so the
 * error arrives as the event's res.  Needs a real block device; tmpfs
 * would accept any alignment.  The helpers work on the state the fixture
 * embeds.
 */
struct odirect_state {
	aio_context_t ctx;
	int fd;
	int lbs;
	size_t len;
	char *buf;
};

FIXTURE(odirect) {
	struct odirect_state st;
};

FIXTURE_SETUP(odirect)
{
	struct odirect_state *st = &self->st;

	st->ctx = 0;
	st->fd = -1;
	st->buf = NULL;
	ASSERT_EQ(0, aio_lock_memory());
	ASSERT_EQ(0, sys_io_setup(8, &st->ctx));
}

FIXTURE_TEARDOWN(odirect)
{
	struct odirect_state *st = &self->st;

	if (st->ctx)
		sys_io_destroy(st->ctx);
	if (st->fd >= 0)
		close(st->fd);
	aio_free_buf(st->buf, st->len + 4096);
}

/* Returns false (after SKIP) when there is no device to test on. */
static bool odirect_open(struct __test_metadata *_metadata,
			 struct odirect_state *st)
{
	const char *dev = aio_dev_path();

	if (!dev)
		return false;
	st->fd = open(dev, O_RDWR | O_DIRECT);
	ASSERT_LE(0, st->fd) TH_LOG("open %s: %s", dev, strerror(errno));
	ASSERT_EQ(0, aio_dev_lbs(st->fd, &st->lbs));
	st->len = st->lbs > 4096 ? st->lbs : 4096;
	st->buf = aio_alloc_buf(st->len + 4096);
	ASSERT_NE(NULL, st->buf);
	memset(st->buf, POISON, st->len + 4096);
	return true;
}

static void expect_einval_event(struct __test_metadata *_metadata,
				struct odirect_state *st, struct iocb *cb)
{
	struct io_event ev;

	ASSERT_EQ(1, sys_io_submit(st->ctx, 1, &cb));
	ASSERT_EQ(1, aio_reap(st->ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC));
	EXPECT_EQ((uintptr_t)cb, ev.obj);
	EXPECT_EQ(cb->aio_data, ev.data);
	EXPECT_EQ(-EINVAL, ev.res);
}

TEST_F_TIMEOUT(odirect, misaligned_buffer, AIO_DEV_TEST_TIMEOUT)
{
	struct odirect_state *st = &self->st;
	struct iocb cb;
	size_t i;

	if (!odirect_open(_metadata, st))
		SKIP(return, "AIO_TEST_DEV not set");

	aio_prep_rw(&cb, IOCB_CMD_PREAD, st->fd, st->buf + 1, st->len, 0, 0xb1);
	expect_einval_event(_metadata, st, &cb);
	/* Rejected before any DMA: the buffer still holds the poison. */
	for (i = 0; i < st->len + 4096; i++)
		ASSERT_EQ(POISON, (unsigned char)st->buf[i]);
}

TEST_F_TIMEOUT(odirect, misaligned_offset, AIO_DEV_TEST_TIMEOUT)
{
	struct odirect_state *st = &self->st;
	struct iocb cb;
	size_t i;

	if (!odirect_open(_metadata, st))
		SKIP(return, "AIO_TEST_DEV not set");

	aio_prep_rw(&cb, IOCB_CMD_PREAD, st->fd, st->buf, st->len, 1, 0xb2);
	expect_einval_event(_metadata, st, &cb);
	for (i = 0; i < st->len; i++)
		ASSERT_EQ(POISON, (unsigned char)st->buf[i]);
}

TEST_F_TIMEOUT(odirect, misaligned_length, AIO_DEV_TEST_TIMEOUT)
{
	struct odirect_state *st = &self->st;
	struct iocb cb;
	size_t i;

	if (!odirect_open(_metadata, st))
		SKIP(return, "AIO_TEST_DEV not set");

	aio_prep_rw(&cb, IOCB_CMD_PREAD, st->fd, st->buf, st->len + 1, 0, 0xb3);
	expect_einval_event(_metadata, st, &cb);
	for (i = 0; i < st->len; i++)
		ASSERT_EQ(POISON, (unsigned char)st->buf[i]);
}

/* The same iocbs, aligned, work: the failures above are alignment only. */
TEST_F_TIMEOUT(odirect, aligned_control, AIO_DEV_TEST_TIMEOUT)
{
	struct odirect_state *st = &self->st;
	struct iocb cb, *list[1] = { &cb };
	struct io_event ev;
	uint64_t seed = aio_new_seed();

	if (!odirect_open(_metadata, st))
		SKIP(return, "AIO_TEST_DEV not set");

	aio_fill_pattern(st->buf, st->len, seed, 0);
	aio_prep_rw(&cb, IOCB_CMD_PWRITE, st->fd, st->buf, st->len, 0, 0xc1);
	ASSERT_EQ(1, sys_io_submit(st->ctx, 1, list));
	ASSERT_EQ(1, aio_reap(st->ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC));
	ASSERT_EQ((int64_t)st->len, ev.res);

	memset(st->buf, POISON, st->len);
	aio_prep_rw(&cb, IOCB_CMD_PREAD, st->fd, st->buf, st->len, 0, 0xc2);
	ASSERT_EQ(1, sys_io_submit(st->ctx, 1, list));
	ASSERT_EQ(1, aio_reap(st->ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC));
	/* ASSERT, not EXPECT: a SKIP below must not hide a failure. */
	ASSERT_EQ((int64_t)st->len, ev.res);
	ASSERT_EQ(0xc2ULL, ev.data);

	if (!aio_dev_holds_data())
		SKIP(return, "%s discards data (null_blk): res checked only",
		     aio_dev_path());
	EXPECT_EQ(-1, aio_verify_pattern(st->buf, st->len, seed, 0));
}

TEST_HARNESS_MAIN
