// SPDX-License-Identifier: GPL-2.0
/*
 * c/mtime of O_DIRECT overwrites tried inline under the offload's NOWAIT.
 * ext4 updates them at submission without a journal handle and journals
 * them later from a work item, so a timestamp tick is no reason to hand
 * a write off; XFS answers -EAGAIN for it and the worker updates them.
 *
 *   mtime_without_punts
 *	WRITES overwrites of a warm file, each after the coarse clock
 *	ticked: no call sleeps, each write's mtime is at least the coarse
 *	time read before it and later than the previous one's; on ext4
 *	on NVMe every write is submitted inline (aio.stat) and ext4 never
 *	says -EAGAIN (its tracepoint).
 *   fsync_persists_times
 *	a write (inline on ext4 on NVMe, asserted), fsync(), then a
 *	shutdown without log flush (as a crash) and a remount: the mtime
 *	and ctime seen after the write are on disk, and on ext4 so is a
 *	new i_version (debugfs).
 *   times_reach_journal
 *	ext4 on NVMe only, mounted commit=1: an inline write, no fsync, a
 *	wait of four commit intervals, the same crash: the mtime seen after
 *	the write is on disk.  (XFS pushes its log on its own schedule; on
 *	SD the write is handed off before ext4 sees it.)
 *
 * Variants: ext4, ext4 with fast_commit, XFS.
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
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#define ROOT_STAT	"/sys/fs/cgroup/aio.stat"
#define BLK		4096
#define FILE_BLOCKS	64
#define WRITES		64
/* More than a tick at any HZ. */
#define TICK_US		20000
/* EXT4_IOC_SHUTDOWN and XFS_IOC_GOINGDOWN, EXT4_GOING_FLAGS_NOLOGFLUSH */
#define IOC_SHUTDOWN	_IOR('X', 125, uint32_t)
#define SHUTDOWN_NOLOGFLUSH	0x2
#define COMMIT_SEC	1
#define NOWAIT_EVENT	"ext4/ext4_dio_nowait_eagain"
#define NOWAIT_LINE	"ext4_dio_nowait_eagain:"

struct stamp_state {
	aio_context_t ctx;
	char mnt[64];
	char path[80];
	char *buf;
	int fd;
};

/* _PARENT teardown: see the note in aio_util.h */
FIXTURE(stamp) {
	pid_t owner;
	struct stamp_state st;
};

FIXTURE_VARIANT(stamp) {
	const char *fstype;
	const char *features;	/* mkfs.ext4 -O */
};

FIXTURE_VARIANT_ADD(stamp, ext4) {
	.fstype = "ext4",
};

FIXTURE_VARIANT_ADD(stamp, ext4_fc) {
	.fstype = "ext4",
	.features = "fast_commit",
};

FIXTURE_VARIANT_ADD(stamp, xfs) {
	.fstype = "xfs",
};

static int do_mkfs(const char *fstype, const char *features)
{
	const char *dev = aio_dev_path();
	char * const ext4[] = { "mkfs.ext4", "-F", "-q", "-E", "nodiscard",
				"-O", (char *)features, (char *)dev, NULL };

	if (!features)
		return aio_mkfs(dev, fstype);
	return aio_run(ext4);
}

static int open_file(struct stamp_state *st)
{
	snprintf(st->path, sizeof(st->path), "%s/f", st->mnt);
	st->fd = open(st->path, O_RDWR | O_CREAT | O_DIRECT, 0600);
	return st->fd < 0 ? -errno : 0;
}

FIXTURE_SETUP(stamp)
{
	struct stamp_state *st = &self->st;
	const char *dev = aio_dev_path();
	int ret;

	self->owner = getpid();
	memset(st, 0, sizeof(*st));
	st->fd = -1;
	st->buf = aio_alloc_buf(FILE_BLOCKS * BLK);
	ASSERT_NE(NULL, st->buf);
	ASSERT_EQ(0, aio_lock_memory());
	if (aio_offload_enabled() != 1)
		SKIP(return, "needs fs.aio-offload=1");
	if (!dev)
		SKIP(return, "AIO_TEST_DEV not set");
	if (!aio_dev_holds_data())
		SKIP(return, "the device does not store data");
	ret = do_mkfs(variant->fstype, variant->features);
	if (ret == AIO_MKFS_NOT_FOUND)
		SKIP(return, "mkfs.%s not available", variant->fstype);
	ASSERT_EQ(0, ret) TH_LOG("mkfs %s: %d", variant->fstype, ret);
	ASSERT_EQ(0, aio_mount_tmp(dev, variant->fstype,
				   strcmp(variant->fstype, "ext4") ? NULL :
				   "commit=1", st->mnt, sizeof(st->mnt)));
	ASSERT_EQ(0, open_file(st));
	/* Written and allocated: overwrites need no allocation. */
	memset(st->buf, 0, FILE_BLOCKS * BLK);
	ASSERT_EQ(FILE_BLOCKS * BLK, pwrite(st->fd, st->buf, FILE_BLOCKS * BLK,
					    0));
	ASSERT_EQ(0, fsync(st->fd));
	ASSERT_EQ(0, sys_io_setup(8, &st->ctx));
}

FIXTURE_TEARDOWN_PARENT(stamp)
{
	struct stamp_state *st = &self->st;

	if (getpid() == self->owner) {
		if (st->fd >= 0)
			close(st->fd);
		if (st->ctx)
			sys_io_destroy(st->ctx);
		aio_free_buf(st->buf, FILE_BLOCKS * BLK);
	}
	if (st->mnt[0] && aio_scratch_umount(st->mnt))
		TH_LOG("umount %s failed: %s", st->mnt, strerror(errno));
}

static int ts_cmp(const struct timespec *a, const struct timespec *b)
{
	if (a->tv_sec != b->tv_sec)
		return a->tv_sec < b->tv_sec ? -1 : 1;
	if (a->tv_nsec != b->tv_nsec)
		return a->tv_nsec < b->tv_nsec ? -1 : 1;
	return 0;
}

/* One AIO overwrite of block @blk, reaped: the calls' sleeps, or -1. */
static long write_block(struct __test_metadata *_metadata,
			struct stamp_state *st, int blk)
{
	struct iocb cb, *list = &cb;
	struct io_event ev;
	long nvcsw = -1;

	aio_fill_pattern(st->buf, BLK, blk, (off_t)blk * BLK);
	aio_prep_rw(&cb, IOCB_CMD_PWRITE, st->fd, st->buf, BLK,
		    (off_t)blk * BLK, blk);
	EXPECT_EQ(1, aio_submit_nvcsw(st->ctx, 1, &list, &nvcsw))
		TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(1, aio_reap(st->ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC));
	EXPECT_EQ(BLK, ev.res);
	return nvcsw;
}

/*
 * After a (re)mount: the dio workqueue and S_NOSEC come with a first
 * write, which a NOWAIT try leaves to a worker; then a tick passes, so
 * that the next write changes the times.
 */
static void prime(struct __test_metadata *_metadata, struct stamp_state *st)
{
	write_block(_metadata, st, FILE_BLOCKS - 1);
	usleep(TICK_US);
}

/*
 * write_block(), which on ext4 on NVMe must have been submitted inline,
 * so that ext4_nowait_file_modified() took its times (not a worker's
 * file_modified()): aio.stat's inline count grows by one.
 */
static void write_inline(struct __test_metadata *_metadata,
			 struct stamp_state *st, int blk, bool ext4)
{
	long long inl0 = aio_read_key(ROOT_STAT, "inline");

	write_block(_metadata, st, blk);
	if (ext4 && !strcmp(aio_dev_class(), "nvme")) {
		ASSERT_LE(0, inl0) TH_LOG("no %s", ROOT_STAT);
		EXPECT_EQ(inl0 + 1, aio_read_key(ROOT_STAT, "inline"))
			TH_LOG("write %d was handed off", blk);
	}
}

TEST_F_TIMEOUT(stamp, mtime_without_punts, AIO_DEV_TEST_TIMEOUT)
{
	struct stamp_state *st = &self->st;
	struct timespec before, prev = { 0 };
	bool ext4 = !strcmp(variant->fstype, "ext4");
	bool tracing = false;
	long long inl0, inl1;
	int i, slept = 0;
	struct stat sb;
	long eagain;

	/* The mount's dio workqueue, S_NOSEC: made by a first write. */
	write_block(_metadata, st, 0);
	if (ext4)
		tracing = !aio_trace_event(NOWAIT_EVENT, true) &&
			  !aio_trace_clear();
	inl0 = aio_read_key(ROOT_STAT, "inline");
	for (i = 0; i < WRITES; i++) {
		usleep(TICK_US);
		clock_gettime(CLOCK_REALTIME_COARSE, &before);
		slept += write_block(_metadata, st, i % FILE_BLOCKS) != 0;
		ASSERT_EQ(0, fstat(st->fd, &sb));
		EXPECT_LE(0, ts_cmp(&sb.st_mtim, &before))
			TH_LOG("write %d: mtime %lld.%09ld before the clock's %lld.%09ld",
			       i, (long long)sb.st_mtim.tv_sec,
			       sb.st_mtim.tv_nsec, (long long)before.tv_sec,
			       before.tv_nsec);
		EXPECT_LT(0, ts_cmp(&sb.st_mtim, &prev))
			TH_LOG("write %d: the mtime did not advance", i);
		EXPECT_EQ(0, ts_cmp(&sb.st_mtim, &sb.st_ctim));
		prev = sb.st_mtim;
	}
	inl1 = aio_read_key(ROOT_STAT, "inline");
	EXPECT_EQ(0, slept) TH_LOG("%d of %d calls slept", slept, WRITES);
	TH_LOG("%lld of %d writes submitted inline", inl1 - inl0, WRITES);
	/* Elsewhere (SD) direct I/O is handed off before ext4 sees it. */
	if (inl0 >= 0 && ext4 && !strcmp(aio_dev_class(), "nvme"))
		EXPECT_EQ(WRITES, inl1 - inl0)
			TH_LOG("writes handed off for their timestamps");
	if (tracing) {
		eagain = aio_trace_count(NOWAIT_LINE, NULL);
		aio_trace_event(NOWAIT_EVENT, false);
		EXPECT_EQ(0, eagain)
			TH_LOG("ext4 said -EAGAIN %ld times", eagain);
	}
	for (i = 0; i < FILE_BLOCKS; i++) {
		ASSERT_EQ(BLK, pread(st->fd, st->buf, BLK, (off_t)i * BLK));
		EXPECT_EQ(-1, aio_verify_pattern(st->buf, BLK, i,
						 (off_t)i * BLK));
	}
}

/* The inode's version on disk, from debugfs (the fs unmounted); or -1. */
static long long disk_iversion(unsigned long ino)
{
	char cmd[256], line[512];
	unsigned int hi, lo;
	long long v = -1;
	char *p;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "debugfs -R 'stat <%lu>' %s 2>/dev/null",
		 ino, aio_dev_path());
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, "Version: 0x");
		if (p && sscanf(p, "Version: 0x%x:%x", &hi, &lo) == 2)
			v = (long long)hi << 32 | lo;
	}
	pclose(f);
	return v;
}

/*
 * Unmount and mount again, then reopen the file; with @crash, shut the
 * filesystem down first without flushing its log (what survives is what
 * was committed, as after a crash; the mount replays the log).  With
 * @ver, unmount cleanly once more and read the inode's on-disk version
 * into *@ver (-1: no debugfs).
 */
static void remount(struct __test_metadata *_metadata,
		    struct stamp_state *st, const char *fstype, bool crash,
		    long long *ver)
{
	uint32_t how = SHUTDOWN_NOLOGFLUSH;
	struct stat sb;

	ASSERT_EQ(0, fstat(st->fd, &sb));
	if (crash)
		ASSERT_EQ(0, ioctl(st->fd, IOC_SHUTDOWN, &how))
			TH_LOG("shutdown: %s", strerror(errno));
	close(st->fd);
	st->fd = -1;
	ASSERT_EQ(0, aio_scratch_umount(st->mnt));
	st->mnt[0] = '\0';
	/* The mount must read the disk, not blocks left in the cache. */
	ASSERT_EQ(0, aio_write_file("/proc/sys/vm/drop_caches", "3"));
	ASSERT_EQ(0, aio_mount_tmp(aio_dev_path(), fstype, NULL, st->mnt,
				   sizeof(st->mnt)));
	if (ver) {
		ASSERT_EQ(0, aio_scratch_umount(st->mnt));
		st->mnt[0] = '\0';
		*ver = disk_iversion(sb.st_ino);
		ASSERT_EQ(0, aio_mount_tmp(aio_dev_path(), fstype, NULL,
					   st->mnt, sizeof(st->mnt)));
	}
	ASSERT_EQ(0, open_file(st));
}

/* Times the write left in memory, and those after the crash. */
static void expect_times(struct __test_metadata *_metadata,
			 const struct stat *mem, const struct stat *disk)
{
	EXPECT_EQ(0, ts_cmp(&mem->st_mtim, &disk->st_mtim))
		TH_LOG("mtime %lld.%09ld in memory, %lld.%09ld after the crash",
		       (long long)mem->st_mtim.tv_sec, mem->st_mtim.tv_nsec,
		       (long long)disk->st_mtim.tv_sec, disk->st_mtim.tv_nsec);
	EXPECT_EQ(0, ts_cmp(&mem->st_ctim, &disk->st_ctim));
}

TEST_F_TIMEOUT(stamp, fsync_persists_times, AIO_DEV_TEST_TIMEOUT)
{
	struct stamp_state *st = &self->st;
	bool ext4 = !strcmp(variant->fstype, "ext4");
	long long ver0 = -1, ver1 = -1;
	struct stat mem, disk;

	write_block(_metadata, st, 0);
	ASSERT_EQ(0, fsync(st->fd));
	remount(_metadata, st, variant->fstype, false, ext4 ? &ver0 : NULL);
	prime(_metadata, st);
	write_inline(_metadata, st, 1, ext4);
	ASSERT_EQ(0, fstat(st->fd, &mem));
	ASSERT_EQ(0, fsync(st->fd));
	remount(_metadata, st, variant->fstype, true, NULL);
	ASSERT_EQ(0, fstat(st->fd, &disk));
	expect_times(_metadata, &mem, &disk);
	ASSERT_EQ(BLK, pread(st->fd, st->buf, BLK, BLK));
	EXPECT_EQ(-1, aio_verify_pattern(st->buf, BLK, 1, BLK));
	if (ext4)
		remount(_metadata, st, variant->fstype, false, &ver1);
	if (ext4) {
		TH_LOG("i_version on disk %#llx, then %#llx", ver0, ver1);
		if (ver0 < 0 || ver1 < 0)
			TH_LOG("no debugfs: i_version not checked");
		else
			EXPECT_LT(ver0, ver1);
	}
}

TEST_F_TIMEOUT(stamp, times_reach_journal, AIO_DEV_TEST_TIMEOUT)
{
	struct stamp_state *st = &self->st;
	struct stat mem, disk;

	if (strcmp(variant->fstype, "ext4"))
		SKIP(return, "%s commits its log on its own schedule",
		     variant->fstype);
	if (strcmp(aio_dev_class(), "nvme"))
		SKIP(return, "on %s the write is handed off before ext4 sees it",
		     aio_dev_class());
	/* Committed, so the times to come are the only change. */
	prime(_metadata, st);
	ASSERT_EQ(0, fsync(st->fd));
	usleep(TICK_US);
	write_inline(_metadata, st, 1, true);
	ASSERT_EQ(0, fstat(st->fd, &mem));
	sleep(4 * COMMIT_SEC + 1);
	remount(_metadata, st, variant->fstype, true, NULL);
	ASSERT_EQ(0, fstat(st->fd, &disk));
	expect_times(_metadata, &mem, &disk);
}

TEST_HARNESS_MAIN
