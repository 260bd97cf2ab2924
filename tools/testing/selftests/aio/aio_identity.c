// SPDX-License-Identifier: GPL-2.0
/*
 * Whose identity a request runs with.  Workers are threads of the process
 * that called io_setup(): its rlimits, cgroups and signal handling.  A
 * submitter that shares the mm but not the thread group (clone(CLONE_VM)
 * without CLONE_THREAD, a vfork() child) can use the context too, but a
 * worker would apply the other process's identity to its requests, so
 * they are issued as stock issues them, in the submitter.
 *
 * clone_vm_rlimit_fsize: such a child, with an RLIMIT_FSIZE lower than
 * the context owner's, writes past its own limit through the owner's
 * context: stock gives -EFBIG (and SIGXFSZ to the child, ignored here);
 * run by a worker with the owner's limit the write would succeed.  On
 * ext4 and XFS, buffered (which the offload hands to a worker whole).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#define BLK		4096
#define LIMIT		(16 * BLK)
#define STACK_SIZE	(256 * 1024)

/* mkfs.xfs refuses devices smaller than this. */
#define XFS_MIN_SIZE	(300ULL << 20)

FIXTURE(ident) {
	pid_t owner;
	char mnt[64];
	int fd;
	aio_context_t ctx;
	char *buf;
};

FIXTURE_VARIANT(ident) {
	const char *fstype;
};

FIXTURE_VARIANT_ADD(ident, ext4) {
	.fstype = "ext4",
};

FIXTURE_VARIANT_ADD(ident, xfs) {
	.fstype = "xfs",
};

FIXTURE_SETUP(ident)
{
	self->owner = getpid();
	self->mnt[0] = '\0';
	self->fd = -1;
	self->ctx = 0;
	self->buf = aio_alloc_buf(BLK);
	ASSERT_NE(NULL, self->buf);
}

/* _PARENT teardown: see the note in aio_util.h */
FIXTURE_TEARDOWN_PARENT(ident)
{
	if (getpid() == self->owner) {
		if (self->ctx)
			sys_io_destroy(self->ctx);
		if (self->fd >= 0)
			close(self->fd);
	}
	if (self->mnt[0] && aio_scratch_umount(self->mnt))
		TH_LOG("umount %s failed: %s", self->mnt, strerror(errno));
}

/* What the CLONE_VM child did, written to memory it shares with us. */
struct vm_child {
	aio_context_t ctx;
	int fd;
	char *buf;
	long submitted;
	long long res;
	int err;
};

static int vm_child_fn(void *arg)
{
	struct vm_child *c = arg;
	struct rlimit rl = { LIMIT, LIMIT };
	struct iocb cb, *list = &cb;
	struct io_event ev;

	/* Its own limit: rlimits are per process (not shared by CLONE_VM). */
	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &rl)) {
		c->err = errno;
		return 1;
	}
	aio_prep_rw(&cb, IOCB_CMD_PWRITE, c->fd, c->buf, BLK, 2 * LIMIT, 1);
	c->submitted = sys_io_submit(c->ctx, 1, &list);
	if (c->submitted != 1) {
		c->err = errno;
		return 1;
	}
	if (aio_reap(c->ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC) != 1) {
		c->err = ETIMEDOUT;
		return 1;
	}
	c->res = ev.res;
	return 0;
}

TEST_F_TIMEOUT(ident, clone_vm_rlimit_fsize, AIO_DEV_TEST_TIMEOUT)
{
	static struct vm_child c;
	char path[sizeof(self->mnt) + 8], *stack;
	struct stat st;
	uint64_t size;
	int ret, status;
	pid_t pid;

	if (!aio_dev_path())
		SKIP(return, "AIO_TEST_DEV not set");
	if (!aio_dev_holds_data())
		SKIP(return, "the device does not store data (null_blk)");
	ret = open(aio_dev_path(), O_RDONLY);
	ASSERT_LE(0, ret);
	ASSERT_EQ(0, aio_dev_size(ret, &size));
	close(ret);
	if (!strcmp(variant->fstype, "xfs") && size < XFS_MIN_SIZE)
		SKIP(return, "device too small for xfs");
	ret = aio_scratch_mount(aio_dev_path(), variant->fstype, self->mnt,
				sizeof(self->mnt));
	if (ret == AIO_MKFS_NOT_FOUND)
		SKIP(return, "mkfs.%s not available", variant->fstype);
	ASSERT_EQ(0, ret);
	snprintf(path, sizeof(path), "%s/f", self->mnt);
	self->fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sys_io_setup(8, &self->ctx));

	memset(&c, 0, sizeof(c));
	c.ctx = self->ctx;
	c.fd = self->fd;
	c.buf = self->buf;
	memset(self->buf, 0x5a, BLK);
	stack = malloc(STACK_SIZE);
	ASSERT_NE(NULL, stack);
	pid = clone(vm_child_fn, stack + STACK_SIZE, CLONE_VM | SIGCHLD, &c);
	ASSERT_LT(0, pid) TH_LOG("clone: %s", strerror(errno));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	free(stack);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child: submitted %ld, %s", c.submitted,
		       strerror(c.err));
	EXPECT_EQ(-EFBIG, c.res)
		TH_LOG("a write past the child's RLIMIT_FSIZE: res %lld",
		       c.res);
	/* Nothing past the child's limit was written. */
	ASSERT_EQ(0, fstat(self->fd, &st));
	EXPECT_EQ(0, st.st_size);
}

TEST_HARNESS_MAIN
