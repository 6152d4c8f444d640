/* sim_int.h - the software device's private interface: objects, the work queue, the
 * scheduler, counters and the cost model. tests/simcuda layer; never included by cufold.
 *
 * Invariants (the device keeps these; every file of tests/simcuda relies on them):
 *  1. Every exported entry point is a generated wrapper (sim_api.h) that takes one global device
 *     lock with sim_enter(), calls its sim_api_<symbol> and releases it with sim_leave(), so
 *     device state is only touched under the lock. Implementations never call exported entry
 *     points (the counters would count twice, and the lock is not recursive); shared logic
 *     lives in sim_* functions.
 *  2. Stream work is never executed at submission. It is queued as a struct sim_work with the
 *     dependencies CUDA guarantees (stream order, legacy-stream rules, events, graph edges) and
 *     executed by the scheduler at a synchronization point, in a seeded random topological
 *     order (SIMCUDA_SCHEDULE=random, the default) or in submission order (inorder).
 *  3. A work item runs only after every dependency has run. Nothing else orders work, so a
 *     missing dependency is a wrong result under some seed, never luck.
 *  4. Device memory is host memory in one reserved range: a device pointer may be dereferenced
 *     by host code (twins, copies) directly.
 *  5. Every handle handed to the program points at an object whose first word is a magic
 *     number and is in the handle registry (sim_handle_add); a destroyed object is removed from
 *     the registry and has its magic cleared before it is freed.
 *  6. Modeled time never depends on the execution order: every drain first times all queued
 *     work (sched.c's timing pass, in order of ready time and submission), so an item's
 *     interval is a function of the program's calls alone and is final before the item runs.
 */
#ifndef SIM_INT_H
#define SIM_INT_H

#include <cuda.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim_twin.h"
#include "sim_api.h"

/* ------------------------------------------------------------------ entry points */

struct sim_entry {
	const char *name;       /* exported symbol, from __func__ */
	struct sim_counter *ctr; /* its call counter, bound on first call */
	int fail_rule;          /* 1 + index of the SIMCUDA_FAIL rule naming it, 0 for none */
	unsigned int delay_ms;  /* SIMCUDA_DELAY: wall-clock milliseconds each call sleeps first */
};

/* Count the call, apply SIMCUDA_FAIL, charge host time and take the device lock.
 * On CUDA_SUCCESS the lock is held and the caller must end with sim_leave(); any other
 * result is an injected failure, returned with the lock not held. */
CUresult sim_enter(struct sim_entry *e, const char *name);
/* Release the device lock and return rc. */
CUresult sim_leave(CUresult rc);
/* The CPU's time (monotonic ns) the calling thread has spent between sim_enter and sim_leave. */
uint64_t sim_thread_device_ns(void);
/* Count the call of an entry point the device does not implement; no lock is taken. */
CUresult sim_enter_unsupported(struct sim_entry *e, const char *name);

/* Every exported entry point calls these through sim_api.h's SIM_ENTRY, written once; only
 * an entry point that cannot follow it (sim_api.h lists them) and the private slots of the
 * export tables (export_tables.c) call sim_enter themselves:
 *	static struct sim_entry entry;
 *	CUresult rc = sim_enter(&entry, "cuXxx");
 *	if (rc == CUDA_SUCCESS)
 *		rc = sim_leave(<the work>);
 * The name is the exported symbol (cuMemAlloc_v2), which SIMCUDA_STATS counts by and
 * SIMCUDA_FAIL matches (or its base name). */

/* Once-per-process library set-up (environment, memory range); called by sim_enter. */
void sim_init_once(void);
/* SIMCUDA_MACHINE_CODE=noop: machine-code-only kernels load and launch as no-ops (core.c). */
bool sim_machine_code_is_on(void);
/* Whether cuInit has succeeded; most entry points fail with CUDA_ERROR_NOT_INITIALIZED before. */
bool sim_is_initialized(void);
/* The compute capability every device reports, major*10+minor (SIMCUDA_CC, default 90). */
int sim_device_cc(void);

void sim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ------------------------------------------------------------------ objects */

#define SIM_MAGIC_CTX 0x43545831u    /* "CTX1" */
#define SIM_MAGIC_STREAM 0x53545231u /* "STR1" */
#define SIM_MAGIC_EVENT 0x45564e31u  /* "EVN1" */
#define SIM_MAGIC_MODULE 0x4d4f4431u /* "MOD1" */
#define SIM_MAGIC_FUNC 0x46554e31u   /* "FUN1" */
#define SIM_MAGIC_KERNEL 0x4b524e31u /* "KRN1" */
#define SIM_MAGIC_LIBRARY 0x4c494231u /* "LIB1" */
#define SIM_MAGIC_GRAPH 0x47524131u  /* "GRA1" */
#define SIM_MAGIC_GNODE 0x474e4431u  /* "GND1" */
#define SIM_MAGIC_GEXEC 0x47455831u  /* "GEX1" */
#define SIM_MAGIC_POOL 0x504f4f31u   /* "POO1" */

#define SIM_MAX_DEVICES 8

struct sim_device {
	int ordinal;                 /* CUdevice value */
	struct sim_ctx *primary;     /* primary context, created on first retain */
	int primary_refs;            /* retain count of the primary context */
	unsigned int primary_flags;  /* flags set by cuDevicePrimaryCtxSetFlags */
};

struct sim_ctx {
	uint32_t magic;              /* SIM_MAGIC_CTX */
	int device;                  /* ordinal of its device */
	unsigned int flags;          /* creation flags */
	bool is_primary;             /* the device's primary context */
	struct sim_stream *legacy;   /* the legacy default stream (handle 0 / CU_STREAM_LEGACY) */
	struct sim_stream *streams;  /* every live stream of this context, linked by next */
	uint64_t id;                 /* unique id (cuCtxGetId) */
};

struct sim_capture;

struct sim_stream {
	uint32_t magic;              /* SIM_MAGIC_STREAM */
	struct sim_ctx *ctx;         /* owning context */
	unsigned int flags;          /* CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING */
	int priority;                /* as created */
	bool is_legacy;              /* the context's legacy default stream */
	bool is_per_thread;          /* a thread's per-thread default stream */
	struct sim_work *last;       /* last item submitted (a reference), NULL when none */
	struct sim_capture *capture; /* non-NULL while the stream is being captured */
	struct sim_stream *next;     /* next stream of the context */
	uint64_t id;                 /* unique id (cuStreamGetId) */
};

struct sim_event {
	uint32_t magic;              /* SIM_MAGIC_EVENT */
	struct sim_ctx *ctx;         /* context it was created in */
	unsigned int flags;          /* CU_EVENT_* creation flags */
	struct sim_work *rec;        /* work item of the latest record (a reference), or NULL */
	void *capture_nodes;         /* node set of a record made while capturing: one malloc block
				      * (capture.c writes it; event.c frees it with free()) */
};

/* The registry of live handles: every object handed to the program is added when created and
 * removed before it is freed, so a stale or invented handle is an error, never a wild read.
 * Call under the device lock. */
void sim_handle_add(const void *obj);
void sim_handle_remove(const void *obj);
bool sim_handle_is_live(const void *obj, uint32_t magic);

/* Resolve objects from handles; NULL when the handle is not a live object of that kind. */
struct sim_ctx *sim_ctx_from(CUcontext h);
struct sim_event *sim_event_from(CUevent h);
/* The calling thread's current context, or NULL. */
struct sim_ctx *sim_ctx_current(void);
/* Current context or CUDA_ERROR_INVALID_CONTEXT / CUDA_ERROR_NOT_INITIALIZED. */
CUresult sim_ctx_require(struct sim_ctx **out);

/* Stream argument conventions. */
enum sim_pt {
	SIM_PT_LEGACY = 0,  /* plain entry point: 0 means the legacy default stream */
	SIM_PT_PER_THREAD = 1, /* _ptsz/_ptds entry point: 0 means the per-thread default stream */
};
/* Resolve a stream handle (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a created stream)
 * in the current context. */
CUresult sim_stream_resolve(CUstream h, enum sim_pt pt, struct sim_stream **out);

/* ------------------------------------------------------------------ work */

struct sim_work;

/* The device's shared resources (cost.c): the throughput part of a work item is served by one
 * of them, one item at a time; the latency floor of every item overlaps freely. */
enum sim_res {
	SIM_RES_NONE = 0,            /* no throughput part (events, host functions, joins) */
	SIM_RES_SM,                  /* the SMs: kernels' thread throughput */
	SIM_RES_COPY,                /* device memory traffic of copies and memsets on the device */
	SIM_RES_LINK,                /* the host link: copies to or from host memory */
	SIM_RES_COUNT
};

/* A work item's modeled device time, in two parts (cost.c). */
struct sim_cost_parts {
	uint64_t floor_ns;           /* latency: starts when the item is ready, overlaps anything */
	uint64_t work_ns;            /* throughput: served by res after the floor, exclusively */
	enum sim_res res;            /* who serves work_ns; SIM_RES_NONE when work_ns is 0 */
};

/* What a kind of stream work does; one table per kind (kernel, copy, memset, host function,
 * event record, wait, no-op). The payload is owned by the work item or graph node holding it. */
struct sim_work_ops {
	const char *kind;                                   /* "kernel", "memcpy", ... (stats) */
	void (*run)(struct sim_work *w, void *payload);     /* executes it on the CPU */
	void (*free)(void *payload);                        /* releases the payload; may be NULL */
	void *(*clone)(const void *payload);                /* deep copy (graph launches); may be NULL */
	void (*cost)(const void *payload, bool in_graph, struct sim_cost_parts *out);
							    /* modeled device time; may be NULL (none) */
	const char *(*label)(const void *payload);          /* function name etc. for stats; may be NULL */
};

struct sim_work {
	uint32_t refs;               /* references: creator/stream/event/deps of others */
	const struct sim_work_ops *ops; /* what it is */
	void *payload;               /* owned; freed with the item */
	struct sim_ctx *ctx;         /* context it belongs to */
	struct sim_work **deps;      /* items that must run first (references until it runs) */
	unsigned int ndeps, capdeps; /* used and allocated slots of deps */
	unsigned int nwait;          /* deps that have not run yet */
	struct sim_work **dependents; /* items waiting for this one (references until it runs) */
	unsigned int ndependents, capdependents; /* used and allocated slots of dependents */
	uint64_t min_start_ns;       /* end of dependencies that had already run when added */
	bool queued;                 /* in the scheduler's pending set */
	bool timed;                  /* start_ns/end_ns are final (always before it runs) */
	bool done;                   /* has run */
	bool in_graph;               /* executed as part of a graph launch (cost, stats) */
	unsigned int tneed;          /* timing pass: dependencies not timed yet */
	uint64_t seq;                /* submission order (inorder schedule, tie-breaks) */
	uint64_t submit_ns;          /* modeled host time at submission */
	uint64_t start_ns, end_ns;   /* modeled device interval, set by the timing pass */
	struct sim_work *next_pending; /* pending-set link */
};

/* A new item holding one reference (the caller's). payload is owned by the item. */
struct sim_work *sim_work_new(const struct sim_work_ops *ops, void *payload, struct sim_ctx *ctx);
void sim_work_ref(struct sim_work *w);
void sim_work_unref(struct sim_work *w);
/* w may not run before dep has; dep NULL or already done is ignored. */
void sim_work_dep(struct sim_work *w, struct sim_work *dep);

/* Submit w to stream s (consumes the caller's reference): adds stream-order and legacy-stream
 * dependencies, then either hands it to the stream's capture (when capturing) or queues it.
 * Charges the host submission cost. */
CUresult sim_stream_submit(struct sim_stream *s, struct sim_work *w);
/* Queue an item that already has its dependencies (graph launches); consumes a reference. */
void sim_sched_add(struct sim_work *w);
/* Run pending work until target has run (all pending work when target is NULL). */
void sim_sched_drain(struct sim_work *target);
/* Latest modeled end of any work run so far (a full synchronization waits for it). */
uint64_t sim__sched_latest_end(void);
/* Run pending work until everything submitted to ctx so far has run. */
void sim_sched_drain_ctx(struct sim_ctx *ctx);

/* Work kinds owned by the core (events.c / stream.c). */
extern const struct sim_work_ops sim_nop_ops;         /* payload NULL: a join point */
extern const struct sim_work_ops sim_host_fn_ops;     /* payload struct sim_host_fn */
extern const struct sim_work_ops sim_event_record_ops; /* payload struct sim_event * (not owned) */

struct sim_host_fn {
	CUhostFn fn;                 /* program's function */
	void *data;                  /* its argument */
};

/* ------------------------------------------------------------------ memory (memory.c) */

enum sim_mem_kind {
	SIM_MEM_DEVICE = 1,          /* cuMemAlloc*, async/pool allocations */
	SIM_MEM_HOST_PINNED = 2,     /* cuMemAllocHost / cuMemHostAlloc */
	SIM_MEM_HOST_REGISTERED = 3, /* cuMemHostRegister */
	SIM_MEM_MANAGED = 4,         /* cuMemAllocManaged */
};

/* The allocation containing [p, p+n), or false. base/size/kind may be NULL. */
bool sim_mem_find(uintptr_t p, size_t n, uintptr_t *base, size_t *size, enum sim_mem_kind *kind);
/* Whether [p, p+n) lies inside the device range and one live device or managed allocation. */
bool sim_mem_is_device(uintptr_t p, size_t n);
/* Whether host memory [p, p+n) is pinned or registered (async copies need no staging). */
bool sim_mem_is_pinned(const void *p, size_t n);
/* Bytes allocated on the device now (cuMemGetInfo). */
size_t sim_mem_used(void);
size_t sim_mem_peak(void);   /* the most device memory ever in use (device, managed, VMM) */
/* The device's total memory (H200-like). */
size_t sim_mem_total(void);

/* Copies and memsets as payloads; usable by the eager path and by graph nodes. */
struct sim_copy {
	char *dst;                   /* first destination byte (host-usable address) */
	const char *src;             /* first source byte; points into staged when staged */
	size_t width;                /* bytes per row */
	size_t height;               /* rows per slice */
	size_t depth;                /* slices */
	size_t dst_pitch, src_pitch; /* bytes between rows */
	size_t dst_height, src_height; /* rows between slices (pitch of a slice, in rows) */
	CUmemorytype dst_type, src_type; /* host / device / unified as resolved */
	void *staged;                /* private copy of pageable host source data, or NULL */
};
extern const struct sim_work_ops sim_copy_ops;   /* payload struct sim_copy */

struct sim_memset {
	char *dst;                   /* first byte */
	size_t pitch;                /* bytes between rows */
	unsigned int elem_size;      /* 1, 2 or 4 */
	uint32_t value;              /* element value */
	size_t width;                /* elements per row */
	size_t height;               /* rows */
};
extern const struct sim_work_ops sim_memset_ops; /* payload struct sim_memset */

/* Build a copy payload from a 3-D descriptor (graph memcpy nodes use this too). */
CUresult sim_copy_from_3d(const CUDA_MEMCPY3D *p, struct sim_copy **out);

/* ------------------------------------------------------------------ modules and kernels (module.c, launch.c) */

struct sim_func;

/* A launch as a payload: the function and a private copy of its parameter bytes. */
struct sim_kernel_call {
	struct sim_func *fn;         /* resolved function */
	struct sim_dim3 grid, block; /* launch shape */
	unsigned int shared_bytes;   /* dynamic shared memory */
	void *param_buf;             /* all parameter bytes, laid out as in the PTX */
};
extern const struct sim_work_ops sim_kernel_ops; /* payload struct sim_kernel_call */

/* Resolve a CUfunction or CUkernel handle (a CUkernel works wherever a CUfunction does). */
struct sim_func *sim_func_resolve(CUfunction f);
/* Build a kernel payload: copies parameters from kernelParams or the extra buffer. */
CUresult sim_kernel_call_new(CUfunction f, struct sim_dim3 grid, struct sim_dim3 block,
			     unsigned int shared_bytes, void **params, void **extra,
			     struct sim_kernel_call **out);
/* The twin for an entry name (SIMCUDA_TWINS plugins first, then the built-in twins). */
sim_twin_fn sim_twin_find(const char *entry);

/* ------------------------------------------------------------------ capture hooks (capture.c) */

/* Stream s is capturing: record the work (ops + payload, ownership passes) as a graph node. */
CUresult sim__capture_submit(struct sim_stream *s, struct sim_work *w);
/* cuEventRecord on a capturing stream. */
CUresult sim__capture_event_record(struct sim_stream *s, struct sim_event *ev);
/* cuStreamWaitEvent of an event recorded in a capture: joins s to it. Returns 1 when ev is not
 * a capture event (the caller then does the ordinary wait). */
int sim__capture_wait_event(struct sim_stream *s, struct sim_event *ev);
/* A synchronizing or querying call on s (or on its context when s is NULL) while a capture is
 * active: the error CUDA returns (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidation), or
 * CUDA_SUCCESS when the call may go on. */
CUresult sim__capture_check_sync(struct sim_ctx *ctx, struct sim_stream *s);

/* ------------------------------------------------------------------ counters (stats.c) */

struct sim_counter;
/* The counter of name in group, created on first use; never freed. */
struct sim_counter *sim_stats_counter(const char *group, const char *name);
/* Add n to a counter; returns the new value. Thread-safe without the device lock. */
uint64_t sim_counter_add(struct sim_counter *c, uint64_t n);
/* Count one occurrence of name in the group ("calls", "launches", "kernels", "graph_nodes"). */
void sim_stats_count(const char *group, const char *name, uint64_t n);
void sim_stats_add_bytes_copied(uint64_t n);
void sim_stats_add_bytes_set(uint64_t n);
void sim_stats_graph_launch(unsigned int nodes);

/* ------------------------------------------------------------------ cost model (cost.c) */

/* Modeled host clock, in ns: advanced by every call and by the program's own host time
 * (simcuda_host_work); a synchronization waits for the device. */
uint64_t sim_host_now(void);
void sim_host_charge(uint64_t ns);
void sim_host_wait_until(uint64_t device_ns);

/* Serve work_ns of resource r from time at on (filling the resource's idle time from at on,
 * split over gaps if need be); returns when the last of it is served. Under the device lock. */
uint64_t sim_res_serve(enum sim_res r, uint64_t at, uint64_t work_ns);
/* Forget the resources' busy time before t: nothing will be served before t any more. */
void sim_res_forget_before(uint64_t t);
/* Totals for SIMCUDA_STATS: work served by r, and the program's own host time. */
uint64_t sim_res_busy_ns(enum sim_res r);
uint64_t sim_host_app_ns(void);
/* SIMCUDA_KERNEL_NS: extra device time of every kernel but cufold's own. */
uint64_t sim_cost_kernel_extra_ns(void);

/* Constants of the model; cost.c documents each with its public source. */
extern const struct sim_cost_model {
	uint64_t host_call_ns;        /* any entry point */
	uint64_t host_submit_ns;      /* extra for a call that enqueues stream work */
	uint64_t host_graph_launch_ns; /* a cuGraphLaunch, before per-node cost */
	uint64_t host_graph_node_ns;  /* per node of a launched graph */
	uint64_t host_exec_update_ns; /* extra for an update of one node of an instantiated graph */
	uint64_t host_graph_update_node_ns; /* per node of a whole-graph update (cuGraphExecUpdate) */
	uint64_t dev_kernel_eager_ns; /* device time of a tiny kernel launched on a stream */
	uint64_t dev_kernel_graph_ns; /* the same kernel as a node of a graph */
	double dev_threads_per_ns;    /* thread throughput beyond the floor */
	uint64_t dev_copy_ns;         /* floor of a device-to-device copy */
	double dev_d2d_bytes_per_ns;  /* device-to-device bandwidth */
	uint64_t dev_h2d_ns;          /* floor of a copy over the host link */
	double dev_h2d_bytes_per_ns;  /* host link bandwidth */
	uint64_t dev_memset_ns;       /* floor of a memset */
	double dev_memset_bytes_per_ns; /* memset bandwidth */
	uint64_t dev_graph_node_gap_ns; /* floor of a non-kernel graph node (event, empty) */
} sim_cost;

void sim_cost_kernel(const struct sim_kernel_call *k, bool in_graph, struct sim_cost_parts *out);
/* Charge the host clock for an update of one node of an instantiated graph (cost.c). */
void sim_cost_exec_update(void);
/* Charge the host clock for a whole-graph update (cuGraphExecUpdate) of a graph of n nodes. */
void sim_cost_graph_exec_update(uint64_t nodes);

#endif
