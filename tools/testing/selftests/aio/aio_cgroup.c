// SPDX-License-Identifier: GPL-2.0
/*
 * The aio cgroup controller (CONFIG_CGROUP_AIO): limits on the workers
 * and on the requests of AIO offloading, per cgroup v2.
 *
 *   aio.workers.max  worker threads ("max" or a count); a context whose
 *                    first worker is refused is not created (EAGAIN)
 *   aio.queue.max    requests admitted and not yet completed; a full
 *                    cgroup makes io_submit() return a short count, or
 *                    fail with EAGAIN, without sleeping
 *   aio.current, aio.peak  "workers N" / "requests N"
 *   aio.events       "workers.max N" / "queue.max N": refusals;
 *                    "queue.max.bypass N": requests of a context with
 *                    nothing admitted, issued without offload at the limit
 *   aio.stat         inline completions and punts by reason (also on
 *                    the root cgroup)
 *
 * Each test moves its process into a cgroup of its own under the root,
 * with an idle sibling to compare with where charging is checked (root
 * statistics are hierarchical).  "Did not sleep" is 0 voluntary context
 * switches of the mlockall()ed submitter across io_submit(); data written
 * is read back.  Tests skip on a kernel without the controller.
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
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#define CG_ROOT		"/sys/fs/cgroup"
#define OFFLOAD_SYSCTL	"/proc/sys/fs/aio-offload"
#define DROP_CACHES	"/proc/sys/vm/drop_caches"

#define BLK		4096
#define MIB		(1024 * 1024)
#define POISON		0xa5

/* queue_max_short_count */
#define QMAX		8
#define QNR		20
#define QFILE_LEN	(64 * BLK)

/* flood_cold_reads: the 2013 "10,000 operations in parallel" case */
#define FLOOD_NR	10000
#define FLOOD_BATCH	100
#define FLOOD_WORKERS	4

/* stat_inline_ratio */
#define RATIO_NR	512
#define RATIO_BATCH	32
#define RATIO_FILE_LEN	(4 * MIB)

/* charged_to_submitter */
#define CHARGE_LEN	(8 * MIB)
#define CHARGE_BATCH	32

/* queue_max_reap_then_submit */
#define REAP_NR		400

/* fsync_one_worker */
#define SYNC_NR		16

#define MAX_IOCBS	FLOOD_NR
#define BUF_LEN		(FLOOD_NR * BLK)

/* Hang guard for polls of a counter going back to 0: 60 s of 1 ms. */
#define MAX_POLLS	60000

struct cg_state {
	pid_t owner;
	char cg[96];		/* our cgroup */
	char sib[96];		/* an idle sibling */
	char mnt[64];
	char path[96];
	aio_context_t ctx;
	int fd;
	bool frozen;
	bool moved;
	long saved_offload;
	char *wbuf;
	char *rbuf;
	/* Read by the kernel after io_submit(): must outlive the test. */
	struct iocb *cb;
	struct iocb **list;
	struct io_event *ev;
};

FIXTURE(aiocg) {
	struct cg_state st;
};

static int cg_write(const char *cg, const char *file, const char *val)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return aio_write_file(path, val);
}

/* The value of "key N" in a flat keyed file, or -1 (and a log). */
static long long cg_key(struct __test_metadata *_metadata, const char *cg,
			const char *file, const char *key)
{
	char path[160];
	long long v;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	v = aio_read_key(path, key);
	if (v < 0)
		TH_LOG("%s: no key %s", path, key);
	return v;
}

/* Poll until cg_key() reads want; hang guarded. */
static long long cg_key_settles(struct __test_metadata *_metadata,
				const char *cg, const char *file,
				const char *key, long long want)
{
	long long v = -1;
	int polls;

	for (polls = 0; polls < MAX_POLLS; polls++) {
		v = cg_key(_metadata, cg, file, key);
		if (v == want)
			break;
		usleep(1000);
	}
	return v;
}

static bool have_controller(const char *name)
{
	char buf[512], *tok, *save;

	if (aio_read_file(CG_ROOT "/cgroup.controllers", buf, sizeof(buf)))
		return false;
	/* One line of names separated by spaces. */
	buf[strcspn(buf, "\n")] = '\0';
	for (tok = strtok_r(buf, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save))
		if (!strcmp(tok, name))
			return true;
	return false;
}

FIXTURE_SETUP(aiocg)
{
	struct cg_state *st = &self->st;
	char pid[32];

	memset(st, 0, sizeof(*st));
	st->owner = getpid();
	st->fd = -1;
	st->saved_offload = -1;
	if (!have_controller("aio"))
		SKIP(return, "no aio cgroup controller (CONFIG_CGROUP_AIO)");

	ASSERT_EQ(0, aio_lock_memory());
	st->wbuf = aio_alloc_buf(BUF_LEN);
	ASSERT_NE(NULL, st->wbuf);
	st->rbuf = aio_alloc_buf(BUF_LEN);
	ASSERT_NE(NULL, st->rbuf);
	st->cb = calloc(MAX_IOCBS, sizeof(*st->cb));
	st->list = calloc(MAX_IOCBS, sizeof(*st->list));
	st->ev = calloc(MAX_IOCBS, sizeof(*st->ev));
	ASSERT_TRUE(st->cb && st->list && st->ev);

	ASSERT_EQ(0, aio_write_file(CG_ROOT "/cgroup.subtree_control", "+aio"));
	snprintf(st->cg, sizeof(st->cg), CG_ROOT "/aio-test-%d", getpid());
	snprintf(st->sib, sizeof(st->sib), CG_ROOT "/aio-idle-%d", getpid());
	ASSERT_EQ(0, mkdir(st->cg, 0755)) TH_LOG("mkdir %s: %s", st->cg,
						 strerror(errno));
	ASSERT_EQ(0, mkdir(st->sib, 0755));
	snprintf(pid, sizeof(pid), "%d", getpid());
	ASSERT_EQ(0, cg_write(st->cg, "cgroup.procs", pid));
	st->moved = true;
}

/* _PARENT teardown: see the note in aio_util.h */
FIXTURE_TEARDOWN_PARENT(aiocg)
{
	struct cg_state *st = &self->st;
	char val[32];
	int polls;

	if (st->frozen && aio_fs_thaw(st->mnt))
		TH_LOG("thaw %s failed", st->mnt);
	if (getpid() == st->owner) {
		if (st->ctx)
			sys_io_destroy(st->ctx);
		if (st->fd >= 0)
			close(st->fd);
		snprintf(val, sizeof(val), "%d", getpid());
		if (st->moved && cg_write(CG_ROOT, "cgroup.procs", val))
			TH_LOG("could not leave %s", st->cg);
	}
	if (st->saved_offload >= 0) {
		snprintf(val, sizeof(val), "%ld", st->saved_offload);
		aio_write_file(OFFLOAD_SYSCTL, val);
	}
	if (st->mnt[0] && aio_scratch_umount(st->mnt))
		TH_LOG("umount %s failed: %s", st->mnt, strerror(errno));
	/* Workers of a destroyed context leave on their own, soon. */
	for (polls = 0; st->cg[0] && polls < MAX_POLLS; polls++) {
		if (!rmdir(st->cg) || errno == ENOENT)
			break;
		usleep(1000);
	}
	if (st->sib[0])
		rmdir(st->sib);
}

/* ext4 on the scratch device with offloading on; NULL or why to skip. */
static const char *need_fs(struct __test_metadata *_metadata,
			   struct cg_state *st)
{
	long val;
	int ret;

	if (aio_read_long(OFFLOAD_SYSCTL, &val))
		return "no " OFFLOAD_SYSCTL ": kernel without AIO offload";
	if (!aio_dev_path())
		return "AIO_TEST_DEV not set";
	if (!aio_dev_holds_data())
		return "the device does not store data (null_blk)";
	st->saved_offload = val;
	if (val != 1 && aio_write_file(OFFLOAD_SYSCTL, "1"))
		return "cannot turn " OFFLOAD_SYSCTL " on";
	ret = aio_scratch_mount(aio_dev_path(), "ext4", st->mnt,
				sizeof(st->mnt));
	if (ret == AIO_MKFS_NOT_FOUND)
		return "mkfs.ext4 not available";
	EXPECT_EQ(0, ret) TH_LOG("mkfs/mount ext4: %d", ret);
	if (ret) {
		st->mnt[0] = '\0';
		return "ext4 scratch mount failed";
	}
	return NULL;
}

/* mnt/name: len bytes of pattern seed, on disk; reopened into st->fd. */
static void make_file(struct __test_metadata *_metadata, struct cg_state *st,
		      const char *name, size_t len, int oflags, uint64_t seed)
{
	size_t done, n;
	int fd;

	snprintf(st->path, sizeof(st->path), "%s/%s", st->mnt, name);
	fd = open(st->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", st->path, strerror(errno));
	for (done = 0; done < len; done += n) {
		n = len - done > BUF_LEN ? BUF_LEN : len - done;
		aio_fill_pattern(st->wbuf, n, seed, done);
		ASSERT_EQ((ssize_t)n, pwrite(fd, st->wbuf, n, done));
	}
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	st->fd = open(st->path, O_RDWR | oflags);
	ASSERT_LE(0, st->fd);
}

static void make_cold(struct __test_metadata *_metadata, int fd)
{
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, aio_write_file(DROP_CACHES, "3"));
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
}

/* Reap n events, each with res == want. */
static void reap_n(struct __test_metadata *_metadata, struct cg_state *st,
		   long n, long long want)
{
	long i;

	/* Hang guard: FLOOD_NR cold reads on SD flash under TCG are slow. */
	ASSERT_EQ(n, aio_reap(st->ctx, st->ev, n, 4 * AIO_REAP_TIMEOUT_SEC));
	for (i = 0; i < n; i++)
		EXPECT_EQ(want, st->ev[i].res)
			TH_LOG("iocb %llu: res %lld",
			       (unsigned long long)st->ev[i].data,
			       (long long)st->ev[i].res);
}

/*
 * The root's aio.stat is there from boot.  Files a controller adds to the
 * root stay hidden until the root is activated, which happened for the
 * last controller set up only once some controller was enabled.  After
 * that (a test below enables aio) there is nothing to see: skip.
 */
TEST(root_stat_at_boot)
{
	char buf[256];

	if (!have_controller("aio"))
		SKIP(return, "no aio cgroup controller (CONFIG_CGROUP_AIO)");
	ASSERT_EQ(0, aio_read_file(CG_ROOT "/cgroup.subtree_control", buf,
				   sizeof(buf)));
	buf[strcspn(buf, "\n")] = '\0';
	if (buf[0])
		SKIP(return, "controllers enabled on the root already: %s", buf);
	EXPECT_EQ(0, access(CG_ROOT "/aio.stat", F_OK))
		TH_LOG("no aio.stat on the root before a controller is enabled");
	EXPECT_LE(0, cg_key(_metadata, CG_ROOT, "aio.stat", "inline"));
}

/*
 * Defaults are "max"; a count or "max" is taken (whitespace around it
 * too); anything else is EINVAL and changes nothing.  Only aio.stat is on
 * the root cgroup.
 */
TEST_F(aiocg, interface_files)
{
	static const char * const files[] = { "aio.workers.max",
					       "aio.queue.max" };
	static const char * const junk[] = { "abc", "-1", "1x", "0x", " ",
		"9223372036854775807", "99999999999999999999", "max1" };
	struct cg_state *st = &self->st;
	char buf[64], path[160];
	unsigned int f, j;

	for (f = 0; f < 2; f++) {
		snprintf(path, sizeof(path), "%s/%s", st->cg, files[f]);
		ASSERT_EQ(0, aio_read_file(path, buf, sizeof(buf)));
		EXPECT_STREQ("max\n", buf);
		ASSERT_EQ(0, aio_write_file(path, " 7\n"));
		ASSERT_EQ(0, aio_read_file(path, buf, sizeof(buf)));
		EXPECT_STREQ("7\n", buf);
		for (j = 0; j < ARRAY_SIZE(junk); j++) {
			EXPECT_EQ(-EINVAL, aio_write_file(path, junk[j]))
				TH_LOG("%s accepted \"%s\"", files[f], junk[j]);
			ASSERT_EQ(0, aio_read_file(path, buf, sizeof(buf)));
			EXPECT_STREQ("7\n", buf)
				TH_LOG("\"%s\" changed %s", junk[j], files[f]);
		}
		ASSERT_EQ(0, aio_write_file(path, "0"));
		ASSERT_EQ(0, aio_write_file(path, "max"));
		ASSERT_EQ(0, aio_read_file(path, buf, sizeof(buf)));
		EXPECT_STREQ("max\n", buf);
		snprintf(path, sizeof(path), CG_ROOT "/%s", files[f]);
		EXPECT_NE(0, access(path, F_OK)) TH_LOG("%s on the root", path);
	}
	EXPECT_EQ(0, cg_key(_metadata, st->cg, "aio.current", "workers"));
	EXPECT_EQ(0, cg_key(_metadata, st->cg, "aio.current", "requests"));
	EXPECT_EQ(0, cg_key(_metadata, st->cg, "aio.events", "queue.max"));
	EXPECT_EQ(0, cg_key(_metadata, st->cg, "aio.events", "workers.max"));
	EXPECT_EQ(0, cg_key(_metadata, st->cg, "aio.stat", "inline"));
	EXPECT_LE(0, cg_key(_metadata, CG_ROOT, "aio.stat", "inline"));
	EXPECT_NE(0, cg_write(st->cg, "aio.current", "1"));
}

/*
 * aio.workers.max 0 leaves no room for a process's first worker:
 * io_setup() fails with EAGAIN (counted in aio.events) instead of making
 * a context that would block.  With room, the worker is charged while
 * the process has a context and given back after io_destroy().  A second
 * context of the process shares the pool; another process needs its own.
 */
TEST_F(aiocg, workers_max_and_io_setup)
{
	struct cg_state *st = &self->st;
	aio_context_t ctx2 = 0;
	int status;
	pid_t pid;
	long val;

	if (aio_read_long(OFFLOAD_SYSCTL, &val) || val != 1)
		SKIP(return, OFFLOAD_SYSCTL " missing or 0");
	ASSERT_EQ(0, cg_write(st->cg, "aio.workers.max", "0"));
	errno = 0;
	EXPECT_EQ(-1, sys_io_setup(16, &st->ctx));
	EXPECT_EQ(EAGAIN, errno);
	st->ctx = 0;
	EXPECT_EQ(1, cg_key(_metadata, st->cg, "aio.events", "workers.max"));
	EXPECT_EQ(0, cg_key(_metadata, st->cg, "aio.current", "workers"));

	ASSERT_EQ(0, cg_write(st->cg, "aio.workers.max", "1"));
	ASSERT_EQ(0, sys_io_setup(16, &st->ctx));
	EXPECT_EQ(1, cg_key(_metadata, st->cg, "aio.current", "workers"));
	EXPECT_EQ(1, cg_key(_metadata, st->cg, "aio.peak", "workers"));
	/* A second context of the process shares its pool: no new worker. */
	ASSERT_EQ(0, sys_io_setup(16, &ctx2));
	EXPECT_EQ(1, cg_key(_metadata, st->cg, "aio.current", "workers"));
	/* Another process needs a worker of its own: the cgroup is full. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		aio_context_t c = 0;

		errno = 0;
		_exit(sys_io_setup(16, &c) == -1 && errno == EAGAIN ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("io_setup() of another process did not fail with EAGAIN");
	EXPECT_EQ(0, sys_io_destroy(ctx2));
	ASSERT_EQ(0, sys_io_destroy(st->ctx));
	st->ctx = 0;
	EXPECT_EQ(0, cg_key_settles(_metadata, st->cg, "aio.current",
				    "workers", 0));
}

/*
 * With aio.queue.max QMAX and writes held by a frozen filesystem,
 * io_submit() of QNR takes QMAX and returns that short count, the next
 * call fails with EAGAIN, neither sleeps, and both refusals show in
 * aio.events.  Nothing is lost: after the thaw the QMAX complete and the
 * rest, resubmitted, too; the file holds all QNR writes.
 */
TEST_F_TIMEOUT(aiocg, queue_max_short_count, AIO_DEV_TEST_TIMEOUT)
{
	struct cg_state *st = &self->st;
	long ret, ret2, nvcsw = -1, nvcsw2 = -1;
	int err2, i;
	const char *skip;
	ssize_t bad;
	uint64_t a, b;
	off_t off;

	skip = need_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);
	a = aio_new_seed();
	b = aio_new_seed();
	make_file(_metadata, st, "qmax", QFILE_LEN, O_DIRECT, a);
	ASSERT_EQ(0, sys_io_setup(2 * QNR, &st->ctx));
	for (i = 0; i < QNR; i++) {
		off = (off_t)(3 * i) * BLK;
		aio_fill_pattern(st->wbuf + off, BLK, b, off);
		aio_prep_rw(&st->cb[i], IOCB_CMD_PWRITE, st->fd,
			    st->wbuf + off, BLK, off, i);
		st->list[i] = &st->cb[i];
	}
	ASSERT_EQ(0, cg_write(st->cg, "aio.queue.max", "8"));

	ASSERT_EQ(0, aio_fs_freeze(st->mnt));
	st->frozen = true;
	ret = aio_submit_nvcsw(st->ctx, QNR, st->list, &nvcsw);
	ret2 = aio_submit_nvcsw(st->ctx, QNR - QMAX, st->list + QMAX, &nvcsw2);
	err2 = errno;
	EXPECT_EQ(QMAX, cg_key(_metadata, st->cg, "aio.current", "requests"));
	EXPECT_EQ(2, cg_key(_metadata, st->cg, "aio.events", "queue.max"));
	ASSERT_EQ(0, aio_fs_thaw(st->mnt));
	st->frozen = false;

	ASSERT_EQ(QMAX, ret);
	EXPECT_EQ(0, nvcsw);
	EXPECT_EQ(-1, ret2);
	EXPECT_EQ(EAGAIN, err2);
	EXPECT_EQ(0, nvcsw2);
	reap_n(_metadata, st, QMAX, BLK);
	EXPECT_EQ(QMAX, cg_key(_metadata, st->cg, "aio.peak", "requests"));
	EXPECT_EQ(0, cg_key_settles(_metadata, st->cg, "aio.current",
				    "requests", 0));

	ASSERT_EQ(0, cg_write(st->cg, "aio.queue.max", "max"));
	ASSERT_EQ(QNR - QMAX,
		  sys_io_submit(st->ctx, QNR - QMAX, st->list + QMAX));
	reap_n(_metadata, st, QNR - QMAX, BLK);

	memset(st->rbuf, POISON, QFILE_LEN);
	ASSERT_EQ(QFILE_LEN, pread(st->fd, st->rbuf, QFILE_LEN, 0));
	for (off = 0; off < QFILE_LEN; off += BLK) {
		bool is_b = (off / BLK) % 3 == 0 && off / BLK / 3 < QNR;

		bad = aio_verify_pattern(st->rbuf + off, BLK, is_b ? b : a, off);
		EXPECT_EQ(-1, bad) TH_LOG("block %lld (%s): bad at %zd",
					  (long long)(off / BLK),
					  is_b ? "new" : "old", bad);
	}
}

/*
 * -EAGAIN from io_submit() must mean that reaping this context's own
 * completions makes room (the libaio idiom), but aio.queue.max is per
 * cgroup.  A context with nothing admitted that finds the cgroup full
 * (here of another context's writes, held by a frozen filesystem) is not
 * refused, and counted in aio.events as queue.max.bypass.  Its read is of
 * the file the writes are queued on, so issuing it without offload would
 * overtake them (stock's writes would have finished in io_submit()): it
 * is admitted past the limit and queued behind them, and completes once
 * they do.  A context that has requests admitted still gets -EAGAIN.
 */
TEST_F_TIMEOUT(aiocg, queue_max_other_context, AIO_DEV_TEST_TIMEOUT)
{
	struct cg_state *st = &self->st;
	long ret, ret2 = -1, ret3 = -1, got2 = -1, nvcsw = -1;
	long long bypass0, bypass1 = -1;
	aio_context_t ctx2 = 0;
	struct io_event ev2;
	int i, err2 = 0, err3 = 0;
	const char *skip;
	uint64_t a, b;
	off_t off;

	skip = need_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);
	a = aio_new_seed();
	b = aio_new_seed();
	make_file(_metadata, st, "other", QFILE_LEN, O_DIRECT, a);
	ASSERT_EQ(0, sys_io_setup(2 * QNR, &st->ctx));
	ASSERT_EQ(0, sys_io_setup(4, &ctx2));
	for (i = 0; i < QMAX + 1; i++) {
		off = (off_t)(3 * i) * BLK;
		aio_fill_pattern(st->wbuf + off, BLK, b, off);
		aio_prep_rw(&st->cb[i], IOCB_CMD_PWRITE, st->fd,
			    st->wbuf + off, BLK, off, i);
		st->list[i] = &st->cb[i];
	}
	/* A read of a block nobody writes, on the second context. */
	aio_prep_rw(&st->cb[QNR], IOCB_CMD_PREAD, st->fd, st->rbuf, BLK,
		    BLK, QNR);
	st->list[QNR] = &st->cb[QNR];
	ASSERT_EQ(0, cg_write(st->cg, "aio.queue.max", "8"));
	bypass0 = cg_key(_metadata, st->cg, "aio.events", "queue.max.bypass");

	ASSERT_EQ(0, aio_fs_freeze(st->mnt));
	st->frozen = true;
	ret = sys_io_submit(st->ctx, QMAX, st->list);
	ret2 = aio_submit_nvcsw(ctx2, 1, st->list + QNR, &nvcsw);
	err2 = errno;
	/* Queued behind the frozen writes: no event yet. */
	if (ret2 == 1)
		got2 = sys_io_getevents(ctx2, 0, 1, &ev2, NULL);
	/* The first context has QMAX admitted: reaping them makes room. */
	ret3 = sys_io_submit(st->ctx, 1, st->list + QMAX);
	err3 = errno;
	bypass1 = cg_key(_metadata, st->cg, "aio.events", "queue.max.bypass");
	ASSERT_EQ(0, aio_fs_thaw(st->mnt));
	st->frozen = false;

	ASSERT_EQ(QMAX, ret);
	ASSERT_EQ(1, ret2) TH_LOG("second context: %s", strerror(err2));
	EXPECT_EQ(0, got2) TH_LOG("the read overtook the queued writes");
	EXPECT_EQ(0, nvcsw);
	ASSERT_EQ(1, aio_reap(ctx2, &ev2, 1, AIO_REAP_TIMEOUT_SEC));
	EXPECT_EQ(BLK, ev2.res);
	EXPECT_EQ(-1, aio_verify_pattern(st->rbuf, BLK, a, BLK));
	EXPECT_EQ(bypass0 + 1, bypass1);
	EXPECT_EQ(-1, ret3);
	EXPECT_EQ(EAGAIN, err3);
	reap_n(_metadata, st, QMAX, BLK);
	ASSERT_EQ(0, sys_io_destroy(ctx2));
}

/*
 * A request gives its aio.queue.max slot back before its event is
 * visible: with room for one request, reaping an event and submitting
 * the next never fails with -EAGAIN.  Buffered writes on ext4 are
 * completed by a worker, concurrently with the submitter, which spins on
 * the ring to reap and submit again the moment the event is visible.
 */
TEST_F_TIMEOUT(aiocg, queue_max_reap_then_submit, AIO_DEV_TEST_TIMEOUT)
{
	struct cg_state *st = &self->st;
	int i, nr_eagain = 0, first_err = 0;
	const char *skip;
	uint64_t a, b;
	ssize_t bad;
	off_t off;
	long ret;

	skip = need_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);
	a = aio_new_seed();
	b = aio_new_seed();
	make_file(_metadata, st, "reap", QFILE_LEN, 0, a);
	ASSERT_EQ(0, sys_io_setup(4, &st->ctx));
	aio_fill_pattern(st->wbuf, QFILE_LEN, b, 0);
	ASSERT_EQ(0, cg_write(st->cg, "aio.queue.max", "1"));
	for (i = 0; i < REAP_NR; i++) {
		off = (off_t)(i % (QFILE_LEN / BLK)) * BLK;
		aio_prep_rw(&st->cb[0], IOCB_CMD_PWRITE, st->fd,
			    st->wbuf + off, BLK, off, i);
		st->list[0] = &st->cb[0];
		ret = sys_io_submit(st->ctx, 1, st->list);
		if (ret != 1) {
			if (!first_err)
				first_err = errno;
			nr_eagain++;
			/* Let the slot come back, and go on. */
			usleep(1000);
			i--;
			if (nr_eagain > REAP_NR)
				break;
			continue;
		}
		/*
		 * Spin on the ring until the event is there, as a reaper in
		 * user space does, to come back as soon as it is visible.
		 */
		while (__atomic_load_n(&aio_ring(st->ctx)->tail,
				       __ATOMIC_ACQUIRE) ==
		       aio_ring(st->ctx)->head)
			;
		reap_n(_metadata, st, 1, BLK);
	}
	EXPECT_EQ(0, nr_eagain) TH_LOG("%d io_submit() failed (first: %s)",
				       nr_eagain, strerror(first_err));

	memset(st->rbuf, POISON, QFILE_LEN);
	ASSERT_EQ(QFILE_LEN, pread(st->fd, st->rbuf, QFILE_LEN, 0));
	bad = aio_verify_pattern(st->rbuf, QFILE_LEN, b, 0);
	EXPECT_EQ(-1, bad) TH_LOG("bad at %zd", bad);
}

/*
 * One thread keeps FLOOD_NR cold buffered reads in flight, FLOOD_BATCH
 * per io_submit(), with aio.workers.max FLOOD_WORKERS: no io_submit()
 * sleeps, the pool stays within the bound (aio.peak) although it wanted
 * more (aio.events), and every read returns its block.
 */
TEST_F_TIMEOUT(aiocg, flood_cold_reads, 2 * AIO_DEV_TEST_TIMEOUT)
{
	struct cg_state *st = &self->st;
	long slept = 0, switches = 0, nvcsw, ret, i, n;
	long long peak, punts, inl, refusals;
	const char *skip;
	uint64_t seed;
	ssize_t bad;
	char val[16];

	skip = need_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);
	seed = aio_new_seed();
	make_file(_metadata, st, "flood", (size_t)FLOOD_NR * BLK, 0, seed);
	make_cold(_metadata, st->fd);
	snprintf(val, sizeof(val), "%d", FLOOD_WORKERS);
	ASSERT_EQ(0, cg_write(st->cg, "aio.workers.max", val));
	ASSERT_EQ(0, sys_io_setup(FLOOD_NR, &st->ctx));

	/* Block i of the file into buffer slot i, in a scattered order. */
	for (i = 0; i < FLOOD_NR; i++) {
		long blk = (i * 7919) % FLOOD_NR;

		aio_prep_rw(&st->cb[i], IOCB_CMD_PREAD, st->fd,
			    st->rbuf + blk * BLK, BLK, (off_t)blk * BLK, blk);
		st->list[i] = &st->cb[i];
	}
	memset(st->rbuf, POISON, BUF_LEN);
	for (i = 0; i < FLOOD_NR; i += n) {
		n = FLOOD_BATCH;
		ret = aio_submit_nvcsw(st->ctx, n, st->list + i, &nvcsw);
		ASSERT_EQ(n, ret) TH_LOG("io_submit at %ld: %s", i,
					 strerror(errno));
		if (nvcsw) {
			slept++;
			switches += nvcsw;
		}
	}
	reap_n(_metadata, st, FLOOD_NR, BLK);

	peak = cg_key(_metadata, st->cg, "aio.peak", "workers");
	inl = cg_key(_metadata, st->cg, "aio.stat", "inline");
	punts = cg_key(_metadata, st->cg, "aio.stat", "punt_eagain");
	TH_LOG("%ld of %d io_submit calls slept (%ld switches); peak %lld workers",
	       slept, FLOOD_NR / FLOOD_BATCH, switches, peak);
	TH_LOG("%lld inline, punted: %lld eagain, %lld short, %lld ordered",
	       inl, punts,
	       cg_key(_metadata, st->cg, "aio.stat", "punt_short"),
	       cg_key(_metadata, st->cg, "aio.stat", "punt_ordered"));
	EXPECT_EQ(FLOOD_NR, inl + punts +
		  cg_key(_metadata, st->cg, "aio.stat", "punt_short"));
	EXPECT_EQ(0, slept);
	EXPECT_LE(1, peak);
	EXPECT_GE(FLOOD_WORKERS, peak);
	EXPECT_LT(0, punts);
	/*
	 * The pool asked for a fifth worker at every request it took; the
	 * event counts the refusal, not each retry: once, or again only
	 * after a worker idled out (5 s) and was created anew.
	 */
	refusals = cg_key(_metadata, st->cg, "aio.events", "workers.max");
	TH_LOG("aio.events workers.max %lld", refusals);
	EXPECT_LT(0, refusals);
	EXPECT_GE(2, refusals);
	for (i = 0; i < FLOOD_NR; i++) {
		bad = aio_verify_pattern(st->rbuf + i * BLK, BLK, seed,
					 (uint64_t)i * BLK);
		EXPECT_EQ(-1, bad) TH_LOG("block %ld: bad byte at %zd", i, bad);
		if (bad != -1)
			break;
	}
}

/*
 * Buffered writes (ext4 has no NOWAIT buffered write) and an fsync, all
 * through the pool with aio.workers.max 1: one worker did it all
 * (aio.peak), the fsync is counted, and the data is on disk after it.
 */
TEST_F_TIMEOUT(aiocg, fsync_one_worker, AIO_DEV_TEST_TIMEOUT)
{
	struct cg_state *st = &self->st;
	struct iocb sync_cb, *sync_list[1] = { &sync_cb };
	const char *skip;
	uint64_t a, b;
	ssize_t bad;
	int fd, i;

	skip = need_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);
	a = aio_new_seed();
	b = aio_new_seed();
	make_file(_metadata, st, "sync", SYNC_NR * BLK, 0, a);
	ASSERT_EQ(0, cg_write(st->cg, "aio.workers.max", "1"));
	ASSERT_EQ(0, sys_io_setup(2 * SYNC_NR, &st->ctx));
	aio_fill_pattern(st->wbuf, SYNC_NR * BLK, b, 0);
	for (i = 0; i < SYNC_NR; i++) {
		aio_prep_rw(&st->cb[i], IOCB_CMD_PWRITE, st->fd,
			    st->wbuf + i * BLK, BLK, (off_t)i * BLK, i);
		st->list[i] = &st->cb[i];
	}
	ASSERT_EQ(SYNC_NR, sys_io_submit(st->ctx, SYNC_NR, st->list));
	reap_n(_metadata, st, SYNC_NR, BLK);
	memset(&sync_cb, 0, sizeof(sync_cb));
	sync_cb.aio_lio_opcode = IOCB_CMD_FSYNC;
	sync_cb.aio_fildes = st->fd;
	ASSERT_EQ(1, sys_io_submit(st->ctx, 1, sync_list));
	reap_n(_metadata, st, 1, 0);

	EXPECT_EQ(1, cg_key(_metadata, st->cg, "aio.peak", "workers"));
	EXPECT_EQ(1, cg_key(_metadata, st->cg, "aio.stat", "fsync"));
	EXPECT_LE(SYNC_NR, cg_key(_metadata, st->cg, "aio.stat",
				  "punt_buffered") +
			   cg_key(_metadata, st->cg, "aio.stat", "punt_ordered"));

	/* Past the page cache: what the fsync put on disk. */
	ASSERT_EQ(0, aio_write_file(DROP_CACHES, "3"));
	fd = open(st->path, O_RDONLY | O_DIRECT);
	ASSERT_LE(0, fd);
	memset(st->rbuf, POISON, SYNC_NR * BLK);
	ASSERT_EQ(SYNC_NR * BLK, pread(fd, st->rbuf, SYNC_NR * BLK, 0));
	close(fd);
	bad = aio_verify_pattern(st->rbuf, SYNC_NR * BLK, b, 0);
	EXPECT_EQ(-1, bad) TH_LOG("bad byte at %zd", bad);
}

static const char * const punts[] = { "punt_no_nowait", "punt_dsync",
	"punt_blocking_queue", "punt_frozen", "punt_eagain", "punt_eopnotsupp",
	"punt_short", "punt_ordered", "punt_append", "punt_buffered",
	"punt_zoned" };

/*
 * aio.stat's inline count, and the sum of inline and every punt; each
 * punt count in @by_kind[] if not NULL.
 */
static void inline_and_total(struct __test_metadata *_metadata,
			     struct cg_state *st, long long *inl,
			     long long *total, long long *by_kind)
{
	unsigned int k;
	long long v;

	*inl = cg_key(_metadata, st->cg, "aio.stat", "inline");
	*total = *inl;
	for (k = 0; k < ARRAY_SIZE(punts); k++) {
		v = cg_key(_metadata, st->cg, "aio.stat", punts[k]);
		*total += v;
		if (by_kind)
			by_kind[k] = v;
	}
}

/*
 * RATIO_NR 4 KiB requests (@opcode) on st->fd, @batch (a divisor of
 * RATIO_BATCH) per io_submit(), on distinct blocks in a scattered order,
 * to or from @buf at the block's offset; returns how many of them
 * aio.stat counts, and in *@inl how many of those went inline; in
 * *@first_punts how many of the first call's did not.
 */
static long long ratio_pass(struct __test_metadata *_metadata,
			    struct cg_state *st, int opcode, char *buf,
			    int batch, long long *inl, long long *first_punts)
{
	long long inl0, total0, total, kind0[ARRAY_SIZE(punts)];
	long long kind[ARRAY_SIZE(punts)];
	unsigned int k;
	int i, j;

	inline_and_total(_metadata, st, &inl0, &total0, kind0);
	for (i = 0; i < RATIO_NR; i += batch) {
		for (j = 0; j < batch; j++) {
			long blk = ((i + j) * 37) % RATIO_NR;

			aio_prep_rw(&st->cb[j], opcode, st->fd, buf + blk * BLK,
				    BLK, (off_t)blk * BLK, blk);
			st->list[j] = &st->cb[j];
		}
		EXPECT_EQ(batch, sys_io_submit(st->ctx, batch, st->list));
		reap_n(_metadata, st, batch, BLK);
		if (!i) {
			inline_and_total(_metadata, st, inl, &total, NULL);
			*first_punts = total - total0 - (*inl - inl0);
		}
	}
	inline_and_total(_metadata, st, inl, &total, kind);
	*inl -= inl0;
	for (k = 0; k < ARRAY_SIZE(punts); k++)
		if (kind[k] != kind0[k])
			TH_LOG("  %s %lld", punts[k], kind[k] - kind0[k]);
	return total - total0;
}

/*
 * Not an always-punt design: 4 KiB O_DIRECT overwrites (extents cached)
 * and warm buffered reads complete inline (>= 99% in aio.stat), timestamp
 * updates included, on a queue that can take REQ_NOWAIT; O_DIRECT writes
 * into the unwritten extents of a fallocated file, each splitting one, at
 * least 95% (ext4 hands off the splits in the inode itself and those that
 * need a new leaf), submitted one per call and 32 per call: a request
 * handed off holds up only the later ones that overlap it (the offload's
 * ordering), so a batch's punt does not take the rest of it along.  The
 * first write splits an extent in the inode, which needs a new leaf: a
 * worker does it, holding i_data_sem, which the rest of the first batch
 * tried meanwhile finds taken (-EAGAIN); the first call is logged and
 * the ratio asserted over the others.  The SD card's and null_blk's
 * queues are
 * BLK_MQ_F_BLOCKING, where direct I/O is always handed off, so this is
 * about NVMe.
 */
TEST_F_TIMEOUT(aiocg, stat_inline_ratio, AIO_DEV_TEST_TIMEOUT)
{
	struct cg_state *st = &self->st;
	long long inl, total, first;
	const char *skip;
	uint64_t seed, b;
	int dfd, pass;
	ssize_t bad;

	if (strcmp(aio_dev_class(), "nvme"))
		SKIP(return, "direct I/O is always handed off on %s",
		     aio_dev_class());
	skip = need_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);
	seed = aio_new_seed();
	b = aio_new_seed();
	make_file(_metadata, st, "ratio", RATIO_FILE_LEN, 0, seed);
	ASSERT_EQ(0, sys_io_setup(2 * RATIO_BATCH, &st->ctx));
	/*
	 * The mount's first O_DIRECT AIO creates its completion workqueue,
	 * which cannot be done under NOWAIT: not what this test counts.
	 */
	dfd = open(st->path, O_RDONLY | O_DIRECT);
	ASSERT_LE(0, dfd);
	aio_prep_rw(&st->cb[0], IOCB_CMD_PREAD, dfd,
		    st->rbuf + RATIO_FILE_LEN - BLK, BLK, RATIO_FILE_LEN - BLK, 0);
	st->list[0] = &st->cb[0];
	ASSERT_EQ(1, sys_io_submit(st->ctx, 1, st->list));
	reap_n(_metadata, st, 1, BLK);
	close(dfd);

	/*
	 * O_DIRECT overwrites of distinct blocks, none in the page cache
	 * (NOWAIT cannot invalidate cached pages).
	 */
	make_cold(_metadata, st->fd);
	close(st->fd);
	st->fd = open(st->path, O_RDWR | O_DIRECT);
	ASSERT_LE(0, st->fd);
	/*
	 * drop_caches also shrank the extent status cache, and a NOWAIT try
	 * does not read extents: read them back (direct, so no page is
	 * cached).
	 */
	ASSERT_EQ(RATIO_FILE_LEN, pread(st->fd, st->rbuf, RATIO_FILE_LEN, 0));
	aio_fill_pattern(st->wbuf, RATIO_NR * BLK, b, 0);
	total = ratio_pass(_metadata, st, IOCB_CMD_PWRITE, st->wbuf,
			   RATIO_BATCH, &inl, &first);
	TH_LOG("O_DIRECT overwrites: %lld of %lld inline", inl, total);
	EXPECT_EQ(RATIO_NR, total);
	EXPECT_LE(total * 99, inl * 100);

	/* Buffered reads of what the overwrites wrote, cached. */
	close(st->fd);
	st->fd = open(st->path, O_RDONLY);
	ASSERT_LE(0, st->fd);
	ASSERT_EQ(RATIO_NR * BLK, pread(st->fd, st->rbuf, RATIO_NR * BLK, 0));
	memset(st->rbuf, POISON, RATIO_NR * BLK);
	total = ratio_pass(_metadata, st, IOCB_CMD_PREAD, st->rbuf,
			   RATIO_BATCH, &inl, &first);
	TH_LOG("warm buffered reads: %lld of %lld inline", inl, total);
	EXPECT_EQ(RATIO_NR, total);
	EXPECT_LE(total * 99, inl * 100);
	bad = aio_verify_pattern(st->rbuf, RATIO_NR * BLK, b, 0);
	EXPECT_EQ(-1, bad) TH_LOG("bad byte at %zd", bad);

	/*
	 * Into unwritten extents: fallocated files twice the size, every
	 * write in the middle of one, so it is split in three.  Their
	 * extents are cached by the fallocate.
	 */
	for (pass = 0; pass < 2; pass++) {
		int batch = pass ? RATIO_BATCH : 1;

		close(st->fd);
		snprintf(st->path, sizeof(st->path), "%s/unwritten%d", st->mnt,
			 pass);
		st->fd = open(st->path, O_RDWR | O_CREAT | O_DIRECT, 0600);
		ASSERT_LE(0, st->fd);
		ASSERT_EQ(0, fallocate(st->fd, 0, 0, 2 * RATIO_NR * BLK));
		ASSERT_EQ(0, fsync(st->fd));
		b = aio_new_seed();
		aio_fill_pattern(st->wbuf, RATIO_NR * BLK, b, 0);
		total = ratio_pass(_metadata, st, IOCB_CMD_PWRITE, st->wbuf,
				   batch, &inl, &first);
		TH_LOG("O_DIRECT writes into unwritten extents, %d per call: %lld of %lld inline",
		       batch, inl, total);
		TH_LOG("  of the first call's %d: %lld", batch, batch - first);
		EXPECT_EQ(RATIO_NR, total);
		/* Over the calls after the first. */
		EXPECT_LE((total - batch) * 95,
			  (inl - (batch - first)) * 100);
		memset(st->rbuf, POISON, RATIO_NR * BLK);
		ASSERT_EQ(RATIO_NR * BLK, pread(st->fd, st->rbuf,
						RATIO_NR * BLK, 0));
		bad = aio_verify_pattern(st->rbuf, RATIO_NR * BLK, b, 0);
		EXPECT_EQ(-1, bad) TH_LOG("unwritten: bad byte at %zd", bad);
	}
}

/* rbytes of device key ("MAJ:MIN") in cg's io.stat; 0 if not listed. */
static long long io_rbytes(const char *cg, const char *key)
{
	char path[160], buf[4096], *p;

	snprintf(path, sizeof(path), "%s/io.stat", cg);
	if (aio_read_file(path, buf, sizeof(buf)))
		return -1;
	p = strstr(buf, key);
	if (!p)
		return 0;
	p = strstr(p, "rbytes=");
	return p ? strtoll(p + 7, NULL, 10) : -1;
}

/*
 * Workers are threads of the submitter, so what they do is charged to
 * its cgroup: the device's read bytes (io.stat), the page cache the reads
 * fill (memory.stat file) and CPU time (cpu.stat) show in our cgroup,
 * and nothing in an idle sibling.  Cold buffered reads are all punted.
 */
TEST_F_TIMEOUT(aiocg, charged_to_submitter, AIO_DEV_TEST_TIMEOUT)
{
	struct cg_state *st = &self->st;
	long long rbytes, rbytes_sib, file, file_sib, usage, usage_sib;
	long long punts;
	char key[32], pid[32];
	const char *skip;
	struct stat sb;
	uint64_t seed;
	ssize_t bad;
	long i, j;

	if (!have_controller("io") || !have_controller("memory") ||
	    !have_controller("cpu"))
		SKIP(return, "needs the io, memory and cpu controllers");
	skip = need_fs(_metadata, st);
	if (skip)
		SKIP(return, "%s", skip);
	ASSERT_EQ(0, aio_write_file(CG_ROOT "/cgroup.subtree_control",
				    "+io +memory +cpu"));
	ASSERT_EQ(0, stat(aio_dev_path(), &sb));
	snprintf(key, sizeof(key), "%u:%u", major(sb.st_rdev),
		 minor(sb.st_rdev));

	seed = aio_new_seed();
	/* Written from the root cgroup: only the reads are ours. */
	snprintf(pid, sizeof(pid), "%d", getpid());
	ASSERT_EQ(0, cg_write(CG_ROOT, "cgroup.procs", pid));
	make_file(_metadata, st, "charge", CHARGE_LEN, 0, seed);
	make_cold(_metadata, st->fd);
	ASSERT_EQ(0, cg_write(st->cg, "cgroup.procs", pid));
	ASSERT_EQ(0, sys_io_setup(2 * CHARGE_BATCH, &st->ctx));
	memset(st->rbuf, POISON, CHARGE_LEN);
	for (i = 0; i < CHARGE_LEN / BLK; i += CHARGE_BATCH) {
		for (j = 0; j < CHARGE_BATCH; j++) {
			off_t off = (off_t)(i + j) * BLK;

			aio_prep_rw(&st->cb[j], IOCB_CMD_PREAD, st->fd,
				    st->rbuf + off, BLK, off, i + j);
			st->list[j] = &st->cb[j];
		}
		ASSERT_EQ(CHARGE_BATCH,
			  sys_io_submit(st->ctx, CHARGE_BATCH, st->list));
		reap_n(_metadata, st, CHARGE_BATCH, BLK);
	}
	bad = aio_verify_pattern(st->rbuf, CHARGE_LEN, seed, 0);
	EXPECT_EQ(-1, bad) TH_LOG("bad byte at %zd", bad);

	punts = cg_key(_metadata, st->cg, "aio.stat", "punt_eagain");
	rbytes = io_rbytes(st->cg, key);
	rbytes_sib = io_rbytes(st->sib, key);
	file = cg_key(_metadata, st->cg, "memory.stat", "file");
	file_sib = cg_key(_metadata, st->sib, "memory.stat", "file");
	usage = cg_key(_metadata, st->cg, "cpu.stat", "usage_usec");
	usage_sib = cg_key(_metadata, st->sib, "cpu.stat", "usage_usec");
	TH_LOG("ours: %lld punts, rbytes %lld, file %lld, cpu %lld us",
	       punts, rbytes, file, usage);
	TH_LOG("idle sibling: rbytes %lld, file %lld, cpu %lld us",
	       rbytes_sib, file_sib, usage_sib);
	EXPECT_LT(0, punts);
	EXPECT_LE(CHARGE_LEN, rbytes);
	EXPECT_EQ(0, rbytes_sib);
	EXPECT_LE(CHARGE_LEN, file);
	EXPECT_EQ(0, file_sib);
	EXPECT_LT(0, usage);
	EXPECT_EQ(0, usage_sib);
}

TEST_HARNESS_MAIN
