// SPDX-License-Identifier: GPL-2.0
/*
 * io_submit() of an O_DIRECT overwrite on a frozen filesystem.
 *
 * On a stock kernel aio_write() takes sb_start_write() inside io_submit(),
 * so the submitter sleeps (in D state) until the filesystem is thawed.  With
 * AIO offload enabled io_submit() must return without sleeping and the
 * write must complete after the thaw.  Either way the data must land.
 * On ext4 and XFS.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#define BLK		4096
#define FILE_LEN	(16 * BLK)
#define OVERWRITE_OFF	(5 * BLK)

/*
 * How many consecutive 1 ms polls must find the submitter in D state
 * before it counts as blocked, so that a short uninterruptible wait on
 * the way to the freeze check (an allocation, say) is not mistaken for it.
 */
#define D_STREAK	20
/* Hang guard only: 60 s worth of 1 ms polls. */
#define MAX_POLLS	60000

struct submitter {
	aio_context_t ctx;
	struct iocb *cb;
	long ret;
	int err;
	long nvcsw;
	pid_t tid;		/* set before io_submit() is called */
	int done;		/* set after io_submit() returned */
};

static void *submit_thread(void *arg)
{
	struct submitter *s = arg;
	struct iocb *list[1] = { s->cb };

	__atomic_store_n(&s->tid, aio_gettid(), __ATOMIC_RELEASE);
	s->ret = aio_submit_nvcsw(s->ctx, 1, list, &s->nvcsw);
	s->err = errno;
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* _PARENT teardown: see the note in aio_util.h */
FIXTURE(freeze) {
	pid_t owner;
	aio_context_t ctx;
	int fd;
	char mnt[64];
	bool frozen;
	bool thread_started;
	pthread_t thread;
	/*
	 * Shared with the submitter thread, so it must outlive the test
	 * function, which a failed ASSERT leaves while the thread may run.
	 */
	struct submitter s;
	struct iocb cb;
	char *buf;
};

FIXTURE_VARIANT(freeze) {
	const char *fstype;
};

FIXTURE_VARIANT_ADD(freeze, ext4) {
	.fstype = "ext4",
};

FIXTURE_VARIANT_ADD(freeze, xfs) {
	.fstype = "xfs",
};

FIXTURE_SETUP(freeze)
{
	self->owner = getpid();
	self->ctx = 0;
	self->fd = -1;
	self->mnt[0] = '\0';
	self->frozen = false;
	self->thread_started = false;
	self->buf = NULL;
	memset(&self->s, 0, sizeof(self->s));
	ASSERT_EQ(0, aio_lock_memory());
	ASSERT_EQ(0, sys_io_setup(8, &self->ctx));
	self->buf = aio_alloc_buf(FILE_LEN);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN_PARENT(freeze)
{
	/* Thaw first: a failed test must not leave the filesystem frozen. */
	if (self->frozen && aio_fs_thaw(self->mnt))
		TH_LOG("thaw %s failed: %s", self->mnt, strerror(errno));
	if (getpid() == self->owner) {
		if (self->thread_started)
			pthread_join(self->thread, NULL);
		if (self->ctx)
			sys_io_destroy(self->ctx);
		if (self->fd >= 0)
			close(self->fd);
		aio_free_buf(self->buf, FILE_LEN);
	}
	if (self->mnt[0] && aio_scratch_umount(self->mnt))
		TH_LOG("umount %s failed: %s", self->mnt, strerror(errno));
}

TEST_F_TIMEOUT(freeze, odirect_overwrite_while_frozen, AIO_DEV_TEST_TIMEOUT)
{
	const char *dev = aio_dev_path();
	struct submitter *s = &self->s;
	struct iocb *cb = &self->cb;
	uint64_t seed_a, seed_b;
	bool returned_frozen, seen_blocked = false;
	char path[sizeof(self->mnt) + 16];
	struct timespec zero = { 0, 0 };
	struct io_event ev;
	int offload, ret, streak = 0, polls;
	char *wbuf;
	pid_t tid;

	if (!dev)
		SKIP(return, "AIO_TEST_DEV not set");
	if (!aio_dev_holds_data())
		SKIP(return, "%s does not store data: no filesystem on it", dev);
	offload = aio_offload_enabled();
	ASSERT_LE(0, offload);

	ret = aio_scratch_mount(dev, variant->fstype, self->mnt,
				sizeof(self->mnt));
	if (ret == AIO_MKFS_NOT_FOUND)
		SKIP(return, "mkfs.%s not available", variant->fstype);
	ASSERT_EQ(0, ret) TH_LOG("mkfs/mount %s on %s: %d", variant->fstype,
				 dev, ret);

	/* Pattern A everywhere, on disk, so the overwrite is pure overwrite. */
	snprintf(path, sizeof(path), "%s/data", self->mnt);
	self->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", path, strerror(errno));
	seed_a = aio_new_seed();
	seed_b = aio_new_seed();
	aio_fill_pattern(self->buf, FILE_LEN, seed_a, 0);
	ASSERT_EQ(FILE_LEN, pwrite(self->fd, self->buf, FILE_LEN, 0));
	ASSERT_EQ(0, fsync(self->fd));

	/*
	 * Pattern B for one block, from the matching slice of the buffer,
	 * which is left alone until the write has been reaped.
	 */
	wbuf = self->buf + OVERWRITE_OFF;
	aio_fill_pattern(wbuf, BLK, seed_b, OVERWRITE_OFF);
	aio_prep_rw(cb, IOCB_CMD_PWRITE, self->fd, wbuf, BLK, OVERWRITE_OFF,
		    0xf00);

	ASSERT_EQ(0, aio_fs_freeze(self->mnt));
	self->frozen = true;

	/*
	 * No ASSERT until thawed: after a failed ASSERT the harness may run
	 * the teardown in the parent, once this process has exited, which
	 * it cannot while one of its threads sleeps on the frozen fs.
	 */
	s->ctx = self->ctx;
	s->cb = cb;
	ret = pthread_create(&self->thread, NULL, submit_thread, s);
	if (ret) {
		aio_fs_thaw(self->mnt);
		self->frozen = false;
		ASSERT_EQ(0, ret);
	}
	self->thread_started = true;

	while (!(tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE)))
		usleep(1000);

	/*
	 * Wait until io_submit() has returned or the submitter is parked in
	 * an uninterruptible sleep.  Nothing here depends on how long
	 * anything takes; the poll limit only guards against a hang.
	 */
	for (polls = 0; polls < MAX_POLLS; polls++) {
		if (__atomic_load_n(&s->done, __ATOMIC_ACQUIRE))
			break;
		if (aio_thread_state(tid) == 'D') {
			if (++streak >= D_STREAK) {
				seen_blocked = true;
				break;
			}
		} else {
			streak = 0;
		}
		usleep(1000);
	}
	returned_frozen = __atomic_load_n(&s->done, __ATOMIC_ACQUIRE);
	TH_LOG("offload %d: io_submit %s before thaw, submitter %sseen in D",
	       offload, returned_frozen ? "returned" : "did not return",
	       seen_blocked ? "" : "not ");

	/* Whoever queued it, the write cannot have completed yet. */
	EXPECT_EQ(0, sys_io_getevents(self->ctx, 0, 1, &ev, &zero));

	ret = aio_fs_thaw(self->mnt);
	ASSERT_EQ(0, ret) TH_LOG("thaw: %s", strerror(-ret));
	self->frozen = false;
	ASSERT_EQ(0, pthread_join(self->thread, NULL));
	self->thread_started = false;

	ASSERT_EQ(1, s->ret) TH_LOG("io_submit: %s", strerror(s->err));
	TH_LOG("voluntary context switches in io_submit: %ld", s->nvcsw);
	ASSERT_EQ(1, aio_reap(self->ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC));
	EXPECT_EQ((uintptr_t)cb, ev.obj);
	EXPECT_EQ(0xf00ULL, ev.data);
	EXPECT_EQ(BLK, ev.res);

	/* B in the overwritten block, A around it. */
	memset(self->buf, 0, FILE_LEN);
	ASSERT_EQ(FILE_LEN, pread(self->fd, self->buf, FILE_LEN, 0));
	EXPECT_EQ(-1, aio_verify_pattern(self->buf, OVERWRITE_OFF, seed_a, 0));
	EXPECT_EQ(-1, aio_verify_pattern(self->buf + OVERWRITE_OFF, BLK,
					 seed_b, OVERWRITE_OFF));
	EXPECT_EQ(-1, aio_verify_pattern(self->buf + OVERWRITE_OFF + BLK,
					 FILE_LEN - OVERWRITE_OFF - BLK,
					 seed_a, OVERWRITE_OFF + BLK));

	if (offload) {
		EXPECT_TRUE(returned_frozen);
		EXPECT_EQ(0, s->nvcsw);
	} else {
		/* Stock: documents the sleep, and that nvcsw can see it. */
		EXPECT_TRUE(seen_blocked);
		EXPECT_FALSE(returned_frozen);
		EXPECT_LE(1, s->nvcsw);
	}
}

TEST_HARNESS_MAIN
