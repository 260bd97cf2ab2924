// SPDX-License-Identifier: GPL-2.0
/*
 * AIO offload: with /proc/sys/fs/aio-offload = 1, io_submit() tries reads
 * and writes of regular files and block devices with a NOWAIT of its own
 * and hands whatever would block to a worker thread of the submitting
 * process ("aio-wrk-<tgid>", at most 16 per io context), which redoes it
 * blocking and posts the completion.  The submitter never sleeps, no
 * kernel-made -EAGAIN reaches an io_event, a user RWF_NOWAIT keeps the
 * stock ABI, and with the sysctl at 0 (for contexts made while it is 0)
 * everything is stock.
 *
 * "Did not sleep" is 0 voluntary context switches of the mlockall()ed
 * submitting thread across io_submit(); data written is always read back.
 * A filesystem is frozen to hold writes for as long as a test wants, a
 * dropped page cache makes buffered reads miss.
 *
 * Tests that need the offload skip when the sysctl is missing (a stock
 * kernel) or 0 when they start; sysctl_junk and offload_off_is_stock only
 * need the sysctl to exist.  cold_buffered_read and offload_off_is_stock
 * carry the controls: with the sysctl at 0 the same I/O does sleep.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#ifndef __NR_cachestat
#define __NR_cachestat	451
#endif

#define OFFLOAD_SYSCTL	"/proc/sys/fs/aio-offload"
#define DROP_CACHES	"/proc/sys/vm/drop_caches"

#define BLK		4096
#define KIB		1024
#define MIB		(1024 * 1024)
#define POISON		0xa5

/* Workers one io context may have (AIO_OFFLOAD_MAX_WORKERS in fs/aio.c). */
#define MAX_WORKERS	16

#define WBUF_LEN	(8 * MIB)
#define RBUF_LEN	(2 * MIB)
/* The file most tests overwrite parts of; pattern A on disk first. */
#define FILE_LEN	MIB

/* cold_buffered_read */
#define COLD_LEN	(8 * MIB)
#define COLD_READS	64
#define COLD_BATCH	4

/* short_read_at_eof */
#define EOF_LEN		10000
#define EOF_OFF		8192
#define EOF_READ	16384
#define DIO_EOF_LEN	12288
#define DIO_EOF_OFF	8192
#define DIO_EOF_READ	8192

/* partial_cached_read */
#define PARTIAL_LEN	MIB
#define PARTIAL_CACHED	(64 * KIB)

/* frozen_many */
#define FROZEN_NR	64
/* cancel_queued: iocb 0 is started (blocked), CANCEL_VICTIM is queued */
#define CANCEL_NR	4
#define CANCEL_VICTIM	2
#define MAX_IOCBS	200

/* vectored: three segments, apart in memory, one range in the file */
#define VEC_SEGS	3
#define VEC_OFF		(40 * BLK)

/* raw_dev_burst: leave the start of the raw device alone */
#define RAW_BASE	MIB
#define RAW_BLOCKS	1024
#define RAW_NR		64

/*
 * How many consecutive 1 ms polls must find a thread in D state before it
 * counts as blocked, so that a short uninterruptible wait on the way (an
 * allocation, say) is not mistaken for it.
 */
#define D_STREAK	20
/* Hang guard only: 60 s worth of 1 ms polls. */
#define MAX_POLLS	60000

/* Layout of struct cachestat_range / struct cachestat (uapi mman.h). */
struct cs_range {
	uint64_t off;
	uint64_t len;
};

struct cs_stat {
	uint64_t nr_cache;
	uint64_t nr_dirty;
	uint64_t nr_writeback;
	uint64_t nr_evicted;
	uint64_t nr_recently_evicted;
};

/* cachestat() of [off, off + len) of the file: 0, or -1 if not there. */
static int cache_stat(int fd, uint64_t off, uint64_t len, struct cs_stat *cs)
{
	struct cs_range r = { off, len };

	return syscall(__NR_cachestat, fd, &r, cs, 0) ? -1 : 0;
}

/*
 * Pages of [off, off + len) of the file in the page cache; -1 if cachestat()
 * is not there (the caller then cannot check, and says so).
 */
static long cached_pages(int fd, uint64_t off, uint64_t len)
{
	struct cs_stat cs;

	if (cache_stat(fd, off, len, &cs))
		return -1;
	return cs.nr_cache;
}

/* xorshift64*: offsets only need to be spread out and repeatable. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

/* nr distinct block numbers below nblocks, in random order. */
static void pick_blocks(unsigned int *out, unsigned int nr,
			unsigned int nblocks, uint64_t seed)
{
	unsigned int *all = malloc(nblocks * sizeof(*all));
	uint64_t s = seed | 1;
	unsigned int i, j, t;

	for (i = 0; i < nblocks; i++)
		all[i] = i;
	for (i = 0; i < nr; i++) {
		j = i + rng_next(&s) % (nblocks - i);
		t = all[i];
		all[i] = all[j];
		all[j] = t;
		out[i] = all[i];
	}
	free(all);
}

/*
 * Threads of process pid named as its offload workers ("aio-wrk-<pid>"),
 * and in *nr_d how many of them are in D state.  -1 on error.
 */
static int count_workers(pid_t pid, int *nr_d)
{
	char dirpath[64], path[384], name[32], comm[32];
	struct dirent *de;
	int nr = 0, d = 0;
	DIR *dir;

	snprintf(dirpath, sizeof(dirpath), "/proc/%d/task", pid);
	snprintf(name, sizeof(name), "aio-wrk-%d", pid);
	dir = opendir(dirpath);
	if (!dir)
		return -1;
	while ((de = readdir(dir))) {
		char stat[512], *p;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/comm", dirpath, de->d_name);
		if (aio_read_file(path, comm, sizeof(comm)))
			continue;
		comm[strcspn(comm, "\n")] = '\0';
		if (strcmp(comm, name))
			continue;
		nr++;
		snprintf(path, sizeof(path), "%s/%s/stat", dirpath, de->d_name);
		if (aio_read_file(path, stat, sizeof(stat)))
			continue;
		p = strrchr(stat, ')');
		if (p && p[1] == ' ' && p[2] == 'D')
			d++;
	}
	closedir(dir);
	if (nr_d)
		*nr_d = d;
	return nr;
}

/*
 * Poll until at least one worker of ours has sat in D state for D_STREAK
 * polls in a row: a punted request is blocked in a worker.  Hang guarded.
 */
static bool wait_worker_blocked(void)
{
	int polls, streak = 0, d = 0;

	for (polls = 0; polls < MAX_POLLS; polls++) {
		if (count_workers(getpid(), &d) > 0 && d > 0) {
			if (++streak >= D_STREAK)
				return true;
		} else {
			streak = 0;
		}
		usleep(1000);
	}
	return false;
}

/* Poll until no worker thread of ours is left.  Hang guarded. */
static bool wait_no_workers(void)
{
	int polls;

	for (polls = 0; polls < MAX_POLLS; polls++) {
		if (!count_workers(getpid(), NULL))
			return true;
		usleep(1000);
	}
	return false;
}

/* A syscall made from a second thread, which may block in it. */
struct bg_call {
	aio_context_t ctx;
	struct iocb **list;	/* io_submit() these; NULL: io_destroy() */
	long nr;
	long ret;
	int err;
	long nvcsw;
	pid_t tid;		/* set before the call is made */
	int done;		/* set after the call returned */
};

static void *bg_thread(void *arg)
{
	struct bg_call *c = arg;

	__atomic_store_n(&c->tid, aio_gettid(), __ATOMIC_RELEASE);
	if (c->list)
		c->ret = aio_submit_nvcsw(c->ctx, c->nr, c->list, &c->nvcsw);
	else
		c->ret = sys_io_destroy(c->ctx);
	c->err = errno;
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Wait until the call has returned or its thread sat in D state for
 * D_STREAK polls in a row; true if it was seen blocked.  Nothing depends on
 * how long anything takes; the poll limit only guards against a hang.
 */
static bool bg_wait(struct bg_call *c)
{
	int polls, streak = 0;
	pid_t tid;

	while (!(tid = __atomic_load_n(&c->tid, __ATOMIC_ACQUIRE)))
		usleep(1000);
	for (polls = 0; polls < MAX_POLLS; polls++) {
		if (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE))
			return false;
		if (aio_thread_state(tid) == 'D') {
			if (++streak >= D_STREAK)
				return true;
		} else {
			streak = 0;
		}
		usleep(1000);
	}
	return false;
}

/* What a child reports about its io_submit(). */
struct child_report {
	long ret;
	int err;
	long nvcsw;
};

/* What the helpers below work on; the fixture embeds it. */
struct offload_state {
	pid_t owner;
	aio_context_t ctx;
	aio_context_t ctx2;
	int fd;
	int efd;
	char mnt[64];
	char path[96];
	bool frozen;
	long saved_offload;
	bool restore_offload;
	pid_t child;
	bool thread_started;
	pthread_t thread;
	/*
	 * Shared with the thread, and read by the kernel after io_submit():
	 * they must outlive the test function, which a failed ASSERT leaves.
	 */
	struct bg_call bg;
	struct iocb cb[MAX_IOCBS];
	struct iocb *list[MAX_IOCBS];
	struct io_event ev[MAX_IOCBS];
	struct iovec iov[VEC_SEGS];
	char *wbuf;
	char *rbuf;
};

/* _PARENT teardown: see the note in aio_util.h */
FIXTURE(offload) {
	struct offload_state st;
};

FIXTURE_SETUP(offload)
{
	struct offload_state *st = &self->st;

	st->owner = getpid();
	st->ctx = 0;
	st->ctx2 = 0;
	st->fd = -1;
	st->efd = -1;
	st->mnt[0] = '\0';
	st->frozen = false;
	st->restore_offload = false;
	st->child = 0;
	st->thread_started = false;
	st->wbuf = NULL;
	st->rbuf = NULL;
	memset(&st->bg, 0, sizeof(st->bg));
	ASSERT_EQ(0, aio_lock_memory());
	st->wbuf = aio_alloc_buf(WBUF_LEN);
	ASSERT_NE(NULL, st->wbuf);
	st->rbuf = aio_alloc_buf(RBUF_LEN);
	ASSERT_NE(NULL, st->rbuf);
}

FIXTURE_TEARDOWN_PARENT(offload)
{
	struct offload_state *st = &self->st;
	char val[32];

	/* Thaw first: a failed test must not leave the filesystem frozen. */
	if (st->frozen && aio_fs_thaw(st->mnt))
		TH_LOG("thaw %s failed: %s", st->mnt, strerror(errno));
	if (getpid() == st->owner) {
		if (st->child > 0) {
			kill(st->child, SIGKILL);
			waitpid(st->child, NULL, 0);
		}
		if (st->thread_started)
			pthread_join(st->thread, NULL);
		/* io_destroy() waits for anything still in flight. */
		if (st->ctx)
			sys_io_destroy(st->ctx);
		if (st->ctx2)
			sys_io_destroy(st->ctx2);
		if (st->fd >= 0)
			close(st->fd);
		if (st->efd >= 0)
			close(st->efd);
		aio_free_buf(st->wbuf, WBUF_LEN);
		aio_free_buf(st->rbuf, RBUF_LEN);
	}
	if (st->restore_offload) {
		snprintf(val, sizeof(val), "%ld", st->saved_offload);
		if (aio_write_file(OFFLOAD_SYSCTL, val))
			TH_LOG("could not restore %s to %s", OFFLOAD_SYSCTL, val);
	}
	if (st->mnt[0] && aio_scratch_umount(st->mnt))
		TH_LOG("umount %s failed: %s", st->mnt, strerror(errno));
}

#define NEED_SYSCTL	0x1	/* the sysctl exists */
#define NEED_OFFLOAD	0x2	/* ... and is 1 */
#define NEED_DEV	0x4	/* AIO_TEST_DEV is set */
#define NEED_DATA	0x8	/* ... and stores data */

/* NULL if the test can run, else why it skips. */
static const char *need(struct __test_metadata *_metadata, int what)
{
	static char reason[128];
	long val = 0;
	int ret;

	if (what & (NEED_SYSCTL | NEED_OFFLOAD)) {
		ret = aio_read_long(OFFLOAD_SYSCTL, &val);
		if (ret == -ENOENT)
			return "no " OFFLOAD_SYSCTL ": kernel without AIO offload";
		/* ASSERT, not EXPECT: a SKIP below must not hide a failure. */
		ASSERT_EQ(0, ret) TH_LOG("read %s: %s", OFFLOAD_SYSCTL,
					 strerror(-ret));
		if ((what & NEED_OFFLOAD) && val != 1)
			return OFFLOAD_SYSCTL " is 0: offload off, test needs it on";
	}
	if ((what & (NEED_DEV | NEED_DATA)) && !aio_dev_path())
		return "AIO_TEST_DEV not set";
	if ((what & NEED_DATA) && !aio_dev_holds_data()) {
		snprintf(reason, sizeof(reason),
			 "%s does not store data (null_blk): nothing to read back",
			 aio_dev_path());
		return reason;
	}
	return NULL;
}

/* Set the sysctl; the teardown puts back what it was before the first. */
static void set_offload(struct __test_metadata *_metadata,
			struct offload_state *st, const char *val)
{
	long now;

	if (!st->restore_offload) {
		ASSERT_EQ(0, aio_read_long(OFFLOAD_SYSCTL, &now));
		st->saved_offload = now;
		st->restore_offload = true;
	}
	ASSERT_EQ(0, aio_write_file(OFFLOAD_SYSCTL, val));
	ASSERT_EQ(0, aio_read_long(OFFLOAD_SYSCTL, &now));
	ASSERT_EQ(strtol(val, NULL, 10), now);
}

/* ext4 on the scratch device; NULL, or why the test skips. */
static const char *scratch_fs(struct __test_metadata *_metadata,
			      struct offload_state *st)
{
	const char *dev = aio_dev_path();
	int ret;

	ret = aio_scratch_mount(dev, "ext4", st->mnt, sizeof(st->mnt));
	if (ret == AIO_MKFS_NOT_FOUND)
		return "mkfs.ext4 not available";
	EXPECT_EQ(0, ret) TH_LOG("mkfs/mount ext4 on %s: %d", dev, ret);
	if (ret)
		return "ext4 scratch mount failed";
	return NULL;
}

/*
 * Create mnt/name holding len bytes of pattern seed, on disk (written
 * buffered, fsync()ed), and open it again with oflags into st->fd.
 */
static void make_file(struct __test_metadata *_metadata,
		      struct offload_state *st, const char *name,
		      size_t len, int oflags, uint64_t seed)
{
	int fd;

	ASSERT_GE((size_t)WBUF_LEN, len);
	snprintf(st->path, sizeof(st->path), "%s/%s", st->mnt, name);
	fd = open(st->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", st->path, strerror(errno));
	aio_fill_pattern(st->wbuf, len, seed, 0);
	ASSERT_EQ((ssize_t)len, pwrite(fd, st->wbuf, len, 0));
	ASSERT_EQ(0, fsync(fd));
	close(fd);

	if (st->fd >= 0)
		close(st->fd);
	st->fd = open(st->path, O_RDWR | oflags);
	ASSERT_LE(0, st->fd)
		TH_LOG("open %s: %s", st->path, strerror(errno));
}

/* Nothing of the first len bytes of fd in the page cache. */
static void make_cold(struct __test_metadata *_metadata, int fd, size_t len)
{
	long n;

	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, aio_write_file(DROP_CACHES, "3"));
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	n = cached_pages(fd, 0, len);
	if (n < 0)
		TH_LOG("no cachestat(): cannot check the cache is cold");
	else
		ASSERT_EQ(0, n) TH_LOG("%ld pages still cached", n);
}

static void new_ctx(struct __test_metadata *_metadata, aio_context_t *ctx,
		    unsigned int nr)
{
	*ctx = 0;
	ASSERT_EQ(0, sys_io_setup(nr, ctx))
		TH_LOG("io_setup: %s", strerror(errno));
}

/*
 * One async O_DIRECT read of block 0 of st->fd, from a context of its own:
 * the first on a superblock creates its DIO completion workqueue, which
 * only first_odirect_on_mount is about.
 */
static void dio_warm_up(struct __test_metadata *_metadata,
			struct offload_state *st)
{
	struct iocb cb, *list[1] = { &cb };
	aio_context_t ctx = 0;
	struct io_event ev;

	new_ctx(_metadata, &ctx, 4);
	aio_prep_rw(&cb, IOCB_CMD_PREAD, st->fd, st->rbuf, BLK, 0, 0);
	EXPECT_EQ(1, sys_io_submit(ctx, 1, list));
	EXPECT_EQ(1, aio_reap(ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC));
	EXPECT_EQ(BLK, ev.res);
	ASSERT_EQ(0, sys_io_destroy(ctx));
}

static void thaw(struct __test_metadata *_metadata,
		 struct offload_state *st)
{
	int ret = aio_fs_thaw(st->mnt);

	ASSERT_EQ(0, ret) TH_LOG("FITHAW %s: %s", st->mnt, strerror(-ret));
	st->frozen = false;
}

/*
 * Reap n events for iocbs st->cb[0..n-1] (aio_data = index): each comes
 * exactly once, for its own iocb, with res == expect.
 */
static void reap_all(struct __test_metadata *_metadata,
		     struct offload_state *st, aio_context_t ctx, long n,
		     long long expect)
{
	bool seen[MAX_IOCBS] = { false };
	long i;

	ASSERT_EQ(n, aio_reap(ctx, st->ev, n, AIO_REAP_TIMEOUT_SEC));
	for (i = 0; i < n; i++) {
		struct io_event *ev = &st->ev[i];

		ASSERT_GT((uint64_t)n, ev->data);
		ASSERT_FALSE(seen[ev->data]);
		seen[ev->data] = true;
		EXPECT_EQ((uintptr_t)&st->cb[ev->data], ev->obj);
		EXPECT_EQ(expect, ev->res)
			TH_LOG("iocb %llu: res %lld",
			       (unsigned long long)ev->data,
			       (long long)ev->res);
		EXPECT_EQ(0, ev->res2);
	}
}

/*
 * Read the first len bytes of st->path through a new O_DIRECT fd: pattern
 * b in the blocks flagged in is_b, pattern a everywhere else.
 */
static void verify_file(struct __test_metadata *_metadata,
			struct offload_state *st, size_t len, uint64_t a,
			uint64_t b, const bool *is_b)
{
	size_t blk;
	ssize_t bad;
	int fd;

	ASSERT_GE((size_t)RBUF_LEN, len);
	fd = open(st->path, O_RDONLY | O_DIRECT);
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", st->path, strerror(errno));
	memset(st->rbuf, POISON, len);
	ASSERT_EQ((ssize_t)len, pread(fd, st->rbuf, len, 0));
	close(fd);
	for (blk = 0; blk < len / BLK; blk++) {
		bool want_b = is_b && is_b[blk];

		bad = aio_verify_pattern(st->rbuf + blk * BLK, BLK,
					 want_b ? b : a, blk * BLK);
		EXPECT_EQ(-1, bad)
			TH_LOG("block %zu (pattern %s): bad byte at %zd", blk,
			       want_b ? "B" : "A", bad);
	}
}

/*
 * Anything but "0" or "1" (give or take whitespace) is refused and changes
 * nothing.  An empty write is no exception to the value staying put, but
 * like for every proc_dointvec() sysctl it is a successful no-op, not an
 * error: __do_proc_dointvec() returns 0 for a zero length.
 */
TEST_F(offload, sysctl_junk)
{
	struct offload_state *st = &self->st;
	static const char * const junk[] = { "abc", "2", "-1", " ", "1abc" };
	static const char * const good[] = { "0", "1" };
	unsigned int g, j;
	long val;
	int ret;
	const char *skip;

	skip = need(_metadata, NEED_SYSCTL);
	if (skip)
		SKIP(return, "%s", skip);

	for (g = 0; g < ARRAY_SIZE(good); g++) {
		/* "0" and "1" work, as written by echo too. */
		set_offload(_metadata, st, good[g]);
		ASSERT_EQ(0, aio_write_file(OFFLOAD_SYSCTL, g ? "1\n" : "0\n"));
		ASSERT_EQ(0, aio_read_long(OFFLOAD_SYSCTL, &val));
		ASSERT_EQ((long)g, val);

		for (j = 0; j < ARRAY_SIZE(junk); j++) {
			ret = aio_write_file(OFFLOAD_SYSCTL, junk[j]);
			EXPECT_EQ(-EINVAL, ret)
				TH_LOG("writing \"%s\": %s", junk[j],
				       strerror(-ret));
			ASSERT_EQ(0, aio_read_long(OFFLOAD_SYSCTL, &val));
			EXPECT_EQ((long)g, val)
				TH_LOG("\"%s\" changed the value", junk[j]);
		}

		/* write() of nothing: returns 0, value unchanged. */
		ret = aio_write_file(OFFLOAD_SYSCTL, "");
		EXPECT_EQ(0, ret) TH_LOG("empty write: %s", strerror(-ret));
		ASSERT_EQ(0, aio_read_long(OFFLOAD_SYSCTL, &val));
		EXPECT_EQ((long)g, val) TH_LOG("empty write changed the value");
	}
}

/*
 * COLD_READS buffered BLK reads at the offsets off[] (block numbers), in
 * io_submit() calls of COLD_BATCH, into rbuf; all events must be full reads
 * of pattern seed.  Returns how many of the calls slept.
 */
static int cold_reads(struct __test_metadata *_metadata,
		      struct offload_state *st, aio_context_t ctx,
		      const unsigned int *off, uint64_t seed)
{
	int i, slept = 0;
	long nvcsw;
	ssize_t bad;

	memset(st->rbuf, POISON, COLD_READS * BLK);
	for (i = 0; i < COLD_READS; i++) {
		aio_prep_rw(&st->cb[i], IOCB_CMD_PREAD, st->fd,
			    st->rbuf + i * BLK, BLK, (off_t)off[i] * BLK, i);
		st->list[i] = &st->cb[i];
	}
	for (i = 0; i < COLD_READS; i += COLD_BATCH) {
		ASSERT_EQ(COLD_BATCH, aio_submit_nvcsw(ctx, COLD_BATCH,
						       st->list + i, &nvcsw))
			TH_LOG("io_submit: %s", strerror(errno));
		ASSERT_LE(0, nvcsw);
		if (nvcsw) {
			TH_LOG("io_submit of reads %d..%d: %ld voluntary switches",
			       i, i + COLD_BATCH - 1, nvcsw);
			slept++;
		}
	}
	reap_all(_metadata, st, ctx, COLD_READS, BLK);
	for (i = 0; i < COLD_READS; i++) {
		bad = aio_verify_pattern(st->rbuf + i * BLK, BLK, seed,
					 (uint64_t)off[i] * BLK);
		EXPECT_EQ(-1, bad) TH_LOG("read %d (block %u): bad byte at %zd",
					  i, off[i], bad);
	}
	return slept;
}

/*
 * Buffered reads that miss the page cache go to a worker instead of
 * waiting for the device in io_submit().  Control: with the sysctl at 0, a
 * context made then waits, so the measurement can see it.
 */
TEST_F_TIMEOUT(offload, cold_buffered_read, AIO_DEV_TEST_TIMEOUT)
{
	struct offload_state *st = &self->st;
	unsigned int off[COLD_READS];
	const char *skip;
	uint64_t seed;
	int slept;

	skip = need(_metadata, NEED_OFFLOAD | NEED_DATA);
	if (skip)
		SKIP(return, "%s", skip);
	skip = scratch_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);

	seed = aio_new_seed();
	make_file(_metadata, st, "cold", COLD_LEN, 0, seed);
	pick_blocks(off, COLD_READS, COLD_LEN / BLK, aio_new_seed());
	new_ctx(_metadata, &st->ctx, 2 * COLD_READS);
	make_cold(_metadata, st->fd, COLD_LEN);
	slept = cold_reads(_metadata, st, st->ctx, off, seed);
	EXPECT_EQ(0, slept) TH_LOG("%d of %d io_submit() calls slept", slept,
				   COLD_READS / COLD_BATCH);

	/* Control: offload off, a context made now has no workers. */
	ASSERT_EQ(0, sys_io_destroy(st->ctx));
	st->ctx = 0;
	ASSERT_TRUE(wait_no_workers());
	set_offload(_metadata, st, "0");
	new_ctx(_metadata, &st->ctx2, 2 * COLD_READS);
	ASSERT_EQ(0, count_workers(getpid(), NULL));
	make_cold(_metadata, st->fd, COLD_LEN);
	slept = cold_reads(_metadata, st, st->ctx2, off, seed);
	TH_LOG("offload off: %d of %d io_submit() calls slept", slept,
	       COLD_READS / COLD_BATCH);
	EXPECT_LT(0, slept);
}

/*
 * The user's own RWF_NOWAIT keeps its meaning: what would block comes back
 * as -EAGAIN in the event, it is not handed to a worker.
 *
 * Deterministic case: an O_DIRECT read of a range with dirty page cache
 * would have to write it back first, so NOWAIT fails before any I/O.  The
 * same read without RWF_NOWAIT is punted and returns the dirty data.
 *
 * A cold buffered read with RWF_NOWAIT starts readahead and then finds
 * the folio locked (-EAGAIN) or, if that I/O was quick enough, uptodate
 * (data): stock behaviour, both allowed.  Either way no worker may
 * complete it and io_submit() must not sleep.
 */
TEST_F_TIMEOUT(offload, rwf_nowait_abi, AIO_DEV_TEST_TIMEOUT)
{
	struct offload_state *st = &self->st;
	struct iocb *cb = &st->cb[0];
	const off_t off = 8 * BLK;
	struct cs_stat cs;
	const char *skip;
	uint64_t a, b;
	long nvcsw;
	size_t i;
	int bfd;

	skip = need(_metadata, NEED_OFFLOAD | NEED_DATA);
	if (skip)
		SKIP(return, "%s", skip);
	skip = scratch_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);
	new_ctx(_metadata, &st->ctx, 8);
	st->list[0] = cb;

	a = aio_new_seed();
	b = aio_new_seed();
	make_file(_metadata, st, "dirty", FILE_LEN, O_DIRECT, a);
	bfd = open(st->path, O_RDWR);
	ASSERT_LE(0, bfd);
	aio_fill_pattern(st->wbuf, BLK, b, off);
	ASSERT_EQ(BLK, pwrite(bfd, st->wbuf, BLK, off));
	if (cache_stat(bfd, off, BLK, &cs))
		TH_LOG("no cachestat(): cannot check the block is dirty");
	else
		ASSERT_EQ(1ULL, cs.nr_dirty + cs.nr_writeback);

	memset(st->rbuf, POISON, BLK);
	aio_prep_rw(cb, IOCB_CMD_PREAD, st->fd, st->rbuf, BLK, off, 0);
	cb->aio_rw_flags = RWF_NOWAIT;
	ASSERT_EQ(1, aio_submit_nvcsw(st->ctx, 1, st->list, &nvcsw))
		TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(0, nvcsw);
	reap_all(_metadata, st, st->ctx, 1, -EAGAIN);
	for (i = 0; i < BLK; i++)
		if ((unsigned char)st->rbuf[i] != POISON)
			break;
	EXPECT_EQ((size_t)BLK, i) TH_LOG("-EAGAIN read wrote the buffer");

	/* Without RWF_NOWAIT the same read brings the dirty data. */
	aio_prep_rw(cb, IOCB_CMD_PREAD, st->fd, st->rbuf, BLK, off, 0);
	ASSERT_EQ(1, aio_submit_nvcsw(st->ctx, 1, st->list, &nvcsw));
	EXPECT_EQ(0, nvcsw);
	reap_all(_metadata, st, st->ctx, 1, BLK);
	EXPECT_EQ(-1, aio_verify_pattern(st->rbuf, BLK, b, off));
	close(bfd);

	/* Cold buffered read with RWF_NOWAIT. */
	make_file(_metadata, st, "cold", FILE_LEN, 0, a);
	make_cold(_metadata, st->fd, FILE_LEN);
	memset(st->rbuf, POISON, BLK);
	aio_prep_rw(cb, IOCB_CMD_PREAD, st->fd, st->rbuf, BLK, off, 0);
	cb->aio_rw_flags = RWF_NOWAIT;
	ASSERT_EQ(1, aio_submit_nvcsw(st->ctx, 1, st->list, &nvcsw))
		TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(0, nvcsw);
	ASSERT_EQ(1, aio_reap(st->ctx, st->ev, 1, AIO_REAP_TIMEOUT_SEC));
	TH_LOG("cold buffered RWF_NOWAIT read: res %lld",
	       (long long)st->ev[0].res);
	if (st->ev[0].res == BLK) {
		EXPECT_EQ(-1, aio_verify_pattern(st->rbuf, BLK, a, off));
	} else {
		EXPECT_EQ(-EAGAIN, st->ev[0].res);
		for (i = 0; i < BLK; i++)
			if ((unsigned char)st->rbuf[i] != POISON)
				break;
		EXPECT_EQ((size_t)BLK, i) TH_LOG("-EAGAIN read wrote the buffer");
	}
}

/*
 * With the sysctl at 0, a context made then behaves as stock: an O_DIRECT
 * write to a frozen filesystem sleeps (in D state) in io_submit() until
 * the thaw.  It has no workers.  The data lands all the same.
 */
TEST_F_TIMEOUT(offload, offload_off_is_stock, AIO_DEV_TEST_TIMEOUT)
{
	struct offload_state *st = &self->st;
	const off_t off = 5 * BLK;
	struct bg_call *c = &st->bg;
	struct timespec zero = { 0, 0 };
	bool is_b[FILE_LEN / BLK] = { false };
	bool seen_blocked, returned_frozen;
	long early;
	uint64_t a, b;
	const char *skip;
	int ret;

	skip = need(_metadata, NEED_SYSCTL | NEED_DATA);
	if (skip)
		SKIP(return, "%s", skip);
	skip = scratch_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);

	a = aio_new_seed();
	b = aio_new_seed();
	make_file(_metadata, st, "stock", FILE_LEN, O_DIRECT, a);
	set_offload(_metadata, st, "0");
	new_ctx(_metadata, &st->ctx, 8);
	ASSERT_EQ(0, count_workers(getpid(), NULL));

	aio_fill_pattern(st->wbuf + off, BLK, b, off);
	is_b[off / BLK] = true;
	aio_prep_rw(&st->cb[0], IOCB_CMD_PWRITE, st->fd, st->wbuf + off,
		    BLK, off, 0);
	st->list[0] = &st->cb[0];

	ASSERT_EQ(0, aio_fs_freeze(st->mnt));
	st->frozen = true;
	/*
	 * No ASSERT until thawed: after a failed ASSERT the harness may run
	 * the teardown in the parent, once this process has exited, which
	 * it cannot while one of its threads sleeps on the frozen fs.
	 */
	c->ctx = st->ctx;
	c->list = st->list;
	c->nr = 1;
	ret = pthread_create(&st->thread, NULL, bg_thread, c);
	if (ret) {
		thaw(_metadata, st);
		ASSERT_EQ(0, ret);
	}
	st->thread_started = true;
	seen_blocked = bg_wait(c);
	returned_frozen = __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
	early = sys_io_getevents(st->ctx, 0, 1, st->ev, &zero);
	thaw(_metadata, st);
	ASSERT_EQ(0, pthread_join(st->thread, NULL));
	st->thread_started = false;

	TH_LOG("offload off: io_submit %s before thaw, submitter %sseen in D",
	       returned_frozen ? "returned" : "did not return",
	       seen_blocked ? "" : "not ");
	TH_LOG("voluntary context switches in io_submit: %ld", c->nvcsw);
	EXPECT_TRUE(seen_blocked);
	EXPECT_FALSE(returned_frozen);
	EXPECT_EQ(0, early);
	ASSERT_EQ(1, c->ret) TH_LOG("io_submit: %s", strerror(c->err));
	EXPECT_LE(1, c->nvcsw);
	reap_all(_metadata, st, st->ctx, 1, BLK);
	verify_file(_metadata, st, FILE_LEN, a, b, is_b);
}

/*
 * Reads crossing EOF, punted: a buffered one on a cold cache, and an
 * O_DIRECT one (whose NOWAIT try comes back short at EOF).  Both report
 * what is there up to EOF, once.
 */
TEST_F_TIMEOUT(offload, short_read_at_eof, AIO_DEV_TEST_TIMEOUT)
{
	struct offload_state *st = &self->st;
	const size_t got = EOF_LEN - EOF_OFF;
	const size_t dio_got = DIO_EOF_LEN - DIO_EOF_OFF;
	struct iocb *cb = &st->cb[0];
	const char *skip;
	uint64_t seed;
	long nvcsw;
	size_t i;

	skip = need(_metadata, NEED_OFFLOAD | NEED_DATA);
	if (skip)
		SKIP(return, "%s", skip);
	skip = scratch_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);
	new_ctx(_metadata, &st->ctx, 8);
	st->list[0] = cb;

	seed = aio_new_seed();
	make_file(_metadata, st, "eof", EOF_LEN, 0, seed);
	make_cold(_metadata, st->fd, EOF_LEN);
	memset(st->rbuf, POISON, EOF_READ);
	aio_prep_rw(cb, IOCB_CMD_PREAD, st->fd, st->rbuf, EOF_READ,
		    EOF_OFF, 0);
	ASSERT_EQ(1, aio_submit_nvcsw(st->ctx, 1, st->list, &nvcsw))
		TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(0, nvcsw);
	reap_all(_metadata, st, st->ctx, 1, got);
	EXPECT_EQ(-1, aio_verify_pattern(st->rbuf, got, seed, EOF_OFF));
	/* Nothing past EOF was copied. */
	for (i = got; i < EOF_READ; i++)
		if ((unsigned char)st->rbuf[i] != POISON)
			break;
	EXPECT_EQ((size_t)EOF_READ, i) TH_LOG("byte %zu past EOF written", i);

	seed = aio_new_seed();
	make_file(_metadata, st, "dio-eof", DIO_EOF_LEN, O_DIRECT, seed);
	dio_warm_up(_metadata, st);
	memset(st->rbuf, POISON, DIO_EOF_READ);
	aio_prep_rw(cb, IOCB_CMD_PREAD, st->fd, st->rbuf, DIO_EOF_READ,
		    DIO_EOF_OFF, 0);
	ASSERT_EQ(1, aio_submit_nvcsw(st->ctx, 1, st->list, &nvcsw))
		TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(0, nvcsw);
	reap_all(_metadata, st, st->ctx, 1, dio_got);
	EXPECT_EQ(-1, aio_verify_pattern(st->rbuf, dio_got, seed,
					 DIO_EOF_OFF));
}

/*
 * The first async O_DIRECT request on a superblock makes iomap allocate the
 * superblock's DIO completion workqueue (sb_init_dio_done_wq()), which
 * creates a rescuer kthread and waits for it.  Under offload that must not
 * happen in io_submit(): a fresh mount's first O_DIRECT read must not
 * sleep either, and must return the data.
 */
TEST_F_TIMEOUT(offload, first_odirect_on_mount, AIO_DEV_TEST_TIMEOUT)
{
	struct offload_state *st = &self->st;
	struct iocb *cb = &st->cb[0];
	const off_t off = 3 * BLK;
	const char *skip;
	uint64_t seed;
	long nvcsw;

	skip = need(_metadata, NEED_OFFLOAD | NEED_DATA);
	if (skip)
		SKIP(return, "%s", skip);
	skip = scratch_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);

	seed = aio_new_seed();
	make_file(_metadata, st, "first", FILE_LEN, O_DIRECT, seed);
	new_ctx(_metadata, &st->ctx, 8);
	memset(st->rbuf, POISON, 2 * BLK);
	aio_prep_rw(cb, IOCB_CMD_PREAD, st->fd, st->rbuf, 2 * BLK, off, 0);
	st->list[0] = cb;
	ASSERT_EQ(1, aio_submit_nvcsw(st->ctx, 1, st->list, &nvcsw))
		TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(0, nvcsw);
	reap_all(_metadata, st, st->ctx, 1, 2 * BLK);
	EXPECT_EQ(-1, aio_verify_pattern(st->rbuf, 2 * BLK, seed, off));
}

/*
 * The NOWAIT try copies the cached head and stops; the worker must go on
 * from there and the event report the whole read.
 */
TEST_F_TIMEOUT(offload, partial_cached_read, AIO_DEV_TEST_TIMEOUT)
{
	struct offload_state *st = &self->st;
	struct iocb *cb = &st->cb[0];
	const char *skip;
	uint64_t seed;
	long nvcsw, n;
	ssize_t bad;
	int fd;

	skip = need(_metadata, NEED_OFFLOAD | NEED_DATA);
	if (skip)
		SKIP(return, "%s", skip);
	skip = scratch_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);

	seed = aio_new_seed();
	make_file(_metadata, st, "partial", PARTIAL_LEN, 0, seed);
	new_ctx(_metadata, &st->ctx, 8);
	make_cold(_metadata, st->fd, PARTIAL_LEN);

	/* Cache the head only: no readahead on this fd. */
	fd = open(st->path, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM));
	ASSERT_EQ(PARTIAL_CACHED, pread(fd, st->rbuf, PARTIAL_CACHED, 0));
	close(fd);
	n = cached_pages(st->fd, 0, PARTIAL_CACHED);
	if (n >= 0) {
		EXPECT_EQ(PARTIAL_CACHED / BLK, n);
		n = cached_pages(st->fd, PARTIAL_CACHED,
				 PARTIAL_LEN - PARTIAL_CACHED);
		ASSERT_EQ(0, n) TH_LOG("%ld pages after the head cached", n);
	}

	memset(st->rbuf, POISON, PARTIAL_LEN);
	aio_prep_rw(cb, IOCB_CMD_PREAD, st->fd, st->rbuf, PARTIAL_LEN, 0,
		    0);
	st->list[0] = cb;
	ASSERT_EQ(1, aio_submit_nvcsw(st->ctx, 1, st->list, &nvcsw))
		TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(0, nvcsw);
	reap_all(_metadata, st, st->ctx, 1, PARTIAL_LEN);
	bad = aio_verify_pattern(st->rbuf, PARTIAL_LEN, seed, 0);
	EXPECT_EQ(-1, bad) TH_LOG("bad byte at %zd", bad);
}

/*
 * FROZEN_NR O_DIRECT overwrites of one file on a frozen filesystem in one
 * io_submit(): they are kept in order, so one runs (and blocks) at a time
 * and the rest wait in the queue without a thread each.  None may
 * complete before the thaw, all must complete after it.
 */
TEST_F_TIMEOUT(offload, frozen_many, AIO_DEV_TEST_TIMEOUT)
{
	struct offload_state *st = &self->st;
	bool is_b[FILE_LEN / BLK] = { false };
	unsigned int blk[FROZEN_NR];
	struct timespec zero = { 0, 0 };
	int i, nr, nr_d, polls, most = 0, most_d = 0;
	long ret, nvcsw, early;
	const char *skip;
	uint64_t a, b;
	off_t off;

	skip = need(_metadata, NEED_OFFLOAD | NEED_DATA);
	if (skip)
		SKIP(return, "%s", skip);
	skip = scratch_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);

	a = aio_new_seed();
	b = aio_new_seed();
	make_file(_metadata, st, "many", FILE_LEN, O_DIRECT, a);
	new_ctx(_metadata, &st->ctx, 2 * FROZEN_NR);
	pick_blocks(blk, FROZEN_NR, FILE_LEN / BLK, aio_new_seed());
	for (i = 0; i < FROZEN_NR; i++) {
		off = (off_t)blk[i] * BLK;
		aio_fill_pattern(st->wbuf + off, BLK, b, off);
		is_b[blk[i]] = true;
		aio_prep_rw(&st->cb[i], IOCB_CMD_PWRITE, st->fd,
			    st->wbuf + off, BLK, off, i);
		st->list[i] = &st->cb[i];
	}

	ASSERT_EQ(0, aio_fs_freeze(st->mnt));
	st->frozen = true;
	/* No ASSERT until thawed: see offload_off_is_stock. */
	ret = aio_submit_nvcsw(st->ctx, FROZEN_NR, st->list, &nvcsw);
	/*
	 * Writes to one file start in order, one at a time: one worker
	 * blocks in the freeze, one more stands by, and the other writes
	 * wait in the queue instead of taking a thread each.  Watch until
	 * the first write is blocked, then a while longer.
	 */
	for (polls = 0, i = 0; polls < MAX_POLLS && ret > 0 && i < 200;
	     polls++) {
		nr = count_workers(getpid(), &nr_d);
		if (nr > most)
			most = nr;
		if (nr_d > most_d)
			most_d = nr_d;
		if (most_d)
			i++;
		usleep(1000);
	}
	early = sys_io_getevents(st->ctx, 0, FROZEN_NR, st->ev, &zero);
	thaw(_metadata, st);

	ASSERT_EQ(FROZEN_NR, ret) TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(0, nvcsw);
	EXPECT_EQ(0, early);
	EXPECT_EQ(1, most_d);
	EXPECT_GE(2, most);
	reap_all(_metadata, st, st->ctx, FROZEN_NR, BLK);
	nr = count_workers(getpid(), NULL);
	EXPECT_GE(MAX_WORKERS, nr);
	EXPECT_LE(1, nr);
	verify_file(_metadata, st, FILE_LEN, a, b, is_b);
}

/*
 * io_cancel() of a punted request that no worker has started: it returns
 * EINPROGRESS and the request completes at once with -ECANCELED, without
 * running (its data never lands), while the one a worker runs (held by
 * the frozen filesystem) cannot be cancelled (EINVAL, as for any request
 * in flight) and completes normally after the thaw.  The order of the
 * others is kept.
 */
TEST_F_TIMEOUT(offload, cancel_queued, AIO_DEV_TEST_TIMEOUT)
{
	struct offload_state *st = &self->st;
	bool is_b[FILE_LEN / BLK] = { false };
	int i, err_run, err_queued, err_again;
	long ret, nvcsw, r_run, r_queued, r_again, early;
	struct timespec ts = { AIO_REAP_TIMEOUT_SEC, 0 };
	struct io_event cancelled;
	bool blocked;
	const char *skip;
	uint64_t a, b;
	off_t off;

	skip = need(_metadata, NEED_OFFLOAD | NEED_DATA);
	if (skip)
		SKIP(return, "%s", skip);
	skip = scratch_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);

	a = aio_new_seed();
	b = aio_new_seed();
	make_file(_metadata, st, "cancel", FILE_LEN, O_DIRECT, a);
	dio_warm_up(_metadata, st);
	new_ctx(_metadata, &st->ctx, 2 * CANCEL_NR);
	for (i = 0; i < CANCEL_NR; i++) {
		off = (off_t)(2 * i + 1) * BLK;
		aio_fill_pattern(st->wbuf + off, BLK, b, off);
		is_b[off / BLK] = i != CANCEL_VICTIM;
		aio_prep_rw(&st->cb[i], IOCB_CMD_PWRITE, st->fd,
			    st->wbuf + off, BLK, off, i);
		st->list[i] = &st->cb[i];
	}

	ASSERT_EQ(0, aio_fs_freeze(st->mnt));
	st->frozen = true;
	/* No ASSERT until thawed: see offload_off_is_stock. */
	ret = aio_submit_nvcsw(st->ctx, CANCEL_NR, st->list, &nvcsw);
	blocked = wait_worker_blocked();
	errno = 0;
	r_queued = sys_io_cancel(st->ctx, &st->cb[CANCEL_VICTIM], &cancelled);
	err_queued = errno;
	errno = 0;
	r_again = sys_io_cancel(st->ctx, &st->cb[CANCEL_VICTIM], &cancelled);
	err_again = errno;
	errno = 0;
	r_run = sys_io_cancel(st->ctx, &st->cb[0], &cancelled);
	err_run = errno;
	/* The cancelled request's event comes while the fs is still frozen. */
	early = sys_io_getevents(st->ctx, 1, 1, &cancelled, &ts);
	thaw(_metadata, st);

	ASSERT_EQ(CANCEL_NR, ret) TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(0, nvcsw);
	EXPECT_TRUE(blocked);
	EXPECT_EQ(-1, r_queued);
	EXPECT_EQ(EINPROGRESS, err_queued) TH_LOG("%s", strerror(err_queued));
	/* Off the list: the second io_cancel() no longer finds it. */
	EXPECT_EQ(-1, r_again);
	EXPECT_EQ(EINVAL, err_again) TH_LOG("%s", strerror(err_again));
	EXPECT_EQ(-1, r_run);
	EXPECT_EQ(EINVAL, err_run) TH_LOG("%s", strerror(err_run));
	ASSERT_EQ(1, early);
	EXPECT_EQ((uint64_t)CANCEL_VICTIM, cancelled.data);
	EXPECT_EQ((uintptr_t)&st->cb[CANCEL_VICTIM], cancelled.obj);
	EXPECT_EQ(-ECANCELED, cancelled.res);

	ASSERT_EQ(CANCEL_NR - 1,
		  aio_reap(st->ctx, st->ev, CANCEL_NR - 1, AIO_REAP_TIMEOUT_SEC));
	for (i = 0; i < CANCEL_NR - 1; i++) {
		EXPECT_NE((uint64_t)CANCEL_VICTIM, st->ev[i].data);
		EXPECT_EQ(BLK, st->ev[i].res)
			TH_LOG("iocb %llu: res %lld",
			       (unsigned long long)st->ev[i].data,
			       (long long)st->ev[i].res);
	}
	verify_file(_metadata, st, FILE_LEN, a, b, is_b);
}

/*
 * A punted PWRITEV must not look at the user's iovec array (or iocb) again
 * after io_submit() returned: both are garbage by the time it runs.
 */
TEST_F_TIMEOUT(offload, vectored, AIO_DEV_TEST_TIMEOUT)
{
	struct offload_state *st = &self->st;
	static const size_t seg[VEC_SEGS] = { BLK, 2 * BLK, BLK };
	bool is_b[FILE_LEN / BLK] = { false };
	struct iocb *cb = &st->cb[0];
	struct timespec zero = { 0, 0 };
	size_t total = 0, mem = 0;
	long ret, nvcsw, early;
	const char *skip;
	uint64_t a, b;
	int k, err;

	skip = need(_metadata, NEED_OFFLOAD | NEED_DATA);
	if (skip)
		SKIP(return, "%s", skip);
	skip = scratch_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);

	a = aio_new_seed();
	b = aio_new_seed();
	make_file(_metadata, st, "vec", FILE_LEN, O_DIRECT, a);
	new_ctx(_metadata, &st->ctx, 8);
	/* Segments a block apart in memory, back to back in the file. */
	memset(st->wbuf, POISON, 8 * BLK);
	for (k = 0; k < VEC_SEGS; k++) {
		st->iov[k].iov_base = st->wbuf + mem;
		st->iov[k].iov_len = seg[k];
		aio_fill_pattern(st->wbuf + mem, seg[k], b, VEC_OFF + total);
		mem += seg[k] + BLK;
		total += seg[k];
	}
	for (k = 0; k < (int)(total / BLK); k++)
		is_b[VEC_OFF / BLK + k] = true;
	aio_prep_rwv(cb, IOCB_CMD_PWRITEV, st->fd, st->iov, VEC_SEGS,
		     VEC_OFF, 0);
	st->list[0] = cb;

	ASSERT_EQ(0, aio_fs_freeze(st->mnt));
	st->frozen = true;
	/* No ASSERT until thawed: see offload_off_is_stock. */
	ret = aio_submit_nvcsw(st->ctx, 1, st->list, &nvcsw);
	err = errno;
	for (k = 0; k < VEC_SEGS; k++) {
		st->iov[k].iov_base = (void *)(uintptr_t)(0xdead0000 + k);
		st->iov[k].iov_len = 0x7ff00000;
	}
	cb->aio_buf = 0xbad0000;
	cb->aio_nbytes = 1000;
	cb->aio_offset = 3;
	early = sys_io_getevents(st->ctx, 0, 1, st->ev, &zero);
	thaw(_metadata, st);

	ASSERT_EQ(1, ret) TH_LOG("io_submit: %s", strerror(err));
	EXPECT_EQ(0, nvcsw);
	EXPECT_EQ(0, early);
	reap_all(_metadata, st, st->ctx, 1, total);
	verify_file(_metadata, st, FILE_LEN, a, b, is_b);
}

/*
 * IOCB_FLAG_RESFD on a punted write: the eventfd is signalled once, when
 * the write completes after the thaw, not while it waits in a worker.
 */
TEST_F_TIMEOUT(offload, eventfd, AIO_DEV_TEST_TIMEOUT)
{
	struct offload_state *st = &self->st;
	bool is_b[FILE_LEN / BLK] = { false };
	struct iocb *cb = &st->cb[0];
	const off_t off = 9 * BLK;
	struct pollfd pfd;
	long ret, nvcsw;
	int err, frozen_errno = 0;
	ssize_t frozen_read, n;
	bool blocked;
	uint64_t a, b, cnt = 0;
	const char *skip;

	skip = need(_metadata, NEED_OFFLOAD | NEED_DATA);
	if (skip)
		SKIP(return, "%s", skip);
	skip = scratch_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);

	a = aio_new_seed();
	b = aio_new_seed();
	make_file(_metadata, st, "efd", FILE_LEN, O_DIRECT, a);
	new_ctx(_metadata, &st->ctx, 8);
	st->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, st->efd);
	aio_fill_pattern(st->wbuf + off, BLK, b, off);
	is_b[off / BLK] = true;
	aio_prep_rw(cb, IOCB_CMD_PWRITE, st->fd, st->wbuf + off, BLK, off,
		    0);
	cb->aio_flags = IOCB_FLAG_RESFD;
	cb->aio_resfd = st->efd;
	st->list[0] = cb;

	ASSERT_EQ(0, aio_fs_freeze(st->mnt));
	st->frozen = true;
	/* No ASSERT until thawed: see offload_off_is_stock. */
	ret = aio_submit_nvcsw(st->ctx, 1, st->list, &nvcsw);
	err = errno;
	/* The write is in a worker, blocked on the freeze. */
	blocked = ret == 1 && wait_worker_blocked();
	frozen_read = read(st->efd, &cnt, sizeof(cnt));
	if (frozen_read < 0)
		frozen_errno = errno;
	thaw(_metadata, st);

	ASSERT_EQ(1, ret) TH_LOG("io_submit: %s", strerror(err));
	EXPECT_EQ(0, nvcsw);
	EXPECT_TRUE(blocked) TH_LOG("no worker seen blocked in the write");
	EXPECT_EQ(-1, frozen_read) TH_LOG("eventfd read %llu while frozen",
					  (unsigned long long)cnt);
	EXPECT_EQ(EAGAIN, frozen_errno);

	reap_all(_metadata, st, st->ctx, 1, BLK);
	/* Hang guard only: the signal comes with the completion. */
	pfd.fd = st->efd;
	pfd.events = POLLIN;
	ASSERT_EQ(1, poll(&pfd, 1, AIO_REAP_TIMEOUT_SEC * 1000));
	cnt = 0;
	ASSERT_EQ((ssize_t)sizeof(cnt), read(st->efd, &cnt, sizeof(cnt)));
	EXPECT_EQ(1ULL, cnt);
	n = read(st->efd, &cnt, sizeof(cnt));
	EXPECT_EQ(-1, n);
	EXPECT_EQ(EAGAIN, errno);
	verify_file(_metadata, st, FILE_LEN, a, b, is_b);
}

/*
 * RAW_NR O_DIRECT writes, then reads, of distinct blocks of the raw device,
 * each in one io_submit().  What the device cannot take right away (no
 * free tag on null_blk, say, where the block layer fails the NOWAIT bio
 * with BLK_STS_AGAIN) goes to the workers: no call sleeps, no event
 * carries -EAGAIN.  Data is checked where the device keeps it.
 */
TEST_F_TIMEOUT(offload, raw_dev_burst, AIO_DEV_TEST_TIMEOUT)
{
	struct offload_state *st = &self->st;
	unsigned int blk[RAW_NR];
	uint64_t size = 0, seed;
	const char *skip;
	long nvcsw;
	ssize_t bad;
	off_t off;
	int i;

	skip = need(_metadata, NEED_OFFLOAD | NEED_DEV);
	if (skip)
		SKIP(return, "%s", skip);
	st->fd = open(aio_dev_path(), O_RDWR | O_DIRECT);
	ASSERT_LE(0, st->fd)
		TH_LOG("open %s: %s", aio_dev_path(), strerror(errno));
	ASSERT_EQ(0, aio_dev_size(st->fd, &size));
	if (size < RAW_BASE + (uint64_t)RAW_BLOCKS * BLK)
		SKIP(return, "%s too small", aio_dev_path());
	new_ctx(_metadata, &st->ctx, 2 * RAW_NR);

	seed = aio_new_seed();
	pick_blocks(blk, RAW_NR, RAW_BLOCKS, aio_new_seed());
	for (i = 0; i < RAW_NR; i++) {
		off = RAW_BASE + (off_t)blk[i] * BLK;
		aio_fill_pattern(st->wbuf + i * BLK, BLK, seed, off);
		aio_prep_rw(&st->cb[i], IOCB_CMD_PWRITE, st->fd,
			    st->wbuf + i * BLK, BLK, off, i);
		st->list[i] = &st->cb[i];
	}
	ASSERT_EQ(RAW_NR, aio_submit_nvcsw(st->ctx, RAW_NR, st->list,
					   &nvcsw))
		TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(0, nvcsw);
	reap_all(_metadata, st, st->ctx, RAW_NR, BLK);

	memset(st->rbuf, POISON, RAW_NR * BLK);
	for (i = 0; i < RAW_NR; i++) {
		off = RAW_BASE + (off_t)blk[i] * BLK;
		aio_prep_rw(&st->cb[i], IOCB_CMD_PREAD, st->fd,
			    st->rbuf + i * BLK, BLK, off, i);
	}
	ASSERT_EQ(RAW_NR, aio_submit_nvcsw(st->ctx, RAW_NR, st->list,
					   &nvcsw))
		TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(0, nvcsw);
	reap_all(_metadata, st, st->ctx, RAW_NR, BLK);

	if (!aio_dev_holds_data())
		SKIP(return, "%s does not store data: events checked, data not",
		     aio_dev_path());
	for (i = 0; i < RAW_NR; i++) {
		off = RAW_BASE + (off_t)blk[i] * BLK;
		bad = aio_verify_pattern(st->rbuf + i * BLK, BLK, seed, off);
		EXPECT_EQ(-1, bad) TH_LOG("block %u: bad byte at %zd", blk[i],
					  bad);
	}
}

/*
 * A punted write past RLIMIT_FSIZE fails with -EFBIG and raises SIGXFSZ on
 * the submitting thread, as the same write inline would: the worker, which
 * blocks signals, must not swallow it.  The write within the limit lands.
 */
TEST_F_TIMEOUT(offload, rlimit_fsize, AIO_DEV_TEST_TIMEOUT)
{
	struct offload_state *st = &self->st;
	struct timespec zero = { 0, 0 };
	struct rlimit old, lim;
	sigset_t xfsz, pending;
	bool early_sig;
	long ret, nvcsw;
	const char *skip;
	uint64_t a, b;
	struct stat sb;
	ssize_t bad;
	int sig;

	skip = need(_metadata, NEED_OFFLOAD | NEED_DATA);
	if (skip)
		SKIP(return, "%s", skip);
	skip = scratch_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);

	a = aio_new_seed();
	b = aio_new_seed();
	make_file(_metadata, st, "fsize", FILE_LEN, O_DIRECT, a);
	dio_warm_up(_metadata, st);
	new_ctx(_metadata, &st->ctx, 4);
	aio_fill_pattern(st->wbuf, BLK, b, 0);
	aio_fill_pattern(st->wbuf + BLK, BLK, b, FILE_LEN);
	aio_prep_rw(&st->cb[0], IOCB_CMD_PWRITE, st->fd, st->wbuf, BLK, 0, 0);
	aio_prep_rw(&st->cb[1], IOCB_CMD_PWRITE, st->fd, st->wbuf + BLK, BLK,
		    FILE_LEN, 1);
	st->list[0] = &st->cb[0];
	st->list[1] = &st->cb[1];

	/* Kept pending, so that it can be looked for afterwards. */
	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	ASSERT_EQ(0, pthread_sigmask(SIG_BLOCK, &xfsz, NULL));
	ASSERT_EQ(0, getrlimit(RLIMIT_FSIZE, &old));
	lim = old;
	lim.rlim_cur = FILE_LEN;
	ASSERT_EQ(0, setrlimit(RLIMIT_FSIZE, &lim));

	ASSERT_EQ(0, aio_fs_freeze(st->mnt));
	st->frozen = true;
	/* No ASSERT until thawed: see offload_off_is_stock. */
	ret = aio_submit_nvcsw(st->ctx, 2, st->list, &nvcsw);
	sigpending(&pending);
	early_sig = sigismember(&pending, SIGXFSZ);
	thaw(_metadata, st);

	ASSERT_EQ(2, ret) TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(0, nvcsw);
	EXPECT_FALSE(early_sig);
	ASSERT_EQ(2, aio_reap(st->ctx, st->ev, 2, AIO_REAP_TIMEOUT_SEC));
	for (ret = 0; ret < 2; ret++)
		EXPECT_EQ(st->ev[ret].data ? -EFBIG : BLK, st->ev[ret].res)
			TH_LOG("iocb %llu: res %lld",
			       (unsigned long long)st->ev[ret].data,
			       (long long)st->ev[ret].res);
	sig = sigtimedwait(&xfsz, NULL, &zero);
	EXPECT_EQ(SIGXFSZ, sig) TH_LOG("no SIGXFSZ: %s", strerror(errno));
	ASSERT_EQ(0, setrlimit(RLIMIT_FSIZE, &old));

	ASSERT_EQ(0, fstat(st->fd, &sb));
	EXPECT_EQ(FILE_LEN, sb.st_size);
	memset(st->rbuf, POISON, BLK);
	ASSERT_EQ(BLK, pread(st->fd, st->rbuf, BLK, 0));
	bad = aio_verify_pattern(st->rbuf, BLK, b, 0);
	EXPECT_EQ(-1, bad) TH_LOG("block 0: bad byte at %zd", bad);
}

/*
 * A write that crosses RLIMIT_FSIZE is cut at the limit and completes
 * short, without SIGXFSZ (generic_write_check_limits()).  With offload,
 * the NOWAIT try writes up to the limit and the rest would go to a
 * worker, where the limit is already reached: the result must still be
 * the short count, and no signal.
 */
TEST_F_TIMEOUT(offload, rlimit_fsize_crossing, AIO_DEV_TEST_TIMEOUT)
{
	struct offload_state *st = &self->st;
	struct timespec zero = { 0, 0 };
	struct rlimit old, lim;
	const char *skip;
	uint64_t a, b;
	sigset_t xfsz;
	struct stat sb;
	ssize_t bad;
	int sig;

	skip = need(_metadata, NEED_DEV | NEED_DATA);
	if (skip)
		SKIP(return, "%s", skip);
	skip = scratch_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);

	a = aio_new_seed();
	b = aio_new_seed();
	make_file(_metadata, st, "cross", FILE_LEN, O_DIRECT, a);
	dio_warm_up(_metadata, st);
	new_ctx(_metadata, &st->ctx, 4);
	/* The last block of the file and one past it. */
	aio_fill_pattern(st->wbuf, 2 * BLK, b, FILE_LEN - BLK);
	aio_prep_rw(&st->cb[0], IOCB_CMD_PWRITE, st->fd, st->wbuf, 2 * BLK,
		    FILE_LEN - BLK, 0);
	st->list[0] = &st->cb[0];

	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	ASSERT_EQ(0, pthread_sigmask(SIG_BLOCK, &xfsz, NULL));
	ASSERT_EQ(0, getrlimit(RLIMIT_FSIZE, &old));
	lim = old;
	lim.rlim_cur = FILE_LEN;
	ASSERT_EQ(0, setrlimit(RLIMIT_FSIZE, &lim));
	EXPECT_EQ(1, sys_io_submit(st->ctx, 1, st->list))
		TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(1, aio_reap(st->ctx, st->ev, 1, AIO_REAP_TIMEOUT_SEC));
	ASSERT_EQ(0, setrlimit(RLIMIT_FSIZE, &old));
	EXPECT_EQ(BLK, st->ev[0].res);
	sig = sigtimedwait(&xfsz, NULL, &zero);
	EXPECT_EQ(-1, sig) TH_LOG("signal %d pending", sig);

	ASSERT_EQ(0, fstat(st->fd, &sb));
	EXPECT_EQ(FILE_LEN, sb.st_size);
	memset(st->rbuf, POISON, BLK);
	ASSERT_EQ(BLK, pread(st->fd, st->rbuf, BLK, FILE_LEN - BLK));
	bad = aio_verify_pattern(st->rbuf, BLK, b, FILE_LEN - BLK);
	EXPECT_EQ(-1, bad) TH_LOG("last block: bad byte at %zd", bad);
}

/*
 * A file closed while a request holds it is released when the request
 * completes: its flock() goes away.  The final fput() is task work of
 * the thread that drops the last reference, here a worker (O_DSYNC
 * writes always go to one), which never returns to user space: unless
 * it runs its task work, the file stays open until the worker exits.
 * The lock is released just after the event is posted, so a moment is
 * allowed for it.
 */
TEST_F_TIMEOUT(offload, close_before_completion, AIO_DEV_TEST_TIMEOUT)
{
	struct offload_state *st = &self->st;
	const char *skip;
	uint64_t a, b;
	int fd, i, ret;
	ssize_t bad;

	skip = need(_metadata, NEED_DEV | NEED_DATA);
	if (skip)
		SKIP(return, "%s", skip);
	skip = scratch_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);

	a = aio_new_seed();
	b = aio_new_seed();
	make_file(_metadata, st, "closed", FILE_LEN, 0, a);
	new_ctx(_metadata, &st->ctx, 4);
	fd = open(st->path, O_RDWR | O_DSYNC);
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", st->path, strerror(errno));
	ASSERT_EQ(0, flock(fd, LOCK_EX));
	aio_fill_pattern(st->wbuf, BLK, b, 0);
	aio_prep_rw(&st->cb[0], IOCB_CMD_PWRITE, fd, st->wbuf, BLK, 0, 0);
	st->list[0] = &st->cb[0];
	ret = sys_io_submit(st->ctx, 1, st->list);
	close(fd);
	ASSERT_EQ(1, ret) TH_LOG("io_submit: %s", strerror(errno));
	ASSERT_EQ(1, aio_reap(st->ctx, st->ev, 1, AIO_REAP_TIMEOUT_SEC));
	EXPECT_EQ(BLK, st->ev[0].res);

	/* st->fd is another open file description: flock() conflicts. */
	for (i = 0; i < 200; i++) {
		ret = flock(st->fd, LOCK_EX | LOCK_NB);
		if (!ret || errno != EWOULDBLOCK)
			break;
		usleep(10000);
	}
	/* The last idle worker stays: the fput must not wait for its exit. */
	EXPECT_EQ(0, ret) TH_LOG("flock: %s after %d tries: closed file not released",
				 strerror(errno), i);

	memset(st->rbuf, POISON, BLK);
	ASSERT_EQ(BLK, pread(st->fd, st->rbuf, BLK, 0));
	bad = aio_verify_pattern(st->rbuf, BLK, b, 0);
	EXPECT_EQ(-1, bad) TH_LOG("block 0: bad byte at %zd", bad);
}

/*
 * O_APPEND writes go to a worker without a NOWAIT try (one that stopped
 * part way could not be finished as one append).  Two appends in one
 * io_submit() land whole, in submission order, and the submitter does
 * not sleep.
 */
TEST_F_TIMEOUT(offload, append_in_order, AIO_DEV_TEST_TIMEOUT)
{
	struct offload_state *st = &self->st;
	const char *skip;
	uint64_t a, b, c;
	long ret, nvcsw;
	struct stat sb;
	ssize_t bad;

	skip = need(_metadata, NEED_OFFLOAD | NEED_DATA);
	if (skip)
		SKIP(return, "%s", skip);
	skip = scratch_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);

	a = aio_new_seed();
	b = aio_new_seed();
	c = aio_new_seed();
	make_file(_metadata, st, "append", FILE_LEN, O_APPEND, a);
	new_ctx(_metadata, &st->ctx, 4);
	/* Offsets are ignored for appends. */
	aio_fill_pattern(st->wbuf, 3 * BLK, b, FILE_LEN);
	aio_fill_pattern(st->wbuf + 3 * BLK, BLK, c, FILE_LEN + 3 * BLK);
	aio_prep_rw(&st->cb[0], IOCB_CMD_PWRITE, st->fd, st->wbuf, 3 * BLK,
		    0, 0);
	aio_prep_rw(&st->cb[1], IOCB_CMD_PWRITE, st->fd, st->wbuf + 3 * BLK,
		    BLK, 0, 1);
	st->list[0] = &st->cb[0];
	st->list[1] = &st->cb[1];
	ret = aio_submit_nvcsw(st->ctx, 2, st->list, &nvcsw);
	ASSERT_EQ(2, ret) TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(0, nvcsw);
	ASSERT_EQ(2, aio_reap(st->ctx, st->ev, 2, AIO_REAP_TIMEOUT_SEC));
	for (ret = 0; ret < 2; ret++)
		EXPECT_EQ(st->ev[ret].data ? BLK : 3 * BLK, st->ev[ret].res);

	ASSERT_EQ(0, fstat(st->fd, &sb));
	EXPECT_EQ(FILE_LEN + 4 * BLK, sb.st_size);
	memset(st->rbuf, POISON, 4 * BLK);
	ASSERT_EQ(4 * BLK, pread(st->fd, st->rbuf, 4 * BLK, FILE_LEN));
	bad = aio_verify_pattern(st->rbuf, 3 * BLK, b, FILE_LEN);
	EXPECT_EQ(-1, bad) TH_LOG("first append: bad byte at %zd", bad);
	bad = aio_verify_pattern(st->rbuf + 3 * BLK, BLK, c,
				 FILE_LEN + 3 * BLK);
	EXPECT_EQ(-1, bad) TH_LOG("second append: bad byte at %zd", bad);
	memset(st->rbuf, POISON, BLK);
	ASSERT_EQ(BLK, pread(st->fd, st->rbuf, BLK, FILE_LEN - BLK));
	bad = aio_verify_pattern(st->rbuf, BLK, a, FILE_LEN - BLK);
	EXPECT_EQ(-1, bad) TH_LOG("old last block: bad byte at %zd", bad);
}

/*
 * Child of suid_stripped: io_setup() as root (so the worker threads are
 * root's), then maybe drop to nobody in this thread only, and submit one
 * write of the frozen file.  Reports the io_submit() and its event.
 */
static void suid_child(int fd, char *buf, int wfd, bool drop)
{
	struct iocb cb, *list[1] = { &cb };
	struct child_report rep[2] = { 0 };
	aio_context_t ctx = 0;
	struct io_event ev;

	if (sys_io_setup(4, &ctx))
		_exit(10);
	if (drop && (syscall(SYS_setresgid, 65534, 65534, 65534) ||
		     syscall(SYS_setresuid, 65534, 65534, 65534)))
		_exit(11);
	aio_prep_rw(&cb, IOCB_CMD_PWRITE, fd, buf, BLK, 0, 0);
	rep[0].ret = aio_submit_nvcsw(ctx, 1, list, &rep[0].nvcsw);
	rep[0].err = errno;
	if (write(wfd, &rep[0], sizeof(rep[0])) != sizeof(rep[0]))
		_exit(12);
	rep[1].ret = aio_reap(ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC);
	rep[1].nvcsw = rep[1].ret == 1 ? ev.res : 0;
	if (write(wfd, &rep[1], sizeof(rep[1])) != sizeof(rep[1]))
		_exit(13);
	_exit(0);
}

/*
 * A write drops the file's set-user-ID and set-group-ID bits unless the
 * writer may keep them (CAP_FSETID): the submitter's credentials decide,
 * not the worker's, which were root's.  An unprivileged submitter's punted
 * write strips them; a root submitter's keeps them (the control).
 */
TEST_F_TIMEOUT(offload, suid_stripped, AIO_DEV_TEST_TIMEOUT)
{
	struct offload_state *st = &self->st;
	struct child_report rep[2];
	int pipefd[2], status, drop;
	const char *skip;
	pid_t pid;
	uint64_t a, b;
	struct stat sb;
	ssize_t bad;

	skip = need(_metadata, NEED_OFFLOAD | NEED_DATA);
	if (skip)
		SKIP(return, "%s", skip);
	skip = scratch_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);

	for (drop = 1; drop >= 0; drop--) {
		a = aio_new_seed();
		b = aio_new_seed();
		make_file(_metadata, st, drop ? "suid-nobody" : "suid-root",
			  FILE_LEN, O_DIRECT, a);
		dio_warm_up(_metadata, st);
		ASSERT_EQ(0, fchmod(st->fd, 06777));
		aio_fill_pattern(st->wbuf, BLK, b, 0);
		ASSERT_EQ(0, pipe(pipefd));

		ASSERT_EQ(0, aio_fs_freeze(st->mnt));
		st->frozen = true;
		/* Not st->child in the child: the fixture is shared memory. */
		pid = fork();
		if (!pid) {
			close(pipefd[0]);
			suid_child(st->fd, st->wbuf, pipefd[1], drop);
		}
		st->child = pid;
		close(pipefd[1]);
		memset(rep, 0, sizeof(rep));
		/* No ASSERT until thawed: see offload_off_is_stock. */
		bad = st->child > 0 ?
		      read(pipefd[0], &rep[0], sizeof(rep[0])) : -1;
		thaw(_metadata, st);
		ASSERT_LT(0, st->child);
		ASSERT_EQ((ssize_t)sizeof(rep[0]), bad);
		ASSERT_EQ((ssize_t)sizeof(rep[1]),
			  read(pipefd[0], &rep[1], sizeof(rep[1])));
		close(pipefd[0]);
		ASSERT_EQ(st->child, waitpid(st->child, &status, 0));
		st->child = 0;
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("child status %#x", status);

		EXPECT_EQ(1, rep[0].ret) TH_LOG("io_submit: %s",
						strerror(rep[0].err));
		EXPECT_EQ(0, rep[0].nvcsw);
		EXPECT_EQ(1, rep[1].ret);
		/* The event's res, in the nvcsw slot. */
		EXPECT_EQ(BLK, rep[1].nvcsw);
		ASSERT_EQ(0, fstat(st->fd, &sb));
		TH_LOG("%s submitter: mode %04o after the write",
		       drop ? "unprivileged" : "root", sb.st_mode & 07777);
		EXPECT_EQ(drop ? 0u : 06000u, sb.st_mode & 06000);
		memset(st->rbuf, POISON, BLK);
		ASSERT_EQ(BLK, pread(st->fd, st->rbuf, BLK, 0));
		bad = aio_verify_pattern(st->rbuf, BLK, b, 0);
		EXPECT_EQ(-1, bad) TH_LOG("block 0: bad byte at %zd", bad);
	}
}

TEST_HARNESS_MAIN
