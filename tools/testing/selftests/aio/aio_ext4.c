// SPDX-License-Identifier: GPL-2.0
/*
 * AIO offload on ext4: what ext4 does with the requests io_submit() tries
 * with its NOWAIT.
 *
 *   journalled_direct_read_does_not_sleep
 *	an O_DIRECT read of a data=journal file (chattr +j) is a buffered
 *	read inside ext4; with a cold page cache it would run synchronous
 *	readahead in the submitter unless the try also says IOCB_NOIO;
 *   inline_data_direct_read_does_not_sleep
 *	the same for a file whose data lives in its inode (inline_data),
 *	whose read would read the inode table block in the submitter.
 *
 * Each reads back what it wrote, in both variants: an idle filesystem
 * and a busy one (a thread writing and fdatasync()ing another file, so
 * that journal commits run during the call).  Mounted noatime: a read's
 * atime update is a sleep of its own, not what these tests are about.  Each carries its control:
 * with fs.aio-offload at 0 the same cold read sleeps in io_submit(), so
 * the case does reach a sleep that the offload takes out (asserted on the
 * idle filesystem).  ext4 only: XFS has neither data journalling nor
 * inline data.  Mounted nodelalloc, without which ext4 ignores +j.
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
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <linux/fs.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#define OFFLOAD_SYSCTL	"/proc/sys/fs/aio-offload"
#define DROP_CACHES	"/proc/sys/vm/drop_caches"
#define BLK		4096
#define JFILE_LEN	(32 * BLK)
#define INLINE_LEN	40
#define BUF_LEN		JFILE_LEN
#define POISON		0xa5
/* FS_INLINE_DATA_FL is not in every uapi linux/fs.h. */
#define EXT4_INLINE_DATA_FL	0x10000000

struct ext4_state {
	aio_context_t ctx;
	char mnt[64];
	char *buf;
	struct aio_syncer syncer;
	bool sysctl_off;
};

/* _PARENT teardown: see the note in aio_util.h */
FIXTURE(ext4) {
	pid_t owner;
	struct ext4_state st;
};

FIXTURE_VARIANT(ext4) {
	bool busy;
};

FIXTURE_VARIANT_ADD(ext4, idle) {
	.busy = false,
};

FIXTURE_VARIANT_ADD(ext4, busy) {
	.busy = true,
};

/*
 * nodelalloc: with delayed allocation ext4 ignores a file's +j flag.
 * noatime: see the comment at the top.
 */
static int mount_ext4(const char *dev, char *mnt, size_t len)
{
	int ret = aio_mount_tmp(dev, "ext4", "nodelalloc", mnt, len);

	if (ret)
		return ret;
	if (mount(NULL, mnt, NULL, MS_REMOUNT | MS_BIND | MS_NOATIME, NULL))
		return -errno;
	return 0;
}

FIXTURE_SETUP(ext4)
{
	const char *dev = aio_dev_path();
	char * const mkfs[] = { "mkfs.ext4", "-F", "-q", "-E", "nodiscard",
				"-O", "inline_data", (char *)dev, NULL };
	struct ext4_state *st = &self->st;
	int ret;

	self->owner = getpid();
	st->ctx = 0;
	st->mnt[0] = '\0';
	st->syncer.fd = -1;
	st->sysctl_off = false;
	st->buf = aio_alloc_buf(BUF_LEN);
	ASSERT_NE(NULL, st->buf);
	ASSERT_EQ(0, aio_lock_memory());
	if (aio_offload_enabled() != 1)
		SKIP(return, "needs fs.aio-offload=1");
	if (!dev)
		SKIP(return, "AIO_TEST_DEV not set");
	if (!aio_dev_holds_data())
		SKIP(return, "the device does not store data");
	ret = aio_run(mkfs);
	if (ret == AIO_MKFS_NOT_FOUND)
		SKIP(return, "mkfs.ext4 not available");
	ASSERT_EQ(0, ret) TH_LOG("mkfs.ext4 -O inline_data %s: %d", dev, ret);
	ASSERT_EQ(0, mount_ext4(dev, st->mnt, sizeof(st->mnt)));
	ASSERT_EQ(0, sys_io_setup(8, &st->ctx));
	if (variant->busy)
		ASSERT_EQ(0, aio_syncer_start(&st->syncer, st->mnt));
}

FIXTURE_TEARDOWN_PARENT(ext4)
{
	struct ext4_state *st = &self->st;

	if (st->sysctl_off && aio_write_file(OFFLOAD_SYSCTL, "1"))
		TH_LOG("cannot set %s back to 1", OFFLOAD_SYSCTL);
	if (getpid() == self->owner) {
		if (st->syncer.fd >= 0 && aio_syncer_stop(&st->syncer) <= 0)
			TH_LOG("the sync loop did not run");
		if (st->ctx)
			sys_io_destroy(st->ctx);
		aio_free_buf(st->buf, BUF_LEN);
	}
	if (st->mnt[0] && aio_scratch_umount(st->mnt))
		TH_LOG("umount %s failed: %s", st->mnt, strerror(errno));
}

/* Write @len bytes of @seed's pattern to a new file @name, made stable. */
static int make_file(struct __test_metadata *_metadata,
		     struct ext4_state *st, const char *name, size_t len,
		     uint64_t seed)
{
	char path[sizeof(st->mnt) + 16];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", st->mnt, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	EXPECT_LE(0, fd) TH_LOG("open %s: %s", path, strerror(errno));
	if (fd < 0)
		return -1;
	aio_fill_pattern(st->buf, len, seed, 0);
	EXPECT_EQ((ssize_t)len, pwrite(fd, st->buf, len, 0));
	EXPECT_EQ(0, fsync(fd));
	return fd;
}

/* @seed's pattern, or with @holes zeroes in every odd block. */
static bool data_ok(const char *buf, size_t len, uint64_t seed, bool holes)
{
	size_t off, n;

	if (!holes)
		return aio_verify_pattern(buf, len, seed, 0) == -1;
	for (off = 0; off < len; off += BLK) {
		n = len - off < BLK ? len - off : BLK;
		if (off / BLK % 2 == 0 &&
		    aio_verify_pattern(buf + off, n, seed, off) != -1)
			return false;
		if (off / BLK % 2 == 1 && (buf[off] || memcmp(buf + off,
							      buf + off + 1,
							      n - 1)))
			return false;
	}
	return true;
}

/*
 * Open @name O_DIRECT and make it cold: the journal checkpointed (a
 * freeze) so that its data and metadata blocks are clean, all caches
 * dropped (its pages, its in-memory extents with its inode), and the
 * inode table block that the open read dropped again (BLKFLSBUF).  Then read @len at 0
 * through @ctx: return the voluntary context switches of the submitting
 * thread inside io_submit(), after checking the result (@expect bytes of
 * @seed's pattern) once the read completed.
 */
static long cold_direct_read(struct __test_metadata *_metadata,
			     struct ext4_state *st, aio_context_t ctx,
			     const char *name, size_t len, long expect,
			     uint64_t seed, bool holes)
{
	char path[sizeof(st->mnt) + 16];
	struct iocb cb, *list = &cb;
	struct io_event ev;
	long nvcsw = -1;
	int fd, devfd;

	/* Journalled data stays pinned until it is checkpointed. */
	EXPECT_EQ(0, aio_fs_freeze(st->mnt));
	EXPECT_EQ(0, aio_fs_thaw(st->mnt));
	EXPECT_EQ(0, aio_write_file(DROP_CACHES, "3"));
	snprintf(path, sizeof(path), "%s/%s", st->mnt, name);
	fd = open(path, O_RDONLY | O_DIRECT);
	EXPECT_LE(0, fd) TH_LOG("open %s: %s", path, strerror(errno));
	devfd = open(aio_dev_path(), O_RDONLY);
	EXPECT_LE(0, devfd);
	if (fd < 0 || devfd < 0)
		goto out;
	EXPECT_EQ(0, ioctl(devfd, BLKFLSBUF, 0));

	memset(st->buf, POISON, len);
	aio_prep_rw(&cb, IOCB_CMD_PREAD, fd, st->buf, len, 0, 7);
	EXPECT_EQ(1, aio_submit_nvcsw(ctx, 1, &list, &nvcsw))
		TH_LOG("io_submit: %s", strerror(errno));
	EXPECT_EQ(1, aio_reap(ctx, &ev, 1, 60));
	EXPECT_EQ(expect, ev.res);
	EXPECT_TRUE(data_ok(st->buf, expect, seed, holes))
		TH_LOG("%s: wrong data", name);
out:
	if (devfd >= 0)
		close(devfd);
	if (fd >= 0)
		close(fd);
	return nvcsw;
}

/*
 * The same read through a context made with fs.aio-offload at 0, which is
 * issued as stock does: it must sleep, or the case proves nothing.  Only
 * asserted on the idle filesystem: the busy one's sync loop may dirty an
 * inode in the same inode table block, which then stays cached.
 */
static void control_sleeps(struct __test_metadata *_metadata,
			   struct ext4_state *st, bool busy,
			   const char *name, size_t len, long expect,
			   uint64_t seed, bool holes)
{
	aio_context_t ctx = 0;
	long nvcsw;

	ASSERT_EQ(0, aio_write_file(OFFLOAD_SYSCTL, "0"));
	st->sysctl_off = true;
	ASSERT_EQ(0, sys_io_setup(8, &ctx));
	nvcsw = cold_direct_read(_metadata, st, ctx, name, len, expect,
				 seed, holes);
	EXPECT_EQ(0, sys_io_destroy(ctx));
	ASSERT_EQ(0, aio_write_file(OFFLOAD_SYSCTL, "1"));
	st->sysctl_off = false;
	if (busy)
		TH_LOG("control on a busy filesystem: %ld sleeps", nvcsw);
	else
		EXPECT_LT(0, nvcsw)
			TH_LOG("control: with the offload off the read did not sleep");
}

static unsigned int file_flags(int fd)
{
	unsigned int flags = 0;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags))
		return 0;
	return flags;
}

/*
 * The +j file has a block at every other offset, so its extents are in a
 * tree block that the read (readahead, without NOIO) would have to read
 * before any data: the sleep a cold extent tree costs.  The holes read
 * as zeroes.
 */
TEST_F_TIMEOUT(ext4, journalled_direct_read_does_not_sleep, 120)
{
	struct ext4_state *st = &self->st;
	uint64_t seed = aio_new_seed();
	unsigned int flags;
	long nvcsw;
	int fd, i;

	fd = make_file(_metadata, st, "j", JFILE_LEN, seed);
	ASSERT_LE(0, fd);
	for (i = 1; i < JFILE_LEN / BLK; i += 2)
		ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE |
				       FALLOC_FL_KEEP_SIZE, i * BLK, BLK));
	ASSERT_EQ(0, fsync(fd));
	flags = file_flags(fd) | FS_JOURNAL_DATA_FL;
	ASSERT_EQ(0, ioctl(fd, FS_IOC_SETFLAGS, &flags))
		TH_LOG("chattr +j: %s", strerror(errno));
	ASSERT_NE(0U, file_flags(fd) & FS_JOURNAL_DATA_FL);
	close(fd);

	nvcsw = cold_direct_read(_metadata, st, st->ctx, "j", JFILE_LEN,
				 JFILE_LEN, seed, true);
	EXPECT_EQ(0, nvcsw) TH_LOG("io_submit() slept %ld times", nvcsw);
	control_sleeps(_metadata, st, variant->busy, "j", JFILE_LEN,
		       JFILE_LEN, seed, true);
}

TEST_F_TIMEOUT(ext4, inline_data_direct_read_does_not_sleep, 120)
{
	struct ext4_state *st = &self->st;
	uint64_t seed = aio_new_seed();
	long nvcsw;
	int fd;

	fd = make_file(_metadata, st, "i", INLINE_LEN, seed);
	ASSERT_LE(0, fd);
	ASSERT_NE(0U, file_flags(fd) & EXT4_INLINE_DATA_FL)
		TH_LOG("a %d-byte file did not get inline data", INLINE_LEN);
	close(fd);

	/* A whole block asked, the file's INLINE_LEN bytes returned. */
	nvcsw = cold_direct_read(_metadata, st, st->ctx, "i", BLK,
				 INLINE_LEN, seed, false);
	EXPECT_EQ(0, nvcsw) TH_LOG("io_submit() slept %ld times", nvcsw);
	control_sleeps(_metadata, st, variant->busy, "i", BLK, INLINE_LEN,
		       seed, false);
}

TEST_HARNESS_MAIN
