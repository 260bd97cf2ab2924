// SPDX-License-Identifier: GPL-2.0
/*
 * The aio cgroup controller: bounds on what AIO offloading may use.
 *
 * Offloaded requests cost a worker thread while they block and memory
 * while they wait for one; without a bound a single process could keep
 * any number of them.  Two resources are counted, hierarchically:
 *
 *   workers   threads of the AIO offload pools (aio.workers.max).  A pool
 *             that may not grow leaves requests queued for the workers it
 *             has; a context that cannot get its first worker is not
 *             created (io_setup() fails with -EAGAIN).
 *   requests  reads, writes and syncs admitted for offloading and not yet
 *             completed, inline or not (aio.queue.max).  The slot is
 *             taken before the NOWAIT try, so that a request the block
 *             layer bounces later, from irq context, always has room to
 *             be queued; a full cgroup makes io_submit() stop there and
 *             return a short count, or -EAGAIN, instead of sleeping.
 *
 * Charges stay with the cgroup that was charged until they are given
 * back, also when the process migrates: they are short-lived.
 *
 * aio.stat counts, per cgroup and summed over its subtree, how requests
 * went: completed inline, punted (by reason), reissued from a completion.
 * Counters are per CPU, so the submission path only touches memory of
 * its own CPU for them.
 */
#include <linux/aio_offload.h>
#include <linux/atomic.h>
#include <linux/cgroup.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#define AIO_CG_MAX		S64_MAX
#define AIO_CG_MAX_STR		"max"

struct aio_cgroup_stat {
	u64			item[AIO_STAT_NR];
};

/**
 * struct aio_cgroup - per cgroup state of the aio controller
 * @css:	the cgroup's state
 * @nr:		charged now, per resource, including the subtree
 * @limit:	aio.workers.max and aio.queue.max
 * @peak:	highest @nr seen (racy high-water mark, as pids.peak)
 * @events:	charges refused because this cgroup's limit was reached
 * @bypass:	requests of this cgroup's contexts issued without offload
 *		because aio.queue.max was reached while their context had
 *		nothing admitted (see aio_cgroup_count_bypass())
 * @events_file: aio.events, for notifications
 * @stat:	per CPU counters of what this cgroup's requests did
 */
struct aio_cgroup {
	struct cgroup_subsys_state	css;
	atomic64_t			nr[AIO_CG_NR];
	atomic64_t			limit[AIO_CG_NR];
	s64				peak[AIO_CG_NR];
	atomic64_t			events[AIO_CG_NR];
	atomic64_t			bypass;
	struct cgroup_file		events_file;
	struct aio_cgroup_stat __percpu	*stat;
};

/* Names in aio.current, aio.peak, aio.events: the limit's file name. */
static const char * const aio_cgroup_res_name[AIO_CG_NR] = {
	[AIO_CG_WORKERS]	= "workers",
	[AIO_CG_REQUESTS]	= "requests",
};

static const char * const aio_cgroup_max_name[AIO_CG_NR] = {
	[AIO_CG_WORKERS]	= "workers.max",
	[AIO_CG_REQUESTS]	= "queue.max",
};

static const char * const aio_stat_name[AIO_STAT_NR] = {
	[AIO_PUNT_NO_NOWAIT]		= "punt_no_nowait",
	[AIO_PUNT_DSYNC]		= "punt_dsync",
	[AIO_PUNT_BLOCKING_QUEUE]	= "punt_blocking_queue",
	[AIO_PUNT_FROZEN]		= "punt_frozen",
	[AIO_PUNT_EAGAIN]		= "punt_eagain",
	[AIO_PUNT_EOPNOTSUPP]		= "punt_eopnotsupp",
	[AIO_PUNT_SHORT]		= "punt_short",
	[AIO_PUNT_ORDERED]		= "punt_ordered",
	[AIO_PUNT_APPEND]		= "punt_append",
	[AIO_PUNT_BUFFERED]		= "punt_buffered",
	[AIO_PUNT_ZONED]		= "punt_zoned",
	[AIO_STAT_INLINE]		= "inline",
	[AIO_STAT_REISSUE]		= "reissue",
	[AIO_STAT_FSYNC]		= "fsync",
	[AIO_STAT_CANCELLED]		= "cancelled",
	[AIO_STAT_EXIT_RUN]		= "exit_run",
	[AIO_STAT_EXIT_FAILED]		= "exit_failed",
	[AIO_STAT_STALL_GROW]		= "stall_grow",
};

static struct aio_cgroup *css_aio(struct cgroup_subsys_state *css)
{
	return css ? container_of(css, struct aio_cgroup, css) : NULL;
}

static struct aio_cgroup *aio_cgroup_parent(struct aio_cgroup *aiocg)
{
	return css_aio(aiocg->css.parent);
}

static struct cgroup_subsys_state *
aio_css_alloc(struct cgroup_subsys_state *parent)
{
	struct aio_cgroup *aiocg;
	int i;

	aiocg = kzalloc(sizeof(*aiocg), GFP_KERNEL);
	if (!aiocg)
		return ERR_PTR(-ENOMEM);
	aiocg->stat = alloc_percpu(struct aio_cgroup_stat);
	if (!aiocg->stat) {
		kfree(aiocg);
		return ERR_PTR(-ENOMEM);
	}
	for (i = 0; i < AIO_CG_NR; i++)
		atomic64_set(&aiocg->limit[i], AIO_CG_MAX);
	return &aiocg->css;
}

static void aio_css_free(struct cgroup_subsys_state *css)
{
	struct aio_cgroup *aiocg = css_aio(css);

	free_percpu(aiocg->stat);
	kfree(aiocg);
}

/**
 * aio_cgroup_get_current - the aio cgroup of the calling thread
 *
 * Context: any; never sleeps.
 * Return: a referenced cgroup, for aio_cgroup_put().
 */
static struct aio_cgroup *aio_cgroup_get_current(void)
{
	return css_aio(task_get_css(current, aio_cgrp_id));
}

/**
 * aio_cgroup_put - drop a reference from aio_cgroup_get_current()
 * @aiocg: the cgroup, or NULL
 *
 * Context: any.
 */
static void aio_cgroup_put(struct aio_cgroup *aiocg)
{
	if (aiocg)
		css_put(&aiocg->css);
}

/* Undo the charges of @aiocg and its ancestors below @stop. */
static void aio_cgroup_cancel(struct aio_cgroup *aiocg,
			      struct aio_cgroup *stop, enum aio_cgroup_res res)
{
	struct aio_cgroup *p;

	for (p = aiocg; p != stop; p = aio_cgroup_parent(p))
		atomic64_dec(&p->nr[res]);
}

/**
 * aio_cgroup_try_charge - take one unit of a resource
 * @aiocg: the cgroup to charge, with its ancestors; NULL: nothing to do
 * @res: the resource
 * @quiet: a refusal is a retry of one already counted
 *
 * The root cgroup has no limits and is not charged.  A refused charge
 * counts in aio.events of the cgroup whose limit was reached, unless
 * @quiet.
 *
 * Context: any, including irq; never sleeps.
 * Return: 0, or -EAGAIN if this cgroup or an ancestor is at its limit.
 */
static int aio_cgroup_try_charge(struct aio_cgroup *aiocg,
				 enum aio_cgroup_res res, bool quiet)
{
	struct aio_cgroup *p;

	if (!aiocg)
		return 0;
	for (p = aiocg; aio_cgroup_parent(p); p = aio_cgroup_parent(p)) {
		s64 nr = atomic64_inc_return(&p->nr[res]);

		if (nr > atomic64_read(&p->limit[res])) {
			atomic64_dec(&p->nr[res]);
			aio_cgroup_cancel(aiocg, p, res);
			if (!quiet) {
				atomic64_inc(&p->events[res]);
				cgroup_file_notify(&p->events_file);
			}
			return -EAGAIN;
		}
		if (nr > READ_ONCE(p->peak[res]))
			WRITE_ONCE(p->peak[res], nr);
	}
	return 0;
}

/**
 * aio_cgroup_uncharge - give back a unit taken by aio_cgroup_try_charge()
 * @aiocg: the cgroup that was charged, or NULL
 * @res: the resource
 *
 * Context: any, including irq.
 */
static void aio_cgroup_uncharge(struct aio_cgroup *aiocg,
				enum aio_cgroup_res res)
{
	struct aio_cgroup *p;

	if (!aiocg)
		return;
	for (p = aiocg; aio_cgroup_parent(p); p = aio_cgroup_parent(p))
		WARN_ON_ONCE(atomic64_dec_return(&p->nr[res]) < 0);
}

/**
 * aio_cgroup_charge_current - charge one unit to the calling thread's cgroup
 * @res: the resource
 * @quiet: do not count a refusal in aio.events (a retry of one counted)
 *
 * aio_cgroup_get_current() and aio_cgroup_try_charge() in one call: the
 * submission path takes a request slot this way for every read and
 * write, so it costs one call.
 *
 * Context: any; never sleeps.
 * Return: the referenced, charged cgroup (NULL without one), for
 * aio_cgroup_uncharge_put(); ERR_PTR(-EAGAIN) if it or an ancestor is at
 * its limit.
 */
struct aio_cgroup *aio_cgroup_charge_current(enum aio_cgroup_res res,
					     bool quiet)
{
	struct aio_cgroup *aiocg = aio_cgroup_get_current();

	if (!aio_cgroup_try_charge(aiocg, res, quiet))
		return aiocg;
	aio_cgroup_put(aiocg);
	return ERR_PTR(-EAGAIN);
}

/**
 * aio_cgroup_uncharge_put - undo aio_cgroup_charge_current()
 * @aiocg: the cgroup it returned, or NULL
 * @res: the resource
 *
 * Context: any, including irq.
 */
void aio_cgroup_uncharge_put(struct aio_cgroup *aiocg, enum aio_cgroup_res res)
{
	aio_cgroup_uncharge(aiocg, res);
	aio_cgroup_put(aiocg);
}

/**
 * aio_cgroup_count - count an event of a request in aio.stat
 * @aiocg: the submitter's cgroup, or NULL
 * @item: an enum aio_punt_reason or enum aio_stat_item
 *
 * Context: any, including irq.
 */
void aio_cgroup_count(struct aio_cgroup *aiocg, unsigned int item)
{
	if (aiocg && !WARN_ON_ONCE(item >= AIO_STAT_NR))
		this_cpu_inc(aiocg->stat->item[item]);
}

/**
 * aio_cgroup_count_bypass - count a request issued past aio.queue.max
 *
 * A context with nothing admitted found its cgroup full (of other
 * processes' requests, say): reaping its own completions could never make
 * room, so its request was issued without offload, as stock AIO would.
 * Counted in aio.events (queue.max.bypass) of the submitter's cgroup.
 *
 * Context: process context; never sleeps.
 */
void aio_cgroup_count_bypass(void)
{
	struct aio_cgroup *aiocg = aio_cgroup_get_current();

	if (!aiocg)
		return;
	atomic64_inc(&aiocg->bypass);
	cgroup_file_notify(&aiocg->events_file);
	aio_cgroup_put(aiocg);
}

static ssize_t aio_max_write(struct kernfs_open_file *of, char *buf,
			     size_t nbytes, loff_t off)
{
	struct aio_cgroup *aiocg = css_aio(of_css(of));
	enum aio_cgroup_res res = of_cft(of)->private;
	s64 limit;

	buf = strstrip(buf);
	if (!strcmp(buf, AIO_CG_MAX_STR)) {
		limit = AIO_CG_MAX;
	} else {
		/* Out of range (-ERANGE) is as invalid as not a number. */
		if (kstrtoll(buf, 0, &limit) || limit < 0 ||
		    limit >= AIO_CG_MAX)
			return -EINVAL;
	}
	/*
	 * No lock: charges racing with the update may see either limit.  A
	 * lower limit takes nothing back; it only refuses new charges.
	 */
	atomic64_set(&aiocg->limit[res], limit);
	return nbytes;
}

static int aio_max_show(struct seq_file *sf, void *v)
{
	struct aio_cgroup *aiocg = css_aio(seq_css(sf));
	enum aio_cgroup_res res = seq_cft(sf)->private;
	s64 limit = atomic64_read(&aiocg->limit[res]);

	if (limit >= AIO_CG_MAX)
		seq_puts(sf, AIO_CG_MAX_STR "\n");
	else
		seq_printf(sf, "%lld\n", limit);
	return 0;
}

static int aio_current_show(struct seq_file *sf, void *v)
{
	struct aio_cgroup *aiocg = css_aio(seq_css(sf));
	int i;

	for (i = 0; i < AIO_CG_NR; i++)
		seq_printf(sf, "%s %lld\n", aio_cgroup_res_name[i],
			   (s64)atomic64_read(&aiocg->nr[i]));
	return 0;
}

static int aio_peak_show(struct seq_file *sf, void *v)
{
	struct aio_cgroup *aiocg = css_aio(seq_css(sf));
	int i;

	for (i = 0; i < AIO_CG_NR; i++)
		seq_printf(sf, "%s %lld\n", aio_cgroup_res_name[i],
			   READ_ONCE(aiocg->peak[i]));
	return 0;
}

static int aio_events_show(struct seq_file *sf, void *v)
{
	struct aio_cgroup *aiocg = css_aio(seq_css(sf));
	int i;

	for (i = 0; i < AIO_CG_NR; i++)
		seq_printf(sf, "%s %lld\n", aio_cgroup_max_name[i],
			   (s64)atomic64_read(&aiocg->events[i]));
	seq_printf(sf, "queue.max.bypass %lld\n",
		   (s64)atomic64_read(&aiocg->bypass));
	return 0;
}

/* Summed over the CPUs and the subtree: stat files are hierarchical. */
static int aio_stat_show(struct seq_file *sf, void *v)
{
	struct cgroup_subsys_state *css = seq_css(sf), *pos;
	u64 sum[AIO_STAT_NR] = { };
	int cpu, i;

	rcu_read_lock();
	css_for_each_descendant_pre(pos, css) {
		struct aio_cgroup *aiocg = css_aio(pos);

		for_each_possible_cpu(cpu) {
			struct aio_cgroup_stat *s = per_cpu_ptr(aiocg->stat, cpu);

			for (i = 0; i < AIO_STAT_NR; i++)
				sum[i] += READ_ONCE(s->item[i]);
		}
	}
	rcu_read_unlock();

	for (i = 0; i < AIO_STAT_NR; i++)
		seq_printf(sf, "%s %llu\n", aio_stat_name[i], sum[i]);
	return 0;
}

static struct cftype aio_files[] = {
	{
		.name = "workers.max",
		.write = aio_max_write,
		.seq_show = aio_max_show,
		.private = AIO_CG_WORKERS,
		.flags = CFTYPE_NOT_ON_ROOT,
	},
	{
		.name = "queue.max",
		.write = aio_max_write,
		.seq_show = aio_max_show,
		.private = AIO_CG_REQUESTS,
		.flags = CFTYPE_NOT_ON_ROOT,
	},
	{
		.name = "current",
		.seq_show = aio_current_show,
		.flags = CFTYPE_NOT_ON_ROOT,
	},
	{
		.name = "peak",
		.seq_show = aio_peak_show,
		.flags = CFTYPE_NOT_ON_ROOT,
	},
	{
		.name = "events",
		.seq_show = aio_events_show,
		.file_offset = offsetof(struct aio_cgroup, events_file),
		.flags = CFTYPE_NOT_ON_ROOT,
	},
	{
		.name = "stat",
		.seq_show = aio_stat_show,
	},
	{ }	/* terminate */
};

struct cgroup_subsys aio_cgrp_subsys = {
	.css_alloc	= aio_css_alloc,
	.css_free	= aio_css_free,
	.dfl_cftypes	= aio_files,
	.legacy_cftypes	= aio_files,
	.threaded	= true,
};
