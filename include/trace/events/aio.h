/* SPDX-License-Identifier: GPL-2.0 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM aio

#if !defined(_TRACE_AIO_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_AIO_H

#include <linux/aio_offload.h>
#include <linux/fs.h>
#include <linux/tracepoint.h>

TRACE_DEFINE_ENUM(AIO_PUNT_NO_NOWAIT);
TRACE_DEFINE_ENUM(AIO_PUNT_DSYNC);
TRACE_DEFINE_ENUM(AIO_PUNT_BLOCKING_QUEUE);
TRACE_DEFINE_ENUM(AIO_PUNT_FROZEN);
TRACE_DEFINE_ENUM(AIO_PUNT_EAGAIN);
TRACE_DEFINE_ENUM(AIO_PUNT_EOPNOTSUPP);
TRACE_DEFINE_ENUM(AIO_PUNT_SHORT);
TRACE_DEFINE_ENUM(AIO_PUNT_ORDERED);
TRACE_DEFINE_ENUM(AIO_PUNT_APPEND);
TRACE_DEFINE_ENUM(AIO_PUNT_BUFFERED);
TRACE_DEFINE_ENUM(AIO_PUNT_ZONED);

#define aio_show_reason(r)						\
	__print_symbolic(r,						\
			 { AIO_PUNT_NO_NOWAIT,		"no_nowait" },		\
			 { AIO_PUNT_DSYNC,		"dsync" },		\
			 { AIO_PUNT_BLOCKING_QUEUE,	"blocking_queue" },	\
			 { AIO_PUNT_FROZEN,		"frozen" },		\
			 { AIO_PUNT_EAGAIN,		"eagain" },		\
			 { AIO_PUNT_EOPNOTSUPP,		"eopnotsupp" },		\
			 { AIO_PUNT_SHORT,		"short" },		\
			 { AIO_PUNT_ORDERED,		"ordered" },		\
			 { AIO_PUNT_APPEND,		"append" },		\
			 { AIO_PUNT_BUFFERED,		"buffered" },		\
			 { AIO_PUNT_ZONED,		"zoned" })

/*
 * Events about one read or write: the file (device and inode), the file
 * position and a value (a result, a reason).
 */
DECLARE_EVENT_CLASS(aio_rw_class,
		    TP_PROTO(struct kiocb *req, long val),
		    TP_ARGS(req, val),
		    TP_STRUCT__entry(__field(dev_t, dev)
				     __field(unsigned long, ino)
				     __field(loff_t, pos)
				     __field(long, val)),
		    TP_fast_assign(__entry->dev = file_inode(req->ki_filp)->i_sb->s_dev;
				   __entry->ino = file_inode(req->ki_filp)->i_ino;
				   __entry->pos = req->ki_pos;
				   __entry->val = val;),
		    TP_printk("dev %d:%d ino %lu pos %lld res %ld",
			      MAJOR(__entry->dev), MINOR(__entry->dev),
			      __entry->ino, __entry->pos, __entry->val)
);

/**
 * aio_rw_inline - a read or write tried with NOWAIT completed inline
 * @req:	the request
 * @val:	its result
 */
DEFINE_EVENT(aio_rw_class, aio_rw_inline,
	     TP_PROTO(struct kiocb *req, long val),
	     TP_ARGS(req, val)
);

/**
 * aio_worker_run - a worker starts to redo a read or write, blocking
 * @req:	the request
 * @val:	bytes already done inline
 */
DEFINE_EVENT(aio_rw_class, aio_worker_run,
	     TP_PROTO(struct kiocb *req, long val),
	     TP_ARGS(req, val)
);

/**
 * aio_worker_done - the worker's blocking call returned
 * @req:	the request
 * @val:	what it returned, before adding the bytes done inline
 */
DEFINE_EVENT(aio_rw_class, aio_worker_done,
	     TP_PROTO(struct kiocb *req, long val),
	     TP_ARGS(req, val)
);

/**
 * aio_rw_requeue - a fatal signal cut short a worker's read or write: it is
 *		    queued again for the rest
 * @req:	the request
 * @val:	bytes done so far
 */
DEFINE_EVENT(aio_rw_class, aio_rw_requeue,
	     TP_PROTO(struct kiocb *req, long val),
	     TP_ARGS(req, val)
);

/**
 * aio_exit_error - a read or write run after its process began to exit
 *		    failed
 * @req:	the request
 * @val:	the error in its event
 */
DEFINE_EVENT(aio_rw_class, aio_exit_error,
	     TP_PROTO(struct kiocb *req, long val),
	     TP_ARGS(req, val)
);

/**
 * aio_rw_punt - a read or write is handed to a worker
 * @req:	the request
 * @reason:	enum aio_punt_reason
 * @done:	bytes already done inline
 */
TRACE_EVENT(aio_rw_punt,
	    TP_PROTO(struct kiocb *req, int reason, size_t done),
	    TP_ARGS(req, reason, done),
	    TP_STRUCT__entry(__field(dev_t, dev)
			     __field(unsigned long, ino)
			     __field(int, reason)
			     __field(size_t, done)),
	    TP_fast_assign(__entry->dev = file_inode(req->ki_filp)->i_sb->s_dev;
			   __entry->ino = file_inode(req->ki_filp)->i_ino;
			   __entry->reason = reason;
			   __entry->done = done;),
	    TP_printk("dev %d:%d ino %lu reason %s done %zu",
		      MAJOR(__entry->dev), MINOR(__entry->dev), __entry->ino,
		      aio_show_reason(__entry->reason), __entry->done)
);

/**
 * aio_queue_full - io_submit() stops: the cgroup is at aio.queue.max
 * @file:	the file of the request not submitted
 * @res:	enum aio_cgroup_res of the limit
 */
TRACE_EVENT(aio_queue_full,
	    TP_PROTO(struct file *file, int res),
	    TP_ARGS(file, res),
	    TP_STRUCT__entry(__field(dev_t, dev)
			     __field(unsigned long, ino)
			     __field(int, res)),
	    TP_fast_assign(__entry->dev = file_inode(file)->i_sb->s_dev;
			   __entry->ino = file_inode(file)->i_ino;
			   __entry->res = res;),
	    TP_printk("dev %d:%d ino %lu res %d",
		      MAJOR(__entry->dev), MINOR(__entry->dev), __entry->ino,
		      __entry->res)
);

#endif /* _TRACE_AIO_H */

/* This part must be outside protection */
#include <trace/define_trace.h>
