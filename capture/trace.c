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

#define TRACE_MARKER "{\"cufold_trace\""
#define SLICE_MAX_NS 1000

struct trace_stream {
	uint32_t id;                 /* process-wide stream number (the track) */
	uint8_t kind;                /* enum cap_stream_kind */
	uint32_t tid;                /* per-thread stream's thread */
	CUstream handle;             /* as passed */
};

static char *buf;                /* ",\n{event}" strings, back to back */
static size_t len, cap;          /* used and allocated bytes */
static bool truncated;           /* a window did not fit */
static uint64_t windows_traced;  /* windows whose events are in buf */
static uint64_t base_ns;         /* time 0 of the trace: the first op traced */
static struct cf_map tracks;     /* stream id -> struct trace_stream */

static bool put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static bool put(const char *fmt, ...)
{
	size_t max = cap__s.cfg.trace_max_bytes;
	va_list ap;
	int n;

	for (;;) {
		size_t room = cap - len;

		va_start(ap, fmt);
		n = vsnprintf(buf ? buf + len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return false;
		if ((size_t)n < room) {
			len += (size_t)n;
			return true;
		}
		if (len + (size_t)n + 1 > max)
			return false;
		{
			size_t ncap = cap ? cap * 2 : 64 * 1024;
			char *nb;

			while (ncap < len + (size_t)n + 1)
				ncap *= 2;
			if (ncap > max)
				ncap = max;
			nb = realloc(buf, ncap);
			if (!nb)
				return false;
			buf = nb;
			cap = ncap;
		}
	}
}

/* A JSON-safe copy of a name (kernel names are identifiers; anything else is replaced). */
static const char *safe(const char *s, char *out, size_t n)
{
	size_t i = 0;

	for (; s && s[i] && i + 1 < n; i++)
		out[i] = (s[i] == '"' || s[i] == '\\' || (unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
				 ? '?'
				 : s[i];
	out[i] = 0;
	return out;
}

static bool op_event(const struct cap_window *w, uint32_t i, uint64_t dur_ns)
{
	const struct cap_op *op = &w->ops[i];
	const struct cap_wstream *ws = &w->streams[op->stream_slot];
	char name[256];
	double ts = (double)(op->t_ns - base_ns) / 1000.0;
	bool ok;

	ok = put(",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%ld,\"tid\":%u,"
		 "\"args\":{\"window\":%llu,\"op\":%u,\"api\":\"%s\",\"thread\":%u",
		 safe(cap_op_name(op), name, sizeof(name)), cap_op_kind_name((enum cap_op_kind)op->kind), ts,
		 (double)dur_ns / 1000.0, (long)getpid(), ws->id, (unsigned long long)w->seq, i,
		 shim_api[op->api].name, op->tid);
	switch (op->kind) {
	case CAP_OP_KERNEL: {
		const struct cap_kernel *k = &op->u.kernel;

		ok = ok && put(",\"grid\":\"%ux%ux%u\",\"block\":\"%ux%ux%u\",\"shared\":%u,\"param_bytes\":%u",
			       k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2],
			       k->shared_bytes, k->param_size);
		break;
	}
	case CAP_OP_MEMCPY: {
		static const char *const dirs[] = { "HtoD", "DtoH", "DtoD", "HtoH" };
		const struct cap_memcpy *c = &op->u.memcpy;

		ok = ok && put(",\"dir\":\"%s\",\"bytes\":%llu,\"src\":\"0x%llx\",\"dst\":\"0x%llx\"", dirs[c->dir & 3],
			       (unsigned long long)c->bytes, (unsigned long long)c->src_first,
			       (unsigned long long)c->dst_first);
		break;
	}
	case CAP_OP_MEMSET:
		ok = ok && put(",\"dst\":\"0x%llx\",\"value\":%u,\"elem\":%u,\"bytes\":%llu",
			       (unsigned long long)op->u.memset.dst, op->u.memset.value, op->u.memset.elem_size,
			       (unsigned long long)cap_op_bytes(op));
		break;
	case CAP_OP_EVENT_RECORD:
	case CAP_OP_EVENT_WAIT:
		ok = ok && put(",\"event\":\"%p\",\"event_slot\":%u", (void *)op->u.event.event, op->u.event.slot);
		break;
	default:
		break;
	}
	return ok && put("}}");
}

static void note_track(const struct cap_wstream *ws)
{
	struct trace_stream *t;

	if (cf_map_get(&tracks, ws->id))
		return;
	t = malloc(sizeof(*t));
	if (!t)
		return;
	*t = (struct trace_stream){ .id = ws->id, .kind = ws->kind, .tid = ws->tid, .handle = ws->handle };
	if (cf_map_put(&tracks, ws->id, t) != 0)
		free(t);
}

void cap__trace_window(const struct cap_window *w, const struct cap_shape *s)
{
	size_t mark = len;
	uint64_t *next_t = NULL;
	bool ok = true;

	if (truncated || !w->nops)
		return;
	if (!base_ns)
		base_ns = w->ops[0].t_ns ? w->ops[0].t_ns : 1;
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
		ok = op_event(w, i, dur);
		next_t[op->stream_slot] = op->t_ns;
	}
	free(next_t);
	ok = ok && put(",\n{\"name\":\"window %llu ends: %s\",\"cat\":\"boundary\",\"ph\":\"i\",\"s\":\"p\",\"ts\":%.3f,"
		       "\"pid\":%ld,\"tid\":0,\"args\":{\"window\":%llu,\"shape\":%llu,\"ops\":%u,\"by\":\"%s\"}}",
		       (unsigned long long)w->seq, cap_boundary_label((enum cap_boundary)w->closed_by),
		       (double)(w->t_end - base_ns) / 1000.0, (long)getpid(), (unsigned long long)w->seq,
		       (unsigned long long)(s ? s->id : 0), w->nops,
		       w->closed_api < SHIM_API_COUNT ? shim_api[w->closed_api].name : "?");
	if (!ok) {
		len = mark; /* whole windows only */
		if (buf)
			buf[len] = 0;
		truncated = true;
		return;
	}
	for (uint32_t sl = 0; sl < w->nstreams; sl++)
		note_track(&w->streams[sl]);
	windows_traced++;
}

int cap_write_trace(const char *path)
{
	static const char *const kinds[] = { "legacy default", "per-thread default", "blocking", "non-blocking" };
	long pid = (long)getpid();
	struct cf_out o;
	FILE *f;
	void *v;

	if (cap__out_open(&o, path, TRACE_MARKER) != 0)
		return -CF_EIO;
	f = o.f;
	fprintf(f, "{\"cufold_trace\": {\"version\": 1, \"windows\": %llu, \"truncated\": %s, \"max_bytes\": %zu, "
		   "\"note\": \"slices start at the host call; %s\"},\n",
		(unsigned long long)windows_traced, truncated ? "true" : "false", cap__s.cfg.trace_max_bytes,
		truncated ? "collection stopped at the byte cap: only the first windows are here"
			  : "every window is here");
	fprintf(f, " \"displayTimeUnit\": \"ns\",\n \"traceEvents\": [\n");
	fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%ld,\"tid\":0,\"args\":{\"name\":\"cufold %s "
		   "(pid %ld)\"}},\n",
		pid, cap__s.cfg.mode_name ? cap__s.cfg.mode_name : "trace", pid);
	fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%ld,\"tid\":0,\"args\":{\"name\":\"window "
		   "boundaries\"}}",
		pid);
	for (size_t i = 0; cf_map_next(&tracks, &i, NULL, &v);) {
		const struct trace_stream *t = v;

		fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%ld,\"tid\":%u,\"args\":{\"name\":\"stream %u "
			   "(%s%s, handle %p)\"}}",
			pid, t->id, t->id, kinds[t->kind & 3], t->kind == CAP_STREAM_PER_THREAD ? " of a thread" : "",
			(void *)t->handle);
		fprintf(f, ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%ld,\"tid\":%u,\"args\":"
			   "{\"sort_index\":%u}}",
			pid, t->id, t->id);
	}
	if (len)
		fwrite(buf, 1, len, f);
	fprintf(f, "\n]}\n");
	return cap__out_close(&o);
}

void cap__trace_fini(void)
{
	void *v;

	for (size_t i = 0; !cap__leaking && cf_map_next(&tracks, &i, NULL, &v);)
		free(v);
	cap__map_drop(&tracks);
	cap__free(buf);
	buf = NULL;
	len = cap = 0;
	truncated = false;
	windows_traced = 0;
	base_ns = 0;
}

size_t cap__trace_bytes(void)
{
	return cap + cf_map_bytes(&tracks);
}
