// SPDX-License-Identifier: GPL-2.0
/*
 * What happens to accepted AIO requests when their context or their
 * process goes away.  Stock AIO runs a request that blocks inside
 * io_submit(), and exit_aio() (exit, exec) and io_destroy() wait for what
 * is in flight, so every write io_submit() accepted is in the file by the
 * time the process can be reaped, execve() returns or io_destroy()
 * returns.  With the offload the same must hold for requests that workers
 * still have queued or running: only io_cancel() cancels.
 *
 * A child submits NREC O_APPEND writes to one file and NREC writes at
 * fixed offsets to another, and leaves without reaping, in one of these
 * ways: exit_group() (_exit()), SIGKILL right after io_submit() returned,
 * execve() (the new image checks the files), exit(2) of its only user
 * thread, or io_destroy() (the child checks the files when it returns).
 * The parent checks the files right after waitpid() returns: a drain
 * that went on after the process was reaped would fail here.
 *
 *   buffered  the writes are buffered (ext4 hands them all to workers;
 *             XFS may do some inline).  With the offload off this is
 *             stock's behaviour, which the test also expects there.
 *   frozen    the filesystem is frozen before the child submits, so every
 *             write is queued for a worker (the fixed-offset ones are
 *             O_DIRECT) and the child leaves while they wait.  The child
 *             then must not be reapable (nor its execve() return, nor
 *             io_destroy()) before the thaw.  Needs the offload.
 *
 * Every case runs on ext4 and XFS.
 *
 * Work the process itself must do for its own requests (no new deadlock)
 * is in aio_deadlock.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#define BLK		4096
#define NREC		10
#define FILE_LEN	(NREC * BLK)
#define POISON		0xa5

/* mkfs.xfs refuses devices smaller than this. */
#define XFS_MIN_SIZE	(300ULL << 20)

/* Polls of 1 ms for a state of the child: 60 s, a hang guard only. */
#define MAX_POLLS	60000
/* Polls in a row the child must be seen in D: waiting, not passing by. */
#define D_STREAK	50

#define OFFLOAD_SYSCTL	"/proc/sys/fs/aio-offload"
#define ROOT_STAT	"/sys/fs/cgroup/aio.stat"

enum leave {
	LEAVE_EXIT,		/* _exit(): exit_group() */
	LEAVE_KILL,		/* SIGKILL right after io_submit() returned */
	LEAVE_EXEC,		/* execve() of a shell that cmp's the files */
	LEAVE_THREAD_EXIT,	/* exit(2) of the only user thread */
	LEAVE_DESTROY,		/* io_destroy(), then the child checks */
};

/* What the child reports through the pipe before it leaves. */
struct child_report {
	long ret;	/* io_submit() */
	int err;
	long nvcsw;	/* its voluntary context switches inside it */
};

struct life_state {
	pid_t owner;
	char mnt[64];
	char fixed[96], append[96];		/* written by the child */
	char want_fixed[96], want_append[96];	/* what they must hold */
	int fd_fixed, fd_append;
	bool frozen;
	pid_t child;
	uint64_t seed_old, seed_fixed, seed_append;
	char *buf;
};

FIXTURE(life) {
	struct life_state st;
};

FIXTURE_VARIANT(life) {
	const char *fstype;
};

FIXTURE_VARIANT_ADD(life, ext4) {
	.fstype = "ext4",
};

FIXTURE_VARIANT_ADD(life, xfs) {
	.fstype = "xfs",
};

FIXTURE_SETUP(life)
{
	struct life_state *st = &self->st;

	memset(st, 0, sizeof(*st));
	st->owner = getpid();
	st->fd_fixed = -1;
	st->fd_append = -1;
	st->buf = aio_alloc_buf(2 * FILE_LEN);
	ASSERT_NE(NULL, st->buf);
}

/* _PARENT teardown: see the note in aio_util.h */
FIXTURE_TEARDOWN_PARENT(life)
{
	struct life_state *st = &self->st;

	if (st->frozen && aio_fs_thaw(st->mnt))
		TH_LOG("thaw %s failed", st->mnt);
	if (getpid() == st->owner) {
		if (st->child > 0) {
			kill(st->child, SIGKILL);
			waitpid(st->child, NULL, 0);
		}
		if (st->fd_fixed >= 0)
			close(st->fd_fixed);
		if (st->fd_append >= 0)
			close(st->fd_append);
	}
	if (st->mnt[0] && aio_scratch_umount(st->mnt))
		TH_LOG("umount %s failed: %s", st->mnt, strerror(errno));
}

/* Write a whole file with plain write(2); 0 or -errno. */
static int write_file(const char *path, const char *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, buf, len);
	if (n != (ssize_t)len || fsync(fd)) {
		close(fd);
		return n < 0 ? -errno : -EIO;
	}
	return close(fd) ? -errno : 0;
}

/*
 * Make the filesystem and the files: "fixed" holds the old pattern, the
 * child overwrites all of it; "append" is empty, the child appends NREC
 * records.  want_* hold what they must hold afterwards.  NULL, or why
 * the test skips.
 */
static const char *setup_files(struct __test_metadata *_metadata,
			       struct life_state *st, const char *fstype,
			       bool direct)
{
	static char reason[128];
	uint64_t size;
	int fd, ret;

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

	ret = aio_scratch_mount(aio_dev_path(), fstype, st->mnt,
				sizeof(st->mnt));
	if (ret == AIO_MKFS_NOT_FOUND) {
		snprintf(reason, sizeof(reason), "mkfs.%s not available",
			 fstype);
		return reason;
	}
	ASSERT_EQ(0, ret) TH_LOG("mkfs/mount %s: %d", fstype, ret);

	snprintf(st->fixed, sizeof(st->fixed), "%s/fixed", st->mnt);
	snprintf(st->append, sizeof(st->append), "%s/append", st->mnt);
	snprintf(st->want_fixed, sizeof(st->want_fixed), "%s/want-fixed",
		 st->mnt);
	snprintf(st->want_append, sizeof(st->want_append), "%s/want-append",
		 st->mnt);
	st->seed_old = aio_new_seed();
	st->seed_fixed = aio_new_seed();
	st->seed_append = aio_new_seed();

	aio_fill_pattern(st->buf, FILE_LEN, st->seed_old, 0);
	ASSERT_EQ(0, write_file(st->fixed, st->buf, FILE_LEN));
	ASSERT_EQ(0, write_file(st->append, st->buf, 0));
	aio_fill_pattern(st->buf, FILE_LEN, st->seed_fixed, 0);
	ASSERT_EQ(0, write_file(st->want_fixed, st->buf, FILE_LEN));
	aio_fill_pattern(st->buf + FILE_LEN, FILE_LEN, st->seed_append, 0);
	ASSERT_EQ(0, write_file(st->want_append, st->buf + FILE_LEN,
				FILE_LEN));

	st->fd_fixed = open(st->fixed, O_WRONLY | (direct ? O_DIRECT : 0));
	ASSERT_LE(0, st->fd_fixed);
	st->fd_append = open(st->append, O_WRONLY | O_APPEND);
	ASSERT_LE(0, st->fd_append);
	return NULL;
}

/* Does the file hold exactly NREC blocks of the pattern? */
static bool file_is(const char *path, uint64_t seed, char *buf)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return false;
	memset(buf, POISON, FILE_LEN + 1);
	n = pread(fd, buf, FILE_LEN + 1, 0);
	close(fd);
	return n == FILE_LEN && aio_verify_pattern(buf, FILE_LEN, seed, 0) == -1;
}

/* Blocks of the file holding their record of the pattern. */
static int records_in(const char *path, uint64_t seed, char *buf)
{
	int fd = open(path, O_RDONLY), i, nr = 0;

	if (fd < 0)
		return -1;
	memset(buf, POISON, FILE_LEN);
	if (pread(fd, buf, FILE_LEN, 0) < 0)
		nr = -1;
	close(fd);
	for (i = 0; nr >= 0 && i < NREC; i++)
		if (aio_verify_pattern(buf + i * BLK, BLK, seed,
				       (uint64_t)i * BLK) == -1)
			nr++;
	return nr;
}

/*
 * The child: one context, NREC appends and NREC fixed-offset writes in
 * one io_submit(), the result to wfd, then leave as told.  Only raw
 * syscalls and async-signal-safe calls after fork().
 */
static void child(struct life_state *st, int wfd, enum leave how)
{
	static struct iocb cb[2 * NREC];
	static struct iocb *list[2 * NREC];
	struct child_report rep = { -1, 0, -1 };
	aio_context_t ctx = 0;
	int i;

	if (aio_lock_memory() || sys_io_setup(2 * NREC, &ctx)) {
		rep.err = errno;
		if (write(wfd, &rep, sizeof(rep)) != sizeof(rep))
			_exit(2);
		_exit(1);
	}
	for (i = 0; i < NREC; i++) {
		aio_prep_rw(&cb[2 * i], IOCB_CMD_PWRITE, st->fd_append,
			    st->buf + FILE_LEN + i * BLK, BLK, 0, 2 * i);
		aio_prep_rw(&cb[2 * i + 1], IOCB_CMD_PWRITE, st->fd_fixed,
			    st->buf + i * BLK, BLK, (off_t)i * BLK, 2 * i + 1);
		list[2 * i] = &cb[2 * i];
		list[2 * i + 1] = &cb[2 * i + 1];
	}
	rep.ret = aio_submit_nvcsw(ctx, 2 * NREC, list, &rep.nvcsw);
	rep.err = errno;
	if (write(wfd, &rep, sizeof(rep)) != sizeof(rep))
		_exit(2);

	switch (how) {
	case LEAVE_EXIT:
		_exit(0);
	case LEAVE_KILL:
		raise(SIGKILL);
		_exit(3);
	case LEAVE_EXEC:
		/* The new image sees what the old one's exit left. */
		execl("/bin/sh", "sh", "-c",
		      "cmp -s \"$0\" \"$1\" && cmp -s \"$2\" \"$3\"",
		      st->fixed, st->want_fixed, st->append, st->want_append,
		      (char *)NULL);
		_exit(4);
	case LEAVE_THREAD_EXIT:
		syscall(SYS_exit, 0);
		_exit(5);
	case LEAVE_DESTROY:
		if (sys_io_destroy(ctx))
			_exit(6);
		if (!file_is(st->fixed, st->seed_fixed, st->buf))
			_exit(7);
		_exit(file_is(st->append, st->seed_append, st->buf) ? 0 : 8);
	}
	_exit(9);
}

/* State letter of the child's main thread, 0 if gone. */
static char proc_state(pid_t pid)
{
	char path[64], stat[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (aio_read_file(path, stat, sizeof(stat)))
		return 0;
	p = strrchr(stat, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/*
 * Wait for the child's main thread to be done with its part: gone
 * (zombie) after an exit, or waiting in D (execve() waits for the other
 * threads, io_destroy() for the requests).  True if seen.
 */
static bool main_thread_left(pid_t pid, enum leave how)
{
	bool waits = how == LEAVE_EXEC || how == LEAVE_DESTROY;
	int polls, d = 0;

	for (polls = 0; polls < MAX_POLLS; polls++) {
		char state = proc_state(pid);

		if (!waits && state == 'Z')
			return true;
		d = state == 'D' ? d + 1 : 0;
		if (waits && d >= D_STREAK)
			return true;
		usleep(1000);
	}
	return false;
}

/* waitpid() with a hang guard: a process that never goes fails here. */
static pid_t wait_child(pid_t pid, int *status)
{
	int polls;
	pid_t ret;

	for (polls = 0; polls < MAX_POLLS; polls++) {
		ret = waitpid(pid, status, WNOHANG);
		if (ret)
			return ret;
		usleep(1000);
	}
	return 0;
}

/* "key N" of the root's aio.stat, -1 without it. */
static long long root_stat(const char *key)
{
	return aio_read_key(ROOT_STAT, key);
}

static void leave_with_writes(struct __test_metadata *_metadata,
			      struct life_state *st, const char *fstype,
			      enum leave how, bool frozen)
{
	struct child_report rep = { -1, 0, -1 };
	long long runs_before = root_stat("exit_run"), runs_after;
	bool got_report = false, left = false;
	int pipefd[2], status = 0, offload;
	pid_t reaped_early = -1, pid;
	struct pollfd pfd;
	const char *skip;

	offload = aio_offload_enabled();
	if (frozen && offload != 1)
		SKIP(return, "needs " OFFLOAD_SYSCTL " = 1");
	skip = setup_files(_metadata, st, fstype, frozen);
	if (skip)
		SKIP(return, "%s", skip);
	ASSERT_EQ(0, pipe(pipefd));

	if (frozen) {
		ASSERT_EQ(0, aio_fs_freeze(st->mnt));
		st->frozen = true;
	}
	/* No ASSERT until thawed: the teardown thaws, but log first. */
	pid = fork();
	if (pid == 0) {
		close(pipefd[0]);
		child(st, pipefd[1], how);
	}
	close(pipefd[1]);
	st->child = pid;
	if (pid > 0) {
		pfd.fd = pipefd[0];
		pfd.events = POLLIN;
		/* Hang guard only. */
		if (poll(&pfd, 1, AIO_REAP_TIMEOUT_SEC * 1000) == 1)
			got_report = read(pipefd[0], &rep, sizeof(rep)) ==
				     sizeof(rep);
	}
	close(pipefd[0]);
	if (frozen && got_report) {
		left = main_thread_left(pid, how);
		/* Its writes wait in the workers: it must not be gone. */
		reaped_early = waitpid(pid, &status, WNOHANG);
	}
	if (frozen) {
		EXPECT_EQ(0, aio_fs_thaw(st->mnt));
		st->frozen = false;
	}

	ASSERT_LT(0, pid);
	ASSERT_TRUE(got_report) TH_LOG("no io_submit() result from the child");
	ASSERT_EQ(2 * NREC, rep.ret) TH_LOG("child's io_submit(): %s",
					    strerror(rep.err));
	if (frozen) {
		/* Every write went to a worker, none was done inline. */
		EXPECT_EQ(0, rep.nvcsw);
		EXPECT_TRUE(left) TH_LOG("child's main thread never %s",
					 how == LEAVE_EXEC ||
					 how == LEAVE_DESTROY ?
					 "waited" : "exited");
		EXPECT_EQ(0, reaped_early)
			TH_LOG("reapable while its writes were queued");
	}

	ASSERT_EQ(pid, wait_child(pid, &status))
		TH_LOG("child still there after %d s", MAX_POLLS / 1000);
	st->child = 0;
	/* Right after waitpid(): nothing may land later. */
	EXPECT_EQ(NREC, records_in(st->fixed, st->seed_fixed, st->buf))
		TH_LOG("fixed-offset writes missing");
	EXPECT_EQ(NREC, records_in(st->append, st->seed_append, st->buf))
		TH_LOG("appends missing");
	EXPECT_TRUE(file_is(st->append, st->seed_append, st->buf))
		TH_LOG("appended file is not the %d records in order", NREC);

	if (how == LEAVE_KILL) {
		ASSERT_TRUE(WIFSIGNALED(status)) TH_LOG("status %#x", status);
		EXPECT_EQ(SIGKILL, WTERMSIG(status));
	} else {
		/* exec: cmp's verdict; io_destroy: the child's check. */
		ASSERT_TRUE(WIFEXITED(status)) TH_LOG("status %#x", status);
		EXPECT_EQ(0, WEXITSTATUS(status));
	}

	/* Requests run while the process exited count in aio.stat. */
	runs_after = root_stat("exit_run");
	if (frozen && how != LEAVE_DESTROY && runs_before >= 0)
		EXPECT_LE(runs_before + 1, runs_after);
	TH_LOG("aio.stat exit_run %lld -> %lld", runs_before, runs_after);
}

TEST_F_TIMEOUT(life, buffered_exit, AIO_DEV_TEST_TIMEOUT)
{
	leave_with_writes(_metadata, &self->st, variant->fstype, LEAVE_EXIT, false);
}

TEST_F_TIMEOUT(life, buffered_kill, AIO_DEV_TEST_TIMEOUT)
{
	leave_with_writes(_metadata, &self->st, variant->fstype, LEAVE_KILL, false);
}

TEST_F_TIMEOUT(life, buffered_exec, AIO_DEV_TEST_TIMEOUT)
{
	leave_with_writes(_metadata, &self->st, variant->fstype, LEAVE_EXEC, false);
}

TEST_F_TIMEOUT(life, buffered_thread_exit, AIO_DEV_TEST_TIMEOUT)
{
	leave_with_writes(_metadata, &self->st, variant->fstype, LEAVE_THREAD_EXIT, false);
}

TEST_F_TIMEOUT(life, buffered_destroy, AIO_DEV_TEST_TIMEOUT)
{
	leave_with_writes(_metadata, &self->st, variant->fstype, LEAVE_DESTROY, false);
}

TEST_F_TIMEOUT(life, frozen_exit, AIO_DEV_TEST_TIMEOUT)
{
	leave_with_writes(_metadata, &self->st, variant->fstype, LEAVE_EXIT, true);
}

TEST_F_TIMEOUT(life, frozen_kill, AIO_DEV_TEST_TIMEOUT)
{
	leave_with_writes(_metadata, &self->st, variant->fstype, LEAVE_KILL, true);
}

TEST_F_TIMEOUT(life, frozen_exec, AIO_DEV_TEST_TIMEOUT)
{
	leave_with_writes(_metadata, &self->st, variant->fstype, LEAVE_EXEC, true);
}

TEST_F_TIMEOUT(life, frozen_thread_exit, AIO_DEV_TEST_TIMEOUT)
{
	leave_with_writes(_metadata, &self->st, variant->fstype, LEAVE_THREAD_EXIT, true);
}

TEST_F_TIMEOUT(life, frozen_destroy, AIO_DEV_TEST_TIMEOUT)
{
	leave_with_writes(_metadata, &self->st, variant->fstype, LEAVE_DESTROY, true);
}

TEST_HARNESS_MAIN
