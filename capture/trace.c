/* trace.c - the timeline (CUFOLD_TRACE) in Chrome's trace event format, which Perfetto and
 * chrome://tracing open: one track per stream, one slice per op with its name and arguments,
 * every window end as an instant event naming what ended it. capture layer.
 *
 * Events are formatted when a window closes (under the engine's lock) into one buffer bounded
 * by cap_config.trace_max_bytes; whole windows are kept, and once the next window does not fit
 * collection stops and the file says so ("truncated", windows traced). Slices start at the
 * host call (the device's timing is not known to the host); a slice lasts until the next op on
 * its stream, at most 1 us, so slices on a track never overlap. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/capture_int.h"
#include "common/errors.h"
#include "common/json.h"

#define TRACE_MARKER "{\"cufold_trace\""
#define SLICE_MAX_NS 1000

struct trace_stream {
	uint32_t id;                 /* process-wide stream number (the track) */
	uint8_t kind;                /* enum cap_stream_kind */
	uint32_t tid;                /* per-thread stream's thread */
	CUstream handle;             /* as passed */
};

static bool put(struct cap_engine *ce, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool put(struct cap_engine *ce, const char *fmt, ...)
{
	size_t max = ce->cfg.trace_max_bytes;
	va_list ap;
	int n;

	for (;;) {
		size_t room = ce->trace.cap - ce->trace.len;

		va_start(ap, fmt);
		n = vsnprintf(ce->trace.buf ? ce->trace.buf + ce->trace.len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return false;
		if ((size_t)n < room) {
			ce->trace.len += (size_t)n;
			return true;
		}
		if (ce->trace.len + (size_t)n + 1 > max)
			return false;
		{
			size_t ncap = ce->trace.cap ? ce->trace.cap * 2 : 64 * 1024;
			char *nb;

			while (ncap < ce->trace.len + (size_t)n + 1)
				ncap *= 2;
			if (ncap > max)
				ncap = max;
			nb = realloc(ce->trace.buf, ncap);
			if (!nb)
				return false;
			ce->trace.buf = nb;
			ce->trace.cap = ncap;
		}
	}
}

#define EVENT_MAX 2048 /* one event's text */

/* Append one event (the writer's text) to the buffer, after ",\n". */
static bool put_event(struct cap_engine *ce, const struct cf_json *j, const char *text)
{
	return !cf_json_failed(j) && put(ce, ",\n%s", text);
}

/* An event's common members: name, category, phase, time (µs), process and track. */
static void event_head(struct cap_engine *ce, struct cf_json *j, const char *name, const char *cat, const char *ph, uint64_t t_ns)
{
	cf_json_obj_begin(j);
	cf_json_kstr(j, "name", name);
	cf_json_kstr(j, "cat", cat);
	cf_json_kstr(j, "ph", ph);
	cf_json_key(j, "ts");
	cf_json_f64(j, (double)(t_ns - ce->trace.base_ns) / 1000.0, 3);
}

/* A pointer or handle, as text. */
static void hex(struct cf_json *j, const char *key, uint64_t v)
{
	char t[24];

	snprintf(t, sizeof(t), "0x%llx", (unsigned long long)v);
	cf_json_kstr(j, key, t);
}

static bool op_event(struct cap_engine *ce, const struct cap_window *w, uint32_t i, uint64_t dur_ns)
{
	const struct cap_op *op = &w->ops[i];
	const struct cap_wstream *ws = &w->streams[op->stream_slot];
	struct cf_json j;
	char text[EVENT_MAX], dims[40];

	cf_json_init_buf(&j, text, sizeof(text));
	event_head(ce, &j, cap_op_name(op), cap_op_kind_name((enum cap_op_kind)op->kind), "X", op->t_ns);
	cf_json_key(&j, "dur");
	cf_json_f64(&j, (double)dur_ns / 1000.0, 3);
	cf_json_ku64(&j, "pid", (uint64_t)getpid());
	cf_json_ku64(&j, "tid", ws->id);
	cf_json_key(&j, "args");
	cf_json_obj_begin(&j);
	cf_json_ku64(&j, "window", w->seq);
	cf_json_ku64(&j, "op", i);
	cf_json_kstr(&j, "api", drv_api[op->api].name);
	cf_json_ku64(&j, "thread", op->tid);
	switch (op->kind) {
	case CAP_OP_KERNEL: {
		const struct cap_kernel *k = &op->u.kernel;

		snprintf(dims, sizeof(dims), "%ux%ux%u", k->grid[0], k->grid[1], k->grid[2]);
		cf_json_kstr(&j, "grid", dims);
		snprintf(dims, sizeof(dims), "%ux%ux%u", k->block[0], k->block[1], k->block[2]);
		cf_json_kstr(&j, "block", dims);
		cf_json_ku64(&j, "shared", k->shared_bytes);
		cf_json_ku64(&j, "param_bytes", k->param_size);
		break;
	}
	case CAP_OP_MEMCPY: {
		static const char *const dirs[] = { "HtoD", "DtoH", "DtoD", "HtoH" };
		const struct cap_memcpy *c = &op->u.memcpy;

		cf_json_kstr(&j, "dir", dirs[c->dir & 3]);
		cf_json_ku64(&j, "bytes", c->bytes);
		hex(&j, "src", c->src_first);
		hex(&j, "dst", c->dst_first);
		break;
	}
	case CAP_OP_MEMSET:
		hex(&j, "dst", op->u.memset.dst);
		cf_json_ku64(&j, "value", op->u.memset.value);
		cf_json_ku64(&j, "elem", op->u.memset.elem_size);
		cf_json_ku64(&j, "bytes", cap_op_bytes(op));
		break;
	case CAP_OP_EVENT_RECORD:
	case CAP_OP_EVENT_WAIT:
		hex(&j, "event", (uint64_t)(uintptr_t)op->u.event.event);
		cf_json_ku64(&j, "event_slot", op->u.event.slot);
		break;
	default:
		break;
	}
	cf_json_obj_end(&j);
	cf_json_obj_end(&j);
	return put_event(ce, &j, text);
}

/* The instant event at a window's end, naming what ended it. */
static bool end_event(struct cap_engine *ce, const struct cap_window *w, const struct cap_shape *s)
{
	struct cf_json j;
	char text[EVENT_MAX], name[160];

	snprintf(name, sizeof(name), "window %llu ends: %s", (unsigned long long)w->seq,
		 cap_boundary_label((enum cap_boundary)w->closed_by));
	cf_json_init_buf(&j, text, sizeof(text));
	event_head(ce, &j, name, "boundary", "i", w->t_end);
	cf_json_kstr(&j, "s", "p");
	cf_json_ku64(&j, "pid", (uint64_t)getpid());
	cf_json_ku64(&j, "tid", 0);
	cf_json_key(&j, "args");
	cf_json_obj_begin(&j);
	cf_json_ku64(&j, "window", w->seq);
	cf_json_ku64(&j, "shape", s ? s->id : 0);
	cf_json_ku64(&j, "ops", w->nops);
	cf_json_kstr(&j, "by", w->closed_api < DRV_API_COUNT ? drv_api[w->closed_api].name : "?");
	cf_json_obj_end(&j);
	cf_json_obj_end(&j);
	return put_event(ce, &j, text);
}

static void note_track(struct cap_engine *ce, const struct cap_wstream *ws)
{
	struct trace_stream *t;

	if (cf_map_get(&ce->trace.tracks, ws->id))
		return;
	t = malloc(sizeof(*t));
	if (!t)
		return;
	*t = (struct trace_stream){ .id = ws->id, .kind = ws->kind, .tid = ws->tid, .handle = ws->handle };
	if (cf_map_put(&ce->trace.tracks, ws->id, t) != 0)
		free(t);
}

void cap__trace_window(struct cap_engine *ce, const struct cap_window *w, const struct cap_shape *s)
{
	size_t mark = ce->trace.len;
	uint64_t *next_t = NULL;
	bool ok = true;

	if (ce->trace.truncated || !w->nops)
		return;
	if (!ce->trace.base_ns)
		ce->trace.base_ns = w->ops[0].t_ns ? w->ops[0].t_ns : 1;
	/* a slice lasts until the next op on its stream (walk backwards) */
	next_t = malloc((w->nstreams + 1) * sizeof(*next_t));
	if (!next_t)
		return;
	for (uint32_t sl = 0; sl < w->nstreams; sl++)
		next_t[sl] = w->t_end;
	for (uint32_t i = w->nops; ok && i-- > 0;) {
		const struct cap_op *op = &w->ops[i];
		uint64_t until = next_t[op->stream_slot], dur = until > op->t_ns ? until - op->t_ns : 0;

		if (dur > SLICE_MAX_NS)
			dur = SLICE_MAX_NS;
		ok = op_event(ce, w, i, dur);
		next_t[op->stream_slot] = op->t_ns;
	}
	free(next_t);
	ok = ok && end_event(ce, w, s);
	if (!ok) {
		ce->trace.len = mark; /* whole windows only */
		if (ce->trace.buf)
			ce->trace.buf[ce->trace.len] = 0;
		ce->trace.truncated = true;
		return;
	}
	for (uint32_t sl = 0; sl < w->nstreams; sl++)
		note_track(ce, &w->streams[sl]);
	ce->trace.windows_traced++;
}

/* A metadata event naming a track (or setting its order). */
static void meta(struct cf_json *j, const char *what, uint32_t tid, const char *name, int64_t sort_index)
{
	cf_json_nl(j, 0);
	cf_json_obj_begin(j);
	cf_json_kstr(j, "name", what);
	cf_json_kstr(j, "ph", "M");
	cf_json_ku64(j, "pid", (uint64_t)getpid());
	cf_json_ku64(j, "tid", tid);
	cf_json_key(j, "args");
	cf_json_obj_begin(j);
	if (name)
		cf_json_kstr(j, "name", name);
	else
		cf_json_ku64(j, "sort_index", (uint64_t)sort_index);
	cf_json_obj_end(j);
	cf_json_obj_end(j);
}

int cap_write_trace(struct cap_engine *ce, const char *path)
{
	static const char *const kinds[] = { "legacy default", "per-thread default", "blocking", "non-blocking" };
	char name[160];
	struct cf_json j;
	struct cf_out o;
	void *v;

	if (cap__out_open(&o, path, TRACE_MARKER) != 0)
		return -CF_EIO;
	cf_json_init_file(&j, o.f);
	cf_json_obj_begin(&j);
	cf_json_key(&j, "cufold_trace"); /* first: the marker (TRACE_MARKER) */
	cf_json_obj_begin(&j);
	cf_json_ku64(&j, "version", 1);
	cf_json_ku64(&j, "windows", ce->trace.windows_traced);
	cf_json_kbool(&j, "truncated", ce->trace.truncated);
	cf_json_ku64(&j, "max_bytes", ce->cfg.trace_max_bytes);
	cf_json_kstr(&j, "note", ce->trace.truncated ? "slices start at the host call; collection stopped at the byte cap: only "
					     "the first windows are here"
					   : "slices start at the host call; every window is here");
	cf_json_obj_end(&j);
	cf_json_nl(&j, 1);
	cf_json_kstr(&j, "displayTimeUnit", "ns");
	cf_json_nl(&j, 1);
	cf_json_key(&j, "traceEvents");
	cf_json_arr_begin(&j);
	snprintf(name, sizeof(name), "cufold %s (pid %ld)", ce->cfg.mode_name ? ce->cfg.mode_name : "trace",
		 (long)getpid());
	meta(&j, "process_name", 0, name, 0);
	meta(&j, "thread_name", 0, "window boundaries", 0);
	for (size_t i = 0; cf_map_next(&ce->trace.tracks, &i, NULL, &v);) {
		const struct trace_stream *t = v;

		snprintf(name, sizeof(name), "stream %u (%s%s, handle %p)", t->id, kinds[t->kind & 3],
			 t->kind == CAP_STREAM_PER_THREAD ? " of a thread" : "", (void *)t->handle);
		meta(&j, "thread_name", t->id, name, 0);
		meta(&j, "thread_sort_index", t->id, NULL, t->id);
	}
	/* the events, collected as text by the same writer, each after ",\n" */
	if (ce->trace.len)
		fwrite(ce->trace.buf, 1, ce->trace.len, o.f);
	cf_json_nl(&j, 0);
	cf_json_arr_end(&j);
	cf_json_obj_end(&j);
	fputc('\n', o.f);
	if (cf_json_failed(&j)) {
		cf_out_abort(&o);
		return -CF_EIO;
	}
	return cap__out_close(&o);
}

void cap__trace_fini(struct cap_engine *ce)
{
	void *v;

	for (size_t i = 0; cf_map_next(&ce->trace.tracks, &i, NULL, &v);)
		free(v);
	cf_map_fini(&ce->trace.tracks);
	free(ce->trace.buf);
	ce->trace.buf = NULL;
	ce->trace.len = ce->trace.cap = 0;
	ce->trace.truncated = false;
	ce->trace.windows_traced = 0;
	ce->trace.base_ns = 0;
}

size_t cap__trace_bytes(struct cap_engine *ce)
{
	return ce->trace.cap + cf_map_bytes(&ce->trace.tracks);
}
