// SPDX-License-Identifier: GPL-2.0
/*
 * io_cancel() and io_destroy() semantics.
 *
 * Only IOCB_CMD_POLL requests are cancellable on a stock kernel (read/write
 * iocbs get a cancel method only from a few USB gadget drivers), so an
 * IOCB_CMD_POLL on an empty pipe serves as the request that stays pending
 * for as long as the test wants.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#define BLK		4096
#define FILE_LEN	(4 * BLK)
#define POISON		0xa5

static long pending_events(aio_context_t ctx)
{
	struct timespec zero = { 0, 0 };
	struct io_event ev[4];

	return sys_io_getevents(ctx, 0, 4, ev, &zero);
}

/* What the helpers below work on; the fixture embeds it. */
struct cancel_state {
	aio_context_t ctx;
	int pipefd[2];
	int fd;
	uint64_t seed;
	char *buf;
};

FIXTURE(cancel) {
	struct cancel_state st;
};

FIXTURE_SETUP(cancel)
{
	struct cancel_state *st = &self->st;
	char path[] = "/tmp/aio-cancel-XXXXXX";
	ssize_t n;

	st->ctx = 0;
	st->fd = -1;
	st->pipefd[0] = -1;
	st->pipefd[1] = -1;
	st->buf = NULL;
	ASSERT_EQ(0, aio_lock_memory());
	ASSERT_EQ(0, sys_io_setup(16, &st->ctx));
	ASSERT_EQ(0, pipe(st->pipefd));

	st->fd = mkstemp(path);
	ASSERT_LE(0, st->fd);
	unlink(path);
	st->buf = aio_alloc_buf(FILE_LEN);
	ASSERT_NE(NULL, st->buf);
	st->seed = aio_new_seed();
	aio_fill_pattern(st->buf, FILE_LEN, st->seed, 0);
	n = pwrite(st->fd, st->buf, FILE_LEN, 0);
	ASSERT_EQ(FILE_LEN, n);
	memset(st->buf, POISON, FILE_LEN);
}

FIXTURE_TEARDOWN(cancel)
{
	struct cancel_state *st = &self->st;

	/* io_destroy() also cancels whatever a failed test left pending. */
	if (st->ctx)
		sys_io_destroy(st->ctx);
	if (st->pipefd[0] >= 0)
		close(st->pipefd[0]);
	if (st->pipefd[1] >= 0)
		close(st->pipefd[1]);
	if (st->fd >= 0)
		close(st->fd);
	aio_free_buf(st->buf, FILE_LEN);
}

/* Read block blk of the test file through AIO and check its contents. */
static void read_block(struct __test_metadata *_metadata,
		       struct cancel_state *st, aio_context_t ctx,
		       struct iocb *cb, int blk)
{
	struct io_event ev;

	aio_prep_rw(cb, IOCB_CMD_PREAD, st->fd, st->buf + blk * BLK, BLK,
		    (off_t)blk * BLK, 0x100 + blk);
	ASSERT_EQ(1, sys_io_submit(ctx, 1, &cb));
	ASSERT_EQ(1, aio_reap(ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC));
	EXPECT_EQ((uintptr_t)cb, ev.obj);
	EXPECT_EQ((uint64_t)(0x100 + blk), ev.data);
	EXPECT_EQ(BLK, ev.res);
	EXPECT_EQ(-1, aio_verify_pattern(st->buf + blk * BLK, BLK,
					 st->seed, (uint64_t)blk * BLK));
}

static void submit_poll(struct __test_metadata *_metadata,
			struct cancel_state *st, struct iocb *cb,
			uint64_t data)
{
	aio_prep_poll(cb, st->pipefd[0], POLLIN, data);
	ASSERT_EQ(1, sys_io_submit(st->ctx, 1, &cb));
	/* The pipe is empty and has a writer: nothing can complete it. */
	ASSERT_EQ(0, pending_events(st->ctx));
}

TEST_F(cancel, completed_read)
{
	struct cancel_state *st = &self->st;
	struct io_event res;
	struct iocb cb;

	read_block(_metadata, st, st->ctx, &cb, 1);

	/* It is no longer on the list of active requests. */
	EXPECT_EQ(-1, sys_io_cancel(st->ctx, &cb, &res));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(cancel, never_submitted)
{
	struct cancel_state *st = &self->st;
	struct io_event res;
	struct iocb cb;

	aio_prep_rw(&cb, IOCB_CMD_PREAD, st->fd, st->buf, BLK, 0, 1);
	EXPECT_EQ(-1, sys_io_cancel(st->ctx, &cb, &res));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(cancel, bad_key)
{
	struct cancel_state *st = &self->st;
	struct io_event res, ev;
	struct iocb cb;

	submit_poll(_metadata, st, &cb, 0xbad);

	/*
	 * io_submit() stored the key in the iocb; io_cancel() rejects an
	 * iocb whose key was changed, even though the request is pending.
	 */
	ASSERT_EQ(0U, cb.aio_key);
	cb.aio_key = 0x1234;
	EXPECT_EQ(-1, sys_io_cancel(st->ctx, &cb, &res));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, pending_events(st->ctx));

	/* With the key restored the very same request is cancellable. */
	cb.aio_key = 0;
	EXPECT_EQ(-1, sys_io_cancel(st->ctx, &cb, &res));
	EXPECT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(1, aio_reap(st->ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC));
	EXPECT_EQ(0xbadULL, ev.data);
	EXPECT_EQ(0, ev.res);
}

/*
 * fs/aio.c: io_cancel() calls the request's cancel method and, if that
 * succeeded, returns -EINPROGRESS; the result argument is not written any
 * more, the completion is always delivered through the ring.  A cancelled
 * poll completes with res = 0 (no events) and res2 = 0.
 */
TEST_F(cancel, pending_poll)
{
	struct cancel_state *st = &self->st;
	struct io_event res, ev, sentinel;
	struct iocb cb;
	char c = 'x';

	submit_poll(_metadata, st, &cb, 0xfeed);

	memset(&res, 0x5a, sizeof(res));
	memset(&sentinel, 0x5a, sizeof(sentinel));
	EXPECT_EQ(-1, sys_io_cancel(st->ctx, &cb, &res));
	EXPECT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(0, memcmp(&res, &sentinel, sizeof(res)));

	ASSERT_EQ(1, aio_reap(st->ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC));
	EXPECT_EQ(0xfeedULL, ev.data);
	EXPECT_EQ((uintptr_t)&cb, ev.obj);
	EXPECT_EQ(0, ev.res);
	EXPECT_EQ(0, ev.res2);

	/* Gone from the active list: a second cancel finds nothing. */
	EXPECT_EQ(-1, sys_io_cancel(st->ctx, &cb, &res));
	EXPECT_EQ(EINVAL, errno);

	/* Nor does the cancelled request fire when the pipe gets data. */
	ASSERT_EQ(1, write(st->pipefd[1], &c, 1));
	usleep(10 * 1000);
	EXPECT_EQ(0, pending_events(st->ctx));
	c = 0;
	ASSERT_EQ(1, read(st->pipefd[0], &c, 1));
	EXPECT_EQ('x', c);
}

/* Control for the above: the same poll completes once data arrives. */
TEST_F(cancel, poll_completes)
{
	struct cancel_state *st = &self->st;
	struct io_event res, ev;
	struct iocb cb;
	char c = 'y';

	submit_poll(_metadata, st, &cb, 0xd0e);
	ASSERT_EQ(1, write(st->pipefd[1], &c, 1));
	ASSERT_EQ(1, aio_reap(st->ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC));
	EXPECT_EQ(0xd0eULL, ev.data);
	EXPECT_EQ((uintptr_t)&cb, ev.obj);
	/*
	 * Completed from the wakeup, res carries the waker's whole mask
	 * (POLLIN | POLLRDNORM for a pipe); from the work item, only the
	 * requested bits.  POLLIN is in both.
	 */
	EXPECT_TRUE(ev.res & POLLIN);
	EXPECT_FALSE(ev.res & (POLLERR | POLLHUP | POLLNVAL));

	EXPECT_EQ(-1, sys_io_cancel(st->ctx, &cb, &res));
	EXPECT_EQ(EINVAL, errno);
	c = 0;
	ASSERT_EQ(1, read(st->pipefd[0], &c, 1));
	EXPECT_EQ('y', c);
}

/*
 * io_destroy() cancels pending requests and waits for them, so it returns
 * (0) even though the poll would never complete by itself.  The context is
 * dead afterwards: its ring is unmapped and every syscall on it is -EINVAL.
 */
TEST_F(cancel, destroy_with_pending_poll)
{
	struct cancel_state *st = &self->st;
	struct iocb cb, rcb, *list[1] = { &rcb };
	struct io_event res, ev;
	aio_context_t dead = st->ctx;
	aio_context_t fresh = 0;

	submit_poll(_metadata, st, &cb, 0xdead);

	ASSERT_EQ(0, sys_io_destroy(dead));
	st->ctx = 0;

	aio_prep_rw(&rcb, IOCB_CMD_PREAD, st->fd, st->buf, BLK, 0, 1);
	EXPECT_EQ(-1, sys_io_submit(dead, 1, list));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, sys_io_getevents(dead, 0, 1, &ev, NULL));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, sys_io_cancel(dead, &cb, &res));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, sys_io_destroy(dead));
	EXPECT_EQ(EINVAL, errno);
	/* Nothing was read into the buffer by the rejected submission. */
	EXPECT_EQ(POISON, (unsigned char)st->buf[0]);

	/* AIO as such keeps working for the process. */
	ASSERT_EQ(0, sys_io_setup(4, &fresh));
	read_block(_metadata, st, fresh, &rcb, 2);
	EXPECT_EQ(0, sys_io_destroy(fresh));
}

TEST_HARNESS_MAIN
