// SPDX-License-Identifier: GPL-2.0
/*
 * Where stock io_submit() sleeps on a resource someone else holds, and the
 * AIO offload must not: block-layer tags (a queue shrunk to nr_requests 4
 * under ext4, 32 iocbs per call), a 1 MiB direct read that the block layer
 * splits while the tags are taken, and an inode lock held by a writer
 * that waits on a userfaultfd page fault.
 *
 * "Did not sleep" is 0 voluntary context switches of the mlockall()ed
 * submitting thread across io_submit(); data is read back.  The tag cases
 * also run with /proc/sys/fs/aio-offload at 0 and report how often stock
 * slept, to show that they do exercise a sleep.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#define OFFLOAD_SYSCTL	"/proc/sys/fs/aio-offload"
#define DROP_CACHES	"/proc/sys/vm/drop_caches"

#define BLK		4096
#define MIB		(1024 * 1024)
#define POISON		0xa5

/* ext4_small_queue: NR_CALLS io_submit()s of NR_PER_CALL writes */
#define SMALL_QUEUE	"4"
#define NR_CALLS	20
#define NR_PER_CALL	32
#define QFILE_LEN	(NR_CALLS * NR_PER_CALL * BLK)

/* split_read: BIG_READ split into bios, behind SMALL_READS 4k reads */
#define BIG_READ	MIB
#define SMALL_READS	31
#define RAW_BASE	(4 * MIB)

#define MAX_IOCBS	(2 * NR_PER_CALL)
#define BUF_LEN		(QFILE_LEN > 2 * MIB ? QFILE_LEN : 2 * MIB)

/* Hang guard for the uffd writer: 60 s of 1 ms polls. */
#define MAX_POLLS	60000

struct starve_state {
	pid_t owner;
	aio_context_t ctx;
	int fd;
	char mnt[64];
	char path[96];
	char queue[128];	/* .../queue/nr_requests of the device */
	char saved_queue[32];
	long saved_offload;
	char *wbuf;
	char *rbuf;
	/* Read by the kernel after io_submit(): must outlive the test. */
	struct iocb cb[MAX_IOCBS];
	struct iocb *list[MAX_IOCBS];
	struct io_event ev[MAX_IOCBS];
	/* userfaultfd case */
	int uffd;
	char *upage;
	bool writer_started;
	pthread_t writer;
	ssize_t writer_ret;
	int writer_done;
};

FIXTURE(starve) {
	struct starve_state st;
};

FIXTURE_SETUP(starve)
{
	struct starve_state *st = &self->st;

	memset(st, 0, sizeof(*st));
	st->owner = getpid();
	st->fd = -1;
	st->uffd = -1;
	st->saved_offload = -1;
	ASSERT_EQ(0, aio_lock_memory());
	st->wbuf = aio_alloc_buf(BUF_LEN);
	st->rbuf = aio_alloc_buf(BUF_LEN);
	ASSERT_TRUE(st->wbuf && st->rbuf);
}

/* _PARENT teardown: see the note in aio_util.h */
FIXTURE_TEARDOWN_PARENT(starve)
{
	struct starve_state *st = &self->st;
	char val[32];

	if (getpid() == st->owner) {
		if (st->writer_started) {
			/* Let a writer stuck on the fault go: zero page. */
			struct uffdio_zeropage z = {
				.range = { (uintptr_t)st->upage, BLK },
			};

			ioctl(st->uffd, UFFDIO_ZEROPAGE, &z);
			pthread_join(st->writer, NULL);
		}
		if (st->ctx)
			sys_io_destroy(st->ctx);
		if (st->fd >= 0)
			close(st->fd);
		if (st->uffd >= 0)
			close(st->uffd);
	}
	if (st->saved_queue[0] && aio_write_file(st->queue, st->saved_queue))
		TH_LOG("could not restore %s", st->queue);
	if (st->saved_offload >= 0) {
		snprintf(val, sizeof(val), "%ld", st->saved_offload);
		aio_write_file(OFFLOAD_SYSCTL, val);
	}
	if (st->mnt[0] && aio_scratch_umount(st->mnt))
		TH_LOG("umount %s failed", st->mnt);
}

/* NULL if offloading is there (and left on), else why to skip. */
static const char *need_offload(struct starve_state *st, bool data)
{
	long val;

	if (aio_read_long(OFFLOAD_SYSCTL, &val))
		return "no " OFFLOAD_SYSCTL ": kernel without AIO offload";
	if (val != 1)
		return OFFLOAD_SYSCTL " is 0";
	st->saved_offload = val;
	if (!aio_dev_path())
		return "AIO_TEST_DEV not set";
	if (data && !aio_dev_holds_data())
		return "the device does not store data (null_blk)";
	return NULL;
}

/* ext4 on the scratch device at st->mnt; NULL, or why the test skips. */
static const char *scratch_ext4(struct __test_metadata *_metadata,
				struct starve_state *st)
{
	int ret = aio_scratch_mount(aio_dev_path(), "ext4", st->mnt,
				    sizeof(st->mnt));

	if (ret == AIO_MKFS_NOT_FOUND)
		return "mkfs.ext4 not available";
	/* ASSERT: a SKIP after a failed EXPECT would hide the failure. */
	ASSERT_EQ(0, ret) TH_LOG("mkfs/mount ext4 on %s: %d", aio_dev_path(),
				 ret);
	return NULL;
}

/* Shrink the device's queue to SMALL_QUEUE requests; false if it can't. */
static bool small_queue(struct __test_metadata *_metadata,
			struct starve_state *st)
{
	const char *dev = strrchr(aio_dev_path(), '/') + 1;
	char now[32];

	snprintf(st->queue, sizeof(st->queue),
		 "/sys/block/%s/queue/nr_requests", dev);
	if (aio_read_file(st->queue, st->saved_queue,
			  sizeof(st->saved_queue))) {
		st->saved_queue[0] = '\0';
		return false;
	}
	if (aio_write_file(st->queue, SMALL_QUEUE)) {
		st->saved_queue[0] = '\0';
		return false;
	}
	EXPECT_EQ(0, aio_read_file(st->queue, now, sizeof(now)));
	EXPECT_EQ(atoi(SMALL_QUEUE), atoi(now));
	return true;
}

/*
 * NR_CALLS io_submit()s of NR_PER_CALL 4k O_DIRECT overwrites each, ext4
 * on a queue of SMALL_QUEUE requests: stock sleeps for tags in the
 * submitter (counted, with the offload off); with it on no call sleeps
 * and every write lands.
 */
TEST_F_TIMEOUT(starve, ext4_small_queue, AIO_DEV_TEST_TIMEOUT)
{
	struct starve_state *st = &self->st;
	long nvcsw, slept[2] = { 0, 0 };
	int mode, call, i;
	uint64_t seed[2];
	const char *skip;
	ssize_t bad;
	off_t off;

	skip = need_offload(st, true);
	if (skip)
		SKIP(return, "%s", skip);
	if (!small_queue(_metadata, st))
		SKIP(return, "cannot set nr_requests of %s", aio_dev_path());
	skip = scratch_ext4(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);
	snprintf(st->path, sizeof(st->path), "%s/q", st->mnt);
	st->fd = open(st->path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, st->fd);
	aio_fill_pattern(st->wbuf, QFILE_LEN, 0, 0);
	ASSERT_EQ(QFILE_LEN, pwrite(st->fd, st->wbuf, QFILE_LEN, 0));
	ASSERT_EQ(0, fsync(st->fd));
	close(st->fd);
	ASSERT_EQ(0, aio_write_file(DROP_CACHES, "3"));
	st->fd = open(st->path, O_RDWR | O_DIRECT);
	ASSERT_LE(0, st->fd);

	/* Offload off first (a context made then has no workers), then on. */
	for (mode = 0; mode < 2; mode++) {
		ASSERT_EQ(0, aio_write_file(OFFLOAD_SYSCTL, mode ? "1" : "0"));
		ASSERT_EQ(0, sys_io_setup(2 * NR_PER_CALL, &st->ctx));
		seed[mode] = aio_new_seed();
		aio_fill_pattern(st->wbuf, QFILE_LEN, seed[mode], 0);
		for (call = 0; call < NR_CALLS; call++) {
			for (i = 0; i < NR_PER_CALL; i++) {
				/* Spread over the file, not adjacent. */
				long blk = i * NR_CALLS + call;

				off = (off_t)blk * BLK;
				aio_prep_rw(&st->cb[i], IOCB_CMD_PWRITE, st->fd,
					    st->wbuf + off, BLK, off, blk);
				st->list[i] = &st->cb[i];
			}
			ASSERT_EQ(NR_PER_CALL,
				  aio_submit_nvcsw(st->ctx, NR_PER_CALL,
						   st->list, &nvcsw))
				TH_LOG("io_submit: %s", strerror(errno));
			if (nvcsw)
				slept[mode]++;
			ASSERT_EQ(NR_PER_CALL,
				  aio_reap(st->ctx, st->ev, NR_PER_CALL,
					   AIO_REAP_TIMEOUT_SEC));
			for (i = 0; i < NR_PER_CALL; i++)
				EXPECT_EQ(BLK, st->ev[i].res);
		}
		ASSERT_EQ(0, sys_io_destroy(st->ctx));
		st->ctx = 0;
	}
	TH_LOG("calls that slept: %ld of %d with offload off, %ld with it on",
	       slept[0], NR_CALLS, slept[1]);
	EXPECT_EQ(0, slept[1]);

	memset(st->rbuf, POISON, QFILE_LEN);
	ASSERT_EQ(QFILE_LEN, pread(st->fd, st->rbuf, QFILE_LEN, 0));
	bad = aio_verify_pattern(st->rbuf, QFILE_LEN, seed[1], 0);
	EXPECT_EQ(-1, bad) TH_LOG("bad byte at %zd", bad);
}

/*
 * On the raw device, SMALL_READS 4k O_DIRECT reads take the tags (a queue
 * of SMALL_QUEUE requests where it can be set; null_blk has one) and a
 * BIG_READ read follows in the same call, which the block layer splits
 * into several bios, some of which find no tag.  Nothing sleeps, every
 * read completes whole (no kernel-made -EAGAIN or short count), with the
 * data that is on the device.
 */
TEST_F_TIMEOUT(starve, split_read, AIO_DEV_TEST_TIMEOUT)
{
	struct starve_state *st = &self->st;
	long nvcsw, i, n = SMALL_READS + 1;
	uint64_t size = 0, seed;
	const char *skip;
	bool data;
	ssize_t bad;

	skip = need_offload(st, false);
	if (skip)
		SKIP(return, "%s", skip);
	data = aio_dev_holds_data();
	small_queue(_metadata, st);
	st->fd = open(aio_dev_path(), O_RDWR | O_DIRECT);
	ASSERT_LE(0, st->fd);
	ASSERT_EQ(0, aio_dev_size(st->fd, &size));
	if (size < RAW_BASE + 2 * BIG_READ)
		SKIP(return, "%s too small", aio_dev_path());
	seed = aio_new_seed();
	aio_fill_pattern(st->wbuf, 2 * BIG_READ, seed, RAW_BASE);
	ASSERT_EQ(2 * BIG_READ, pwrite(st->fd, st->wbuf, 2 * BIG_READ,
				       RAW_BASE));
	ASSERT_EQ(0, sys_io_setup(2 * n, &st->ctx));

	memset(st->rbuf, POISON, 2 * BIG_READ);
	for (i = 0; i < SMALL_READS; i++)
		aio_prep_rw(&st->cb[i], IOCB_CMD_PREAD, st->fd,
			    st->rbuf + BIG_READ + i * BLK, BLK,
			    RAW_BASE + BIG_READ + i * BLK, i);
	aio_prep_rw(&st->cb[i], IOCB_CMD_PREAD, st->fd, st->rbuf, BIG_READ,
		    RAW_BASE, i);
	for (i = 0; i < n; i++)
		st->list[i] = &st->cb[i];
	ASSERT_EQ(n, aio_submit_nvcsw(st->ctx, n, st->list, &nvcsw))
		TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(0, nvcsw);
	ASSERT_EQ(n, aio_reap(st->ctx, st->ev, n, AIO_REAP_TIMEOUT_SEC));
	for (i = 0; i < n; i++)
		EXPECT_EQ(st->ev[i].data == SMALL_READS ? BIG_READ : BLK,
			  st->ev[i].res)
			TH_LOG("iocb %llu: res %lld",
			       (unsigned long long)st->ev[i].data,
			       (long long)st->ev[i].res);
	if (!data)
		SKIP(return, "%s does not store data: events checked, data not",
		     aio_dev_path());
	bad = aio_verify_pattern(st->rbuf, BIG_READ + SMALL_READS * BLK, seed,
				 RAW_BASE);
	EXPECT_EQ(-1, bad) TH_LOG("bad byte at %zd", bad);
}

/* Buffered write of the first block from the userfaultfd page. */
static void *uffd_writer(void *arg)
{
	struct starve_state *st = arg;

	st->writer_ret = pwrite(st->fd, st->upage, BLK, 0);
	__atomic_store_n(&st->writer_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A buffered write(2) takes the inode lock and then faults on its source
 * buffer, a userfaultfd page nobody has filled: it holds the lock until
 * the test resolves the fault.  An AIO O_DIRECT write to the same file
 * must not wait for the lock in io_submit() (stock would, forever here,
 * since the submitter is the one to resolve the fault): io_submit()
 * returns while the writer is still stuck, without sleeping; both writes
 * land once the page is supplied.
 */
TEST_F_TIMEOUT(starve, uffd_inode_lock, AIO_DEV_TEST_TIMEOUT)
{
	struct starve_state *st = &self->st;
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	struct uffdio_copy copy = { 0 };
	struct pollfd pfd;
	struct uffd_msg msg;
	bool still_stuck;
	uint64_t a, b, c;
	const char *skip;
	long nvcsw, ret;
	ssize_t bad;
	int err;

	skip = need_offload(st, true);
	if (skip)
		SKIP(return, "%s", skip);
	st->uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (st->uffd < 0)
		SKIP(return, "userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(st->uffd, UFFDIO_API, &api));
	/*
	 * MCL_FUTURE would populate the new mapping at mmap() time, and a
	 * present page never faults: lock on fault from here on instead.
	 */
	ASSERT_EQ(0, munlockall());
	st->upage = mmap(NULL, BLK, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, st->upage);
	ASSERT_EQ(0, mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT));
	reg.range.start = (uintptr_t)st->upage;
	reg.range.len = BLK;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	ASSERT_EQ(0, ioctl(st->uffd, UFFDIO_REGISTER, &reg));

	skip = scratch_ext4(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);
	snprintf(st->path, sizeof(st->path), "%s/u", st->mnt);
	st->fd = open(st->path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, st->fd);
	a = aio_new_seed();
	b = aio_new_seed();
	c = aio_new_seed();
	aio_fill_pattern(st->wbuf, 4 * BLK, a, 0);
	ASSERT_EQ(4 * BLK, pwrite(st->fd, st->wbuf, 4 * BLK, 0));
	ASSERT_EQ(0, fsync(st->fd));
	ASSERT_EQ(0, sys_io_setup(4, &st->ctx));

	ASSERT_EQ(0, pthread_create(&st->writer, NULL, uffd_writer, st));
	st->writer_started = true;
	/* The writer is in the fault, holding the inode lock. */
	pfd.fd = st->uffd;
	pfd.events = POLLIN;
	ASSERT_EQ(1, poll(&pfd, 1, AIO_REAP_TIMEOUT_SEC * 1000));
	ASSERT_EQ((ssize_t)sizeof(msg), read(st->uffd, &msg, sizeof(msg)));
	ASSERT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);

	/* O_DIRECT through a second fd: the same inode, its own flags. */
	err = open(st->path, O_RDWR | O_DIRECT);
	ASSERT_LE(0, err);
	aio_fill_pattern(st->wbuf, BLK, b, 2 * BLK);
	aio_prep_rw(&st->cb[0], IOCB_CMD_PWRITE, err, st->wbuf, BLK, 2 * BLK,
		    0);
	st->list[0] = &st->cb[0];
	ret = aio_submit_nvcsw(st->ctx, 1, st->list, &nvcsw);
	still_stuck = !__atomic_load_n(&st->writer_done, __ATOMIC_ACQUIRE);

	/* Supply the page: the writer finishes, then the AIO write. */
	aio_fill_pattern(st->rbuf, BLK, c, 0);
	copy.dst = (uintptr_t)st->upage;
	copy.src = (uintptr_t)st->rbuf;
	copy.len = BLK;
	ASSERT_EQ(0, ioctl(st->uffd, UFFDIO_COPY, &copy));
	ASSERT_EQ(0, pthread_join(st->writer, NULL));
	st->writer_started = false;

	ASSERT_EQ(1, ret) TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(0, nvcsw);
	EXPECT_TRUE(still_stuck);
	EXPECT_EQ(BLK, st->writer_ret);
	ASSERT_EQ(1, aio_reap(st->ctx, st->ev, 1, AIO_REAP_TIMEOUT_SEC));
	EXPECT_EQ(BLK, st->ev[0].res);
	close(err);

	memset(st->rbuf, POISON, 4 * BLK);
	ASSERT_EQ(4 * BLK, pread(st->fd, st->rbuf, 4 * BLK, 0));
	bad = aio_verify_pattern(st->rbuf, BLK, c, 0);
	EXPECT_EQ(-1, bad) TH_LOG("block 0 (the writer's): bad at %zd", bad);
	bad = aio_verify_pattern(st->rbuf + BLK, BLK, a, BLK);
	EXPECT_EQ(-1, bad) TH_LOG("block 1 (untouched): bad at %zd", bad);
	bad = aio_verify_pattern(st->rbuf + 2 * BLK, BLK, b, 2 * BLK);
	EXPECT_EQ(-1, bad) TH_LOG("block 2 (the AIO write): bad at %zd", bad);
}

TEST_HARNESS_MAIN
