/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the native AIO selftests: raw syscall wrappers, sleep
 * measurement, data patterns, event reaping, scratch device and scratch
 * filesystem handling.
 */
#ifndef AIO_UTIL_H
#define AIO_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <linux/aio_abi.h>
#include <linux/ioctl.h>

/*
 * Hang guard for reaping, not a performance expectation: every I/O issued
 * by these tests finishes in milliseconds unless something is broken.
 */
#define AIO_REAP_TIMEOUT_SEC	60

/*
 * Fixtures that must undo global state (mounts, frozen filesystems, sysfs
 * settings) use FIXTURE_TEARDOWN_PARENT().  In this kselftest_harness.h a
 * failed ASSERT longjmp()s back into the TEST_F() wrapper, whose "child"
 * variable gcc -O2 may keep in a register that longjmp() restores to its
 * pre-fork value: the test process then takes the parent's path and skips
 * a plain FIXTURE_TEARDOWN().  A _PARENT teardown runs exactly once either
 * way, in the test process or in its parent, so such teardowns record the
 * owner pid and touch fds, memory and AIO contexts only when getpid()
 * matches; everything else they do must work from either process.
 */

/*
 * Per-test harness timeout for tests doing device or filesystem I/O; a
 * slower kernel (make check-debug) builds the tests with a larger one.
 */
/* ext4's extent pin, for headers older than the kernel under test. */
#ifndef EXT4_IOC_PIN_EXTENTS
#define EXT4_IOC_PIN_EXTENTS		_IO('f', 45)
#define EXT4_IOC_UNPIN_EXTENTS		_IO('f', 46)
#endif
#ifndef EXT4_STATE_FLAG_EXT_PINNED
#define EXT4_STATE_FLAG_EXT_PINNED	0x00000010
#endif

#ifndef AIO_DEV_TEST_TIMEOUT
#define AIO_DEV_TEST_TIMEOUT	300
#endif

/* aio_run() exit status when the program could not be executed. */
#define AIO_MKFS_NOT_FOUND	127

#define AIO_RING_MAGIC_VALUE	0xa10a10a1

/*
 * Header of the completion ring that io_setup() maps into the process; the
 * aio_context_t is its user address.  Not part of the uapi headers, but
 * its layout is ABI (libaio reads it to reap events in userspace).
 */
struct aio_ring_hdr {
	unsigned int	id;
	unsigned int	nr;
	unsigned int	head;
	unsigned int	tail;
	unsigned int	magic;
	unsigned int	compat_features;
	unsigned int	incompat_features;
	unsigned int	header_length;
	struct io_event	events[];
};

static inline struct aio_ring_hdr *aio_ring(aio_context_t ctx)
{
	return (struct aio_ring_hdr *)(uintptr_t)ctx;
}

/* Raw syscalls; like libc they return -1 and set errno on failure. */
int sys_io_setup(unsigned int nr_events, aio_context_t *ctx);
int sys_io_destroy(aio_context_t ctx);
long sys_io_submit(aio_context_t ctx, long nr, struct iocb **iocbs);
long sys_io_getevents(aio_context_t ctx, long min_nr, long nr,
		      struct io_event *events, struct timespec *timeout);
int sys_io_cancel(aio_context_t ctx, struct iocb *iocb,
		  struct io_event *result);

/* iocb builders; they zero the iocb first so no stray field is set. */
void aio_prep_rw(struct iocb *cb, int opcode, int fd, void *buf,
		 size_t len, off_t off, uint64_t data);
void aio_prep_rwv(struct iocb *cb, int opcode, int fd, struct iovec *iov,
		  int iovcnt, off_t off, uint64_t data);
void aio_prep_poll(struct iocb *cb, int fd, short events, uint64_t data);

/* mlockall() so that faults on our own text/data are not counted as sleeps. */
int aio_lock_memory(void);

/* Voluntary context switches of the calling thread so far, -1 on error. */
long aio_thread_nvcsw(void);

/*
 * io_submit() that also reports in *nvcsw how many times the calling thread
 * voluntarily gave up the CPU (i.e. slept) inside the call.  errno is
 * preserved from io_submit().
 */
long aio_submit_nvcsw(aio_context_t ctx, long nr, struct iocb **iocbs,
		      long *nvcsw);

/*
 * Data patterns: every 8-byte word is a function of the seed and its
 * absolute byte offset (the device/file offset the buffer maps to), so
 * zeroes, stale data from another run and data landing at the wrong offset
 * all fail verification.
 */
uint64_t aio_new_seed(void);
void aio_fill_pattern(void *buf, size_t len, uint64_t seed, uint64_t off);
/* Returns -1 on match, else the first mismatching offset within buf. */
ssize_t aio_verify_pattern(const void *buf, size_t len, uint64_t seed,
			   uint64_t off);

/* Page aligned (hence O_DIRECT capable) anonymous buffers. */
void *aio_alloc_buf(size_t len);
void aio_free_buf(void *buf, size_t len);

/*
 * Wait until exactly n events have been reaped into ev or timeout_sec has
 * passed.  Returns how many arrived, or -1 if io_getevents() failed before
 * any did.
 */
long aio_reap(aio_context_t ctx, struct io_event *ev, long n, int timeout_sec);

/* Scratch device: AIO_TEST_DEV / AIO_TEST_CLASS from the environment. */
const char *aio_dev_path(void);
const char *aio_dev_class(void);
bool aio_dev_holds_data(void);
bool aio_on_rig(void);
int aio_dev_size(int fd, uint64_t *size);
int aio_dev_lbs(int fd, int *lbs);
/*
 * Whether the scratch device can serve a test that needs class @cls
 * (NULL: any class whose device stores data) and at least @min_bytes:
 * 0 if so, 1 if not (*why: a reason to SKIP with), -errno if it cannot
 * be opened or sized (a broken setup, for the caller to fail on).  Its
 * size goes to *size.
 */
int aio_dev_fit(const char *cls, uint64_t min_bytes, uint64_t *size,
		const char **why);

/*
 * Stale data: aio_fill_stale() writes the first @len bytes of block
 * device @dev so that every 4 KiB block starts with AIO_STALE_TAG and its
 * block number (the rest 0x5a); @len is a multiple of 4 KiB (O_DIRECT).
 * A file block that reads back with the
 * tag exposes what was on the device before (aio_is_stale()): a write's
 * extent marked written before its data landed, or never zeroed.
 * 0 or -errno.
 */
#define AIO_STALE_TAG	"STALEBLK"
#define AIO_STALE_BLK	4096
int aio_fill_stale(const char *dev, uint64_t len);
bool aio_is_stale(const void *block);

/*
 * Run a program (found in PATH, /usr/sbin or /sbin), output discarded:
 * its exit status (AIO_MKFS_NOT_FOUND if it could not be run), -errno.
 */
int aio_run(char * const argv[]);
/*
 * mkfs the device: 0 on success, the mkfs exit status if it failed
 * (AIO_MKFS_NOT_FOUND if it could not be run), -errno on other errors.
 */
int aio_mkfs(const char *dev, const char *fstype);
/* dmsetup create NAME --table TABLE / dmsetup remove: as aio_run(). */
int aio_dm_create(const char *name, const char *table);
int aio_dm_remove(const char *name);
/* A dm-linear NAME of @len bytes of @dev from byte @start: as aio_run(). */
/*
 * A file of @nblocks one-block extents of @blk bytes at @path: the even
 * blocks written with @seed's pattern (through @buf, @blk bytes), the odd
 * ones fallocated (unwritten), then @hole_blocks of hole within i_size;
 * fsync()ed.  0 or -errno.
 */
int aio_make_frag_file(const char *path, int nblocks, int hole_blocks,
		       size_t blk, uint64_t seed, void *buf);
/*
 * Whether [@off, @off + @len) starts in an unwritten extent (FIEMAP,
 * written back first): 1 or 0, or -1 if no extent maps @off.
 */
int aio_unwritten(int fd, off_t off, size_t len);
/*
 * ext4: the first byte below @end that the extent status cache does not
 * map (EXT4_IOC_GET_ES_CACHE from 0), or @end if it maps all of [0, @end).
 */
off_t aio_es_covered(int fd, off_t end);
/* @n distinct offsets of blocks of parity @odd among @nblocks, random. */
void aio_pick_blocks(off_t *offs, int n, int nblocks, bool odd, size_t blk);
int aio_dm_linear(const char *name, const char *dev, uint64_t start,
		  uint64_t len);
/*
 * @fn(@arg) in a forked child, which exits with what it returns: that
 * status (0-254), or -1 if the child could not run or it returned 255
 * (its own setup failed) or died.
 */
int aio_in_child(int (*fn)(void *), void *arg);
/*
 * A filesystem of @fstype (ext4 or xfs) on dm-linear @fs_name, the start
 * of AIO_TEST_DEV, with its journal (ext4) or log (XFS) on dm-delay
 * @log_name, the last @log_len bytes, each I/O held @delay_ms; mounted
 * on a new directory (aio_mount_tmp()).  *@made gets AIO_DM_FS once
 * @fs_name exists, AIO_DM_LOG once @log_name does, for the caller to
 * remove.  0, -ENOSPC if the device is too small, -EINVAL for another
 * @fstype or a @log_len under 16 MiB, a tool's exit status
 * (AIO_MKFS_NOT_FOUND if one is missing), or -errno.
 */
#define AIO_DM_FS	1
#define AIO_DM_LOG	2
int aio_slow_log_fs(const char *fstype, const char *fs_name,
		    const char *log_name, uint64_t log_len, int delay_ms,
		    char *mnt, size_t mntlen, int *made);
/*
 * Mount an existing filesystem on a new directory under /tmp (written to
 * mnt), with mount options opts (or NULL): 0 or -errno.
 */
int aio_mount_tmp(const char *dev, const char *fstype, const char *opts,
		  char *mnt, size_t mntlen);
/*
 * aio_mkfs() the device, create a directory under /tmp (written to mnt) and
 * mount the new filesystem there.  Same return convention as aio_mkfs().
 */
int aio_scratch_mount(const char *dev, const char *fstype, char *mnt,
		      size_t mntlen);
int aio_scratch_umount(const char *mnt);
/*
 * Unmount @mnt, drop the caches and mount aio_dev_path() (@fstype) again
 * on a new @mnt: a file's inode, its extents and the blocks holding them
 * are read again on first use.  @mnt is emptied once unmounted, so that
 * a failure leaves nothing to unmount.  0 or -errno.
 */
int aio_remount_cold(const char *fstype, char *mnt, size_t mntlen);

int aio_fs_freeze(const char *mnt);
int aio_fs_thaw(const char *mnt);

/* 1 if /proc/sys/fs/aio-offload is enabled, 0 if off or absent, -1 on error. */
int aio_offload_enabled(void);

pid_t aio_gettid(void);
/* State letter ('R', 'S', 'D', ...) of a thread of ours, 0 on error. */
char aio_thread_state(pid_t tid);

/* Pin the calling thread to the CPU it runs on; returns the CPU or -errno. */
int aio_pin_to_current_cpu(void);
/* Number of possible CPUs, as the kernel's num_possible_cpus(); -errno. */
int aio_possible_cpus(void);

/*
 * A busy filesystem: a thread that writes and fdatasync()s a file in dir
 * in a loop, so that journal commits (ext4) and log forces (XFS) run
 * while a test submits.  0 or -errno.
 */
struct aio_syncer {
	pthread_t	thread;
	int		fd;
	int		stop;
	long		rounds;
};

int aio_syncer_start(struct aio_syncer *s, const char *dir);
/* Stop and join it: the rounds it did (> 0: it ran), or -errno. */
long aio_syncer_stop(struct aio_syncer *s);

/*
 * A buffer that holds up whoever copies from it: a userfaultfd region of
 * len bytes that nobody filled.  A write from it (by a worker) waits in
 * a fault until the test fills it.  Not locked by aio_lock_memory().
 */
struct aio_uffd {
	int	fd;
	char	*region;
	size_t	len;
};

/* 0, or -errno (-ENOSYS etc.: no userfaultfd here). */
int aio_uffd_create(struct aio_uffd *u, size_t len);
/* 1 once a thread faults on the region, 0 if none did in timeout_ms. */
int aio_uffd_wait_fault(struct aio_uffd *u, int timeout_ms);
/* Fill the whole region from src, waking the faulting threads: 0/-errno. */
int aio_uffd_fill(struct aio_uffd *u, const void *src);
void aio_uffd_destroy(struct aio_uffd *u);

/*
 * A null_blk device made through configfs (mounted if need be), named
 * name, with attrs ("key=value", NULL-terminated) set before it is
 * powered on; its node is written to dev.  0, -ENOENT without null_blk's
 * configfs, or another -errno (e.g. an attribute the kernel refused).
 */
int aio_nullb_create(const char *name, const char * const *attrs, char *dev,
		     size_t devlen);
int aio_nullb_remove(const char *name);

/*
 * A minimal io_uring through raw syscalls, to compare with io_submit():
 * it tries each request with IOCB_NOWAIT and hands what would block to
 * io-wq, so what the filesystem does under NOWAIT shows in both.
 */
struct io_uring_sqe;
struct io_uring_cqe;

struct aio_uring {
	int			fd;
	void			*sq_ring;	/* SQ and CQ rings, one map */
	size_t			ring_len;
	struct io_uring_sqe	*sqes;
	size_t			sqes_len;
	unsigned int		*sq_tail, *sq_array, sq_mask;
	unsigned int		*cq_head, *cq_tail, cq_mask;
	struct io_uring_cqe	*cqes;
};

/* 0, or -errno (-ENOSYS: no io_uring here). */
int aio_uring_init(struct aio_uring *r, unsigned int entries);
void aio_uring_exit(struct aio_uring *r);
/*
 * Submit one IORING_OP_READ/WRITE (@op) through io_uring_enter(), with
 * the calling thread's voluntary context switches inside that call in
 * *nvcsw: what io_uring_enter() returned, errno kept.
 */
int aio_uring_rw_nvcsw(struct aio_uring *r, int op, int fd, void *buf,
		       size_t len, off_t off, uint64_t data, long *nvcsw);
/* Wait for and take the next completion: 0 or -errno. */
int aio_uring_reap(struct aio_uring *r, struct io_uring_cqe *cqe);
/*
 * The next completion of io_uring (@uring) or of AIO context @ctx: its
 * result (-EIO, -ETIMEDOUT if none came), its tag in *tag.
 */
long long aio_reap_either(aio_context_t ctx, struct aio_uring *ring,
			  bool uring, uint64_t *tag);

/*
 * Tracepoints (tracefs, mounted if need be): enable or disable an event
 * ("system/name"), empty the buffer, count the buffer's lines of @event
 * that contain @needle (NULL: all of them).  0 or a count, or -errno.
 */
int aio_trace_event(const char *event, bool on);
int aio_trace_clear(void);
long aio_trace_count(const char *event, const char *needle);

/* Read/write a small sysfs/procfs file; return 0 or -errno. */
int aio_read_file(const char *path, char *buf, size_t len);
int aio_write_file(const char *path, const char *str);
/* Parse a file holding one integer; returns 0 or -errno. */
int aio_read_long(const char *path, long *val);
/* N of the line "key N" in a flat keyed file; -1 if absent or unreadable. */
long long aio_read_key(const char *path, const char *key);

#endif /* AIO_UTIL_H */
