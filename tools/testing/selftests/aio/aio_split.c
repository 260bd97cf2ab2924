// SPDX-License-Identifier: GPL-2.0
/*
 * ext4 splits an unwritten extent when a direct write goes into it; under
 * NOWAIT (io_uring's first try, the AIO offload's inline try) it now does
 * so without blocking, or refuses and lets a blocking call do it.  The
 * cases where that split cannot be done in place, or races with others:
 *
 *   full_fs_full_leaf
 *	a filesystem made with -m 0, its reserved clusters at 0, filled up;
 *	the target extents (two blocks each) sit in full leaves, so that a
 *	split needs a new block there is none of.  4 KiB writes into their
 *	first blocks, 16 in flight through io_uring and as many through
 *	io_submit() (offload on): each completes (stock ext4 zeroes the
 *	extent out when the split cannot allocate), reads back, the second
 *	block of each target extent reads zeroes (the device was filled
 *	with a pattern first), and e2fsck -fn is clean afterwards.
 *	That the case is the one meant: no free block left (statvfs), and
 *	ext4 refused NOWAIT splits for want of room (the
 *	ext4_dio_nowait_eagain tracepoint, reason allocation).  Before
 *	them, a write into an unwritten extent past the EOF of a file whose
 *	four extents sit in the inode fails with ENOSPC: its split needs a
 *	leaf block, and past EOF ext4 may not zero out instead.
 *   quota_full_leaf
 *	the same writes on a filesystem with room (-O quota, mounted
 *	usrquota) whose file belongs to a user at its block hard limit, set
 *	with quotactl(2) after the fallocate; the test drops
 *	CAP_SYS_RESOURCE (which overrides hard limits) after io_setup(), so
 *	a split cannot allocate: each write completes all the same (zeroed
 *	out on EDQUOT), reads back, the second blocks read zeroes, e2fsck is
 *	clean, and the user's usage never passed the limit - a worker that
 *	split with the io_setup() caller's credentials would have passed it.
 *   mmap_racing_direct_writes
 *	one unwritten extent in a leaf: a thread dirties the even 4 KiB
 *	blocks of a chunk through a shared mapping (MADV_RANDOM: no
 *	read-around caches the odd ones) and writes them back
 *	(sync_file_range()) while 4 KiB direct writes go into the odd ones
 *	of the same chunk through io_uring, chunk after chunk in step, so
 *	that writeback's conversions and the direct writes' NOWAIT splits
 *	(some seen in the tracepoint) race on one extent; then every block
 *	holds what was written to it.
 *
 * Both on a default mount and with dioread_lock (whose writeback zeroes
 * out small extents, ext4's max_zeroout), and on a default mount with
 * the file's extent map pinned (EXT4_IOC_PIN_EXTENTS) before the writes:
 * there the zero-outs and failed splits remove entries of a pinned map,
 * which must be whole again afterwards (EXT4_IOC_GET_ES_CACHE), and 4 KiB
 * overwrites of the file then go inline.  ext4 only, on a 64 MiB
 * dm-linear part of the NVMe: the cases are about ext4, and elsewhere
 * every direct write is handed off before ext4 sees it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/quota.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <linux/falloc.h>
#include <linux/io_uring.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#define BLK		4096
#define DEV_MB		64
#define DM_NAME		"aio-split"
#define DM_DEV		"/dev/mapper/" DM_NAME
/* full_fs_full_leaf: two-block extents, two-block holes between. */
#define TARGETS		1024
#define IN_FLIGHT	16
/* mmap_racing_direct_writes */
#define RACE_BLOCKS	2048		/* 8 MiB, one fallocated extent */
#define NOWAIT_EVENT	"ext4/ext4_dio_nowait_eagain"
#define NOWAIT_LINE	"ext4_dio_nowait_eagain:"
#define SPLIT_EVENT	"ext4/ext4_ext_handle_unwritten_extents"
#define SPLIT_LINE	"ext4_ext_handle_unwritten_extents:"
#define RACE_CHUNK	64		/* blocks the two threads take at a time */
#define QUOTA_UID	4242
#define ROOT_STAT	"/sys/fs/cgroup/aio.stat"
#define PINNED_OVERWRITES 64	/* targets overwritten after the splits */

struct split_state {
	char mnt[64];
	struct aio_uring ring;
	aio_context_t ctx;
	char *buf;
	bool dm, mounted;
};

FIXTURE(split) {
	pid_t owner;
	struct split_state st;
};

FIXTURE_VARIANT(split) {
	const char *opts;
	bool pin;
};

FIXTURE_VARIANT_ADD(split, ext4) { .opts = NULL };
FIXTURE_VARIANT_ADD(split, ext4_dioread_lock) { .opts = "dioread_lock" };
FIXTURE_VARIANT_ADD(split, ext4_pinned) { .opts = NULL, .pin = true };

/* mkfs.ext4 the dm device (with -O @features, or none) and mount it. */
static int make_fs(struct split_state *st, const char *features,
		   const char *opts)
{
	char * const mkfs[] = { "mkfs.ext4", "-F", "-q", "-b", "4096", "-m",
				"0", "-E", "nodiscard",
				/* without features, argv ends here */
				features ? "-O" : DM_DEV,
				features ? (char *)features : NULL,
				DM_DEV, NULL };
	int ret;

	ret = aio_run(mkfs);
	if (ret)
		return ret;
	ret = aio_mount_tmp(DM_DEV, "ext4", opts, st->mnt, sizeof(st->mnt));
	st->mounted = !ret;
	return ret;
}

FIXTURE_SETUP(split)
{
	struct split_state *st = &self->st;
	const char *why;
	uint64_t size;
	int ret;

	self->owner = getpid();
	memset(st, 0, sizeof(*st));
	st->ring.fd = -1;
	st->buf = aio_alloc_buf(IN_FLIGHT * 2 * BLK);
	ASSERT_NE(NULL, st->buf);
	if (aio_offload_enabled() != 1)
		SKIP(return, "needs fs.aio-offload=1");
	ret = aio_dev_fit("nvme", (uint64_t)DEV_MB << 20, &size, &why);
	ASSERT_LE(0, ret) TH_LOG("%s: %s", aio_dev_path(), strerror(-ret));
	if (ret)
		SKIP(return, "%s", why);
	ret = aio_uring_init(&st->ring, 2 * IN_FLIGHT);
	if (ret)
		SKIP(return, "io_uring: %s", strerror(-ret));
	ASSERT_EQ(0, sys_io_setup(2 * IN_FLIGHT, &st->ctx));
	ret = aio_dm_linear(DM_NAME, aio_dev_path(), 0, (uint64_t)DEV_MB << 20);
	if (ret == AIO_MKFS_NOT_FOUND)
		SKIP(return, "dmsetup not available");
	ASSERT_EQ(0, ret);
	st->dm = true;
	/* Not zeroes: an extent marked written but never zeroed shows. */
	ASSERT_EQ(0, aio_fill_stale(DM_DEV, (uint64_t)DEV_MB << 20));
	ret = make_fs(st, NULL, variant->opts);
	if (ret == AIO_MKFS_NOT_FOUND) {
		aio_dm_remove(DM_NAME);
		SKIP(return, "mkfs.ext4 not available");
	}
	ASSERT_EQ(0, ret);
}

/* _PARENT teardown: see the note in aio_util.h */
FIXTURE_TEARDOWN_PARENT(split)
{
	struct split_state *st = &self->st;

	aio_trace_event(NOWAIT_EVENT, false);
	aio_trace_event(SPLIT_EVENT, false);
	if (getpid() == self->owner) {
		if (st->ring.fd >= 0)
			aio_uring_exit(&st->ring);
		if (st->ctx)
			sys_io_destroy(st->ctx);
		aio_free_buf(st->buf, IN_FLIGHT * 2 * BLK);
	}
	if (st->mounted && aio_scratch_umount(st->mnt))
		TH_LOG("umount %s: %s", st->mnt, strerror(errno));
	if (st->dm && aio_dm_remove(DM_NAME))
		TH_LOG("dmsetup remove %s failed", DM_NAME);
}

/* /sys/fs/ext4/<dev>/@attr for the filesystem at @mnt, set to @val. */
static int ext4_sysfs_set(const char *mnt, const char *attr, const char *val)
{
	char link[PATH_MAX], path[PATH_MAX + 64];
	struct stat sb;
	ssize_t n;

	if (stat(mnt, &sb))
		return -errno;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u",
		 major(sb.st_dev), minor(sb.st_dev));
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = '\0';
	snprintf(path, sizeof(path), "/sys/fs/ext4/%s/%s", basename(link),
		 attr);
	return aio_write_file(path, val);
}

/* Write until ENOSPC, then sync: the filesystem is full. */
static void fill_up(struct __test_metadata *_metadata, const char *mnt,
		    char *buf)
{
	char path[96];
	off_t pos = 0;
	size_t len;
	int fd;

	snprintf(path, sizeof(path), "%s/filler", mnt);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	ASSERT_LE(0, fd);
	memset(buf, 0x11, 2 * IN_FLIGHT * BLK);
	for (len = 2 * IN_FLIGHT * BLK; len >= BLK; len /= 2) {
		while (pwrite(fd, buf, len, pos) == (ssize_t)len)
			pos += len;
		fsync(fd);
	}
	close(fd);
	sync();
}

/*
 * File @name with @n unwritten extents of two blocks, two-block holes
 * between (fallocate KEEP_SIZE), and i_size @size, all synced: its fd or
 * -errno.
 */
static int make_extents(struct split_state *st, const char *name, int n,
			off_t size)
{
	char path[96];
	int fd, i;

	snprintf(path, sizeof(path), "%s/%s", st->mnt, name);
	fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, size))
		goto fail;
	for (i = 0; i < n; i++)
		if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)i * 4 * BLK,
			      2 * BLK))
			goto fail;
	if (fsync(fd))
		goto fail;
	return fd;
fail:
	i = -errno;
	close(fd);
	return i;
}

/* TARGETS such extents: full leaves. */
static int make_targets(struct __test_metadata *_metadata,
			struct split_state *st)
{
	return make_extents(st, "f", TARGETS, (off_t)TARGETS * 4 * BLK);
}

/*
 * 4 KiB writes into the first block of each target, so that the split
 * adds an extent to a full leaf: even targets through io_uring, odd ones
 * through io_submit(), IN_FLIGHT of each at a time.  Each must complete
 * and read back, and the target's second block read zeroes.  How many
 * NOWAIT splits ext4 refused for want of room goes to *full (-1: not
 * traced); how many targets ext4 zeroed out rather than split (their
 * second block no longer unwritten), to *zeroed.
 */
static void write_targets(struct __test_metadata *_metadata,
			  struct split_state *st, int fd, long *full,
			  int *zeroed)
{
	uint64_t seed = aio_new_seed(), tag = 0;
	long long res[TARGETS];
	int i, j, done, enospc = 0, ok = 0;
	bool tracing;
	char *rb;
	long nvcsw;

	*full = -1;
	*zeroed = 0;
	for (i = 0; i < TARGETS; i++)
		res[i] = -EINPROGRESS;
	tracing = !aio_trace_clear() && !aio_trace_event(NOWAIT_EVENT, true);
	for (i = 0; i < TARGETS; i += 2 * IN_FLIGHT) {
		for (j = 0; j < 2 * IN_FLIGHT && i + j < TARGETS; j++) {
			int t = i + j;
			char *b = st->buf + j * BLK;
			off_t off = (off_t)t * 4 * BLK;

			aio_fill_pattern(b, BLK, seed, off);
			if (t % 2 == 0) {
				ASSERT_EQ(1, aio_uring_rw_nvcsw(&st->ring,
								IORING_OP_WRITE,
								fd, b, BLK, off,
								t, &nvcsw));
			} else {
				struct iocb cb, *list = &cb;

				aio_prep_rw(&cb, IOCB_CMD_PWRITE, fd, b, BLK,
					    off, t);
				ASSERT_EQ(1, sys_io_submit(st->ctx, 1, &list));
			}
		}
		for (done = 0; done < j; done++) {
			long long r = aio_reap_either(st->ctx, &st->ring,
						      done % 2 == 0, &tag);

			ASSERT_GT((uint64_t)TARGETS, tag);
			res[tag] = r;
		}
	}
	if (tracing) {
		*full = aio_trace_count(NOWAIT_LINE, "reason allocation");
		TH_LOG("ext4 refused %ld NOWAIT writes in all",
		       aio_trace_count(NOWAIT_LINE, NULL));
		aio_trace_event(NOWAIT_EVENT, false);
	}
	rb = st->buf;
	for (i = 0; i < TARGETS; i++) {
		off_t off = (off_t)i * 4 * BLK;

		/*
		 * Not even ENOSPC or EDQUOT: the blocking split zeroes the
		 * extent out when it cannot allocate (the targets are inside
		 * i_size).
		 */
		if (res[i] == -ENOSPC || res[i] == -EDQUOT)
			enospc++;
		EXPECT_EQ(BLK, res[i]) TH_LOG("write %d: %lld", i, res[i]);
		if (res[i] != BLK)
			continue;
		ok++;
		memset(rb, 0xa5, 2 * BLK);
		ASSERT_EQ(2 * BLK, pread(fd, rb, 2 * BLK, off));
		EXPECT_EQ(-1, aio_verify_pattern(rb, BLK, seed, off))
			TH_LOG("target %d: the write's data is not there", i);
		EXPECT_TRUE(!rb[BLK] && !memcmp(rb + BLK, rb + BLK + 1,
						BLK - 1))
			TH_LOG("target %d: its second block is not zeroes", i);
		*zeroed += aio_unwritten(fd, off + BLK, BLK) == 0;
	}
	TH_LOG("%d writes completed, %d failed with ENOSPC or EDQUOT, %d zeroed out",
	       ok, enospc, *zeroed);
	TH_LOG("ext4 refused %ld NOWAIT splits for want of room", *full);
	EXPECT_LT(0, ok);
}

/*
 * The pinned variant: pin @fd's extent map (EXT4_IOC_PIN_EXTENTS) before
 * the writes, so that the zero-outs and failed splits they cause remove
 * entries of a pinned map.
 */
static void maybe_pin(struct __test_metadata *_metadata, bool pin, int fd)
{
	if (pin)
		ASSERT_EQ(0, ioctl(fd, EXT4_IOC_PIN_EXTENTS))
			TH_LOG("pin: %s", strerror(errno));
}

/*
 * After them, the pinned map still covers [0, @end) (the paths that
 * removed entries put them back), and 4 KiB overwrites of the targets'
 * first blocks, one a call through io_submit(), are all issued inline
 * (aio.stat), none sleeping, and read back.
 */
static void pinned_map_whole(struct __test_metadata *_metadata, bool pin,
			     struct split_state *st, int fd, off_t end)
{
	long long in0 = aio_read_key(ROOT_STAT, "inline"), in1;
	uint64_t seed = aio_new_seed(), tag;
	int i, slept = 0;
	long nvcsw;
	off_t gap;

	if (!pin)
		return;
	gap = aio_es_covered(fd, end);
	EXPECT_EQ(end, gap) TH_LOG("the pinned map has a gap at %lld",
				   (long long)gap);
	for (i = 0; i < PINNED_OVERWRITES; i++) {
		off_t off = (off_t)i * 4 * BLK;
		struct iocb cb, *list = &cb;

		aio_fill_pattern(st->buf, BLK, seed, off);
		aio_prep_rw(&cb, IOCB_CMD_PWRITE, fd, st->buf, BLK, off, i);
		ASSERT_EQ(1, aio_submit_nvcsw(st->ctx, 1, &list, &nvcsw));
		slept += nvcsw != 0;
		ASSERT_EQ(BLK, aio_reap_either(st->ctx, NULL, false, &tag));
		EXPECT_EQ((uint64_t)i, tag);
	}
	in1 = aio_read_key(ROOT_STAT, "inline");
	TH_LOG("pinned overwrites after: %d slept, %lld of %d inline", slept,
	       in1 - in0, PINNED_OVERWRITES);
	EXPECT_EQ(0, slept);
	if (in0 >= 0)
		EXPECT_EQ(PINNED_OVERWRITES, in1 - in0);
	for (i = 0; i < PINNED_OVERWRITES; i++) {
		off_t off = (off_t)i * 4 * BLK;

		ASSERT_EQ(BLK, pread(fd, st->buf, BLK, off));
		EXPECT_EQ(-1, aio_verify_pattern(st->buf, BLK, seed, off));
	}
}

/* Unmounted, e2fsck -fn finds nothing to fix. */
static void umount_fsck(struct __test_metadata *_metadata,
			struct split_state *st)
{
	char * const fsck[] = { "e2fsck", "-fn", DM_DEV, NULL };

	ASSERT_EQ(0, aio_scratch_umount(st->mnt));
	st->mounted = false;
	EXPECT_EQ(0, aio_run(fsck));
}

/*
 * A file whose four extents sit in the inode (ext4 keeps up to four
 * there): three unwritten ones of two blocks below its EOF and one of
 * PAST_EOF_BLOCKS past it (fallocate KEEP_SIZE).  Made while there is
 * room.
 */
#define PAST_EOF_BLOCKS	8
#define PAST_EOF_FIRST	16
static int make_in_inode(struct split_state *st)
{
	int fd = make_extents(st, "g", 3, 12 * BLK), err;

	if (fd < 0)
		return fd;
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)PAST_EOF_FIRST * BLK,
		      (off_t)PAST_EOF_BLOCKS * BLK) || fsync(fd)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/*
 * On the full filesystem, a 4 KiB write into the middle of @fd's extent
 * past EOF (make_in_inode()) through io_submit(): the split makes six
 * extents, which need a leaf block there is none of, and past EOF ext4
 * may not zero the extent out instead, so the write fails with ENOSPC,
 * through the split's error path, which drops the extent's cache
 * entries; pinned, it reads them back, and the map is whole.
 */
static void split_fails_past_eof(struct __test_metadata *_metadata,
				 bool pin, struct split_state *st, int fd)
{
	const off_t end = (off_t)(PAST_EOF_FIRST + PAST_EOF_BLOCKS) * BLK;
	struct iocb cb, *list = &cb;
	long long res;
	uint64_t tag;
	bool tracing;
	off_t gap;

	memset(st->buf, 0x3c, BLK);
	aio_prep_rw(&cb, IOCB_CMD_PWRITE, fd, st->buf, BLK,
		    (off_t)(PAST_EOF_FIRST + PAST_EOF_BLOCKS / 2) * BLK, 0);
	tracing = !aio_trace_clear() && !aio_trace_event(SPLIT_EVENT, true);
	ASSERT_EQ(1, sys_io_submit(st->ctx, 1, &list));
	res = aio_reap_either(st->ctx, NULL, false, &tag);
	TH_LOG("the write past EOF that must split: %lld", res);
	EXPECT_EQ(-ENOSPC, res);
	/* It got as far as the unwritten extent's split. */
	if (tracing) {
		EXPECT_LT(0, aio_trace_count(SPLIT_LINE, NULL));
		aio_trace_event(SPLIT_EVENT, false);
	}
	EXPECT_EQ(12 * BLK, lseek(fd, 0, SEEK_END));
	if (!pin)
		return;
	gap = aio_es_covered(fd, end);
	EXPECT_EQ(end, gap) TH_LOG("the pinned map has a gap at %lld",
				   (long long)gap);
}

TEST_F_TIMEOUT(split, full_fs_full_leaf, AIO_DEV_TEST_TIMEOUT)
{
	struct split_state *st = &self->st;
	struct statvfs vfs;
	long full;
	int fd, gfd, zeroed;

	fd = make_targets(_metadata, st);
	ASSERT_LE(0, fd) TH_LOG("targets: %s", strerror(-fd));
	gfd = make_in_inode(st);
	ASSERT_LE(0, gfd) TH_LOG("g: %s", strerror(-gfd));
	/* No clusters kept back for such splits, and no block left. */
	ASSERT_EQ(0, ext4_sysfs_set(st->mnt, "reserved_clusters", "0"));
	fill_up(_metadata, st->mnt, st->buf);
	ASSERT_EQ(0, statvfs(st->mnt, &vfs));
	EXPECT_EQ(0UL, vfs.f_bavail)
		TH_LOG("%llu blocks free", (unsigned long long)vfs.f_bavail);
	maybe_pin(_metadata, variant->pin, fd);
	maybe_pin(_metadata, variant->pin, gfd);
	split_fails_past_eof(_metadata, variant->pin, st, gfd);
	close(gfd);
	write_targets(_metadata, st, fd, &full, &zeroed);
	/*
	 * The splits that could not allocate zeroed their extents out;
	 * where the map is pinned, that removed entries of it.
	 */
	EXPECT_LT(0, zeroed);
	pinned_map_whole(_metadata, variant->pin, st, fd,
			 (off_t)TARGETS * 4 * BLK);
	/*
	 * Some: how many depends on timing, as a write refused for its lock
	 * or the journal first, or held behind a handed-off one, never gets
	 * to the leaf (a debug kernel saw 50 of 1024).
	 */
	if (full >= 0)
		EXPECT_LT(0, full);
	close(fd);
	umount_fsck(_metadata, st);
}

/* @uid's block usage and hard limit, in bytes: 0 or -errno. */
static int quota_get(const char *dev, uid_t uid, uint64_t *used,
		     uint64_t *limit)
{
	struct dqblk dq;

	if (quotactl(QCMD(Q_GETQUOTA, USRQUOTA), dev, uid, (caddr_t)&dq))
		return -errno;
	*used = dq.dqb_curspace;
	*limit = dq.dqb_bhardlimit << 10;	/* in 1 KiB units */
	return 0;
}

/* Drop CAP_SYS_RESOURCE from the effective set: 0 or -errno. */
static int drop_sys_resource(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[CAP_TO_INDEX(CAP_SYS_RESOURCE)].effective &=
		~CAP_TO_MASK(CAP_SYS_RESOURCE);
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

TEST_F_TIMEOUT(split, quota_full_leaf, AIO_DEV_TEST_TIMEOUT)
{
	struct split_state *st = &self->st;
	uint64_t used = 0, limit = 0;
	char opts[64];
	struct dqblk dq;
	long full;
	int fd, ret, zeroed;

	if (access("/proc/sys/fs/quota", F_OK))
		SKIP(return, "no disk quota in this kernel (CONFIG_QUOTA)");
	/* The fixture's filesystem, remade with quota, limits enforced. */
	ASSERT_EQ(0, aio_scratch_umount(st->mnt));
	st->mounted = false;
	snprintf(opts, sizeof(opts), "usrquota%s%s",
		 variant->opts ? "," : "", variant->opts ? variant->opts : "");
	ret = make_fs(st, "quota", opts);
	ASSERT_EQ(0, ret) TH_LOG("mkfs -O quota, mount -o %s: %d", opts, ret);

	fd = make_targets(_metadata, st);
	ASSERT_LE(0, fd) TH_LOG("targets: %s", strerror(-fd));
	ASSERT_EQ(0, fchown(fd, QUOTA_UID, QUOTA_UID));
	/* The owner's hard limit is what it uses now: no block more. */
	ASSERT_EQ(0, quota_get(DM_DEV, QUOTA_UID, &used, &limit));
	memset(&dq, 0, sizeof(dq));
	dq.dqb_bhardlimit = used >> 10;
	dq.dqb_bsoftlimit = used >> 10;
	dq.dqb_valid = QIF_BLIMITS;
	ASSERT_EQ(0, quotactl(QCMD(Q_SETQUOTA, USRQUOTA), DM_DEV, QUOTA_UID,
			      (caddr_t)&dq));
	/*
	 * After io_setup(): requests from here on carry credentials other
	 * than the pool's, so the offload's workers must take them.  (The
	 * io_uring half cannot tell: io-wq's workers are forked when first
	 * needed, after this, with these credentials.)
	 */
	maybe_pin(_metadata, variant->pin, fd);
	ASSERT_EQ(0, drop_sys_resource());
	/* The limit bites: one more block is refused. */
	ret = fallocate(fd, 0, (off_t)TARGETS * 4 * BLK, BLK);
	EXPECT_TRUE(ret == -1 && errno == EDQUOT)
		TH_LOG("fallocate past the limit: %d (%s)", ret,
		       strerror(errno));

	write_targets(_metadata, st, fd, &full, &zeroed);
	if (full >= 0)
		EXPECT_LT(0, full);
	EXPECT_LT(0, zeroed);
	pinned_map_whole(_metadata, variant->pin, st, fd,
			 (off_t)TARGETS * 4 * BLK);
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	ASSERT_EQ(0, quota_get(DM_DEV, QUOTA_UID, &used, &limit));
	TH_LOG("user %d: %llu of %llu bytes", QUOTA_UID,
	       (unsigned long long)used, (unsigned long long)limit);
	/* Usage only grows here: at the end is where it would show. */
	EXPECT_GE(limit, used);
	umount_fsck(_metadata, st);
}

struct dirtier {
	char *map;
	int fd;
	uint64_t seed;
	int ret;
	pthread_barrier_t step;
};

/*
 * The even blocks of the mapping, each written back as soon as dirtied,
 * RACE_CHUNK blocks at a time, in step with the direct writes.
 */
static void *dirty_even(void *arg)
{
	struct dirtier *d = arg;
	int c, i;

	for (c = 0; c < RACE_BLOCKS; c += RACE_CHUNK) {
		pthread_barrier_wait(&d->step);
		for (i = c; i < c + RACE_CHUNK; i += 2) {
			off_t off = (off_t)i * BLK;

			aio_fill_pattern(d->map + off, BLK, d->seed, off);
			if (sync_file_range(d->fd, off, BLK,
					    SYNC_FILE_RANGE_WRITE) && !d->ret)
				d->ret = -errno;
		}
	}
	return NULL;
}

TEST_F_TIMEOUT(split, mmap_racing_direct_writes, AIO_DEV_TEST_TIMEOUT)
{
	struct split_state *st = &self->st;
	struct dirtier d = { 0 };
	struct io_uring_cqe cqe;
	char path[96], *rb, *wb;
	int dfd, c, i, inflight, bad = 0;
	uint64_t seed = aio_new_seed();
	bool tracing;
	pthread_t thr;
	long nvcsw, splits = -1;

	snprintf(path, sizeof(path), "%s/f", st->mnt);
	d.fd = open(path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, d.fd);
	ASSERT_EQ(0, fallocate(d.fd, 0, 0, (off_t)RACE_BLOCKS * BLK));
	/*
	 * Small extents past the end, apart: the tree leaves the inode
	 * (a NOWAIT split is not tried in an in-inode tree).
	 */
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, fallocate(d.fd, FALLOC_FL_KEEP_SIZE,
				       (off_t)(RACE_BLOCKS + 2 * i + 1) * BLK,
				       BLK));
	ASSERT_EQ(0, fsync(d.fd));
	dfd = open(path, O_RDWR | O_DIRECT);
	ASSERT_LE(0, dfd);
	maybe_pin(_metadata, variant->pin, dfd);
	d.map = mmap(NULL, (size_t)RACE_BLOCKS * BLK, PROT_READ | PROT_WRITE,
		     MAP_SHARED, d.fd, 0);
	ASSERT_NE(MAP_FAILED, d.map);
	/* Faults read only their own page: the odd ones stay uncached. */
	ASSERT_EQ(0, madvise(d.map, (size_t)RACE_BLOCKS * BLK, MADV_RANDOM));
	/* A buffer per write: completions come back in any order. */
	wb = aio_alloc_buf((size_t)RACE_BLOCKS / 2 * BLK);
	ASSERT_NE(NULL, wb);
	d.seed = aio_new_seed();
	ASSERT_EQ(0, pthread_barrier_init(&d.step, NULL, 2));
	tracing = !aio_trace_clear() && !aio_trace_event(SPLIT_EVENT, true);
	ASSERT_EQ(0, pthread_create(&thr, NULL, dirty_even, &d));

	for (c = 0; c < RACE_BLOCKS; c += RACE_CHUNK) {
		pthread_barrier_wait(&d.step);
		inflight = 0;
		for (i = c + 1; i < c + RACE_CHUNK; i += 2) {
			char *b = wb + (size_t)(i / 2) * BLK;
			off_t off = (off_t)i * BLK;

			aio_fill_pattern(b, BLK, seed, off);
			ASSERT_EQ(1, aio_uring_rw_nvcsw(&st->ring,
							IORING_OP_WRITE, dfd,
							b, BLK, off, off,
							&nvcsw));
			if (++inflight < 2 * IN_FLIGHT)
				continue;
			ASSERT_EQ(0, aio_uring_reap(&st->ring, &cqe));
			EXPECT_EQ(BLK, cqe.res)
				TH_LOG("write at %lld: %d",
				       (long long)cqe.user_data, cqe.res);
			inflight--;
		}
		while (inflight--) {
			ASSERT_EQ(0, aio_uring_reap(&st->ring, &cqe));
			EXPECT_EQ(BLK, cqe.res);
		}
	}
	ASSERT_EQ(0, pthread_join(thr, NULL));
	if (tracing) {
		splits = aio_trace_count(SPLIT_LINE, "|SPLIT_NOWAIT");
		aio_trace_event(SPLIT_EVENT, false);
	}
	EXPECT_EQ(0, d.ret) TH_LOG("sync_file_range: %s", strerror(-d.ret));
	ASSERT_EQ(0, msync(d.map, (size_t)RACE_BLOCKS * BLK, MS_SYNC));
	munmap(d.map, (size_t)RACE_BLOCKS * BLK);
	ASSERT_EQ(0, fsync(d.fd));
	close(d.fd);
	TH_LOG("%ld NOWAIT splits tried by the direct writes", splits);
	if (tracing)
		EXPECT_LT(0, splits);

	/* From the disk: direct reads, the page cache dropped. */
	ASSERT_EQ(0, aio_write_file("/proc/sys/vm/drop_caches", "3"));
	rb = st->buf;
	for (i = 0; i < RACE_BLOCKS; i++) {
		off_t off = (off_t)i * BLK;

		ASSERT_EQ(BLK, pread(dfd, rb, BLK, off));
		if (aio_verify_pattern(rb, BLK, i % 2 ? seed : d.seed,
				       off) != -1 && bad++ < 8)
			TH_LOG("block %d holds neither its %s write", i,
			       i % 2 ? "direct" : "mmap");
	}
	EXPECT_EQ(0, bad);
	pinned_map_whole(_metadata, variant->pin, st, dfd,
			 (off_t)RACE_BLOCKS * BLK);
	close(dfd);
	aio_free_buf(wb, (size_t)RACE_BLOCKS / 2 * BLK);
}

TEST_HARNESS_MAIN
