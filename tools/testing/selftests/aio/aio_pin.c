// SPDX-License-Identifier: GPL-2.0
/*
 * ext4's extent pin (EXT4_IOC_PIN_EXTENTS): a file whose whole extent map
 * is kept in memory, so that its direct overwrites under IOCB_NOWAIT
 * never miss the extent status cache and are issued inline, even right
 * after a remount and under memory pressure.
 *
 * The file: FRAG_BLOCKS blocks, the even ones written and the odd ones
 * fallocated (unwritten), one extent per block, then a hole up to i_size.
 *
 *   cold_overwrites_inline	remount, open, pin; then evict what can be
 *				evicted (a memory hog, the es shrinker's
 *				debugfs scan file and drop_caches 2 run the
 *				es shrinker; EXT4_IOC_CLEAR_ES_CACHE drops
 *				the inode's entries); the shrinker does not
 *				count the pinned entries, the map must still
 *				cover the file
 *				(EXT4_IOC_GET_ES_CACHE), and NR_CALLS
 *				overwrites through io_submit() and as many
 *				through io_uring must take no voluntary
 *				context switch, be issued inline (aio.stat)
 *				and draw no -EAGAIN from ext4 (tracepoint);
 *				writes into unwritten blocks too, but for the
 *				refusals the NOWAIT split allows.  Control:
 *				unpinned and mapped again, the shrinker counts
 *				the entries and its scan alone evicts them; the
 *				whole eviction leaves the map with gaps and
 *				overwrites are refused for them.
 *   removal_paths_refill	on a pinned file: truncate, punch hole,
 *				collapse and insert range, then the cache
 *				still covers the file and overwrites stay
 *				inline.
 *   journal_pressure	a small external journal on dm-delay and a
 *				neighbour committing metadata as fast as it
 *				can: the pinned file's overwrites all inline,
 *				its writes into unwritten blocks never sleep,
 *				are refused only for the journal or for room,
 *				read back, and FIEMAP shows them written.
 *   lifetime_and_errors	the pin is the open file's (GETSTATE, close,
 *				two files), idempotent, needs CAP_SYS_RESOURCE
 *				from the root cgroup (nothing to charge) and is
 *				refused where it cannot work; MOVE_EXT,
 *				migration to block maps and chattr +j of a
 *				pinned file fail with EBUSY.
 *   limit			es_pin_max_extents: over it a pin fails with
 *				ENOMEM and pins nothing; junk is refused and
 *				changes nothing; es_pinned_extents counts and
 *				goes back to 0.
 *   charge			a file of BIG_EXTENTS extents pinned from a
 *				cgroup: over its memory.max the pin fails with
 *				ENOMEM, pins nothing and kills nothing; pinned,
 *				memory.stat's slab_reclaimable carries the
 *				entries, and so it does for entries another
 *				cgroup's process adds; a second pin only
 *				from that cgroup (EBUSY); unpin gives it back;
 *				from the cgroup, no capability is needed.
 *
 * ext4 on NVMe only: on SD the offload hands every direct write off
 * before ext4 sees it, so there is nothing to claim there, and the
 * interface tests need no second device class.  Variants: an idle
 * filesystem and a busy one (a thread writing and fdatasync()ing another
 * file); the interface tests (lifetime_and_errors, limit) on the idle one.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
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
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <linux/ext4.h>
#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/io_uring.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#define DROP_CACHES	"/proc/sys/vm/drop_caches"
#define DEBUGFS		"/sys/kernel/debug"
#define SHRINKER_DIR	DEBUGFS "/shrinker"
#define CG_ROOT		"/sys/fs/cgroup"
#define ROOT_STAT	"/sys/fs/cgroup/aio.stat"
#define BLK		4096
#define FRAG_BLOCKS	8192	/* one extent each: >= 8k extents */
#define HOLE_BLOCKS	1024
#define FILE_LEN	((off_t)(FRAG_BLOCKS + HOLE_BLOCKS) * BLK)
#define NR_CALLS	512
#define BUF_LEN		(2 << 20)
#define NOWAIT_EVENT	"ext4/ext4_dio_nowait_eagain"
/* charge: extents pinned, then added by another cgroup; entry size */
#define BIG_EXTENTS	100000
#define GROW_EXTENTS	50000
#define ES_SIZE		40	/* sizeof(struct extent_status), x86-64 */
#define STAT_SLACK	(1024 * 1024) /* memcg stats flush in batches */
#define NOWAIT_LINE	"ext4_dio_nowait_eagain:"
/* journal_pressure: a small external journal on dm-delay */
#define DM_FS		"aio-pin-fs"
#define DM_LOG		"aio-pin-log"
#define LOG_LEN		(16ULL << 20)	/* 4096 journal blocks */
#define LOG_DELAY_MS	20

struct pin_state {
	aio_context_t ctx;
	struct aio_uring ring;
	struct aio_syncer syncer;
	char mnt[64];
	char sysfs[96];		/* /sys/fs/ext4/<dev> */
	char *buf;
	int fd;
	bool tracing;
	long old_max;		/* es_pin_max_extents before a test set it */
	char cg[64];		/* a cgroup the test made, to remove */
	int dm_made;		/* aio_slow_log_fs()'s AIO_DM_FS, AIO_DM_LOG */
};

/* _PARENT teardown: see the note in aio_util.h */
FIXTURE(pin) {
	pid_t owner;
	struct pin_state st;
};

FIXTURE_VARIANT(pin) {
	bool busy;
};

FIXTURE_VARIANT_ADD(pin, idle) { .busy = false };
FIXTURE_VARIANT_ADD(pin, busy) { .busy = true };

static void file_path(struct pin_state *st, const char *name, char *path,
		      size_t len)
{
	snprintf(path, len, "%s/%s", st->mnt, name);
}

/* make_frag_file() of FRAG_BLOCKS and HOLE_BLOCKS, in the mount. */
static void make_file(struct __test_metadata *_metadata,
		      struct pin_state *st, const char *name, uint64_t seed)
{
	char path[sizeof(st->mnt) + 16];

	file_path(st, name, path, sizeof(path));
	ASSERT_EQ(0, aio_make_frag_file(path, FRAG_BLOCKS, HOLE_BLOCKS, BLK,
					seed, st->buf));
}

static int open_file(struct pin_state *st, const char *name, int flags)
{
	char path[sizeof(st->mnt) + 16];

	file_path(st, name, path, sizeof(path));
	return open(path, flags, 0600);
}

FIXTURE_SETUP(pin)
{
	struct pin_state *st = &self->st;
	const char *dev = aio_dev_path();
	const char *base;
	int ret;

	self->owner = getpid();
	memset(st, 0, sizeof(*st));
	st->fd = -1;
	st->ring.fd = -1;
	st->syncer.fd = -1;
	st->old_max = -1;
	st->buf = aio_alloc_buf(BUF_LEN);
	ASSERT_NE(NULL, st->buf);
	ASSERT_EQ(0, aio_lock_memory());
	if (aio_offload_enabled() != 1)
		SKIP(return, "needs fs.aio-offload=1");
	if (!dev)
		SKIP(return, "AIO_TEST_DEV not set");
	if (!aio_dev_holds_data())
		SKIP(return, "the device does not store data");
	if (strcmp(aio_dev_class(), "nvme"))
		SKIP(return, "ext4's pin is tested on NVMe");
	ret = aio_scratch_mount(dev, "ext4", st->mnt, sizeof(st->mnt));
	if (ret == AIO_MKFS_NOT_FOUND)
		SKIP(return, "mkfs.ext4 not available");
	ASSERT_EQ(0, ret) TH_LOG("ext4 on %s: %d", dev, ret);
	base = strrchr(dev, '/');
	snprintf(st->sysfs, sizeof(st->sysfs), "/sys/fs/ext4/%s",
		 base ? base + 1 : dev);
	ret = aio_uring_init(&st->ring, NR_CALLS);
	if (ret)
		SKIP(return, "io_uring: %s", strerror(-ret));
	ASSERT_EQ(0, sys_io_setup(NR_CALLS, &st->ctx));
	st->tracing = !aio_trace_event(NOWAIT_EVENT, true);
}

FIXTURE_TEARDOWN_PARENT(pin)
{
	struct pin_state *st = &self->st;
	char path[sizeof(st->sysfs) + 32], num[32];

	if (st->tracing && aio_trace_event(NOWAIT_EVENT, false))
		TH_LOG("cannot disable %s", NOWAIT_EVENT);
	if (st->old_max >= 0) {
		snprintf(path, sizeof(path), "%s/es_pin_max_extents",
			 st->sysfs);
		snprintf(num, sizeof(num), "%ld", st->old_max);
		if (aio_write_file(path, num))
			TH_LOG("cannot restore %s", path);
	}
	if (getpid() == self->owner) {
		if (st->syncer.fd >= 0 && aio_syncer_stop(&st->syncer) <= 0)
			TH_LOG("the sync loop did not run");
		if (st->fd >= 0)
			close(st->fd);
		if (st->ctx)
			sys_io_destroy(st->ctx);
		if (st->ring.fd >= 0)
			aio_uring_exit(&st->ring);
		aio_free_buf(st->buf, BUF_LEN);
	}
	if (st->mnt[0] && aio_scratch_umount(st->mnt))
		TH_LOG("umount %s failed: %s", st->mnt, strerror(errno));
	if ((st->dm_made & AIO_DM_FS) && aio_dm_remove(DM_FS))
		TH_LOG("dmsetup remove %s failed", DM_FS);
	if ((st->dm_made & AIO_DM_LOG) && aio_dm_remove(DM_LOG))
		TH_LOG("dmsetup remove %s failed", DM_LOG);
	/* The test's process, which was in it, has exited. */
	if (st->cg[0] && rmdir(st->cg))
		TH_LOG("rmdir %s: %s", st->cg, strerror(errno));
}

/*
 * A pin of @fd, for a child (aio_in_child()): its errno, or 0 if it
 * succeeded (then unpinned, so that it charges nothing).
 */
static int pin_errno(int fd)
{
	int err = ioctl(fd, EXT4_IOC_PIN_EXTENTS) ? errno : 0;

	if (!err)
		ioctl(fd, EXT4_IOC_UNPIN_EXTENTS);
	return err;
}

/* For aio_in_child(): a pin with no capability in the effective set. */
static int pin_without_caps(void *arg)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return 255;
	data[0].effective = 0;
	data[1].effective = 0;
	if (syscall(SYS_capset, &hdr, data))
		return 255;
	return pin_errno(*(int *)arg);
}

static bool pinned(int fd)
{
	__u32 state = 0;

	return !ioctl(fd, EXT4_IOC_GETSTATE, &state) &&
	       (state & EXT4_STATE_FLAG_EXT_PINNED);
}

static long sysfs_long(struct pin_state *st, const char *name)
{
	char path[sizeof(st->sysfs) + 32];
	long v = -1;

	snprintf(path, sizeof(path), "%s/%s", st->sysfs, name);
	if (aio_read_long(path, &v))
		return -1;
	return v;
}

/*
 * Memory pressure as a workload makes it: a child faults in 3/4 of
 * MemAvailable, then exits.  The rig has no swap, so reclaim frees page
 * cache and runs the shrinkers, the es shrinker among them.  0 or -1.
 */
static int memory_hog(void)
{
	long long kb = aio_read_key("/proc/meminfo", "MemAvailable:");
	int status;
	pid_t pid;

	if (kb <= 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		size_t len = (size_t)kb / 4 * 3 * 1024, i;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			_exit(1);
		for (i = 0; i < len; i += 4096)
			p[i] = 1;
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -1;
	return 0;
}

/*
 * The debugfs directory of ext4's es shrinker of the filesystem at
 * st->mnt (CONFIG_SHRINKER_DEBUG: "ext4-es:<s_id>-<n>", s_id the block
 * device's name, found from st_dev), mounting debugfs if need be; 0, or
 * -1 if there is none.
 */
static int es_shrinker_dir(struct pin_state *st, char *dir, size_t len)
{
	char pat[PATH_MAX], link[256], *base;
	struct stat sb;
	glob_t g;
	int ret = -1;
	ssize_t n;

	if (stat(st->mnt, &sb))
		return -1;
	snprintf(pat, sizeof(pat), "/sys/dev/block/%u:%u",
		 major(sb.st_dev), minor(sb.st_dev));
	n = readlink(pat, link, sizeof(link) - 1);
	if (n < 0)
		return -1;
	link[n] = '\0';
	base = strrchr(link, '/');
	base = base ? base + 1 : link;
	if (access(SHRINKER_DIR, F_OK))
		mount("debugfs", DEBUGFS, "debugfs", 0, NULL);
	snprintf(pat, sizeof(pat), SHRINKER_DIR "/ext4-es:%s-*", base);
	if (glob(pat, 0, NULL, &g))
		return -1;
	if (g.gl_pathc == 1) {
		snprintf(dir, len, "%s", g.gl_pathv[0]);
		ret = 0;
	}
	globfree(&g);
	return ret;
}

/*
 * The objects the es shrinker counts (its "count" file: a cgroup's inode
 * number, the root's for a shrinker not memcg aware, then one count per
 * node; nothing if all are 0), or -1.
 */
static long es_shrinker_count(struct pin_state *st)
{
	char dir[PATH_MAX], path[PATH_MAX + 8], text[256], *p, *end;
	long total = 0;

	if (es_shrinker_dir(st, dir, sizeof(dir)))
		return -1;
	snprintf(path, sizeof(path), "%s/count", dir);
	if (aio_read_file(path, text, sizeof(text)))
		return -1;
	if (!text[0])
		return 0;
	strtoul(text, &p, 10);
	for (;;) {
		long n = strtol(p, &end, 10);

		if (end == p)
			break;
		total += n;
		p = end;
	}
	return total;
}

/*
 * Ask the es shrinker, through its debugfs scan file ("<cgroup inode>
 * <node> <nr>": 0 for a shrinker not memcg aware), to scan more entries
 * than the filesystem holds, twice (it only unmarks an entry it finds
 * referenced).  0, or -1 where the kernel has no such file, which the
 * rig's kernels have.
 */
static int es_shrinker_scan(struct __test_metadata *_metadata,
			    struct pin_state *st)
{
	char dir[PATH_MAX], path[PATH_MAX + 8];
	int i;

	if (es_shrinker_dir(st, dir, sizeof(dir))) {
		EXPECT_FALSE(aio_on_rig())
			TH_LOG("no es shrinker in %s", SHRINKER_DIR);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/scan", dir);
	for (i = 0; i < 2; i++)
		EXPECT_EQ(0, aio_write_file(path, "0 0 1000000"))
			TH_LOG("%s: %s", path, strerror(errno));
	return 0;
}

/*
 * Evict what memory pressure and the ioctl can: a memory hog, the es
 * shrinker's debugfs scan, the shrinker through drop_caches (twice, as
 * above), and the inode's own entries through EXT4_IOC_CLEAR_ES_CACHE.
 */
static void evict(struct __test_metadata *_metadata, struct pin_state *st,
		  int fd)
{
	ASSERT_EQ(0, memory_hog());
	es_shrinker_scan(_metadata, st);
	ASSERT_EQ(0, aio_write_file(DROP_CACHES, "2"));
	ASSERT_EQ(0, aio_write_file(DROP_CACHES, "2"));
	ASSERT_EQ(0, ioctl(fd, EXT4_IOC_CLEAR_ES_CACHE));
}

/* Map all of @fd through FIEMAP, which caches what it maps: 0 or -1. */
static int fiemap_all(int fd)
{
	struct fiemap fm = {
		.fm_length = FIEMAP_MAX_OFFSET,
		.fm_extent_count = 0,	/* count only */
	};

	return ioctl(fd, FS_IOC_FIEMAP, &fm) ? -1 : 0;
}

struct turn {
	int slept;	/* calls with a voluntary context switch */
	long inline_nr;	/* aio.stat "inline" over the turn (libaio) */
	long refused;	/* ext4's NOWAIT -EAGAINs, -1 if not watched */
};

/*
 * One 4 KiB write per call at each of @offs[0..@n) through io_submit()
 * (!@uring) or io_uring, each completed before the next, then all read
 * back with pread().
 */
static struct turn write_turn(struct __test_metadata *_metadata,
			      struct pin_state *st, bool uring,
			      const off_t *offs, int n)
{
	uint64_t seed = aio_new_seed(), tag;
	struct turn t = { 0, -1, -1 };
	long long in0 = aio_read_key(ROOT_STAT, "inline");
	long nvcsw;
	int i;

	if (st->tracing)
		EXPECT_EQ(0, aio_trace_clear());
	for (i = 0; i < n; i++) {
		struct iocb cb, *list = &cb;

		aio_fill_pattern(st->buf, BLK, seed, offs[i]);
		if (uring) {
			EXPECT_EQ(1, aio_uring_rw_nvcsw(&st->ring,
							IORING_OP_WRITE,
							st->fd, st->buf, BLK,
							offs[i], i, &nvcsw));
		} else {
			aio_prep_rw(&cb, IOCB_CMD_PWRITE, st->fd, st->buf,
				    BLK, offs[i], i);
			EXPECT_EQ(1, aio_submit_nvcsw(st->ctx, 1, &list,
						      &nvcsw));
		}
		t.slept += nvcsw != 0;
		EXPECT_EQ(BLK, aio_reap_either(st->ctx, &st->ring, uring,
					       &tag));
		EXPECT_EQ((uint64_t)i, tag);
	}
	if (!uring && in0 >= 0)
		t.inline_nr = aio_read_key(ROOT_STAT, "inline") - in0;
	if (st->tracing)
		t.refused = aio_trace_count(NOWAIT_LINE, NULL);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(BLK, pread(st->fd, st->buf, BLK, offs[i]));
		EXPECT_EQ(-1, aio_verify_pattern(st->buf, BLK, seed, offs[i]))
			TH_LOG("block at %lld: wrong data", (long long)offs[i]);
	}
	return t;
}

/*
 * A pinned file's overwrites: no sleep, every one inline
 * (aio.stat; other tests do not run meanwhile) and no -EAGAIN from ext4.
 */
static void expect_inline(struct __test_metadata *_metadata,
			  struct pin_state *st, const char *what,
			  const off_t *offs, int n)
{
	struct turn t = write_turn(_metadata, st, false, offs, n);

	TH_LOG("%s, io_submit: %d of %d slept, %ld inline, ext4 refused %ld",
	       what, t.slept, n, t.inline_nr, t.refused);
	EXPECT_EQ(0, t.slept);
	if (t.inline_nr >= 0)
		EXPECT_EQ(n, t.inline_nr);
	if (t.refused >= 0)
		EXPECT_EQ(0, t.refused);
	t = write_turn(_metadata, st, true, offs, n);
	TH_LOG("%s, io_uring: %d of %d slept, ext4 refused %ld", what,
	       t.slept, n, t.refused);
	EXPECT_EQ(0, t.slept);
	if (t.refused >= 0)
		EXPECT_EQ(0, t.refused);
}

/* Unmount, drop everything, mount, open st->fd: a cold inode. */
static void remount_cold(struct __test_metadata *_metadata,
			 struct pin_state *st, bool busy)
{
	if (busy && st->syncer.fd >= 0)
		ASSERT_LE(0, aio_syncer_stop(&st->syncer));
	if (st->fd >= 0)
		close(st->fd);
	st->fd = -1;
	ASSERT_EQ(0, aio_remount_cold("ext4", st->mnt, sizeof(st->mnt)));
	st->fd = open_file(st, "f", O_RDWR | O_DIRECT);
	ASSERT_LE(0, st->fd);
	if (busy)
		ASSERT_EQ(0, aio_syncer_start(&st->syncer, st->mnt));
}

TEST_F_TIMEOUT(pin, cold_overwrites_inline, AIO_DEV_TEST_TIMEOUT)
{
	static off_t offs[NR_CALLS];
	struct pin_state *st = &self->st;
	struct turn t;
	long count;
	off_t gap;

	srandom(aio_new_seed());
	make_file(_metadata, st, "f", aio_new_seed());
	remount_cold(_metadata, st, variant->busy);
	ASSERT_EQ(0, ioctl(st->fd, EXT4_IOC_PIN_EXTENTS))
		TH_LOG("pin: %s", strerror(errno));
	ASSERT_TRUE(pinned(st->fd));
	EXPECT_LE(FRAG_BLOCKS, sysfs_long(st, "es_pinned_extents"));
	/*
	 * Not the shrinker's to count (other inodes' entries are); the
	 * control below counts them.  Half: the writes into unwritten
	 * blocks before it merge extents.
	 */
	count = es_shrinker_count(st);
	TH_LOG("pinned: the es shrinker counts %ld entries", count);
	if (count >= 0)
		EXPECT_GT(FRAG_BLOCKS / 2, count);
	evict(_metadata, st, st->fd);
	gap = aio_es_covered(st->fd, FILE_LEN);
	EXPECT_EQ(FILE_LEN, gap) TH_LOG("pinned map has a gap at %lld",
					(long long)gap);

	/* The first write after the remount included. */
	aio_pick_blocks(offs, NR_CALLS, FRAG_BLOCKS, false, BLK);
	expect_inline(_metadata, st, "pinned overwrites", offs, NR_CALLS);

	/* Unwritten blocks: the NOWAIT split may refuse a few. */
	aio_pick_blocks(offs, NR_CALLS, FRAG_BLOCKS, true, BLK);
	t = write_turn(_metadata, st, false, offs, NR_CALLS);
	TH_LOG("pinned unwritten writes: %d slept, %ld inline, %ld refused",
	       t.slept, t.inline_nr, t.refused);
	EXPECT_EQ(0, t.slept);
	if (!variant->busy && t.inline_nr >= 0)
		EXPECT_LE(NR_CALLS - NR_CALLS / 20, t.inline_nr);

	/* The control: unpinned, the same eviction leaves gaps. */
	ASSERT_EQ(0, ioctl(st->fd, EXT4_IOC_UNPIN_EXTENTS));
	EXPECT_FALSE(pinned(st->fd));
	EXPECT_EQ(0, sysfs_long(st, "es_pinned_extents"));
	/*
	 * The map cached again, unpinned (not PRECACHE, which the shrinker
	 * passes over while it can): the shrinker counts it, and its scan
	 * alone evicts it.
	 */
	ASSERT_EQ(0, fiemap_all(st->fd));
	count = es_shrinker_count(st);
	TH_LOG("unpinned: the es shrinker counts %ld entries", count);
	if (count >= 0)
		EXPECT_LE(FRAG_BLOCKS / 2, count);
	if (!es_shrinker_scan(_metadata, st)) {
		count = es_shrinker_count(st);
		gap = aio_es_covered(st->fd, FILE_LEN);
		TH_LOG("unpinned, scanned: %ld counted, a gap at %lld", count,
		       (long long)gap);
		EXPECT_GT(FRAG_BLOCKS / 2, count);
		EXPECT_GT(FILE_LEN, gap);
	}
	evict(_metadata, st, st->fd);
	gap = aio_es_covered(st->fd, FILE_LEN);
	EXPECT_GT(FILE_LEN, gap) TH_LOG("unpinned: the map was not evicted");
	aio_pick_blocks(offs, NR_CALLS, FRAG_BLOCKS, false, BLK);
	t = write_turn(_metadata, st, false, offs, NR_CALLS);
	TH_LOG("control, unpinned: %d slept, %ld inline, ext4 refused %ld",
	       t.slept, t.inline_nr, t.refused);
	EXPECT_EQ(0, t.slept);
	if (t.inline_nr >= 0)
		EXPECT_GT(NR_CALLS, t.inline_nr)
			TH_LOG("control: unpinned, every write went inline");
}

TEST_F_TIMEOUT(pin, removal_paths_refill, AIO_DEV_TEST_TIMEOUT)
{
	static off_t offs[NR_CALLS / 4];
	struct pin_state *st = &self->st;
	const off_t end = (off_t)FRAG_BLOCKS * BLK;
	off_t gap, size;
	int i;

	srandom(aio_new_seed());
	make_file(_metadata, st, "f", aio_new_seed());
	st->fd = open_file(st, "f", O_RDWR | O_DIRECT);
	ASSERT_LE(0, st->fd);
	if (variant->busy)
		ASSERT_EQ(0, aio_syncer_start(&st->syncer, st->mnt));
	ASSERT_EQ(0, ioctl(st->fd, EXT4_IOC_PIN_EXTENTS));

	/* Each drops entries of the range it changes, then refills. */
	ASSERT_EQ(0, ftruncate(st->fd, end - 64 * BLK));
	ASSERT_EQ(0, fallocate(st->fd, FALLOC_FL_PUNCH_HOLE |
			       FALLOC_FL_KEEP_SIZE, 1000 * BLK, 100 * BLK));
	ASSERT_EQ(0, fallocate(st->fd, FALLOC_FL_COLLAPSE_RANGE,
			       2000 * BLK, 16 * BLK));
	ASSERT_EQ(0, fallocate(st->fd, FALLOC_FL_INSERT_RANGE,
			       3000 * BLK, 16 * BLK));
	size = lseek(st->fd, 0, SEEK_END);
	ASSERT_EQ(end - 64 * BLK, size);
	evict(_metadata, st, st->fd);
	gap = aio_es_covered(st->fd, size);
	EXPECT_EQ(size, gap) TH_LOG("pinned map has a gap at %lld",
				    (long long)gap);

	/* Overwrites of written blocks away from the changed ranges. */
	for (i = 0; i < NR_CALLS / 4; i++)
		offs[i] = (off_t)(4000 + 2 * i) * BLK;
	expect_inline(_metadata, st, "after truncate/punch/collapse/insert",
		      offs, NR_CALLS / 4);
}

/*
 * A metadata-heavy neighbour for the journal: in a directory of its own,
 * create a file, write a block, fsync it, rename it, unlink it; each
 * round a transaction with inode, bitmap and directory blocks, and a
 * commit waited for.
 */
struct churner {
	pthread_t thread;
	char dir[96];
	int stop;
	long rounds;
	int err;
};

static void *churn(void *arg)
{
	struct churner *c = arg;
	char a[160], b[160], blk[BLK];
	int fd;

	memset(blk, 0x5a, sizeof(blk));
	while (!__atomic_load_n(&c->stop, __ATOMIC_RELAXED)) {
		snprintf(a, sizeof(a), "%s/n%ld", c->dir, c->rounds);
		snprintf(b, sizeof(b), "%s/m%ld", c->dir, c->rounds);
		errno = 0;
		fd = open(a, O_WRONLY | O_CREAT | O_EXCL, 0600);
		if (fd < 0 || write(fd, blk, BLK) != BLK || fsync(fd)) {
			c->err = errno ? errno : EIO;
			if (fd >= 0)
				close(fd);
			break;
		}
		if (close(fd) || rename(a, b) || unlink(b)) {
			c->err = errno;
			break;
		}
		c->rounds++;
	}
	return NULL;
}

/*
 * Journal pressure: the filesystem's journal is small (LOG_LEN) and on
 * dm-delay (LOG_DELAY_MS an I/O), and a neighbour commits a metadata
 * transaction as fast as it can (and the busy variant's sync loop
 * beside it).  On the pinned file, overwrites need nothing from the
 * journal: all inline, none refused.  Writes into unwritten blocks
 * need a handle at submission: none sleeps; those ext4 refuses, it
 * refuses for the journal (a commit under way) or for allocation (a full
 * leaf), never for a cache miss or i_data_sem (nothing else writes the
 * file), and some go inline.  Every write reads
 * back, and FIEMAP shows the blocks written once the writes completed.
 */
TEST_F_TIMEOUT(pin, journal_pressure, AIO_DEV_TEST_TIMEOUT)
{
	static off_t offs[NR_CALLS];
	static const char *const bad[] = {
		"cache_miss", "lock", "privs", "span",
	};
	struct pin_state *st = &self->st;
	struct churner c = { 0 };
	char needle[64];
	unsigned int r;
	struct turn t;
	int i, ret;

	srandom(aio_new_seed());
	ASSERT_EQ(0, aio_scratch_umount(st->mnt));
	st->mnt[0] = '\0';
	ret = aio_slow_log_fs("ext4", DM_FS, DM_LOG, LOG_LEN, LOG_DELAY_MS,
			      st->mnt, sizeof(st->mnt), &st->dm_made);
	if (ret == -ENOSPC || ret == AIO_MKFS_NOT_FOUND)
		SKIP(return, "no room or no tool for a slow journal: %d", ret);
	ASSERT_EQ(0, ret) TH_LOG("ext4 with a journal on dm-delay");
	make_file(_metadata, st, "f", aio_new_seed());
	/* Its page cache: NOWAIT direct I/O refuses a range with pages. */
	ASSERT_EQ(0, aio_write_file(DROP_CACHES, "1"));
	st->fd = open_file(st, "f", O_RDWR | O_DIRECT);
	ASSERT_LE(0, st->fd);
	ASSERT_EQ(0, ioctl(st->fd, EXT4_IOC_PIN_EXTENTS));
	snprintf(c.dir, sizeof(c.dir), "%s/churn", st->mnt);
	ASSERT_EQ(0, mkdir(c.dir, 0700));
	ASSERT_EQ(0, pthread_create(&c.thread, NULL, churn, &c));
	if (variant->busy)
		ASSERT_EQ(0, aio_syncer_start(&st->syncer, st->mnt));

	aio_pick_blocks(offs, NR_CALLS, FRAG_BLOCKS, false, BLK);
	expect_inline(_metadata, st, "overwrites, journal busy", offs,
		      NR_CALLS / 2);

	aio_pick_blocks(offs, NR_CALLS, FRAG_BLOCKS, true, BLK);
	for (i = 0; i < 2; i++) {
		t = write_turn(_metadata, st, i, offs + i * NR_CALLS / 2,
			       NR_CALLS / 2);
		TH_LOG("unwritten, journal busy, %s: %d slept, %ld inline, ext4 refused %ld",
		       i ? "io_uring" : "io_submit", t.slept, t.inline_nr,
		       t.refused);
		EXPECT_EQ(0, t.slept);
		if (!i && t.inline_nr >= 0)
			EXPECT_LT(0, t.inline_nr);
		if (t.refused <= 0)
			continue;
		for (r = 0; r < ARRAY_SIZE(bad); r++) {
			snprintf(needle, sizeof(needle), "reason %s", bad[r]);
			EXPECT_EQ(0, aio_trace_count(NOWAIT_LINE, needle))
				TH_LOG("refused for %s", bad[r]);
		}
	}
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELAXED);
	pthread_join(c.thread, NULL);
	TH_LOG("the neighbour committed %ld rounds", c.rounds);
	EXPECT_EQ(0, c.err) TH_LOG("neighbour: %s", strerror(c.err));
	EXPECT_LT(0, c.rounds);
	for (i = 0; i < NR_CALLS; i++) {
		off_t off = offs[i];

		EXPECT_EQ(0, aio_unwritten(st->fd, off, BLK))
			TH_LOG("block at %lld still unwritten",
			       (long long)off);
	}
	EXPECT_TRUE(pinned(st->fd));
}

TEST_F_TIMEOUT(pin, lifetime_and_errors, AIO_DEV_TEST_TIMEOUT)
{
	struct pin_state *st = &self->st;
	struct move_extent me = { 0 };
	char path[sizeof(st->mnt) + 16];
	unsigned int flags;
	int fd, fd2, ro, dir, donor;

	if (variant->busy)
		SKIP(return, "the interface: on the idle variant");
	/* nodelalloc: with delayed allocation ext4 ignores +j. */
	ASSERT_EQ(0, aio_scratch_umount(st->mnt));
	st->mnt[0] = '\0';
	ASSERT_EQ(0, aio_mount_tmp(aio_dev_path(), "ext4", "nodelalloc",
				   st->mnt, sizeof(st->mnt)));
	make_file(_metadata, st, "f", aio_new_seed());
	fd = open_file(st, "f", O_RDWR);
	fd2 = open_file(st, "f", O_RDWR);
	ro = open_file(st, "f", O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_LE(0, fd2);
	ASSERT_LE(0, ro);

	/* Bad input: a clear error, nothing pinned. */
	EXPECT_EQ(-1, ioctl(ro, EXT4_IOC_PIN_EXTENTS));
	EXPECT_EQ(EBADF, errno);
	dir = open(st->mnt, O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, dir);
	EXPECT_EQ(-1, ioctl(dir, EXT4_IOC_PIN_EXTENTS));
	EXPECT_EQ(EISDIR, errno);
	EXPECT_EQ(-1, ioctl(dir, EXT4_IOC_UNPIN_EXTENTS));
	EXPECT_EQ(EINVAL, errno);
	close(dir);
	EXPECT_EQ(-1, ioctl(fd, EXT4_IOC_UNPIN_EXTENTS));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_FALSE(pinned(ro));

	/* From the root cgroup nothing is charged: a privilege is. */
	EXPECT_EQ(EPERM, aio_in_child(pin_without_caps, &fd));
	EXPECT_FALSE(pinned(ro));

	/* Pinned by fd (twice: one pin), then by fd2 too. */
	EXPECT_EQ(0, ioctl(fd, EXT4_IOC_PIN_EXTENTS));
	EXPECT_EQ(0, ioctl(fd, EXT4_IOC_PIN_EXTENTS));
	EXPECT_TRUE(pinned(ro));
	EXPECT_EQ(0, ioctl(fd2, EXT4_IOC_PIN_EXTENTS));

	/* What would rewrite the map under the pin. */
	file_path(st, "donor", path, sizeof(path));
	donor = open(path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, donor);
	ASSERT_EQ(0, fallocate(donor, 0, 0, 16 * BLK));
	me.donor_fd = donor;
	me.len = 16;
	EXPECT_EQ(-1, ioctl(fd, EXT4_IOC_MOVE_EXT, &me));
	EXPECT_EQ(EBUSY, errno);
	close(donor);
	ASSERT_EQ(0, ioctl(fd, FS_IOC_GETFLAGS, &flags));
	flags &= ~FS_EXTENT_FL;
	EXPECT_EQ(-1, ioctl(fd, FS_IOC_SETFLAGS, &flags));
	EXPECT_EQ(EBUSY, errno) TH_LOG("migration to block maps");
	ASSERT_EQ(0, ioctl(fd, FS_IOC_GETFLAGS, &flags));
	flags |= FS_JOURNAL_DATA_FL;
	EXPECT_EQ(-1, ioctl(fd, FS_IOC_SETFLAGS, &flags));
	EXPECT_EQ(EBUSY, errno) TH_LOG("chattr +j");

	/* The pin is the open file's: fd's ends at unpin, fd2's at close. */
	EXPECT_EQ(0, ioctl(fd, EXT4_IOC_UNPIN_EXTENTS));
	EXPECT_TRUE(pinned(ro));
	EXPECT_EQ(-1, ioctl(fd, EXT4_IOC_UNPIN_EXTENTS));
	EXPECT_EQ(EINVAL, errno);
	close(fd2);
	EXPECT_FALSE(pinned(ro));
	EXPECT_EQ(0, sysfs_long(st, "es_pinned_extents"));
	EXPECT_EQ(0, ioctl(fd, EXT4_IOC_PIN_EXTENTS));
	close(fd);
	EXPECT_FALSE(pinned(ro));
	close(ro);

	/* Files whose direct I/O does not go through the extent tree. */
	file_path(st, "ind", path, sizeof(path));
	fd = open(path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(BLK, pwrite(fd, st->buf, BLK, 0));
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, ioctl(fd, FS_IOC_GETFLAGS, &flags));
	flags &= ~FS_EXTENT_FL;
	ASSERT_EQ(0, ioctl(fd, FS_IOC_SETFLAGS, &flags));
	EXPECT_EQ(-1, ioctl(fd, EXT4_IOC_PIN_EXTENTS));
	EXPECT_EQ(EOPNOTSUPP, errno) TH_LOG("indirect-mapped file");
	close(fd);
	file_path(st, "j", path, sizeof(path));
	fd = open(path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, FS_IOC_GETFLAGS, &flags));
	flags |= FS_JOURNAL_DATA_FL;
	ASSERT_EQ(0, ioctl(fd, FS_IOC_SETFLAGS, &flags));
	EXPECT_EQ(-1, ioctl(fd, EXT4_IOC_PIN_EXTENTS));
	EXPECT_EQ(EOPNOTSUPP, errno) TH_LOG("chattr +j file");
	close(fd);
	EXPECT_EQ(0, sysfs_long(st, "es_pinned_extents"));
}

TEST_F_TIMEOUT(pin, limit, AIO_DEV_TEST_TIMEOUT)
{
	struct pin_state *st = &self->st;
	char path[sizeof(st->sysfs) + 32];
	long pinned_nr;
	int fd;

	if (variant->busy)
		SKIP(return, "the interface: on the idle variant");
	make_file(_metadata, st, "f", aio_new_seed());
	fd = open_file(st, "f", O_RDWR);
	ASSERT_LE(0, fd);
	snprintf(path, sizeof(path), "%s/es_pin_max_extents", st->sysfs);
	st->old_max = sysfs_long(st, "es_pin_max_extents");
	ASSERT_LT(0, st->old_max) TH_LOG("no %s", path);

	/* Junk is refused and changes nothing. */
	EXPECT_EQ(-EINVAL, aio_write_file(path, "lots"));
	EXPECT_EQ(-EINVAL, aio_write_file(path, "-1"));
	EXPECT_EQ(st->old_max, sysfs_long(st, "es_pin_max_extents"));

	/* Over the limit: ENOMEM, nothing pinned, nothing counted. */
	ASSERT_EQ(0, aio_write_file(path, "1000"));
	EXPECT_EQ(-1, ioctl(fd, EXT4_IOC_PIN_EXTENTS));
	EXPECT_EQ(ENOMEM, errno);
	EXPECT_FALSE(pinned(fd));
	EXPECT_EQ(0, sysfs_long(st, "es_pinned_extents"));

	/* Under it: counted while pinned, 0 after the close. */
	ASSERT_EQ(0, aio_write_file(path, "1000000"));
	EXPECT_EQ(0, ioctl(fd, EXT4_IOC_PIN_EXTENTS));
	pinned_nr = sysfs_long(st, "es_pinned_extents");
	EXPECT_LE(FRAG_BLOCKS, pinned_nr);
	EXPECT_GE(4 * FRAG_BLOCKS, pinned_nr);
	close(fd);
	EXPECT_EQ(0, sysfs_long(st, "es_pinned_extents"));
}

/* Fallocate blocks @first, @first + 2, ...: @n extents and the holes. */
static int fallocate_every_other(int fd, long first, long n)
{
	long i;

	for (i = 0; i < n; i++)
		if (fallocate(fd, 0, (off_t)(first + 2 * i) * BLK, BLK))
			return -errno;
	return 0;
}

static long long cg_stat(struct pin_state *st, const char *file,
			 const char *key)
{
	char path[sizeof(st->cg) + 32];
	long v;

	snprintf(path, sizeof(path), "%s/%s", st->cg, file);
	if (key)
		return aio_read_key(path, key);
	return aio_read_long(path, &v) ? -1 : v;
}

static int cg_set(const char *cg, const char *file, long long val)
{
	char path[128], num[32];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	if (val < 0)
		return aio_write_file(path, "max");
	snprintf(num, sizeof(num), "%lld", val);
	return aio_write_file(path, num);
}

/*
 * For aio_in_child(), in the root cgroup: add GROW_EXTENTS to the map of
 * the file, from the block given.
 */
struct grow {
	int fd;
	long first;
};

static int grow_from_root_cgroup(void *arg)
{
	const struct grow *g = arg;

	if (cg_set(CG_ROOT, "cgroup.procs", getpid()))
		return 255;
	return fallocate_every_other(g->fd, g->first, GROW_EXTENTS) ? 1 : 0;
}

/* For aio_in_child(): a pin from the root cgroup. */
static int pin_from_root_cgroup(void *arg)
{
	if (cg_set(CG_ROOT, "cgroup.procs", getpid()))
		return 255;
	return pin_errno(*(int *)arg);
}

TEST_F_TIMEOUT(pin, charge, AIO_DEV_TEST_TIMEOUT)
{
	struct pin_state *st = &self->st;
	long long base, cur, charged, grown, after;
	long entries, added;
	struct grow grow;
	int fd, fd2, room;

	if (variant->busy)
		SKIP(return, "the interface: on the idle variant");
	if (aio_write_file(CG_ROOT "/cgroup.subtree_control", "+memory"))
		SKIP(return, "no memory controller");
	snprintf(st->cg, sizeof(st->cg), CG_ROOT "/aio_pin.%d", getpid());
	ASSERT_EQ(0, mkdir(st->cg, 0755)) TH_LOG("%s: %s", st->cg,
						 strerror(errno));
	ASSERT_EQ(0, cg_set(st->cg, "cgroup.procs", getpid()));
	fd = open_file(st, "big", O_RDWR | O_CREAT);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fallocate_every_other(fd, 0, BIG_EXTENTS));
	base = cg_stat(st, "memory.stat", "slab_reclaimable");
	ASSERT_LE(0, base);

	/*
	 * Over memory.max: refused after reclaim, nothing pinned or killed.
	 * 1 MiB of room fails the copies' array (1.6 MB), 4 MiB the copies.
	 */
	for (room = 1; room <= 4; room += 3) {
		cur = cg_stat(st, "memory.current", NULL);
		ASSERT_LT(0, cur);
		ASSERT_EQ(0, cg_set(st->cg, "memory.max",
				    cur + room * 1024 * 1024));
		EXPECT_EQ(-1, ioctl(fd, EXT4_IOC_PIN_EXTENTS));
		EXPECT_EQ(ENOMEM, errno) TH_LOG("%d MiB of room", room);
		ASSERT_EQ(0, cg_set(st->cg, "memory.max", -1));
		EXPECT_FALSE(pinned(fd));
		EXPECT_EQ(0, sysfs_long(st, "es_pinned_extents"));
		EXPECT_EQ(0, cg_stat(st, "memory.events", "oom_kill"));
	}

	/* Pinned: the entries are this cgroup's. */
	ASSERT_EQ(0, ioctl(fd, EXT4_IOC_PIN_EXTENTS));
	entries = sysfs_long(st, "es_pinned_extents");
	EXPECT_LE(2 * BIG_EXTENTS, entries);
	charged = cg_stat(st, "memory.stat", "slab_reclaimable") - base;
	TH_LOG("%ld entries pinned, slab_reclaimable +%lld bytes", entries,
	       charged);
	EXPECT_LE(entries * ES_SIZE - STAT_SLACK, charged);

	/* A second pin: from the cgroup charged, not from another. */
	fd2 = open_file(st, "big", O_RDWR);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(EBUSY, aio_in_child(pin_from_root_cgroup, &fd2));
	EXPECT_EQ(0, ioctl(fd2, EXT4_IOC_PIN_EXTENTS));
	close(fd2);
	EXPECT_TRUE(pinned(fd));

	/* Entries another cgroup's process adds are charged here too. */
	grow.fd = fd;
	grow.first = 2 * BIG_EXTENTS;
	ASSERT_EQ(0, aio_in_child(grow_from_root_cgroup, &grow));
	added = sysfs_long(st, "es_pinned_extents") - entries;
	grown = cg_stat(st, "memory.stat", "slab_reclaimable") - base -
		charged;
	TH_LOG("%ld entries added from the root cgroup, +%lld bytes here",
	       added, grown);
	EXPECT_LE(2 * GROW_EXTENTS - 2, added);
	EXPECT_LE(added * ES_SIZE - STAT_SLACK, grown);

	/* Unpin frees them, and the charge goes. */
	ASSERT_EQ(0, ioctl(fd, EXT4_IOC_UNPIN_EXTENTS));
	EXPECT_EQ(0, sysfs_long(st, "es_pinned_extents"));
	after = cg_stat(st, "memory.stat", "slab_reclaimable") - base;
	TH_LOG("after unpin: slab_reclaimable %+lld bytes", after);
	EXPECT_GT(STAT_SLACK, after);

	/* Charged to a cgroup, a pin needs no privilege. */
	EXPECT_EQ(0, aio_in_child(pin_without_caps, &fd));
	close(fd);
	EXPECT_EQ(0, cg_set(CG_ROOT, "cgroup.procs", getpid()));
}

TEST_HARNESS_MAIN
