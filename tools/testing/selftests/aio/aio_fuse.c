// SPDX-License-Identifier: GPL-2.0
/*
 * A minimal FUSE server for the AIO selftests; see aio_fuse.h.  It
 * answers INIT, LOOKUP, GETATTR, OPEN (files need no FLUSH), READ, WRITE
 * and RELEASE,
 * and ENOSYS to everything else that expects an answer.  Attributes and
 * entries are valid for an hour, so the kernel asks once.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <linux/fuse.h>

#include "aio_fuse.h"

#define ROOT_ID		FUSE_ROOT_ID
#define FILE_ID0	(FUSE_ROOT_ID + 1)
#define MAX_WRITE	(128 * 1024)
/* The kernel wants room for a whole WRITE and at least 8 KiB. */
#define REQ_BUF		(MAX_WRITE + 4096)
#define VALID_SEC	3600
#define CONN_DIR	"/sys/fs/fuse/connections"

static int reply(struct aio_fuse *f, uint64_t unique, int error,
		 const void *data, size_t len)
{
	struct fuse_out_header out = {
		.len = sizeof(out) + (error ? 0 : len),
		.error = error,
		.unique = unique,
	};
	struct iovec iov[2] = {
		{ &out, sizeof(out) },
		{ (void *)data, error ? 0 : len },
	};

	/* ENOENT: the request was interrupted meanwhile; not our error. */
	if (writev(f->devfd, iov, 2) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

static void fill_attr(const struct aio_fuse *f, uint64_t id,
		      struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = id;
	a->blksize = 4096;
	if (id == ROOT_ID) {
		a->mode = S_IFDIR | 0755;
		a->nlink = 2;
	} else {
		a->mode = S_IFREG | 0644;
		a->nlink = 1;
		a->size = f->size;
		a->blocks = (f->size + 511) / 512;
	}
}

static bool valid_file(const struct aio_fuse *f, uint64_t id)
{
	return id >= FILE_ID0 && id < FILE_ID0 + (uint64_t)f->nfiles;
}

static int do_lookup(struct aio_fuse *f, struct fuse_in_header *in,
		     const char *name)
{
	struct fuse_entry_out e = { 0 };
	char *end;
	long idx;

	if (in->nodeid != ROOT_ID || name[0] != 'f')
		return reply(f, in->unique, -ENOENT, NULL, 0);
	idx = strtol(name + 1, &end, 10);
	if (*end || end == name + 1 || idx < 0 || idx >= f->nfiles)
		return reply(f, in->unique, -ENOENT, NULL, 0);
	e.nodeid = FILE_ID0 + idx;
	e.entry_valid = VALID_SEC;
	e.attr_valid = VALID_SEC;
	fill_attr(f, e.nodeid, &e.attr);
	return reply(f, in->unique, 0, &e, sizeof(e));
}

static int do_read(struct aio_fuse *f, struct fuse_in_header *in,
		   const struct fuse_read_in *rd)
{
	size_t len = rd->size;
	char *buf;
	long ret;
	int err;

	if (!valid_file(f, in->nodeid))
		return reply(f, in->unique, -EBADF, NULL, 0);
	if (rd->offset >= f->size)
		len = 0;
	else if (len > f->size - rd->offset)
		len = f->size - rd->offset;
	/* Page aligned: the callback may read into it with O_DIRECT. */
	if (posix_memalign((void **)&buf, 4096, len ? len : 1))
		return reply(f, in->unique, -ENOMEM, NULL, 0);
	ret = len ? f->read(f->arg, in->nodeid - FILE_ID0, buf, len,
			    rd->offset) : 0;
	err = reply(f, in->unique, ret < 0 ? ret : 0, buf, ret < 0 ? 0 : ret);
	free(buf);
	__atomic_add_fetch(&f->nr_read, 1, __ATOMIC_RELEASE);
	return err;
}

/* One request; -errno only if the connection is unusable. */
static int handle(struct aio_fuse *f, char *req, size_t n)
{
	struct fuse_in_header *in = (struct fuse_in_header *)req;
	void *arg = req + sizeof(*in);
	struct fuse_attr_out attr = { 0 };
	struct fuse_init_out init = { 0 };
	struct fuse_open_out open = { 0 };
	struct fuse_write_out wr = { 0 };
	const struct fuse_init_in *ii;

	if (n < sizeof(*in) || in->len != n)
		return -EPROTO;
	switch (in->opcode) {
	case FUSE_INIT:
		ii = arg;
		init.major = FUSE_KERNEL_VERSION;
		init.minor = FUSE_KERNEL_MINOR_VERSION;
		init.max_readahead = ii->max_readahead;
		/*
		 * No FUSE_ASYNC_READ: a read waits in its own task.
		 * KILLPRIV_V2 (SB_NOSEC): a write goes straight to a WRITE,
		 * without asking for security.capability first.
		 */
		init.flags = FUSE_HANDLE_KILLPRIV_V2;
		init.max_background = 16;
		init.congestion_threshold = 12;
		init.max_write = MAX_WRITE;
		init.time_gran = 1;
		return reply(f, in->unique, 0, &init, sizeof(init));
	case FUSE_LOOKUP:
		return do_lookup(f, in, arg);
	case FUSE_GETATTR:
		if (in->nodeid != ROOT_ID && !valid_file(f, in->nodeid))
			return reply(f, in->unique, -ENOENT, NULL, 0);
		attr.attr_valid = VALID_SEC;
		fill_attr(f, in->nodeid, &attr.attr);
		return reply(f, in->unique, 0, &attr, sizeof(attr));
	case FUSE_OPEN:
		if (!valid_file(f, in->nodeid))
			return reply(f, in->unique, -EISDIR, NULL, 0);
		open.fh = in->nodeid;
		/*
		 * No FLUSH at close: a process killed while its own server
		 * holds would otherwise wait in close() at exit for ever
		 * (stock too), as a FLUSH has to be answered.
		 */
		open.open_flags = FOPEN_NOFLUSH;
		return reply(f, in->unique, 0, &open, sizeof(open));
	case FUSE_READ:
		return do_read(f, in, arg);
	case FUSE_WRITE:
		/* Accepted and dropped: no test reads a FUSE file it wrote. */
		wr.size = ((const struct fuse_write_in *)arg)->size;
		__atomic_add_fetch(&f->nr_write, 1, __ATOMIC_RELEASE);
		return reply(f, in->unique, 0, &wr, sizeof(wr));
	case FUSE_RELEASE:
		return reply(f, in->unique, 0, NULL, 0);
	case FUSE_GETXATTR:
	case FUSE_LISTXATTR:
		return reply(f, in->unique, -ENODATA, NULL, 0);
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT:
		/* No answer expected (an interrupted request ends anyway). */
		return 0;
	default:
		/* Nothing the tests do needs the others. */
		return reply(f, in->unique, -EOPNOTSUPP, NULL, 0);
	}
}

static void *serve(void *p)
{
	struct aio_fuse *f = p;
	struct pollfd pfd[2] = {
		{ .fd = f->devfd, .events = POLLIN },
		{ .fd = f->ctl[0], .events = POLLIN },
	};
	char *req = malloc(REQ_BUF), c;
	ssize_t n;

	while (req) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents) {
			if (read(f->ctl[0], &c, 1) != 1 || c == 'q')
				break;
			/* Hold: wait for the quit, reading no request. */
			while (read(f->ctl[0], &c, 1) == 1 && c != 'q')
				;
			break;
		}
		if (!(pfd[0].revents & POLLIN))
			break;
		n = read(f->devfd, req, REQ_BUF);
		if (n < 0) {
			/* ENOENT: a request was interrupted before we read it. */
			if (errno == EINTR || errno == EAGAIN || errno == ENOENT)
				continue;
			break;		/* ENODEV: unmounted or aborted */
		}
		if (handle(f, req, n))
			break;
	}
	free(req);
	return NULL;
}

int aio_fuse_start(struct aio_fuse *f, int nfiles, size_t size,
		   aio_fuse_read_fn read, void *arg)
{
	static const char template[] = "/tmp/aio-fuse-XXXXXX";
	char opts[128];
	struct stat st;
	int ret;

	memset(f, 0, sizeof(*f));
	f->ctl[0] = -1;
	f->ctl[1] = -1;
	f->nfiles = nfiles;
	f->size = size;
	f->read = read;
	f->arg = arg;
	f->devfd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (f->devfd < 0)
		return -errno;
	memcpy(f->dir, template, sizeof(template));
	if (!mkdtemp(f->dir)) {
		ret = -errno;
		goto close_dev;
	}
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40000,user_id=0,group_id=0", f->devfd);
	if (mount("aio-fuse", f->dir, "fuse", MS_NOSUID | MS_NODEV, opts)) {
		ret = -errno;
		goto rmdir;
	}
	if (pipe2(f->ctl, O_CLOEXEC)) {
		ret = -errno;
		goto umount;
	}
	ret = -pthread_create(&f->thread, NULL, serve, f);
	if (ret)
		goto close_pipe;
	f->running = true;
	/*
	 * The connection is named after the kernel's encoding of s_dev.
	 * Asked now, while the server answers: a stat() of the mount once
	 * it holds would wait for it for ever.
	 */
	if (stat(f->dir, &st)) {
		ret = -errno;
		aio_fuse_stop(f);
		return ret;
	}
	f->conn = (major(st.st_dev) << 20) | minor(st.st_dev);
	return 0;

close_pipe:
	close(f->ctl[0]);
	close(f->ctl[1]);
umount:
	umount2(f->dir, MNT_DETACH);
rmdir:
	rmdir(f->dir);
close_dev:
	close(f->devfd);
	f->dir[0] = '\0';
	return ret;
}

void aio_fuse_hold(struct aio_fuse *f)
{
	if (write(f->ctl[1], "h", 1) != 1)
		perror("aio_fuse_hold");
}

void aio_fuse_stop(struct aio_fuse *f)
{
	if (!f->running)
		return;
	if (write(f->ctl[1], "q", 1) != 1)
		perror("aio_fuse_stop");
	pthread_join(f->thread, NULL);
	f->running = false;
	/* Closing the last /dev/fuse fd aborts what is still pending. */
	umount2(f->dir, MNT_DETACH);
	close(f->devfd);
	close(f->ctl[0]);
	close(f->ctl[1]);
	rmdir(f->dir);
}

void aio_fuse_path(const struct aio_fuse *f, int idx, char *buf, size_t len)
{
	snprintf(buf, len, "%s/f%d", f->dir, idx);
}

/* The control directory of the connection, mounting the control fs. */
static int conn_dir(const struct aio_fuse *f, char *buf, size_t len)
{
	snprintf(buf, len, CONN_DIR "/%u", f->conn);
	if (access(buf, F_OK) &&
	    mount("fusectl", CONN_DIR, "fusectl", 0, NULL) && errno != EBUSY)
		return -errno;
	return access(buf, F_OK) ? -errno : 0;
}

long aio_fuse_waiting(const struct aio_fuse *f)
{
	char path[128], val[32];
	FILE *fp;
	long n;
	int ret;

	ret = conn_dir(f, path, sizeof(path) - 8);
	if (ret)
		return ret;
	strcat(path, "/waiting");
	fp = fopen(path, "r");
	if (!fp)
		return -errno;
	n = fgets(val, sizeof(val), fp) ? strtol(val, NULL, 10) : -EIO;
	fclose(fp);
	return n;
}

int aio_fuse_abort(const struct aio_fuse *f)
{
	char path[128];
	int fd, ret;

	ret = conn_dir(f, path, sizeof(path) - 8);
	if (ret)
		return ret;
	strcat(path, "/abort");
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ret = write(fd, "1", 1) == 1 ? 0 : -errno;
	close(fd);
	return ret;
}
