/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LINUX_AIO_OFFLOAD_H
#define _LINUX_AIO_OFFLOAD_H

#include <linux/list.h>

struct aio_pool;
struct aio_pool_order;

/* Why fs/aio.c handed a read or write to a worker (trace/events/aio.h). */
enum aio_punt_reason {
	AIO_PUNT_NO_NOWAIT,		/* the file has no FMODE_NOWAIT */
	AIO_PUNT_DSYNC,			/* O_DSYNC write */
	AIO_PUNT_BLOCKING_QUEUE,	/* direct I/O to a queue that may sleep */
	AIO_PUNT_FROZEN,		/* write to a frozen filesystem */
	AIO_PUNT_EAGAIN,		/* the NOWAIT try said -EAGAIN */
	AIO_PUNT_EOPNOTSUPP,		/* this path has no NOWAIT */
	AIO_PUNT_SHORT,			/* the NOWAIT try did part of it */
	AIO_PUNT_ORDERED,		/* queued behind earlier ones on the file */
	AIO_PUNT_APPEND,		/* O_APPEND write */
	AIO_PUNT_BUFFERED,		/* buffered write: one call, by a worker */
	AIO_PUNT_ZONED,			/* write to a zoned block device */
	AIO_PUNT_NR,
};

/*
 * What aio.stat counts: one counter per punt reason, then these.  Only
 * requests tried with our NOWAIT count: user RWF_NOWAIT ones are not ours.
 */
enum aio_stat_item {
	AIO_STAT_INLINE = AIO_PUNT_NR,	/* completed by the NOWAIT try */
	AIO_STAT_REISSUE,		/* punts made by a NOWAIT bio's completion */
	AIO_STAT_FSYNC,			/* fsync and fdatasync run by workers */
	AIO_STAT_CANCELLED,		/* queued requests cancelled by io_cancel() */
	AIO_STAT_EXIT_RUN,		/* run by workers after the process began to exit */
	AIO_STAT_EXIT_FAILED,		/* of those, completed with an error */
	AIO_STAT_STALL_GROW,		/* pool grew past its limit on a stall */
	AIO_STAT_NR,
};

/* What the aio cgroup controller limits (aio.workers.max, aio.queue.max). */
enum aio_cgroup_res {
	AIO_CG_WORKERS,			/* worker threads alive */
	AIO_CG_REQUESTS,		/* requests admitted, not yet completed */
	AIO_CG_NR,
};

struct aio_cgroup;

/**
 * struct aio_offload_work - a request handed to an AIO offload pool
 * @node:	entry in the pool's queue
 * @run:	redo the request, allowed to block; called from a worker
 * @cancel:	complete the request with error @err (-ECANCELED) instead of
 *		running it, after aio_pool_cancel() took it
 * @key:	requests with the same key (the inode) start in the order they
 *		were queued; NULL: no ordering
 * @shared:	a read: may be issued alongside other @shared requests with
 *		the same key.  An exclusive one (a write) is issued alone, and
 *		holds [@pos, @end) from its start until aio_pool_complete():
 *		requests overlapping it wait for that
 * @barrier:	with @shared: starts once no exclusive request queued before
 *		it is still queued or being issued, and then holds up
 *		nothing (an fsync: it follows the writes submitted before
 *		it, not the ones in flight, and nothing waits for it)
 * @pos:	first byte the request is ordered by
 * @end:	one past its last one (LLONG_MAX: to the end of the file)
 * @held:	an exclusive request a worker started; aio_pool_complete()
 *		must be called when it completes
 * @hold:	entry in its key's list of queued requests, then, once a
 *		worker started it, of held ones
 * @order:	the pool's order entry for @key, while the pool has it
 */
struct aio_offload_work {
	struct list_head	node;
	void			(*run)(struct aio_offload_work *work);
	void			(*cancel)(struct aio_offload_work *work, int err);
	const void		*key;
	bool			shared;
	bool			barrier;
	bool			held;
	loff_t			pos;
	loff_t			end;
	struct list_head	hold;
	struct aio_pool_order	*order;
};

#ifdef CONFIG_AIO_OFFLOAD
struct aio_pool *aio_pool_create(unsigned int max_workers);
bool aio_pool_share(struct aio_pool *pool);
bool aio_pool_queue(struct aio_pool *pool, struct aio_offload_work *work);
void aio_pool_shutdown(struct aio_pool *pool);
void aio_pool_release(struct aio_pool *pool);
bool aio_pool_busy(struct aio_pool *pool, const void *key, bool shared);
bool aio_pool_conflict(struct aio_pool *pool, const void *key, loff_t pos,
		       loff_t end, bool shared);
bool aio_pool_cancel(struct aio_pool *pool, struct aio_offload_work *work);
void aio_pool_complete(struct aio_pool *pool, struct aio_offload_work *work);
void aio_pool_requeue(struct aio_pool *pool, struct aio_offload_work *work);
void aio_pool_admit(struct aio_pool *pool);
void aio_pool_retire(struct aio_pool *pool);
bool aio_pool_exiting(struct aio_pool *pool);
void aio_pool_orphan(struct aio_pool *pool);
#else
static inline struct aio_pool *aio_pool_create(unsigned int max_workers)
{
	return NULL;
}

static inline bool aio_pool_share(struct aio_pool *pool)
{
	return false;
}

static inline bool aio_pool_queue(struct aio_pool *pool,
				  struct aio_offload_work *work)
{
	return false;
}

static inline void aio_pool_shutdown(struct aio_pool *pool)
{
}

static inline void aio_pool_release(struct aio_pool *pool)
{
}

static inline bool aio_pool_busy(struct aio_pool *pool, const void *key,
				 bool shared)
{
	return false;
}

static inline bool aio_pool_conflict(struct aio_pool *pool, const void *key,
				     loff_t pos, loff_t end, bool shared)
{
	return false;
}

static inline bool aio_pool_cancel(struct aio_pool *pool,
				   struct aio_offload_work *work)
{
	return false;
}

static inline void aio_pool_complete(struct aio_pool *pool,
				     struct aio_offload_work *work)
{
}

static inline void aio_pool_requeue(struct aio_pool *pool,
				    struct aio_offload_work *work)
{
}

static inline void aio_pool_admit(struct aio_pool *pool)
{
}

static inline void aio_pool_retire(struct aio_pool *pool)
{
}

static inline bool aio_pool_exiting(struct aio_pool *pool)
{
	return false;
}

static inline void aio_pool_orphan(struct aio_pool *pool)
{
}
#endif

#ifdef CONFIG_CGROUP_AIO
struct aio_cgroup *aio_cgroup_charge_current(enum aio_cgroup_res res,
					     bool quiet);
void aio_cgroup_uncharge_put(struct aio_cgroup *aiocg, enum aio_cgroup_res res);
void aio_cgroup_count(struct aio_cgroup *aiocg, unsigned int item);
void aio_cgroup_count_bypass(void);
#else
static inline struct aio_cgroup *
aio_cgroup_charge_current(enum aio_cgroup_res res, bool quiet)
{
	return NULL;
}

static inline void aio_cgroup_uncharge_put(struct aio_cgroup *aiocg,
					   enum aio_cgroup_res res)
{
}

static inline void aio_cgroup_count(struct aio_cgroup *aiocg,
				    unsigned int item)
{
}

static inline void aio_cgroup_count_bypass(void)
{
}
#endif

#endif /* _LINUX_AIO_OFFLOAD_H */
