/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A FUSE filesystem served by a thread of the test itself, speaking
 * /dev/fuse directly (no libfuse): a flat root directory of files
 * "f0".."f<n-1>", each of one size, read-only or written to nowhere.
 * What a read returns is up to the test (a callback run by the server
 * thread), so a test can make the server depend on its own process.
 */
#ifndef AIO_FUSE_H
#define AIO_FUSE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Fill buf with up to len bytes of file idx at off: bytes or -errno.
 * Runs on the server thread, one request at a time.
 */
typedef long (*aio_fuse_read_fn)(void *arg, int idx, char *buf, size_t len,
				 off_t off);

struct aio_fuse {
	char dir[64];		/* the mount point, a directory under /tmp */
	unsigned int conn;	/* the connection's number (its s_dev) */
	int devfd;		/* /dev/fuse */
	int ctl[2];		/* a pipe: 'h' to hold, 'q' to quit */
	int nfiles;
	size_t size;
	aio_fuse_read_fn read;
	void *arg;
	pthread_t thread;
	bool running;
	/* Counted by the server thread. */
	int nr_read;		/* READ requests answered */
	int nr_write;		/* WRITE requests answered */
};

/*
 * Mount the filesystem on a new directory under /tmp and start its server
 * thread.  0, or -errno (-ENOENT/-ENODEV: no FUSE in this kernel).
 */
int aio_fuse_start(struct aio_fuse *f, int nfiles, size_t size,
		   aio_fuse_read_fn read, void *arg);

/*
 * Stop serving: the server reads no further request, so requests sent
 * from now on stay pending in the kernel until the connection goes.
 */
void aio_fuse_hold(struct aio_fuse *f);

/* Stop the server thread, detach the mount, close the connection. */
void aio_fuse_stop(struct aio_fuse *f);

/* Path of file idx. */
void aio_fuse_path(const struct aio_fuse *f, int idx, char *buf, size_t len);

/*
 * Requests of this connection the kernel has not finished, from the fuse
 * control filesystem (mounted if it is not); -errno on error.
 */
long aio_fuse_waiting(const struct aio_fuse *f);

/* Abort the connection through the control filesystem: 0 or -errno. */
int aio_fuse_abort(const struct aio_fuse *f);

#endif /* AIO_FUSE_H */
