// SPDX-License-Identifier: GPL-2.0
/*
 * Facts about the test rig that the other AIO tests rely on, and
 * self-tests of the sleep measurement (voluntary context switches of the
 * submitting thread) so that "io_submit() did not sleep" can be believed.
 *
 * The rig facts only hold in the rig guest (AIO_RIG=1) and skip elsewhere;
 * the measurement self-tests run anywhere.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "../kselftest_harness.h"
#include "aio_util.h"

#define NULLB_DEV	"/dev/nullb0"
#define NULLB_SYSFS	"/sys/block/nullb0"
#define BLK		4096

static const char * const rig_devs[] = {
	"/dev/nvme0n1", "/dev/mmcblk0", NULLB_DEV,
};

/* A number, or a bool module parameter ("Y"/"N"). */
static int read_num(const char *path, long *val)
{
	char buf[64];
	int ret;

	ret = aio_read_long(path, val);
	if (ret != -EINVAL)
		return ret;
	ret = aio_read_file(path, buf, sizeof(buf));
	if (ret)
		return ret;
	if (buf[0] != 'Y' && buf[0] != 'N')
		return -EINVAL;
	*val = buf[0] == 'Y';
	return 0;
}

/*
 * A null_blk device attribute: from configfs if the device was made there,
 * else the module parameter it was created from.
 */
static int nullb_param(const char *name, long *val)
{
	char path[128];
	int ret;

	snprintf(path, sizeof(path), "/sys/kernel/config/nullb/nullb0/%s",
		 name);
	ret = read_num(path, val);
	if (ret != -ENOENT)
		return ret;
	snprintf(path, sizeof(path), "/sys/module/null_blk/parameters/%s",
		 name);
	return read_num(path, val);
}

/*
 * Driver tags of every hardware queue of nullb0: the smallest and the
 * largest count, and how many queues there are (0 if none found).
 */
static int nullb_tags(long *min, long *max)
{
	char path[300];
	struct dirent *de;
	int nr = 0;
	DIR *dir;
	long v;

	dir = opendir(NULLB_SYSFS "/mq");
	if (!dir)
		return 0;
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), NULLB_SYSFS "/mq/%s/nr_tags",
			 de->d_name);
		if (aio_read_long(path, &v))
			continue;
		if (!nr || v < *min)
			*min = v;
		if (!nr || v > *max)
			*max = v;
		nr++;
	}
	closedir(dir);
	return nr;
}

/*
 * As many CPUs as the rig boots with: 2, or AIO_RIG_CPUS (make
 * check-debug's flash boot comes up with one).
 */
TEST(two_cpus_online)
{
	const char *want = getenv("AIO_RIG_CPUS");

	if (!aio_on_rig())
		SKIP(return, "not the rig guest (AIO_RIG != 1)");
	ASSERT_EQ(want ? atol(want) : 2, sysconf(_SC_NPROCESSORS_ONLN));
}

/*
 * Every device the rig attaches, but those AIO_RIG_ABSENT names: a boot
 * that cannot have them (make check-debug's SD card needs a boot of its
 * own).
 */
TEST(scratch_devices)
{
	const char *absent = getenv("AIO_RIG_ABSENT");
	unsigned int i;

	if (!aio_on_rig())
		SKIP(return, "not the rig guest (AIO_RIG != 1)");

	for (i = 0; i < ARRAY_SIZE(rig_devs); i++) {
		uint64_t size = 0;
		struct stat st;
		int fd;

		if (absent && strstr(absent, rig_devs[i]))
			continue;

		ASSERT_EQ(0, stat(rig_devs[i], &st))
			TH_LOG("%s: %s", rig_devs[i], strerror(errno));
		EXPECT_TRUE(S_ISBLK(st.st_mode))
			TH_LOG("%s is not a block device", rig_devs[i]);
		fd = open(rig_devs[i], O_RDONLY);
		ASSERT_LE(0, fd) TH_LOG("open %s: %s", rig_devs[i],
					strerror(errno));
		EXPECT_EQ(0, aio_dev_size(fd, &size));
		EXPECT_LT(0ULL, size) TH_LOG("%s has size 0", rig_devs[i]);
		close(fd);
	}
}

/* One driver tag and 2 ms timer completions: see nullb_tag below. */
TEST(nullb_config)
{
	long min = 0, max = 0, val;

	if (!aio_on_rig())
		SKIP(return, "not the rig guest (AIO_RIG != 1)");

	ASSERT_LT(0, nullb_tags(&min, &max))
		TH_LOG("no %s/mq/*/nr_tags", NULLB_SYSFS);
	EXPECT_EQ(1, min);
	EXPECT_EQ(1, max);

	ASSERT_EQ(0, nullb_param("hw_queue_depth", &val));
	EXPECT_EQ(1, val);
	ASSERT_EQ(0, nullb_param("irqmode", &val));
	EXPECT_EQ(2, val);
	ASSERT_EQ(0, nullb_param("completion_nsec", &val));
	EXPECT_EQ(2000000, val);
	ASSERT_EQ(0, nullb_param("memory_backed", &val));
	EXPECT_EQ(0, val);
}

TEST(nvcsw_counts_nanosleep)
{
	struct timespec ms = { 0, 1000 * 1000 };
	long before, after;

	ASSERT_EQ(0, aio_lock_memory());
	before = aio_thread_nvcsw();
	ASSERT_EQ(0, nanosleep(&ms, NULL));
	after = aio_thread_nvcsw();
	ASSERT_LE(0, before);
	EXPECT_LE(1, after - before);
}

TEST(nvcsw_zero_without_sleep)
{
	long before, after;
	int i;

	ASSERT_EQ(0, aio_lock_memory());
	before = aio_thread_nvcsw();
	/* Raw syscall: libc must not be able to answer from a cache. */
	for (i = 0; i < 1000; i++)
		syscall(SYS_getppid);
	after = aio_thread_nvcsw();
	ASSERT_LE(0, before);
	EXPECT_EQ(0, after - before);
}

/* aio_submit_nvcsw(): 0 for a submission that cannot sleep, errno kept. */
TEST(nvcsw_helper_reports_submit)
{
	struct iocb cb, *list[1] = { &cb };
	aio_context_t ctx = 0;
	struct io_event ev;
	long nvcsw = -1;
	int pfd[2];
	char c = 'z';

	ASSERT_EQ(0, aio_lock_memory());
	ASSERT_EQ(0, sys_io_setup(4, &ctx));
	ASSERT_EQ(0, pipe(pfd));

	/* Arming a poll on an empty pipe never sleeps. */
	aio_prep_poll(&cb, pfd[0], POLLIN, 7);
	EXPECT_EQ(1, aio_submit_nvcsw(ctx, 1, list, &nvcsw));
	EXPECT_EQ(0, nvcsw);

	ASSERT_EQ(1, write(pfd[1], &c, 1));
	ASSERT_EQ(1, aio_reap(ctx, &ev, 1, AIO_REAP_TIMEOUT_SEC));
	EXPECT_EQ(7ULL, ev.data);
	c = 0;
	ASSERT_EQ(1, read(pfd[0], &c, 1));
	EXPECT_EQ('z', c);

	/* Errors still come back with errno intact. */
	cb.aio_reserved2 = 1;
	EXPECT_EQ(-1, aio_submit_nvcsw(ctx, 1, list, &nvcsw));
	EXPECT_EQ(EINVAL, errno);

	close(pfd[0]);
	close(pfd[1]);
	EXPECT_EQ(0, sys_io_destroy(ctx));
}

/*
 * With one driver tag held for 2 ms by the first read, a second read
 * submitted right behind it has to wait for the tag inside io_submit() on
 * a stock kernel (blk_mq_get_tag() sleeps in io_schedule()), so the helper
 * must count at least one voluntary switch.  With AIO offload enabled the
 * same call must not sleep at all.
 *
 * That only holds with no I/O scheduler: mq-deadline would give the queue
 * two scheduler tags and park the second request in the elevator instead.
 * The test switches nullb0 to "none" and restores it afterwards.
 */
/* _PARENT teardown: see the note in aio_util.h */
FIXTURE(nullb_tag) {
	pid_t owner;
	aio_context_t ctx;
	int fd;
	char saved_sched[32];
	char *buf;
};

FIXTURE_SETUP(nullb_tag)
{
	self->owner = getpid();
	self->ctx = 0;
	self->fd = -1;
	self->saved_sched[0] = '\0';
	self->buf = NULL;
	ASSERT_EQ(0, aio_lock_memory());
	ASSERT_EQ(0, sys_io_setup(8, &self->ctx));
	self->buf = aio_alloc_buf(2 * BLK);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN_PARENT(nullb_tag)
{
	if (getpid() == self->owner) {
		if (self->ctx)
			sys_io_destroy(self->ctx);
		if (self->fd >= 0)
			close(self->fd);
		aio_free_buf(self->buf, 2 * BLK);
	}
	if (self->saved_sched[0] &&
	    aio_write_file(NULLB_SYSFS "/queue/scheduler", self->saved_sched))
		TH_LOG("could not restore scheduler %s", self->saved_sched);
}

/* Current I/O scheduler of nullb0 (the bracketed entry) into buf. */
static int nullb_sched(char *buf, size_t len)
{
	char line[256], *lb, *rb;
	int ret;

	ret = aio_read_file(NULLB_SYSFS "/queue/scheduler", line,
			    sizeof(line));
	if (ret)
		return ret;
	lb = strchr(line, '[');
	rb = lb ? strchr(lb, ']') : NULL;
	if (!rb || (size_t)(rb - lb) > len)
		return -EINVAL;
	memcpy(buf, lb + 1, rb - lb - 1);
	buf[rb - lb - 1] = '\0';
	return 0;
}

TEST_F_TIMEOUT(nullb_tag, second_submit_waits_for_tag, AIO_DEV_TEST_TIMEOUT)
{
	long min = 0, max = 0, irqmode = 0, nsec = 0, nvcsw;
	struct aio_ring_hdr *ring = aio_ring(self->ctx);
	struct iocb cb[2], *l0[1] = { &cb[0] }, *l1[1] = { &cb[1] };
	struct io_event ev[2];
	char sched[32];
	int offload, attempt, i, counted = 0;
	bool slept = false;

	if (!aio_on_rig())
		SKIP(return, "not the rig guest (AIO_RIG != 1)");
	if (access(NULLB_DEV, F_OK))
		SKIP(return, "no %s", NULLB_DEV);
	if (nullb_tags(&min, &max) <= 0 || max != 1 ||
	    nullb_param("irqmode", &irqmode) || irqmode != 2 ||
	    nullb_param("completion_nsec", &nsec) || nsec < 1000000)
		SKIP(return, "nullb0 is not 1 tag / timer completion >= 1 ms");
	offload = aio_offload_enabled();
	ASSERT_LE(0, offload);

	ASSERT_EQ(0, nullb_sched(sched, sizeof(sched)));
	if (strcmp(sched, "none")) {
		ASSERT_EQ(0, aio_write_file(NULLB_SYSFS "/queue/scheduler",
					    "none"));
		snprintf(self->saved_sched, sizeof(self->saved_sched), "%s",
			 sched);
	}

	/* Same CPU, same hardware queue, same single tag. */
	ASSERT_LE(0, aio_pin_to_current_cpu());
	self->fd = open(NULLB_DEV, O_RDONLY | O_DIRECT);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", NULLB_DEV,
				      strerror(errno));

	/*
	 * On stock, an attempt only counts if the first read was still in
	 * flight (its completion not in the ring) right before the second
	 * call; of the attempts that count, one sleeping is enough, so a
	 * vCPU descheduled at the wrong moment cannot fail the test.  With
	 * offload, no call may ever sleep, whatever the timing.
	 */
	for (attempt = 0; attempt < 5; attempt++) {
		long nvcsw0;
		bool valid;

		aio_prep_rw(&cb[0], IOCB_CMD_PREAD, self->fd, self->buf, BLK,
			    0, 1);
		aio_prep_rw(&cb[1], IOCB_CMD_PREAD, self->fd, self->buf + BLK,
			    BLK, BLK, 2);

		ASSERT_EQ(1, aio_submit_nvcsw(self->ctx, 1, l0, &nvcsw0));
		valid = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE) ==
			__atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
		ASSERT_EQ(1, aio_submit_nvcsw(self->ctx, 1, l1, &nvcsw));

		ASSERT_EQ(2, aio_reap(self->ctx, ev, 2, AIO_REAP_TIMEOUT_SEC));
		for (i = 0; i < 2; i++) {
			ASSERT_TRUE(ev[i].data == 1 || ev[i].data == 2);
			EXPECT_EQ((uintptr_t)&cb[ev[i].data - 1], ev[i].obj);
			/* null_blk moves no data; res is all there is. */
			EXPECT_EQ(BLK, ev[i].res);
		}
		EXPECT_NE(ev[0].data, ev[1].data);

		TH_LOG("attempt %d: first read %s, nvcsw %ld then %ld",
		       attempt, valid ? "in flight" : "already done", nvcsw0,
		       nvcsw);
		if (offload) {
			EXPECT_EQ(0, nvcsw0);
			EXPECT_EQ(0, nvcsw);
			if (attempt == 2)
				break;
			continue;
		}
		if (!valid)
			continue;
		counted++;
		if (nvcsw >= 1) {
			slept = true;
			break;
		}
	}
	if (!offload) {
		ASSERT_LT(0, counted) TH_LOG("first read never still in flight");
		EXPECT_TRUE(slept);
	}
}

TEST_HARNESS_MAIN
