// SPDX-License-Identifier: GPL-2.0
/*
 * No new deadlock, and no new hang at kill.  Stock AIO blocks only the
 * submitting thread.  With the offload, all of a context's punted requests
 * share one pool of workers (16 by default), so work the process itself
 * must do to unblock them has to find a worker when every worker waits on
 * it, and a fatal signal must still end a process whose workers wait on
 * its own dying threads.
 *
 * uffd_handler_uses_aio  readers' workers wait in userfaultfd faults; the
 *                        handler reads another file through AIO on the
 *                        same context before it fills the pages.
 * fuse_server_uses_aio   readers' workers wait on a FUSE server that is a
 *                        thread of the same process and syncs and reads
 *                        its backing files through AIO on the same
 *                        context.
 * uffd_handler_killed    SIGKILL while a buffered write's worker waits in
 *                        a userfaultfd fault nobody will resolve.
 * fuse_server_killed     SIGKILL while a write waits on the process's own
 *                        FUSE server, which no longer reads requests.
 *
 * The cases with backing files run on ext4 and on XFS (fuse_server_killed
 * has none and simply runs twice).  The two
 * "_killed" cases pass on stock too (its killed io_submit() gives up); with
 * the offload a write a worker was running when the kill came is run
 * again (see aio_rw_requeue_killed()), and that second run must not wait
 * for a file the dying process itself still holds open: the workers close
 * the process's files before they go on draining.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "aio_fuse.h"
#include "aio_util.h"

#define BLK		4096
#define POISON		0xa5
/* One reader per worker a context may run (aio.workers.max default). */
#define NREADERS	16
/* How long a request the test needs may take: a hang guard only. */
#define WAIT_SEC	30
/* How long a killed child may take to be reapable: a hang guard only. */
#define KILL_WAIT_SEC	60

/* mkfs.xfs refuses devices smaller than this. */
#define XFS_MIN_SIZE	(300ULL << 20)

#define OFFLOAD_SYSCTL	"/proc/sys/fs/aio-offload"
#define ROOT_STAT	"/sys/fs/cgroup/aio.stat"

/* The scratch filesystem and its files r0.. (setup_files()). */
struct dl_files {
	char mnt[64];
	char *buf;		/* 2 * (NREADERS + 1) blocks */
	int fds[NREADERS + 1];
	uint64_t seed[NREADERS + 1];
};

FIXTURE(dl) {
	pid_t owner;
	struct dl_files f;
	struct aio_fuse fuse;	/* the parent's view in _killed cases */
	pid_t child;
};

FIXTURE_VARIANT(dl) {
	const char *fstype;
};

FIXTURE_VARIANT_ADD(dl, ext4) {
	.fstype = "ext4",
};

FIXTURE_VARIANT_ADD(dl, xfs) {
	.fstype = "xfs",
};

FIXTURE_SETUP(dl)
{
	int i;

	self->owner = getpid();
	self->f.mnt[0] = '\0';
	self->fuse.dir[0] = '\0';
	self->child = -1;
	for (i = 0; i <= NREADERS; i++)
		self->f.fds[i] = -1;
	self->f.buf = aio_alloc_buf(2 * (NREADERS + 1) * BLK);
	ASSERT_NE(NULL, self->f.buf);
}

/* _PARENT teardown: see the note in aio_util.h */
FIXTURE_TEARDOWN_PARENT(dl)
{
	int i;

	/* From either process: a child left hung holds the mounts. */
	if (self->child > 0) {
		kill(self->child, SIGKILL);
		if (self->fuse.dir[0])
			aio_fuse_abort(&self->fuse);
	}
	if (getpid() == self->owner) {
		if (self->child > 0)
			waitpid(self->child, NULL, 0);
		if (self->fuse.running)
			aio_fuse_stop(&self->fuse);
		for (i = 0; i <= NREADERS; i++)
			if (self->f.fds[i] >= 0)
				close(self->f.fds[i]);
	}
	/* A mount whose server died: its connection is gone, detach it. */
	if (self->fuse.dir[0]) {
		umount2(self->fuse.dir, MNT_DETACH);
		rmdir(self->fuse.dir);
	}
	if (self->f.mnt[0] && aio_scratch_umount(self->f.mnt))
		TH_LOG("umount %s failed: %s", self->f.mnt, strerror(errno));
}

/*
 * Make the filesystem and NREADERS + 1 files r0.. of one block each, each
 * its own pattern, opened read-only in fds[] and dropped from the page
 * cache.  NULL, or why the test skips.
 */
static const char *setup_files(struct __test_metadata *_metadata,
			       struct dl_files *f, const char *fstype)
{
	static char reason[128];
	char path[128];
	uint64_t size;
	int fd, i, ret;

	if (!aio_dev_path())
		return "AIO_TEST_DEV not set";
	if (!aio_dev_holds_data())
		return "the device does not store data (null_blk)";
	fd = open(aio_dev_path(), O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, aio_dev_size(fd, &size));
	close(fd);
	if (!strcmp(fstype, "xfs") && size < XFS_MIN_SIZE)
		return "device too small for xfs";

	ret = aio_scratch_mount(aio_dev_path(), fstype, f->mnt,
				sizeof(f->mnt));
	if (ret == AIO_MKFS_NOT_FOUND) {
		snprintf(reason, sizeof(reason), "mkfs.%s not available",
			 fstype);
		return reason;
	}
	ASSERT_EQ(0, ret) TH_LOG("mkfs/mount %s: %d", fstype, ret);

	for (i = 0; i <= NREADERS; i++) {
		f->seed[i] = aio_new_seed();
		snprintf(path, sizeof(path), "%s/r%d", f->mnt, i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		ASSERT_LE(0, fd);
		aio_fill_pattern(f->buf, BLK, f->seed[i], 0);
		ASSERT_EQ(BLK, write(fd, f->buf, BLK));
		ASSERT_EQ(0, fsync(fd));
		close(fd);
		f->fds[i] = open(path, O_RDONLY);
		ASSERT_LE(0, f->fds[i]);
		ASSERT_EQ(0, posix_fadvise(f->fds[i], 0, 0,
					   POSIX_FADV_DONTNEED));
	}
	return NULL;
}

/* "key N" of the root cgroup's aio.stat, -1 without the controller. */
static long long root_stat(const char *key)
{
	return aio_read_key(ROOT_STAT, key);
}

/*
 * SIGKILL the child and wait for it to be reaped.  False if it was still
 * there after KILL_WAIT_SEC (the teardown then aborts the FUSE
 * connection, which lets a child hung on it go).
 */
static bool kill_and_reap(pid_t pid, int *status)
{
	int polls;

	kill(pid, SIGKILL);
	for (polls = 0; polls < KILL_WAIT_SEC * 100; polls++) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * NREADERS cold buffered reads of r0.. into pages of a userfaultfd region
 * nobody filled: the NOWAIT try finds no page cache and hands each to a
 * worker before touching the buffer, and each worker's copy to the buffer
 * waits in a fault, so every worker the context may run is taken.  The
 * handler, this thread, sees all the faults, and before it fills the
 * pages it reads r<NREADERS>, cold, through AIO on the same context: that
 * read must complete although no worker is free.
 */
TEST_F_TIMEOUT(dl, uffd_handler_uses_aio, AIO_DEV_TEST_TIMEOUT)
{
	static char fill[NREADERS * BLK];
	static struct iocb cb[NREADERS + 1];
	struct iocb *list[NREADERS + 1];
	struct io_event ev[NREADERS + 1];
	long long grow0, grow1;
	long got_read = -1, reaped;
	aio_context_t ctx = 0;
	struct aio_uffd u;
	int ret, i, faults = 0;
	const char *skip;
	char *region;

	if (aio_offload_enabled() != 1)
		SKIP(return, "needs " OFFLOAD_SYSCTL " = 1");
	skip = setup_files(_metadata, &self->f, variant->fstype);
	if (skip)
		SKIP(return, "%s", skip);
	ret = aio_uffd_create(&u, NREADERS * BLK);
	if (ret)
		SKIP(return, "userfaultfd: %s", strerror(-ret));
	region = u.region;

	for (i = 0; i <= NREADERS; i++) {
		aio_prep_rw(&cb[i], IOCB_CMD_PREAD, self->f.fds[i],
			    i < NREADERS ? region + i * BLK : self->f.buf,
			    BLK, 0, i);
		list[i] = &cb[i];
	}
	memset(self->f.buf, POISON, 2 * BLK);

	grow0 = root_stat("stall_grow");
	ASSERT_EQ(0, sys_io_setup(2 * NREADERS, &ctx));
	ASSERT_EQ(NREADERS, sys_io_submit(ctx, NREADERS, list));

	/* Every reader's worker waits in its fault. */
	while (faults < NREADERS && aio_uffd_wait_fault(&u, WAIT_SEC * 1000))
		faults++;
	/* The handler's own AIO read, before it fills any page. */
	if (faults == NREADERS &&
	    sys_io_submit(ctx, 1, list + NREADERS) == 1 &&
	    aio_reap(ctx, ev, 1, WAIT_SEC) == 1)
		got_read = ev[0].data == NREADERS ? ev[0].res : -2;
	grow1 = root_stat("stall_grow");

	/* Fill the pages whatever happened, so that the readers finish. */
	ret = aio_uffd_fill(&u, fill);
	EXPECT_EQ(0, ret) TH_LOG("UFFDIO_COPY: %s", strerror(-ret));
	reaped = aio_reap(ctx, ev, NREADERS + (got_read != BLK),
			  AIO_REAP_TIMEOUT_SEC);

	ASSERT_EQ(NREADERS, faults) TH_LOG("only %d readers faulted", faults);
	EXPECT_EQ(BLK, got_read)
		TH_LOG("the handler's AIO read did not complete in %d s",
		       WAIT_SEC);
	EXPECT_EQ(-1, aio_verify_pattern(self->f.buf, BLK, self->f.seed[NREADERS],
					 0));
	ASSERT_EQ(NREADERS + (got_read != BLK), reaped);
	for (i = 0; i < reaped; i++) {
		int k = ev[i].data;

		EXPECT_EQ(BLK, ev[i].res);
		if (k < NREADERS)
			EXPECT_EQ(-1, aio_verify_pattern(region + k * BLK, BLK,
							 self->f.seed[k], 0))
				TH_LOG("reader %d: wrong data", k);
	}
	if (grow0 >= 0)
		EXPECT_LT(grow0, grow1) TH_LOG("aio.stat stall_grow");
	TH_LOG("aio.stat stall_grow %lld -> %lld", grow0, grow1);
	ASSERT_EQ(0, sys_io_destroy(ctx));
	aio_uffd_destroy(&u);
}

/*
 * The FUSE server's side of fuse_server_uses_aio: file fi of the FUSE
 * filesystem is backed by r<i>; the server reads it through AIO on the
 * readers' context.  Events of the readers it reaps meanwhile are kept for
 * the test.
 */
struct fuse_backing {
	struct dl_files *files;
	aio_context_t ctx;
	pthread_mutex_t lock;
	struct io_event stolen[NREADERS];
	int nr_stolen;
	int timeouts;		/* server reads that did not complete */
};

#define SERVER_TAG	1000

/* Submit cb on the readers' context; its result, or -EIO after WAIT_SEC. */
static long server_aio(struct fuse_backing *b, struct iocb *cb)
{
	struct iocb *list = cb;
	struct io_event ev;

	if (sys_io_submit(b->ctx, 1, &list) != 1)
		return -errno;
	for (;;) {
		if (aio_reap(b->ctx, &ev, 1, WAIT_SEC) != 1) {
			b->timeouts++;
			return -EIO;
		}
		if (ev.data == cb->aio_data)
			return ev.res;
		pthread_mutex_lock(&b->lock);
		if (b->nr_stolen < NREADERS)
			b->stolen[b->nr_stolen++] = ev;
		pthread_mutex_unlock(&b->lock);
	}
}

/*
 * An fdatasync of the backing file, then a read of it, both through AIO
 * on the readers' context.  The fdatasync always goes to a worker (the
 * read may complete inline if cached), so the server depends on a
 * worker whatever the page cache holds.
 */
static long fuse_read_backing(void *arg, int idx, char *buf, size_t len,
			      off_t off)
{
	struct fuse_backing *b = arg;
	struct iocb cb;
	long ret;

	/* After one timeout the test has failed; do not wait again. */
	if (b->timeouts)
		return -EIO;
	memset(&cb, 0, sizeof(cb));
	cb.aio_lio_opcode = IOCB_CMD_FDSYNC;
	cb.aio_fildes = b->files->fds[idx];
	cb.aio_data = SERVER_TAG + idx;
	ret = server_aio(b, &cb);
	if (ret)
		return ret < 0 ? ret : -EIO;
	aio_prep_rw(&cb, IOCB_CMD_PREAD, b->files->fds[idx], buf, len, off,
		    SERVER_TAG + idx);
	return server_aio(b, &cb);
}

/*
 * NREADERS buffered reads of NREADERS files of a FUSE filesystem whose
 * server is a thread of this process.  FUSE files have no FMODE_NOWAIT, so
 * every read goes to a worker, which waits in FUSE for the server; the
 * server answers each READ with an fdatasync and a read of the backing
 * file through AIO on the same context, and the fdatasync needs a worker
 * when all of them wait on it.
 * The readers must get the backing files' data.  With the offload off
 * the readers run inside io_submit() one at a time and the server's reads
 * inline: stock, which the test expects there too.
 */
TEST_F_TIMEOUT(dl, fuse_server_uses_aio, AIO_DEV_TEST_TIMEOUT)
{
	static struct fuse_backing b;
	static struct iocb cb[NREADERS];
	struct iocb *list[NREADERS];
	struct io_event ev[NREADERS];
	long long grow0, grow1;
	int i, ret, offload, nr_stolen, answered = 0, polls;
	long reaped = 0;
	char path[128];
	const char *skip;

	offload = aio_offload_enabled();
	skip = setup_files(_metadata, &self->f, variant->fstype);
	if (skip)
		SKIP(return, "%s", skip);
	memset(&b, 0, sizeof(b));
	b.files = &self->f;
	pthread_mutex_init(&b.lock, NULL);
	ASSERT_EQ(0, sys_io_setup(4 * NREADERS, &b.ctx));
	ret = aio_fuse_start(&self->fuse, NREADERS, BLK, fuse_read_backing,
			     &b);
	if (ret == -ENOENT || ret == -ENODEV)
		SKIP(return, "no FUSE: %s", strerror(-ret));
	ASSERT_EQ(0, ret) TH_LOG("FUSE mount: %s", strerror(-ret));

	for (i = 0; i < NREADERS; i++) {
		aio_fuse_path(&self->fuse, i, path, sizeof(path));
		/* Not self->f.fds: those are the backing files. */
		ret = open(path, O_RDONLY);
		ASSERT_LE(0, ret) TH_LOG("open %s: %s", path, strerror(errno));
		aio_prep_rw(&cb[i], IOCB_CMD_PREAD, ret,
			    self->f.buf + (NREADERS + 1 + i) * BLK, BLK, 0, i);
		list[i] = &cb[i];
	}
	memset(self->f.buf + (NREADERS + 1) * BLK, POISON, NREADERS * BLK);

	grow0 = root_stat("stall_grow");
	ASSERT_EQ(NREADERS, sys_io_submit(b.ctx, NREADERS, list));
	/* The server answered every READ (a hang guard, under the harness's). */
	for (polls = 0; polls < 4 * WAIT_SEC * 100; polls++) {
		answered = __atomic_load_n(&self->fuse.nr_read,
					   __ATOMIC_ACQUIRE);
		if (answered >= NREADERS)
			break;
		usleep(10000);
	}
	grow1 = root_stat("stall_grow");
	/* The server reaps no more: what it took is in b.stolen. */
	aio_fuse_stop(&self->fuse);
	nr_stolen = b.nr_stolen;
	memcpy(ev, b.stolen, nr_stolen * sizeof(ev[0]));
	if (nr_stolen < NREADERS)
		reaped = aio_reap(b.ctx, ev + nr_stolen, NREADERS - nr_stolen,
				  AIO_REAP_TIMEOUT_SEC);

	EXPECT_EQ(NREADERS, answered);
	EXPECT_EQ(0, b.timeouts)
		TH_LOG("the server's AIO requests did not complete in %d s",
		       WAIT_SEC);
	ASSERT_EQ(NREADERS, nr_stolen + reaped);
	for (i = 0; i < NREADERS; i++) {
		int k = ev[i].data;

		ASSERT_LE(0, k);
		ASSERT_GT(NREADERS, k);
		EXPECT_EQ(BLK, ev[i].res) TH_LOG("reader %d: %lld", k,
						 (long long)ev[i].res);
		EXPECT_EQ(-1, aio_verify_pattern(self->f.buf +
						 (NREADERS + 1 + k) * BLK,
						 BLK, self->f.seed[k], 0))
			TH_LOG("reader %d: wrong data", k);
	}
	if (offload == 1 && grow0 >= 0)
		EXPECT_LT(grow0, grow1) TH_LOG("aio.stat stall_grow");
	TH_LOG("aio.stat stall_grow %lld -> %lld", grow0, grow1);
	for (i = 0; i < NREADERS; i++)
		close(cb[i].aio_fildes);
	ASSERT_EQ(0, sys_io_destroy(b.ctx));
}

/* What a _killed child tells the parent before it submits. */
struct kill_report {
	int err;		/* 0, or -errno of its setup */
	char fuse_dir[64];
	unsigned int fuse_conn;
};

static void report(int fd, int err, const struct aio_fuse *f)
{
	struct kill_report r = { .err = err };

	if (f) {
		snprintf(r.fuse_dir, sizeof(r.fuse_dir), "%s", f->dir);
		r.fuse_conn = f->conn;
	}
	if (write(fd, &r, sizeof(r)) != sizeof(r))
		_exit(3);
}

/*
 * The child: mount a FUSE filesystem served by a thread of its own, open
 * f0 for writing, stop the server, and write a block to f0 through AIO.
 * The write goes to a worker (FUSE has no FMODE_NOWAIT; stock runs it in
 * io_submit()), which waits in FUSE for the server that will never read
 * it.
 */
static void fuse_killed_child(int fd, char *buf)
{
	struct aio_fuse f;
	struct iocb cb, *list = &cb;
	aio_context_t ctx = 0;
	char path[128];
	int ret, wfd;

	ret = aio_fuse_start(&f, 1, BLK, NULL, NULL);
	if (ret) {
		report(fd, ret, NULL);
		_exit(0);
	}
	aio_fuse_path(&f, 0, path, sizeof(path));
	wfd = open(path, O_WRONLY);
	if (wfd < 0 || sys_io_setup(8, &ctx)) {
		report(fd, -errno, &f);
		_exit(0);
	}
	aio_fuse_hold(&f);
	aio_prep_rw(&cb, IOCB_CMD_PWRITE, wfd, buf, BLK, 0, 1);
	report(fd, 0, &f);
	/* Stock blocks here; the parent kills either way. */
	sys_io_submit(ctx, 1, &list);
	pause();
	_exit(0);
}

/*
 * SIGKILL once the write waits in FUSE (the connection's "waiting" count
 * says so); the child must be reaped within KILL_WAIT_SEC.  With the
 * offload the worker's write came back -EINTR and, the process exiting,
 * was run again; that run must fail (the connection is aborted once every
 * task of the process has closed its files, the workers included) and be
 * counted in aio.stat exit_failed.
 */
TEST_F_TIMEOUT(dl, fuse_server_killed, AIO_DEV_TEST_TIMEOUT)
{
	struct kill_report r = { .err = -EIO };
	long long failed0, failed1;
	int pipefd[2], status = 0, polls, offload;
	pid_t pid;
	long waiting = -1;
	bool reaped;

	offload = aio_offload_enabled();
	if (access("/dev/fuse", F_OK))
		SKIP(return, "no /dev/fuse");
	failed0 = root_stat("exit_failed");
	aio_fill_pattern(self->f.buf, BLK, aio_new_seed(), 0);
	ASSERT_EQ(0, pipe(pipefd));
	/* Not straight into self: the fixture is shared with the child. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(pipefd[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fuse_killed_child(pipefd[1], self->f.buf);
	}
	self->child = pid;
	close(pipefd[1]);
	ASSERT_EQ((ssize_t)sizeof(r), read(pipefd[0], &r, sizeof(r)));
	close(pipefd[0]);
	if (r.fuse_dir[0]) {
		memcpy(self->fuse.dir, r.fuse_dir, sizeof(r.fuse_dir));
		self->fuse.conn = r.fuse_conn;
	}
	ASSERT_EQ(0, r.err) TH_LOG("child's FUSE setup: %s",
				   strerror(-r.err));

	for (polls = 0; polls < WAIT_SEC * 100; polls++) {
		waiting = aio_fuse_waiting(&self->fuse);
		if (waiting != 0)
			break;
		usleep(10000);
	}
	ASSERT_EQ(1, waiting) TH_LOG("FUSE waiting: %ld", waiting);

	reaped = kill_and_reap(self->child, &status);
	ASSERT_TRUE(reaped)
		TH_LOG("child still there %d s after SIGKILL", KILL_WAIT_SEC);
	self->child = -1;
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	umount2(self->fuse.dir, MNT_DETACH);
	rmdir(self->fuse.dir);
	self->fuse.dir[0] = '\0';
	failed1 = root_stat("exit_failed");
	if (offload == 1 && failed0 >= 0)
		EXPECT_LT(failed0, failed1) TH_LOG("aio.stat exit_failed");
	TH_LOG("aio.stat exit_failed %lld -> %lld", failed0, failed1);
}

/*
 * The child: register a userfaultfd region nobody will fill and write a
 * block of it to r0 through AIO, buffered.  The copy from the region
 * waits in a fault in whatever task runs the write (a worker, or on XFS
 * possibly the child in its NOWAIT try).  The parent kills it once the
 * fault is seen.
 */
static void uffd_killed_child(int fd, const char *path)
{
	struct iocb cb, *list = &cb;
	aio_context_t ctx = 0;
	struct aio_uffd u;
	int ret, wfd;

	ret = aio_uffd_create(&u, BLK);
	if (ret) {
		report(fd, ret, NULL);
		_exit(0);
	}
	wfd = open(path, O_WRONLY);
	if (wfd < 0 || sys_io_setup(8, &ctx)) {
		report(fd, -errno, NULL);
		_exit(0);
	}
	aio_prep_rw(&cb, IOCB_CMD_PWRITE, wfd, u.region, BLK, 0, 1);
	if (fork() == 0) {
		/* Another process watches the faults: the submitter may block. */
		report(fd, aio_uffd_wait_fault(&u, WAIT_SEC * 1000) ?
			   0 : -ETIMEDOUT, NULL);
		_exit(0);
	}
	/* The userfaultfd stays open: it goes with the process's files. */
	sys_io_submit(ctx, 1, &list);
	pause();
	_exit(0);
}

/*
 * SIGKILL once the write's copy waits in the fault; the child must be
 * reaped within KILL_WAIT_SEC.  With the offload the write a worker ran is
 * run again after the kill; its second fault must not wait for ever: the
 * userfaultfd goes when the last task holding the process's files closes
 * them, and the fault then proceeds without it.  The file then holds
 * either its old block or zeros (the unfilled anonymous page).
 */
TEST_F_TIMEOUT(dl, uffd_handler_killed, AIO_DEV_TEST_TIMEOUT)
{
	struct kill_report r = { .err = -EIO };
	int pipefd[2], status = 0, ret;
	struct aio_uffd u;
	char path[128];
	const char *skip;
	bool reaped;
	pid_t pid;

	skip = setup_files(_metadata, &self->f, variant->fstype);
	if (skip)
		SKIP(return, "%s", skip);
	ret = aio_uffd_create(&u, BLK);
	if (ret)
		SKIP(return, "userfaultfd: %s", strerror(-ret));
	aio_uffd_destroy(&u);
	snprintf(path, sizeof(path), "%s/r0", self->f.mnt);
	ASSERT_EQ(0, pipe(pipefd));
	/* Not straight into self: the fixture is shared with the child. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(pipefd[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		uffd_killed_child(pipefd[1], path);
	}
	self->child = pid;
	close(pipefd[1]);
	ASSERT_EQ((ssize_t)sizeof(r), read(pipefd[0], &r, sizeof(r)));
	close(pipefd[0]);
	ASSERT_EQ(0, r.err) TH_LOG("child: %s", strerror(-r.err));

	reaped = kill_and_reap(self->child, &status);
	ASSERT_TRUE(reaped)
		TH_LOG("child still there %d s after SIGKILL", KILL_WAIT_SEC);
	self->child = -1;
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	/* The write ran to the end, with zeros, or not at all. */
	memset(self->f.buf, POISON, BLK);
	ASSERT_EQ(BLK, pread(self->f.fds[0], self->f.buf, BLK, 0));
	if (aio_verify_pattern(self->f.buf, BLK, self->f.seed[0], 0) != -1) {
		int i;

		for (i = 0; i < BLK; i++)
			ASSERT_EQ(0, self->f.buf[i]) TH_LOG("byte %d", i);
	}
}

TEST_HARNESS_MAIN
