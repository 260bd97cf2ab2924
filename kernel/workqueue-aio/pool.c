// SPDX-License-Identifier: GPL-2.0
/*
 * Workers that redo AIO requests which would have blocked io_submit().
 *
 * fs/aio.c issues reads and writes with IOCB_NOWAIT; what would block is
 * queued here and redone, blocking, by a worker.  The workers are io
 * threads of the submitting process (create_io_thread()), as in io_uring's
 * io-wq, rather than kworkers that borrow the submitter's identity: they
 * share its mm, files, fs root, rlimits, io context and cgroups, so the
 * I/O is checked and charged as if the submitter had done it and nothing
 * has to be borrowed and given back per request.  Credentials are per
 * thread; fs/aio.c overrides them with the submitting thread's.
 *
 * Threads are only created where sleeping is fine: the first worker by
 * aio_pool_create() (io_setup()), later ones by a worker that takes the
 * last idle slot, so that queued work finds an idle worker unless the
 * pool is at its limit, and io_submit() never forks.  At the limit one
 * idle worker is kept beyond it, the spare: a pool whose running workers
 * all wait on work that only a queued request of the same process can do
 * (a userfaultfd handler or FUSE server doing AIO) would deadlock where
 * stock does not, so when no request finished for a while the spare runs
 * one past the limit and clones the next spare.  An AIO worker never sets
 * worker_private: the scheduler takes that of any PF_IO_WORKER for io-wq's.
 *
 * Requests on one file are kept in order: a request that stock AIO would
 * have issued inside io_submit() before the next one must not be
 * overtaken by it.  Each key (inode) with requests in the pool has an
 * order entry; its requests start in queue order, writes alone, reads
 * together, so that writes queued on one file wait in the queue rather
 * than take a thread each, and a request stuck on one file (on a FUSE
 * server of the process, say) holds up no other file (but those whose
 * entries could not be allocated: see struct aio_pool_order).  Stock
 * issues a batch from one thread, so overlapping direct writes reach the
 * device in order; workers on several CPUs would not, so a write also
 * holds its byte range until it completes, and requests overlapping it
 * wait for that.  A new request that overlaps nothing queued or held on
 * its file need not wait at all (aio_pool_conflict()): fs/aio.c makes
 * the ranges cover what a request's effect reaches (an extending write,
 * the end of the file).
 *
 * Nothing a program handed over is dropped: only io_cancel() cancels
 * (what no worker has started).  A pool drains, running its queue to the
 * end and waiting for every request it may still have to run (@pending),
 * before its last worker exits, when
 *  - io_destroy() (or exit_aio()) has closed the context: no more requests
 *    can come (aio_pool_shutdown());
 *  - the process is going away: its last user thread has exited
 *    (aio_pool_orphan()), or a fatal signal (exit_group(), SIGKILL, exec's
 *    de_thread(), a coredump) reached the workers.  PF_USER_WORKER threads
 *    get that signal back from get_signal() instead of exiting; the worker
 *    keeps it from interrupting the drain and drops its reference to the
 *    file table, so that a userfaultfd or FUSE server of the dying process
 *    is released and requests waiting on it fail instead of hanging.
 * The process cannot be reaped, nor can exec or a coredump go on, until the
 * workers are gone, as stock waits in exit_aio() for what is in flight.
 *
 * Each worker is charged to the aio cgroup of the thread that created it
 * (aio.workers.max).  A pool that may not grow runs its queue with the
 * workers it has; it always has one until it is shut down.
 */
#include <linux/aio_offload.h>
#include <linux/atomic.h>
#include <linux/hash.h>
#include <linux/rculist.h>
#include <linux/refcount.h>
#include <linux/resume_user_mode.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/task_work.h>
#include <linux/wait.h>

/* An idle worker exits after this long, unless it is the only idle one. */
#define AIO_WORKER_IDLE_TIMEOUT	(5 * HZ)

/*
 * A pool at its limit with requests waiting, and none finished for this
 * long, runs one more: see aio_worker_stalled().
 */
#define AIO_STALL_TIMEOUT	HZ

/* Hash chains for the order entries: short for a few hundred files. */
#define AIO_POOL_ORDER_BITS	8

/**
 * struct aio_pool_order - the ordered requests of one key
 * @link:	in the pool's hash chain: changed under the pool lock, walked
 *		under RCU by aio_pool_busy()
 * @key:	the key; NULL for the pool's fallback entry
 * @refs:	requests using the entry: queued, being issued, and held
 *		writes (a write a worker started counts twice until its
 *		run returns, then once until it completes).  Freed when 0.
 * @queued:	requests queued (barriers not counted)
 * @queued_writers: of those, writes
 * @readers:	reads being issued by workers
 * @writer:	a write is being issued by a worker
 * @waiting:	requests queued, oldest first: what aio_pool_conflict()
 *		walks instead of the pool's whole queue
 * @held:	writes started and not completed
 * @blocked:	the aio_pool_take() pass in which the oldest queued request
 *		could not start: the younger ones wait for it
 * @rcu:	to free it after aio_pool_busy() readers
 *
 * The entry is allocated without sleeping, as a request may be queued
 * from a bio's completion.  If that fails, the request uses the pool's
 * fallback entry, and so do later requests with its key while any of
 * them is still there (aio_pool_in_fallback()): keys in the fallback are
 * ordered together, more than needed, never less.  Other keys still get
 * entries of their own.
 */
struct aio_pool_order {
	struct hlist_node	link;
	const void		*key;
	unsigned int		refs;
	unsigned int		queued;
	unsigned int		queued_writers;
	unsigned int		readers;
	bool			writer;
	struct list_head	waiting;
	struct list_head	held;
	u64			blocked;
	struct rcu_head		rcu;
};

/* A request of the fallback entry that a worker is issuing. */
struct aio_pool_running {
	struct list_head	link;
	const void		*key;
};

/**
 * struct aio_pool - the workers of one AIO context
 * @lock:	protects the fields below it; taken from completion (irq)
 *		context when the block layer fails a NOWAIT bio
 * @queue:	requests waiting for a worker, oldest first
 * @nr_workers:	live workers, counting one being created
 * @nr_idle:	workers waiting for work
 * @max_workers: limit on workers running requests at once: @per_user for
 *		each context sharing the pool
 * @per_user:	what each context adds to @max_workers
 * @users:	contexts sharing the pool (aio_pool_share()); the last one's
 *		aio_pool_shutdown() closes it
 * @grown:	how far past @max_workers stalls let the pool run
 * @progress:	requests workers have finished, to tell a stall
 * @spawning:	a worker is being created; only one at a time
 * @refused:	the last worker asked for was refused by aio.workers.max
 *		(counted once in aio.events until one is created again)
 * @closing:	its last context is closed (io_destroy()): drain, then exit
 * @exiting:	the process is going away: drain, then exit
 * @dead:	no worker is left: queueing fails
 * @pending:	requests admitted (aio_pool_admit()) and not yet retired:
 *		queued, running, or in flight inline and so maybe coming back
 *		as a punt from their completion.  A draining pool's last
 *		worker exits once it is 0.
 * @wait:	idle workers
 * @refs:	one per context, one per worker
 * @tgid:	the owning process, for the workers' names
 * @sig:	its signal_struct, which the workers keep alive
 * @spawn_cg:	the cgroup charged for the worker being created; handed to
 *		it under @lock (one is created at a time)
 * @pass:	counts aio_pool_take() passes, for &aio_pool_order.blocked
 * @fallback:	the order entry of requests that could not get their own
 * @fallback_running: the fallback's requests workers are issuing
 * @order:	the order entries, hashed by key; under @lock, and RCU
 */
struct aio_pool {
	spinlock_t		lock;	/* irq-safe: see aio_pool_queue() */
	struct list_head	queue;
	unsigned int		nr_workers;
	unsigned int		nr_idle;
	unsigned int		max_workers;
	unsigned int		per_user;
	unsigned int		users;
	unsigned int		grown;
	unsigned long		progress;
	bool			spawning;
	bool			refused;
	bool			closing;
	bool			exiting;
	bool			dead;

	atomic_t		pending;
	wait_queue_head_t	wait;
	refcount_t		refs;
	pid_t			tgid;
	struct signal_struct	*sig;
	struct aio_cgroup	*spawn_cg;
	u64			pass;
	struct aio_pool_order	fallback;
	struct list_head	fallback_running;
	struct hlist_head	order[1 << AIO_POOL_ORDER_BITS];
};

static void aio_pool_put(struct aio_pool *pool)
{
	int i;

	if (!refcount_dec_and_test(&pool->refs))
		return;
	/* Every request has left its order entry. */
	WARN_ON_ONCE(pool->fallback.refs);
	for (i = 0; i < ARRAY_SIZE(pool->order); i++)
		WARN_ON_ONCE(!hlist_empty(&pool->order[i]));
	kfree(pool);
}

static void aio_pool_order_init(struct aio_pool_order *o, const void *key)
{
	o->key = key;
	o->refs = 0;
	o->queued = 0;
	o->queued_writers = 0;
	o->readers = 0;
	o->blocked = 0;
	o->writer = false;
	INIT_LIST_HEAD(&o->waiting);
	INIT_LIST_HEAD(&o->held);
}

static struct hlist_head *aio_pool_chain(struct aio_pool *pool,
					 const void *key)
{
	return &pool->order[hash_ptr(key, AIO_POOL_ORDER_BITS)];
}

/*
 * The entry of @key's own, if it has one.
 * Context: the pool lock or rcu_read_lock() held.
 */
static struct aio_pool_order *aio_pool_order_find(struct aio_pool *pool,
						  const void *key)
{
	struct aio_pool_order *o;

	hlist_for_each_entry_rcu(o, aio_pool_chain(pool, key), link,
				 lockdep_is_held(&pool->lock))
		if (o->key == key)
			return o;
	return NULL;
}

/*
 * Has @key requests in the fallback entry: queued, being issued, held?
 * Only when an allocation failed is the fallback in use, so the walk is
 * rare.
 */
static bool aio_pool_in_fallback(struct aio_pool *pool, const void *key)
	__must_hold(&pool->lock)
{
	struct aio_offload_work *w;
	struct aio_pool_running *r;

	if (!pool->fallback.refs)
		return false;
	list_for_each_entry(w, &pool->fallback.waiting, hold)
		if (w->key == key)
			return true;
	list_for_each_entry(w, &pool->fallback.held, hold)
		if (w->key == key)
			return true;
	list_for_each_entry(r, &pool->fallback_running, link)
		if (r->key == key)
			return true;
	return false;
}

/* The entry requests with @key use now, if any. */
static struct aio_pool_order *aio_pool_order_lookup(struct aio_pool *pool,
						    const void *key)
	__must_hold(&pool->lock)
{
	struct aio_pool_order *o = aio_pool_order_find(pool, key);

	if (!o && aio_pool_in_fallback(pool, key))
		o = &pool->fallback;
	return o;
}

/*
 * Take a reference to @work's entry for its key, making one if there is
 * none.  Called in any context, under locks: the allocation cannot wait,
 * and if it fails @work uses the fallback entry.
 */
static void aio_pool_order_get(struct aio_pool *pool,
			       struct aio_offload_work *work)
	__must_hold(&pool->lock)
{
	struct aio_pool_order *o = aio_pool_order_lookup(pool, work->key);

	if (!o) {
		o = kmalloc(sizeof(*o), GFP_NOWAIT | __GFP_NOWARN);
		if (o) {
			aio_pool_order_init(o, work->key);
			hlist_add_head_rcu(&o->link,
					   aio_pool_chain(pool, work->key));
		} else {
			o = &pool->fallback;
		}
	}
	/* WRITE_ONCE: aio_pool_busy() reads the fallback's without the lock. */
	WRITE_ONCE(o->refs, o->refs + 1);
	work->order = o;
}

static void aio_pool_order_put(struct aio_pool *pool, struct aio_pool_order *o)
	__must_hold(&pool->lock)
{
	if (WARN_ON_ONCE(!o->refs))
		return;
	WRITE_ONCE(o->refs, o->refs - 1);
	if (o->refs || o == &pool->fallback)
		return;
	hlist_del_rcu(&o->link);
	kfree_rcu(o, rcu);
}

static int aio_worker(void *data);

/*
 * Start a worker whose slot the caller reserved (nr_workers, spawning).
 * Runs in a thread of the owning process, which the worker is cloned from.
 * Return: 0, -EDQUOT if the cgroup is at aio.workers.max, or why the
 * thread could not be created.
 */
static int aio_pool_spawn(struct aio_pool *pool)
{
	struct aio_cgroup *aiocg;
	struct task_struct *tsk;
	int err;

	/*
	 * A pool at aio.workers.max asks again at every request it takes:
	 * aio.events counts the first refusal, not each retry.
	 */
	aiocg = aio_cgroup_charge_current(AIO_CG_WORKERS,
					  READ_ONCE(pool->refused));
	if (IS_ERR(aiocg)) {
		WRITE_ONCE(pool->refused, true);
		err = -EDQUOT;
		goto fail;
	}
	WRITE_ONCE(pool->refused, false);
	pool->spawn_cg = aiocg;
	refcount_inc(&pool->refs);
	tsk = create_io_thread(aio_worker, pool, NUMA_NO_NODE);
	if (IS_ERR(tsk)) {
		aio_pool_put(pool);
		aio_cgroup_uncharge_put(aiocg, AIO_CG_WORKERS);
		err = PTR_ERR(tsk);
		goto fail;
	}
	wake_up_new_task(tsk);
	return 0;

fail:
	spin_lock_irq(&pool->lock);
	pool->spawn_cg = NULL;
	pool->nr_workers--;
	pool->spawning = false;
	spin_unlock_irq(&pool->lock);
	return err;
}

/*
 * Count @work in or out of its key's queued requests (@d: +1 or -1),
 * which later requests with its key wait behind (aio_pool_busy()).  Not
 * a barrier (fsync): it waits for what came before it, but holds up
 * nothing after it, so a write submitted after it is still tried inline,
 * as stock issues it alongside the fsync.
 */
static void aio_pool_count_queued(struct aio_offload_work *work, int d)
{
	struct aio_pool_order *o;

	if (!work->key || work->barrier)
		return;
	o = work->order;
	WRITE_ONCE(o->queued, o->queued + d);
	if (!work->shared)
		WRITE_ONCE(o->queued_writers, o->queued_writers + d);
}

/* May @work start now, given what of its key runs? */
static bool aio_pool_may_start(struct aio_pool_order *o,
			       struct aio_offload_work *work)
{
	struct aio_offload_work *h;

	if (o->writer || (!work->shared && o->readers))
		return false;
	if (work->barrier)
		return true;
	list_for_each_entry(h, &o->held, hold)
		if (h->key == work->key && h->pos < work->end &&
		    work->pos < h->end)
			return false;
	return true;
}

/* Workers running a request: neither idle nor being created. */
static unsigned int aio_pool_running(struct aio_pool *pool)
	__must_hold(&pool->lock)
{
	return pool->nr_workers - pool->nr_idle - pool->spawning;
}

/*
 * Take the oldest request that may start, and reserve a new worker if
 * none would be idle.  A key whose oldest queued request must wait holds
 * back its younger ones too.  *@limited: one could start, but the
 * pool runs as many as it may.
 *
 * The pool keeps one worker more than it may run, while it can: the
 * spare watches for a stall (aio_worker_stalled()).
 */
static struct aio_offload_work *aio_pool_take(struct aio_pool *pool,
					      bool *spawn, bool *limited)
	__must_hold(&pool->lock)
{
	/* From 1, so that a new entry (0) is blocked in no pass. */
	u64 pass = ++pool->pass;
	struct aio_offload_work *work;
	struct aio_pool_order *o = NULL;

	*limited = false;

	list_for_each_entry(work, &pool->queue, node) {
		if (!work->key)
			goto found;
		o = work->order;
		if (o->blocked == pass)
			continue;
		if (aio_pool_may_start(o, work))
			goto found;
		o->blocked = pass;
	}
	return NULL;

found:
	if (aio_pool_running(pool) >= pool->max_workers + pool->grown) {
		*limited = true;
		return NULL;
	}
	list_del_init(&work->node);
	/* Its reference for being queued is now for being issued. */
	if (work->key) {
		list_del(&work->hold);
		aio_pool_count_queued(work, -1);
		if (work->barrier) {
			/* Nothing to hold. */
		} else if (work->shared) {
			WRITE_ONCE(o->readers, o->readers + 1);
		} else {
			o->writer = true;
			work->held = true;
			WRITE_ONCE(o->refs, o->refs + 1);
			list_add_tail(&work->hold, &o->held);
		}
	}
	pool->nr_idle--;
	*spawn = !pool->nr_idle && !pool->spawning && !pool->closing &&
		 !pool->exiting &&
		 pool->nr_workers < pool->max_workers + pool->grown + 1;
	if (*spawn) {
		pool->spawning = true;
		pool->nr_workers++;
	}
	return work;
}

/* A worker has issued a request of entry @o; a barrier counted nowhere. */
static void aio_pool_done(struct aio_pool *pool, struct aio_pool_order *o,
			  bool shared, bool barrier)
	__must_hold(&pool->lock)
{
	if (!barrier && shared)
		WRITE_ONCE(o->readers, o->readers - 1);
	else if (!barrier)
		o->writer = false;
	aio_pool_order_put(pool, o);
}

/* Draining: no more requests can come but those already admitted. */
static bool aio_pool_draining(struct aio_pool *pool)
{
	return READ_ONCE(pool->closing) || READ_ONCE(pool->exiting);
}

/**
 * aio_pool_orphan - the process is going away
 * @pool: the pool
 *
 * Its last user thread has exited, or a fatal signal reached a worker:
 * the workers, which may be the only threads left, run what was admitted
 * and exit, so that the process goes.
 *
 * Context: any; never sleeps.
 */
void aio_pool_orphan(struct aio_pool *pool)
{
	unsigned long flags;

	spin_lock_irqsave(&pool->lock, flags);
	pool->exiting = true;
	spin_unlock_irqrestore(&pool->lock, flags);
	wake_up_all(&pool->wait);
}

/*
 * A signal for a worker, which blocks all but SIGKILL and SIGSTOP.  A
 * fatal one comes back from get_signal() (PF_USER_WORKER) rather than
 * exiting: the process is going away, so drain.  From then on the
 * SIGKILL, which stays in the process's shared pending set, must not
 * interrupt the requests still to run: clear TIF_SIGPENDING (vhost's
 * workers did the same when they became user workers in 6.4), and drop
 * this thread's share of the file table (see the comment at the top).
 * The final fput()s that may leave behind are task work: run it now, or
 * a userfaultfd or FUSE file released here would stay open while this
 * worker waits on it.
 */
static void aio_worker_signal(struct aio_pool *pool)
{
	struct ksignal ksig;

	if (signal_pending(current) && get_signal(&ksig))
		aio_pool_orphan(pool);
	if (READ_ONCE(pool->exiting)) {
		clear_thread_flag(TIF_SIGPENDING);
		if (current->files) {
			exit_files(current);
			task_work_run();
		}
	}
}

/*
 * The spare worker of a pool at its limit, with requests waiting: has no
 * request finished since @seen for AIO_STALL_TIMEOUT (@deadline)?  Then
 * the running ones may all wait on something only a queued request can
 * give: a userfaultfd handler or a FUSE server of this process that does
 * AIO on the same context.  Stock, with no pool, would not deadlock
 * there, so the pool runs one more request past its limit, and the spare
 * that takes it clones the next spare.  Growth stops at twice the limit,
 * where creating a thread fails (RLIMIT_NPROC, pids.max), or where
 * aio.workers.max refuses the charge: a cgroup limit is not exceeded.
 * Slow I/O that holds every worker for a second grows the pool too: the
 * cap bounds what that costs.
 *
 * Return: true if the pool may run one more now.
 */
static bool aio_worker_stalled(struct aio_pool *pool, struct aio_cgroup *aiocg,
			       bool *armed, unsigned long *seen,
			       unsigned long *deadline)
	__must_hold(&pool->lock)
{
	if (!*armed || pool->progress != *seen) {
		*armed = true;
		*seen = pool->progress;
		*deadline = jiffies + AIO_STALL_TIMEOUT;
		return false;
	}
	if (time_before(jiffies, *deadline) ||
	    pool->grown >= pool->max_workers)
		return false;
	*armed = false;
	pool->grown++;
	aio_cgroup_count(aiocg, AIO_STAT_STALL_GROW);
	return true;
}

static int aio_worker(void *data)
{
	struct aio_pool *pool = data;
	unsigned long seen = 0, deadline = 0;
	struct aio_pool_running running;
	struct aio_offload_work *work;
	char comm[TASK_COMM_LEN];
	struct aio_cgroup *aiocg;
	bool timed_out = false, armed = false;
	DEFINE_WAIT(wait);

	snprintf(comm, sizeof(comm), "aio-wrk-%d", pool->tgid);
	set_task_comm(current, comm);

	spin_lock_irq(&pool->lock);
	aiocg = pool->spawn_cg;
	pool->spawn_cg = NULL;
	pool->spawning = false;
	pool->nr_idle++;
	for (;;) {
		long timeout = AIO_WORKER_IDLE_TIMEOUT;
		bool spawn, limited;

		if (unlikely(signal_pending(current) || pool->exiting)) {
			spin_unlock_irq(&pool->lock);
			aio_worker_signal(pool);
			spin_lock_irq(&pool->lock);
		}
		work = aio_pool_take(pool, &spawn, &limited);
		if (work) {
			/* Its range stays held until aio_pool_complete(). */
			struct aio_pool_order *o = work->key ? work->order : NULL;
			bool shared = work->shared, barrier = work->barrier;
			/*
			 * What this one held back (a read or barrier lets
			 * those behind it on its file go) may start now:
			 * pass the wake-up on, one idle worker at a time.
			 */
			bool more = pool->nr_idle && !list_empty(&pool->queue);

			/* @work's key is in the fallback while it runs. */
			if (o == &pool->fallback) {
				running.key = work->key;
				list_add(&running.link, &pool->fallback_running);
			}
			spin_unlock_irq(&pool->lock);
			if (more)
				wake_up(&pool->wait);
			if (spawn)
				aio_pool_spawn(pool);
			/* @work may be freed once it has run. */
			work->run(work);
			/*
			 * What a return to user space would do: the final
			 * fput() of a completed request's file is task work.
			 */
			if (test_thread_flag(TIF_NOTIFY_RESUME)) {
				__set_current_state(TASK_RUNNING);
				resume_user_mode_work(NULL);
			}
			cond_resched();
			timed_out = false;
			armed = false;
			spin_lock_irq(&pool->lock);
			pool->progress++;
			if (o == &pool->fallback)
				list_del(&running.link);
			if (o) {
				aio_pool_done(pool, o, shared, barrier);
				/* Others on its file may start now. */
				if (!list_empty(&pool->queue))
					wake_up(&pool->wait);
			}
			pool->nr_idle++;
			continue;
		}
		if (limited) {
			if (aio_worker_stalled(pool, aiocg, &armed, &seen,
					       &deadline))
				continue;
			timeout = max_t(long, deadline - jiffies, 1);
		} else {
			armed = false;
			/*
			 * Idle for long: go, unless this is the only idle
			 * worker (with others running it is the spare), and
			 * give back room the pool grew by but no longer uses.
			 */
			if (timed_out && pool->nr_idle > 1) {
				if (pool->grown &&
				    aio_pool_running(pool) <
				    pool->max_workers + pool->grown)
					pool->grown--;
				break;
			}
		}
		/*
		 * Exiting, a signal cannot end the wait, and must not make
		 * it return at once (see aio_worker_signal()); the freezer
		 * may still freeze it.  Waiting first, then testing
		 * @pending, which aio_pool_retire() drops without the lock,
		 * catches its wake-up.
		 */
		prepare_to_wait_exclusive(&pool->wait, &wait,
					  pool->exiting ?
					  TASK_IDLE | TASK_FREEZABLE :
					  TASK_INTERRUPTIBLE);
		if (aio_pool_draining(pool) && !atomic_read(&pool->pending)) {
			finish_wait(&pool->wait, &wait);
			break;
		}
		spin_unlock_irq(&pool->lock);
		timed_out = !schedule_timeout(timeout);
		finish_wait(&pool->wait, &wait);
		spin_lock_irq(&pool->lock);
	}
	pool->nr_idle--;
	/*
	 * Nothing is queued when the last worker goes: it only leaves a
	 * draining pool with nothing pending, and nothing is admitted to a
	 * draining pool (no thread of the process submits any more) but,
	 * in a race with a fatal signal, from inside io_submit(): that
	 * request finds the pool dead.
	 */
	if (!--pool->nr_workers) {
		pool->dead = true;
		WARN_ON_ONCE(!list_empty(&pool->queue));
	}
	spin_unlock_irq(&pool->lock);

	aio_cgroup_uncharge_put(aiocg, AIO_CG_WORKERS);
	aio_pool_put(pool);
	do_exit(0);
}

/**
 * aio_pool_create - create the workers of an AIO context
 * @max_workers: how many workers may run at once
 *
 * Starts one worker, a thread of the calling process, charged to its
 * aio cgroup.
 *
 * Context: process context, may sleep.
 * Return: the pool; ERR_PTR(-EDQUOT) if the cgroup is at aio.workers.max;
 * another ERR_PTR if no worker could be started (for instance at
 * RLIMIT_NPROC).
 */
struct aio_pool *aio_pool_create(unsigned int max_workers)
{
	struct aio_pool *pool;
	int err;

	pool = kzalloc(sizeof(*pool), GFP_KERNEL);
	if (!pool)
		return ERR_PTR(-ENOMEM);
	spin_lock_init(&pool->lock);
	aio_pool_order_init(&pool->fallback, NULL);
	INIT_LIST_HEAD(&pool->fallback_running);
	INIT_LIST_HEAD(&pool->queue);
	init_waitqueue_head(&pool->wait);
	refcount_set(&pool->refs, 1);
	atomic_set(&pool->pending, 0);
	pool->per_user = max(max_workers, 1U);
	pool->max_workers = pool->per_user;
	pool->users = 1;
	pool->tgid = current->tgid;
	pool->sig = current->signal;
	pool->nr_workers = 1;
	pool->spawning = true;
	err = aio_pool_spawn(pool);
	if (err) {
		aio_pool_put(pool);
		return ERR_PTR(err);
	}
	return pool;
}

/**
 * aio_pool_queue - hand a request to a worker
 * @pool: the pool
 * @work: the request
 *
 * Context: any, including hard irq; never sleeps.
 * Return: true if a worker will run @work (or io_cancel() cancel it),
 * false if the pool has no worker left: it drained, so @work was not
 * admitted to it.
 */
bool aio_pool_queue(struct aio_pool *pool, struct aio_offload_work *work)
{
	unsigned long flags;
	bool queued;

	work->held = false;
	spin_lock_irqsave(&pool->lock, flags);
	queued = !pool->dead;
	if (queued) {
		list_add_tail(&work->node, &pool->queue);
		if (work->key) {
			aio_pool_order_get(pool, work);
			list_add_tail(&work->hold, &work->order->waiting);
		}
		aio_pool_count_queued(work, 1);
	}
	spin_unlock_irqrestore(&pool->lock, flags);
	if (queued)
		wake_up(&pool->wait);
	return queued;
}

/**
 * aio_pool_busy - would a request with this key overtake queued ones?
 * @pool: the pool
 * @key: the key
 * @shared: the request could run alongside other @shared ones
 *
 * True if requests with @key that the new one may have to wait for are
 * queued or running: any, for an exclusive request; exclusive ones, for
 * a shared one (reads may pass reads).  A write counts as running until
 * it completes.  The cheap first test: only then does the caller need
 * aio_pool_conflict(), which looks at ranges.  Lockless but while the
 * fallback entry is in use: what the calling thread queued itself is
 * seen; what others queue at the same time is not ordered against it
 * anyway.
 *
 * Context: any.
 */
bool aio_pool_busy(struct aio_pool *pool, const void *key, bool shared)
{
	struct aio_pool_order *o;
	unsigned long flags;
	bool busy = false;

	rcu_read_lock();
	o = aio_pool_order_find(pool, key);
	/* list_empty() reads the head once: safe without the lock. */
	if (o && shared)
		busy = READ_ONCE(o->queued_writers) || !list_empty(&o->held);
	else if (o)
		busy = READ_ONCE(o->queued) || READ_ONCE(o->readers) ||
		       !list_empty(&o->held);
	rcu_read_unlock();
	if (o || !READ_ONCE(pool->fallback.refs))
		return busy;
	/* Rare: an allocation failed.  Any request there holds it up. */
	spin_lock_irqsave(&pool->lock, flags);
	busy = aio_pool_in_fallback(pool, key);
	spin_unlock_irqrestore(&pool->lock, flags);
	return busy;
}

/**
 * aio_pool_conflict - would a request overtake one of the pool's?
 * @pool: the pool
 * @key: the request's key
 * @pos: first byte it touches
 * @end: one past its last byte
 * @shared: it is a read
 *
 * The exact form of aio_pool_busy(): true if a write with @key
 * overlapping [@pos, @end) is queued or not yet completed, or, for a
 * write, a read with @key is queued over the range or one is being
 * issued.  Barriers (fsync) conflict with nothing.  A request that
 * conflicts with nothing may be issued at once: what it would pass is
 * disjoint from it, as stock's requests in flight together are.  Walks
 * the requests of @key only.
 *
 * Context: any; takes the pool lock.
 */
bool aio_pool_conflict(struct aio_pool *pool, const void *key, loff_t pos,
		       loff_t end, bool shared)
{
	struct aio_offload_work *w;
	struct aio_pool_order *o;
	unsigned long flags;
	bool ret;

	spin_lock_irqsave(&pool->lock, flags);
	o = aio_pool_order_lookup(pool, key);
	if (!o) {
		spin_unlock_irqrestore(&pool->lock, flags);
		return false;
	}
	ret = !shared && o->readers;
	list_for_each_entry(w, &o->held, hold) {
		if (ret)
			break;
		ret = w->key == key && w->pos < end && pos < w->end;
	}
	list_for_each_entry(w, &o->waiting, hold) {
		if (ret)
			break;
		ret = w->key == key && !w->barrier && (!shared || !w->shared) &&
		      w->pos < end && pos < w->end;
	}
	spin_unlock_irqrestore(&pool->lock, flags);
	return ret;
}

/**
 * aio_pool_cancel - take a request off the queue before a worker starts it
 * @pool: the pool
 * @work: a request queued with aio_pool_queue()
 *
 * The caller then owns @work and completes it (@work->cancel).
 *
 * Context: any; never sleeps.
 * Return: true if @work was taken off the queue, false if a worker has
 * already started (or cancelled) it.
 */
bool aio_pool_cancel(struct aio_pool *pool, struct aio_offload_work *work)
{
	unsigned long flags;
	bool queued;

	spin_lock_irqsave(&pool->lock, flags);
	queued = !list_empty(&work->node);
	if (queued) {
		list_del_init(&work->node);
		aio_pool_count_queued(work, -1);
		if (work->key) {
			list_del(&work->hold);
			aio_pool_order_put(pool, work->order);
		}
	}
	spin_unlock_irqrestore(&pool->lock, flags);
	/* Requests it held back may be able to start now. */
	if (queued)
		wake_up(&pool->wait);
	return queued;
}

/**
 * aio_pool_complete - a started exclusive request has completed
 * @pool: the pool
 * @work: a request whose @held is set
 *
 * Requests overlapping @work may start now.  Call before @work is freed.
 *
 * Context: any, including hard irq; never sleeps.
 */
void aio_pool_complete(struct aio_pool *pool, struct aio_offload_work *work)
{
	unsigned long flags;
	bool wake;

	spin_lock_irqsave(&pool->lock, flags);
	if (!work->held) {
		/* A barrier: it held nothing. */
		spin_unlock_irqrestore(&pool->lock, flags);
		return;
	}
	list_del(&work->hold);
	work->held = false;
	aio_pool_order_put(pool, work->order);
	wake = !list_empty(&pool->queue);
	spin_unlock_irqrestore(&pool->lock, flags);
	if (wake)
		wake_up(&pool->wait);
}

/**
 * aio_pool_requeue - queue a started request again, ahead of the others
 * @pool: the pool
 * @work: a request a worker ran, which a fatal signal cut short
 *
 * It is older than everything queued, so it goes first; the range it
 * held is given up, since it is queued to take it again, and its
 * reference to the order entry is now for being queued.
 *
 * Context: any, including hard irq; never sleeps.
 */
void aio_pool_requeue(struct aio_pool *pool, struct aio_offload_work *work)
{
	unsigned long flags;

	spin_lock_irqsave(&pool->lock, flags);
	if (work->held) {
		list_del(&work->hold);
		work->held = false;
	} else if (WARN_ON_ONCE(work->key)) {
		/* Only writes, which a worker ran (held), come back. */
		aio_pool_order_get(pool, work);
	}
	if (work->key)
		list_add(&work->hold, &work->order->waiting);
	list_add(&work->node, &pool->queue);
	aio_pool_count_queued(work, 1);
	spin_unlock_irqrestore(&pool->lock, flags);
	wake_up(&pool->wait);
}

/**
 * aio_pool_admit - count a request the pool may have to run
 * @pool: the pool
 *
 * Called before a request is queued or tried inline; aio_pool_retire()
 * once it can no longer come to the pool.  A draining pool's workers wait
 * for all such requests.
 *
 * Context: any; never sleeps.
 */
void aio_pool_admit(struct aio_pool *pool)
{
	atomic_inc(&pool->pending);
}

/**
 * aio_pool_retire - a request counted by aio_pool_admit() is done
 * @pool: the pool
 *
 * Context: any, including hard irq; never sleeps.
 */
void aio_pool_retire(struct aio_pool *pool)
{
	if (atomic_dec_and_test(&pool->pending) && aio_pool_draining(pool))
		wake_up_all(&pool->wait);
}

/**
 * aio_pool_exiting - is the process of the pool going away?
 * @pool: the pool
 *
 * True once its last user thread has exited, or a fatal signal, a
 * coredump or exec began to take the process down (SIGNAL_GROUP_EXIT or
 * group_exec_task is set before any thread gets the SIGKILL, so an I/O
 * the signal interrupted sees it).
 *
 * Context: any, for a request admitted to the pool and not retired while
 * a worker lives (they keep the signal_struct alive and wait for it), or
 * from the submitting thread.
 */
bool aio_pool_exiting(struct aio_pool *pool)
{
	struct signal_struct *sig = pool->sig;

	return READ_ONCE(pool->exiting) ||
	       (READ_ONCE(sig->flags) & SIGNAL_GROUP_EXIT) ||
	       READ_ONCE(sig->group_exec_task);
}

/**
 * aio_pool_share - let another context of the process use the pool
 * @pool: a pool created by this process
 *
 * Requests of all contexts sharing a pool are ordered against each other,
 * as stock AIO's, issued by one process, were: a read on one context sees
 * a write submitted before it on another.  Each context adds its share
 * to the workers the pool may run, and takes a reference, which
 * aio_pool_shutdown() and aio_pool_release() give back.
 *
 * Context: any; never sleeps.
 * Return: false if the pool is closed or its process is going away: the
 * caller needs a pool of its own.
 */
bool aio_pool_share(struct aio_pool *pool)
{
	unsigned long flags;
	bool ok;

	spin_lock_irqsave(&pool->lock, flags);
	ok = !pool->closing && !pool->exiting && !pool->dead &&
	     pool->sig == current->signal;
	if (ok) {
		pool->users++;
		pool->max_workers += pool->per_user;
		refcount_inc(&pool->refs);
	}
	spin_unlock_irqrestore(&pool->lock, flags);
	return ok;
}

/**
 * aio_pool_shutdown - a context of the pool is closed
 * @pool: the pool
 *
 * Cancels nothing: the workers run what is queued and what is admitted
 * until it is done.  When the last context sharing the pool is closed,
 * they exit then; before, the pool only shrinks by the context's share.
 * Call when no new request can be submitted to the context (its users
 * reference is gone).
 *
 * Context: any; never sleeps.
 */
void aio_pool_shutdown(struct aio_pool *pool)
{
	unsigned long flags;
	bool last;

	spin_lock_irqsave(&pool->lock, flags);
	last = !--pool->users;
	if (last) {
		pool->closing = true;
	} else {
		pool->max_workers -= pool->per_user;
		/* Stall growth is bounded by the limit: see aio_worker_stalled(). */
		pool->grown = min(pool->grown, pool->max_workers);
	}
	spin_unlock_irqrestore(&pool->lock, flags);
	if (last)
		wake_up_all(&pool->wait);
}

/**
 * aio_pool_release - drop a context's reference
 * @pool: the pool, after aio_pool_shutdown() and once nothing can queue
 *	  to it any more
 *
 * Context: any.
 */
void aio_pool_release(struct aio_pool *pool)
{
	aio_pool_put(pool);
}
