// SPDX-License-Identifier: GPL-2.0
/*
 * Helper library for the native AIO selftests.  See aio_util.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/ext4.h>
#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <linux/userfaultfd.h>

#include "aio_util.h"

int sys_io_setup(unsigned int nr_events, aio_context_t *ctx)
{
	return syscall(__NR_io_setup, nr_events, ctx);
}

int sys_io_destroy(aio_context_t ctx)
{
	return syscall(__NR_io_destroy, ctx);
}

long sys_io_submit(aio_context_t ctx, long nr, struct iocb **iocbs)
{
	return syscall(__NR_io_submit, ctx, nr, iocbs);
}

long sys_io_getevents(aio_context_t ctx, long min_nr, long nr,
		      struct io_event *events, struct timespec *timeout)
{
	return syscall(__NR_io_getevents, ctx, min_nr, nr, events, timeout);
}

int sys_io_cancel(aio_context_t ctx, struct iocb *iocb,
		  struct io_event *result)
{
	return syscall(__NR_io_cancel, ctx, iocb, result);
}

void aio_prep_rw(struct iocb *cb, int opcode, int fd, void *buf,
		 size_t len, off_t off, uint64_t data)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_data = data;
	cb->aio_lio_opcode = opcode;
	cb->aio_fildes = fd;
	cb->aio_buf = (uintptr_t)buf;
	cb->aio_nbytes = len;
	cb->aio_offset = off;
}

void aio_prep_rwv(struct iocb *cb, int opcode, int fd, struct iovec *iov,
		  int iovcnt, off_t off, uint64_t data)
{
	/* For the vectored opcodes aio_buf/aio_nbytes are the iovec array. */
	aio_prep_rw(cb, opcode, fd, iov, iovcnt, off, data);
}

void aio_prep_poll(struct iocb *cb, int fd, short events, uint64_t data)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_data = data;
	cb->aio_lio_opcode = IOCB_CMD_POLL;
	cb->aio_fildes = fd;
	cb->aio_buf = (unsigned short)events;
}

int aio_lock_memory(void)
{
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		return -errno;
	return 0;
}

long aio_thread_nvcsw(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -1;
	return ru.ru_nvcsw;
}

long aio_submit_nvcsw(aio_context_t ctx, long nr, struct iocb **iocbs,
		      long *nvcsw)
{
	long before, after, ret;
	int err;

	before = aio_thread_nvcsw();
	ret = sys_io_submit(ctx, nr, iocbs);
	err = errno;
	after = aio_thread_nvcsw();
	*nvcsw = (before < 0 || after < 0) ? -1 : after - before;
	errno = err;
	return ret;
}

/* splitmix64 finalizer: cheap, and every input bit affects every output bit */
static uint64_t aio_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t aio_pattern_word(uint64_t seed, uint64_t word_off)
{
	uint64_t w = aio_mix(seed ^ aio_mix(word_off));

	/* A zero word would be indistinguishable from a hole or null_blk. */
	return w ? w : 0x5a5a5a5a5a5a5a5aULL;
}

uint64_t aio_new_seed(void)
{
	static uint64_t counter;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return aio_mix((uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec) ^
	       aio_mix(((uint64_t)getpid() << 32) + ++counter);
}

/*
 * Byte i of the buffer is byte (off + i) % 8 of the word for the 8-byte
 * aligned absolute offset containing it, so unaligned starts and lengths
 * still agree with aligned ones covering the same range.
 */
void aio_fill_pattern(void *buf, size_t len, uint64_t seed, uint64_t off)
{
	unsigned char *p = buf;
	size_t i = 0;

	while (i < len) {
		uint64_t pos = off + i;
		uint64_t w = aio_pattern_word(seed, pos & ~7ULL);
		unsigned int b;

		for (b = pos & 7; b < 8 && i < len; b++, i++)
			p[i] = w >> (8 * b);
	}
}

ssize_t aio_verify_pattern(const void *buf, size_t len, uint64_t seed,
			   uint64_t off)
{
	const unsigned char *p = buf;
	size_t i = 0;

	while (i < len) {
		uint64_t pos = off + i;
		uint64_t w = aio_pattern_word(seed, pos & ~7ULL);
		unsigned int b;

		for (b = pos & 7; b < 8 && i < len; b++, i++)
			if (p[i] != (unsigned char)(w >> (8 * b)))
				return i;
	}
	return -1;
}

void *aio_alloc_buf(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void aio_free_buf(void *buf, size_t len)
{
	if (buf)
		munmap(buf, len);
}

static int64_t ts_to_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

long aio_reap(aio_context_t ctx, struct io_event *ev, long n, int timeout_sec)
{
	struct timespec now, left;
	int64_t deadline;
	long got = 0;

	clock_gettime(CLOCK_MONOTONIC, &now);
	deadline = ts_to_ns(&now) + (int64_t)timeout_sec * 1000000000LL;

	while (got < n) {
		int64_t rem;
		long ret;

		clock_gettime(CLOCK_MONOTONIC, &now);
		rem = deadline - ts_to_ns(&now);
		if (rem <= 0)
			break;
		left.tv_sec = rem / 1000000000LL;
		left.tv_nsec = rem % 1000000000LL;

		ret = sys_io_getevents(ctx, n - got, n - got, ev + got, &left);
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			return got ? got : -1;
		}
		got += ret;
	}
	return got;
}

const char *aio_dev_path(void)
{
	const char *p = getenv("AIO_TEST_DEV");

	return (p && *p) ? p : NULL;
}

const char *aio_dev_class(void)
{
	const char *c = getenv("AIO_TEST_CLASS");

	return c ? c : "";
}

bool aio_dev_holds_data(void)
{
	const char *dev = aio_dev_path();

	if (!dev)
		return false;
	/* null_blk without memory_backed completes writes and reads zeroes. */
	if (!strcmp(aio_dev_class(), "nullb") || strstr(dev, "nullb"))
		return false;
	return true;
}

bool aio_on_rig(void)
{
	const char *r = getenv("AIO_RIG");

	return r && !strcmp(r, "1");
}

int aio_dev_size(int fd, uint64_t *size)
{
	if (ioctl(fd, BLKGETSIZE64, size))
		return -errno;
	return 0;
}

int aio_dev_fit(const char *cls, uint64_t min_bytes, uint64_t *size,
		const char **why)
{
	static char reason[64];
	int fd, ret;

	*size = 0;
	*why = reason;
	if (!aio_dev_path()) {
		snprintf(reason, sizeof(reason), "AIO_TEST_DEV not set");
		return 1;
	}
	if (cls && strcmp(aio_dev_class(), cls)) {
		snprintf(reason, sizeof(reason), "runs on the %s class only", cls);
		return 1;
	}
	if (!cls && !aio_dev_holds_data()) {
		snprintf(reason, sizeof(reason), "the device does not store data");
		return 1;
	}
	fd = open(aio_dev_path(), O_RDONLY);
	if (fd < 0)
		return -errno;
	ret = aio_dev_size(fd, size);
	close(fd);
	if (ret)
		return ret;
	if (*size < min_bytes) {
		snprintf(reason, sizeof(reason), "device too small (%llu MiB)",
			 (unsigned long long)(*size >> 20));
		return 1;
	}
	return 0;
}

int aio_fill_stale(const char *dev, uint64_t len)
{
	const size_t chunk = 1 << 20;
	uint64_t pos, b;
	char *buf;
	int fd, ret = 0;

	buf = aio_alloc_buf(chunk);
	if (!buf)
		return -ENOMEM;
	fd = open(dev, O_WRONLY | O_DIRECT);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	memset(buf, 0x5a, chunk);
	for (pos = 0; pos < len && !ret; pos += chunk) {
		size_t n = len - pos < chunk ? len - pos : chunk;

		for (b = 0; b < n / AIO_STALE_BLK; b++) {
			uint64_t nr = pos / AIO_STALE_BLK + b;

			memcpy(buf + b * AIO_STALE_BLK, AIO_STALE_TAG, 8);
			memcpy(buf + b * AIO_STALE_BLK + 8, &nr, 8);
		}
		if (pwrite(fd, buf, n, pos) != (ssize_t)n)
			ret = -EIO;
	}
	if (close(fd) && !ret)
		ret = -errno;
out:
	aio_free_buf(buf, chunk);
	return ret;
}

bool aio_is_stale(const void *block)
{
	return !memcmp(block, AIO_STALE_TAG, 8);
}

int aio_dev_lbs(int fd, int *lbs)
{
	if (ioctl(fd, BLKSSZGET, lbs))
		return -errno;
	return 0;
}

int aio_run(char * const argv[])
{
	char sbin[2][PATH_MAX];
	int status;
	pid_t pid;

	/* Built before fork(): only async-signal-safe calls in the child. */
	snprintf(sbin[0], sizeof(sbin[0]), "/usr/sbin/%s", argv[0]);
	snprintf(sbin[1], sizeof(sbin[1]), "/sbin/%s", argv[0]);

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		execvp(argv[0], argv);
		/* The runner's PATH may lack the sbin directories. */
		execv(sbin[0], argv);
		execv(sbin[1], argv);
		_exit(AIO_MKFS_NOT_FOUND);
	}

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

int aio_mkfs(const char *dev, const char *fstype)
{
	/*
	 * Discard is skipped: a whole-device discard on emulated flash can
	 * take far longer than the test itself and proves nothing here.
	 */
	char * const ext4_argv[] = { "mkfs.ext4", "-F", "-q", "-E", "nodiscard",
				     (char *)dev, NULL };
	char * const xfs_argv[] = { "mkfs.xfs", "-f", "-q", "-K", (char *)dev,
				    NULL };

	if (!strcmp(fstype, "ext4"))
		return aio_run(ext4_argv);
	if (!strcmp(fstype, "xfs"))
		return aio_run(xfs_argv);
	return -EINVAL;
}

int aio_dm_create(const char *name, const char *table)
{
	char * const argv[] = { "dmsetup", "create", (char *)name, "--table",
				(char *)table, NULL };
	/* Without udev (the rig's guest) nobody else makes /dev/mapper/NAME. */
	char * const mknodes[] = { "dmsetup", "mknodes", (char *)name, NULL };
	int ret;

	/*
	 * One left by a test whose setup failed after making it (the
	 * harness runs no teardown then) would fail every later test.
	 */
	aio_dm_remove(name);
	ret = aio_run(argv);

	return ret ? ret : aio_run(mknodes);
}

int aio_make_frag_file(const char *path, int nblocks, int hole_blocks,
		       size_t blk, uint64_t seed, void *buf)
{
	int fd, i, err = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	for (i = 0; i < nblocks && !err; i += 2) {
		aio_fill_pattern(buf, blk, seed, (off_t)i * blk);
		if (pwrite(fd, buf, blk, (off_t)i * blk) != (ssize_t)blk)
			err = errno ? -errno : -EIO;
	}
	if (!err && (fsync(fd) ||
		     fallocate(fd, FALLOC_FL_KEEP_SIZE, 0,
			       (off_t)nblocks * blk) ||
		     ftruncate(fd, (off_t)(nblocks + hole_blocks) * blk) ||
		     fsync(fd)))
		err = -errno;
	close(fd);
	return err;
}

int aio_unwritten(int fd, off_t off, size_t len)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent fe;
	} m;

	memset(&m, 0, sizeof(m));
	m.fm.fm_start = off;
	m.fm.fm_length = len;
	m.fm.fm_flags = FIEMAP_FLAG_SYNC;
	m.fm.fm_extent_count = 1;
	if (ioctl(fd, FS_IOC_FIEMAP, &m.fm) || m.fm.fm_mapped_extents != 1)
		return -1;
	return !!(m.fe.fe_flags & FIEMAP_EXTENT_UNWRITTEN);
}

/* Walks EXT4_IOC_GET_ES_CACHE, which stops at a block with no entry. */
off_t aio_es_covered(int fd, off_t end)
{
	enum { N = 1024 };
	size_t sz = sizeof(struct fiemap) + N * sizeof(struct fiemap_extent);
	struct fiemap *fm = calloc(1, sz);
	off_t pos = 0;
	unsigned int i;

	if (!fm)
		return 0;
	while (pos < end) {
		memset(fm, 0, sz);
		fm->fm_start = pos;
		fm->fm_length = ~0ULL - pos;
		fm->fm_extent_count = N;
		if (ioctl(fd, EXT4_IOC_GET_ES_CACHE, fm) ||
		    !fm->fm_mapped_extents)
			break;
		for (i = 0; i < fm->fm_mapped_extents; i++) {
			struct fiemap_extent *fe = &fm->fm_extents[i];

			if ((off_t)fe->fe_logical > pos)
				goto out;
			if ((off_t)(fe->fe_logical + fe->fe_length) > pos)
				pos = fe->fe_logical + fe->fe_length;
			if (fe->fe_flags & FIEMAP_EXTENT_LAST)
				goto out;
		}
	}
out:
	free(fm);
	return pos < end ? pos : end;
}

void aio_pick_blocks(off_t *offs, int n, int nblocks, bool odd, size_t blk)
{
	int half = nblocks / 2, i, j, t;
	int *idx = malloc(sizeof(*idx) * half);

	if (!idx)
		abort();
	/* Fisher-Yates over the blocks of that parity. */
	for (i = 0; i < half; i++)
		idx[i] = i;
	for (i = 0; i < n && i < half; i++) {
		j = i + random() % (half - i);
		t = idx[i];
		idx[i] = idx[j];
		idx[j] = t;
		offs[i] = (off_t)(2 * idx[i] + odd) * blk;
	}
	free(idx);
}

int aio_dm_linear(const char *name, const char *dev, uint64_t start,
		  uint64_t len)
{
	char table[PATH_MAX + 64];

	snprintf(table, sizeof(table), "0 %llu linear %s %llu",
		 (unsigned long long)(len >> 9), dev,
		 (unsigned long long)(start >> 9));
	return aio_dm_create(name, table);
}

int aio_in_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid)
		_exit(fn(arg));
	while (waitpid(pid, &status, 0) != pid)
		if (errno != EINTR)
			return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) == 255)
		return -1;
	return WEXITSTATUS(status);
}

int aio_slow_log_fs(const char *fstype, const char *fs_name,
		    const char *log_name, uint64_t log_len, int delay_ms,
		    char *mnt, size_t mntlen, int *made)
{
	const char *dev = aio_dev_path();
	char fs[PATH_MAX], log[PATH_MAX], arg[PATH_MAX + 32];
	char table[PATH_MAX + 64], opts[PATH_MAX + 32];
	char * const ext4_log[] = { "mke2fs", "-q", "-F", "-O", "journal_dev",
				    "-b", "4096", log, NULL };
	char * const ext4_fs[] = { "mkfs.ext4", "-q", "-F", "-b", "4096",
				   "-E", "nodiscard", "-J", arg, fs, NULL };
	char * const xfs_fs[] = { "mkfs.xfs", "-q", "-f", "-K", "-l", arg,
				  fs, NULL };
	uint64_t size, fs_len;
	int fd, ret;

	*made = 0;
	if (!dev)
		return -ENODEV;
	if (strcmp(fstype, "ext4") && strcmp(fstype, "xfs"))
		return -EINVAL;
	if (log_len < (16ULL << 20))	/* both need that much log */
		return -EINVAL;
	fd = open(dev, O_RDONLY);
	if (fd < 0)
		return -errno;
	ret = aio_dev_size(fd, &size);
	close(fd);
	if (ret)
		return ret;
	if (size < log_len + (320ULL << 20))
		return -ENOSPC;
	fs_len = size - log_len;
	snprintf(fs, sizeof(fs), "/dev/mapper/%s", fs_name);
	snprintf(log, sizeof(log), "/dev/mapper/%s", log_name);
	ret = aio_dm_linear(fs_name, dev, 0, fs_len);
	if (ret)
		return ret;
	*made |= AIO_DM_FS;
	snprintf(table, sizeof(table), "0 %llu delay %s %llu %d",
		 (unsigned long long)(log_len >> 9), dev,
		 (unsigned long long)(fs_len >> 9), delay_ms);
	ret = aio_dm_create(log_name, table);
	if (ret)
		return ret;
	*made |= AIO_DM_LOG;
	if (!strcmp(fstype, "ext4")) {
		snprintf(arg, sizeof(arg), "device=%s", log);
		ret = aio_run(ext4_log);
		if (!ret)
			ret = aio_run(ext4_fs);
		snprintf(opts, sizeof(opts), "journal_path=%s", log);
	} else {
		/* Half the device: room for XFS's own rounding. */
		snprintf(arg, sizeof(arg), "logdev=%s,size=%llum", log,
			 (unsigned long long)(log_len >> 21));
		ret = aio_run(xfs_fs);
		snprintf(opts, sizeof(opts), "logdev=%s", log);
	}
	if (ret)
		return ret;
	return aio_mount_tmp(fs, fstype, opts, mnt, mntlen);
}

int aio_dm_remove(const char *name)
{
	char * const argv[] = { "dmsetup", "remove", "--retry", (char *)name,
				NULL };

	return aio_run(argv);
}

int aio_mount_tmp(const char *dev, const char *fstype, const char *opts,
		  char *mnt, size_t mntlen)
{
	static const char template[] = "/tmp/aio-scratch-XXXXXX";
	int ret;

	if (mntlen < sizeof(template))
		return -ENAMETOOLONG;
	memcpy(mnt, template, sizeof(template));
	if (!mkdtemp(mnt)) {
		ret = -errno;
		mnt[0] = '\0';
		return ret;
	}
	if (mount(dev, mnt, fstype, 0, opts)) {
		ret = -errno;
		rmdir(mnt);
		mnt[0] = '\0';
		return ret;
	}
	return 0;
}

int aio_scratch_mount(const char *dev, const char *fstype, char *mnt,
		      size_t mntlen)
{
	int ret;

	mnt[0] = '\0';
	ret = aio_mkfs(dev, fstype);
	if (ret)
		return ret;
	return aio_mount_tmp(dev, fstype, NULL, mnt, mntlen);
}

int aio_scratch_umount(const char *mnt)
{
	int tries;

	if (!mnt || !mnt[0])
		return 0;

	/*
	 * A just-closed O_DIRECT fd or a finishing AIO may hold the mount
	 * for a moment; retry briefly instead of leaking the mount.
	 */
	for (tries = 0; umount2(mnt, 0); tries++) {
		if (errno != EBUSY || tries >= 50)
			return -errno;
		usleep(100 * 1000);
	}
	if (rmdir(mnt))
		return -errno;
	return 0;
}

int aio_remount_cold(const char *fstype, char *mnt, size_t mntlen)
{
	int ret = aio_scratch_umount(mnt);

	if (ret)
		return ret;
	mnt[0] = '\0';
	ret = aio_write_file("/proc/sys/vm/drop_caches", "3");
	if (ret)
		return ret;
	return aio_mount_tmp(aio_dev_path(), fstype, NULL, mnt, mntlen);
}

static int aio_fs_ioctl(const char *mnt, unsigned long req)
{
	int fd, ret = 0;

	fd = open(mnt, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, req, 0))
		ret = -errno;
	close(fd);
	return ret;
}

int aio_fs_freeze(const char *mnt)
{
	return aio_fs_ioctl(mnt, FIFREEZE);
}

int aio_fs_thaw(const char *mnt)
{
	return aio_fs_ioctl(mnt, FITHAW);
}

int aio_read_file(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if (!len)
		return -EINVAL;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	close(fd);
	buf[n] = '\0';
	return 0;
}

int aio_write_file(const char *path, const char *str)
{
	size_t len = strlen(str);
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, str, len);
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	close(fd);
	return (size_t)n == len ? 0 : -EIO;
}

int aio_read_long(const char *path, long *val)
{
	char buf[64], *end;
	int ret;

	ret = aio_read_file(path, buf, sizeof(buf));
	if (ret)
		return ret;
	errno = 0;
	*val = strtol(buf, &end, 0);
	if (errno || end == buf || (*end && *end != '\n'))
		return -EINVAL;
	return 0;
}

long long aio_read_key(const char *path, const char *key)
{
	char buf[4096], *line;
	size_t len = strlen(key);

	if (aio_read_file(path, buf, sizeof(buf)))
		return -1;
	line = buf;
	while (line) {
		if (!strncmp(line, key, len) && line[len] == ' ')
			return strtoll(line + len + 1, NULL, 10);
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return -1;
}

int aio_offload_enabled(void)
{
	long val;
	int ret;

	ret = aio_read_long("/proc/sys/fs/aio-offload", &val);
	if (ret == -ENOENT)
		return 0;	/* stock kernel: no offload knob at all */
	if (ret)
		return -1;
	return val != 0;
}

pid_t aio_gettid(void)
{
	return syscall(SYS_gettid);
}

char aio_thread_state(pid_t tid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	if (aio_read_file(path, buf, sizeof(buf)))
		return 0;
	/* comm may contain spaces and parens; the state follows the last ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return 0;
	return p[2];
}

int aio_pin_to_current_cpu(void)
{
	cpu_set_t set;
	int cpu;

	cpu = sched_getcpu();
	if (cpu < 0)
		return -errno;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -errno;
	return cpu;
}

int aio_possible_cpus(void)
{
	char buf[256], *p;
	int count = 0;
	int ret;

	ret = aio_read_file("/sys/devices/system/cpu/possible", buf,
			    sizeof(buf));
	if (ret)
		return ret;

	/* Format is a cpulist: "0-3,8,10-11" */
	p = buf;
	while (*p && *p != '\n') {
		char *end;
		long lo, hi;

		lo = strtol(p, &end, 10);
		if (end == p)
			return -EINVAL;
		hi = lo;
		p = end;
		if (*p == '-') {
			hi = strtol(p + 1, &end, 10);
			if (end == p + 1 || hi < lo)
				return -EINVAL;
			p = end;
		}
		count += hi - lo + 1;
		if (*p == ',')
			p++;
	}
	return count ? count : -EINVAL;
}

static void *aio_syncer_thread(void *arg)
{
	struct aio_syncer *s = arg;
	char buf[4096];
	long i;

	memset(buf, 0x3c, sizeof(buf));
	for (i = 0; !__atomic_load_n(&s->stop, __ATOMIC_RELAXED); i++) {
		/* New blocks and a size change: each round commits. */
		if (pwrite(s->fd, buf, sizeof(buf), (i % 256) * sizeof(buf)) < 0 ||
		    fdatasync(s->fd))
			break;
		if (i % 256 == 255 && ftruncate(s->fd, 0))
			break;
		__atomic_store_n(&s->rounds, i + 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

int aio_syncer_start(struct aio_syncer *s, const char *dir)
{
	char path[PATH_MAX];
	int ret;

	/*
	 * In a directory of its own: ext4 puts a new top-level directory in
	 * another block group, so the file's inode, dirtied in each round,
	 * does not share an inode table block with the test's files.
	 */
	snprintf(path, sizeof(path), "%s/.aio-syncer", dir);
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	strncat(path, "/f", sizeof(path) - strlen(path) - 1);
	s->stop = 0;
	s->rounds = 0;
	s->fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (s->fd < 0)
		return -errno;
	ret = pthread_create(&s->thread, NULL, aio_syncer_thread, s);
	if (ret) {
		close(s->fd);
		s->fd = -1;
		return -ret;
	}
	return 0;
}

long aio_syncer_stop(struct aio_syncer *s)
{
	if (s->fd < 0)
		return -EBADF;
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	pthread_join(s->thread, NULL);
	close(s->fd);
	s->fd = -1;
	return s->rounds;
}

int aio_uffd_create(struct aio_uffd *u, size_t len)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	int ret;

	u->len = len;
	u->region = MAP_FAILED;
	u->fd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (u->fd < 0)
		return -errno;
	if (ioctl(u->fd, UFFDIO_API, &api))
		goto fail;
	u->region = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (u->region == MAP_FAILED)
		goto fail;
	/* mlockall(MCL_FUTURE) (aio_lock_memory()) filled it: empty it. */
	munlock(u->region, len);
	if (madvise(u->region, len, MADV_DONTNEED))
		goto fail;
	reg.range.start = (uintptr_t)u->region;
	reg.range.len = len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(u->fd, UFFDIO_REGISTER, &reg))
		goto fail;
	return 0;
fail:
	ret = -errno;
	aio_uffd_destroy(u);
	return ret;
}

int aio_uffd_wait_fault(struct aio_uffd *u, int timeout_ms)
{
	struct pollfd pfd = { .fd = u->fd, .events = POLLIN };
	struct uffd_msg msg;

	if (poll(&pfd, 1, timeout_ms) != 1 ||
	    read(u->fd, &msg, sizeof(msg)) != sizeof(msg))
		return 0;
	return msg.event == UFFD_EVENT_PAGEFAULT;
}

int aio_uffd_fill(struct aio_uffd *u, const void *src)
{
	struct uffdio_copy copy = {
		.dst = (uintptr_t)u->region,
		.src = (uintptr_t)src,
		.len = u->len,
	};

	return ioctl(u->fd, UFFDIO_COPY, &copy) ? -errno : 0;
}

void aio_uffd_destroy(struct aio_uffd *u)
{
	if (u->region != MAP_FAILED)
		munmap(u->region, u->len);
	u->region = MAP_FAILED;
	if (u->fd >= 0)
		close(u->fd);
	u->fd = -1;
}

#define NULLB_CFG	"/sys/kernel/config/nullb"

int aio_nullb_create(const char *name, const char * const *attrs, char *dev,
		     size_t devlen)
{
	char path[PATH_MAX], idx[16] = "";
	const char * const *a;
	int ret;

	if (access(NULLB_CFG, F_OK))
		mount("configfs", "/sys/kernel/config", "configfs", 0, NULL);
	if (access(NULLB_CFG, F_OK))
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s", NULLB_CFG, name);
	rmdir(path);
	if (mkdir(path, 0755))
		return -errno;
	for (a = attrs; *a; a++) {
		const char *eq = strchr(*a, '=');

		if (!eq)
			return -EINVAL;
		snprintf(path, sizeof(path), "%s/%s/%.*s", NULLB_CFG, name,
			 (int)(eq - *a), *a);
		ret = aio_write_file(path, eq + 1);
		if (ret)
			return ret;
	}
	snprintf(path, sizeof(path), "%s/%s/power", NULLB_CFG, name);
	ret = aio_write_file(path, "1");
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/%s/index", NULLB_CFG, name);
	ret = aio_read_file(path, idx, sizeof(idx));
	if (ret)
		return ret;
	/* Named after its configfs directory since 6.0, nullbN before. */
	snprintf(dev, devlen, "/dev/%s", name);
	if (access(dev, F_OK))
		snprintf(dev, devlen, "/dev/nullb%d", atoi(idx));
	return access(dev, F_OK) ? -errno : 0;
}

int aio_nullb_remove(const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s/power", NULLB_CFG, name);
	aio_write_file(path, "0");
	snprintf(path, sizeof(path), "%s/%s", NULLB_CFG, name);
	return rmdir(path) ? -errno : 0;
}

int aio_uring_init(struct aio_uring *r, unsigned int entries)
{
	struct io_uring_params p = { 0 };
	char *sq, *cq;

	memset(r, 0, sizeof(*r));
	r->sq_ring = MAP_FAILED;
	r->sqes = MAP_FAILED;
	r->fd = syscall(__NR_io_uring_setup, entries, &p);
	if (r->fd < 0)
		return -errno;
	/* IORING_FEAT_SINGLE_MMAP (5.4) is assumed: one map for both rings. */
	if (!(p.features & IORING_FEAT_SINGLE_MMAP)) {
		aio_uring_exit(r);
		return -EOPNOTSUPP;
	}
	r->ring_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	if (r->ring_len < p.cq_off.cqes + p.cq_entries *
			  sizeof(struct io_uring_cqe))
		r->ring_len = p.cq_off.cqes +
			      p.cq_entries * sizeof(struct io_uring_cqe);
	r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
	r->sq_ring = mmap(NULL, r->ring_len, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sq_ring == MAP_FAILED || r->sqes == MAP_FAILED) {
		aio_uring_exit(r);
		return -ENOMEM;
	}
	sq = r->sq_ring;
	cq = r->sq_ring;
	r->sq_tail = (unsigned int *)(sq + p.sq_off.tail);
	r->sq_mask = *(unsigned int *)(sq + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)(sq + p.sq_off.array);
	r->cq_head = (unsigned int *)(cq + p.cq_off.head);
	r->cq_tail = (unsigned int *)(cq + p.cq_off.tail);
	r->cq_mask = *(unsigned int *)(cq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	return 0;
}

void aio_uring_exit(struct aio_uring *r)
{
	if (r->sqes != MAP_FAILED)
		munmap(r->sqes, r->sqes_len);
	if (r->sq_ring != MAP_FAILED)
		munmap(r->sq_ring, r->ring_len);
	r->sqes = MAP_FAILED;
	r->sq_ring = MAP_FAILED;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

int aio_uring_rw_nvcsw(struct aio_uring *r, int op, int fd, void *buf,
		       size_t len, off_t off, uint64_t data, long *nvcsw)
{
	unsigned int tail = *r->sq_tail, idx = tail & r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[idx];
	long before, after;
	int ret, err;

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = op;
	sqe->fd = fd;
	sqe->addr = (uintptr_t)buf;
	sqe->len = len;
	sqe->off = off;
	sqe->user_data = data;
	r->sq_array[idx] = idx;
	/* The kernel reads the entry once it sees the new tail. */
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);

	before = aio_thread_nvcsw();
	ret = syscall(__NR_io_uring_enter, r->fd, 1, 0, 0, NULL, 0);
	err = errno;
	after = aio_thread_nvcsw();
	/* Not consumed: take it back, so that the ring stays in step. */
	if (ret != 1)
		__atomic_store_n(r->sq_tail, tail, __ATOMIC_RELEASE);
	*nvcsw = (before < 0 || after < 0) ? -1 : after - before;
	errno = err;
	return ret;
}

int aio_uring_reap(struct aio_uring *r, struct io_uring_cqe *cqe)
{
	unsigned int head = *r->cq_head;

	while (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE)) {
		if (syscall(__NR_io_uring_enter, r->fd, 0, 1,
			    IORING_ENTER_GETEVENTS, NULL, 0) < 0 &&
		    errno != EINTR)
			return -errno;
	}
	*cqe = r->cqes[head & r->cq_mask];
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return 0;
}

long long aio_reap_either(aio_context_t ctx, struct aio_uring *ring,
			  bool uring, uint64_t *tag)
{
	struct io_uring_cqe cqe;
	struct io_event ev;

	*tag = UINT64_MAX;
	if (uring) {
		if (aio_uring_reap(ring, &cqe))
			return -EIO;
		*tag = cqe.user_data;
		return cqe.res;
	}
	if (aio_reap(ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC) != 1)
		return -ETIMEDOUT;
	*tag = ev.data;
	return ev.res;
}

#define AIO_TRACING	"/sys/kernel/tracing"

int aio_trace_event(const char *event, bool on)
{
	char path[PATH_MAX];

	if (access(AIO_TRACING "/trace", W_OK))
		mount("tracefs", AIO_TRACING, "tracefs", 0, NULL);
	snprintf(path, sizeof(path), AIO_TRACING "/events/%s/enable", event);
	return aio_write_file(path, on ? "1" : "0");
}

int aio_trace_clear(void)
{
	int fd = open(AIO_TRACING "/trace", O_WRONLY | O_TRUNC);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

long aio_trace_count(const char *event, const char *needle)
{
	char line[1024];
	long n = 0;
	FILE *f;

	f = fopen(AIO_TRACING "/trace", "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, event) && (!needle || strstr(line, needle)))
			n++;
	fclose(f);
	return n;
}
