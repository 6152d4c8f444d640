/* report.c - the JSON report (CUFOLD_REPORT) and the one-paragraph summary (CUFOLD_LOG=info):
 * per window shape how often it was seen, its ops by kind, distinct kernels, bytes, pointer
 * stability across repeats and the call sites that launch most; totals; what ended windows;
 * cufold's own memory. capture layer.
 *
 * The file's first key is "cufold_report": cap__out_open replaces an existing file only when
 * it starts with that marker and is one complete JSON value. Per-shape figures describe one sighting (its last window). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/capture_int.h"
#include "common/compiler.h"
#include "common/config.h"
#include "common/errors.h"

#define REPORT_MARKER "{\"cufold_report\""
#define TOP_MOVED 5   /* ops listed per shape whose bindings change most */
#define TOP_SITES 5   /* call sites listed per shape */
#define TOP_KERNELS 8 /* kernel names listed per shape */

struct name_count {
	const char *name;            /* kernel name (borrowed) */
	uint64_t n;                  /* launches or ops */
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct name_count *)a)->name, ((const struct name_count *)b)->name);
}

static int cmp_count_desc(const void *a, const void *b)
{
	uint64_t x = ((const struct name_count *)a)->n, y = ((const struct name_count *)b)->n;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* Sort by name and merge equal names; returns the new count. */
static size_t merge_names(struct name_count *v, size_t n)
{
	size_t j = 0;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_name);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(v[i].name, v[j].name) == 0)
			v[j].n += v[i].n;
		else
			v[++j] = v[i];
	}
	return j + 1;
}

/* Per-shape figures of one sighting. */
struct shape_stats {
	uint64_t by_kind[CAP_OP_KIND_COUNT]; /* ops by kind */
	uint64_t bytes_copied, bytes_set;    /* per sighting */
	size_t nkernels;                     /* distinct kernel names */
	struct name_count *kernels;          /* name -> launches, most first (malloc'd) */
	struct name_count *sites;            /* call site name -> ops, most first (malloc'd) */
	size_t nsites;                       /* entries in sites */
};

static void shape_stats(const struct cap_shape *s, struct shape_stats *st)
{
	const struct cap_window *w = cap_shape_last(s);
	uint32_t n = cap_window_nops(w);
	size_t nk = 0, ns = 0;

	memset(st, 0, sizeof(*st));
	st->kernels = calloc(n + 1, sizeof(*st->kernels));
	st->sites = calloc(n + 1, sizeof(*st->sites));
	for (uint32_t i = 0; i < n; i++) {
		const struct cap_op *op = cap_window_op(w, i);

		st->by_kind[op->kind]++;
		if (op->kind == CAP_OP_MEMCPY)
			st->bytes_copied += op->u.memcpy.bytes;
		else if (op->kind == CAP_OP_MEMSET)
			st->bytes_set += cap_op_bytes(op);
		if (op->kind == CAP_OP_KERNEL && st->kernels)
			st->kernels[nk++] = (struct name_count){ cap_op_name(op), 1 };
		if (op->callsite && st->sites) {
			const char *name = cap_callsite_name(op->callsite);

			st->sites[ns++] = (struct name_count){ name ? name : "?", 1 };
		}
	}
	st->nkernels = merge_names(st->kernels, nk);
	qsort(st->kernels, st->nkernels, sizeof(*st->kernels), cmp_count_desc);
	st->nsites = merge_names(st->sites, ns);
	qsort(st->sites, st->nsites, sizeof(*st->sites), cmp_count_desc);
}

static void shape_stats_free(struct shape_stats *st)
{
	free(st->kernels);
	free(st->sites);
}

static void write_kinds(FILE *f, const uint64_t *by_kind)
{
	fputc('{', f);
	for (int k = 0; k < CAP_OP_KIND_COUNT; k++)
		fprintf(f, "%s\"%s\": %llu", k ? ", " : "", cap_op_kind_name((enum cap_op_kind)k),
			(unsigned long long)by_kind[k]);
	fputc('}', f);
}

static void write_shape(FILE *f, const struct cap_shape *s, bool first)
{
	const struct cap_window *w = cap_shape_last(s);
	uint32_t n = cap_window_nops(w), order[TOP_MOVED], nmoved = 0;
	uint64_t repeats = cap_shape_sightings(s) - 1;
	struct shape_stats st;

	shape_stats(s, &st);
	fprintf(f, "%s\n    {\"id\": %llu, \"sightings\": %llu, \"ops\": %u, \"ops_by_kind\": ", first ? "" : ",",
		(unsigned long long)cap_shape_id(s), (unsigned long long)cap_shape_sightings(s), n);
	write_kinds(f, st.by_kind);
	fprintf(f, ",\n     \"streams\": %u, \"events\": %u, \"bytes_copied\": %llu, \"bytes_set\": %llu,",
		cap_window_nstreams(w), cap_window_nevents(w), (unsigned long long)st.bytes_copied,
		(unsigned long long)st.bytes_set);
	fprintf(f, "\n     \"first_window\": %llu, \"last_window\": %llu, \"closed_by\": ",
		(unsigned long long)s->first_window, (unsigned long long)s->last_window);
	cap__json_str(f, cap_boundary_name(cap_window_closed_by(w)));
	fprintf(f, ", \"closed_by_api\": ");
	cap__json_str(f, cap_window_closed_api(w) < SHIM_API_COUNT ? shim_api[cap_window_closed_api(w)].name : "?");
	fprintf(f, ", \"closed_by_site\": ");
	if (cap_window_closed_site(w) && cap_callsite_name(cap_window_closed_site(w)))
		cap__json_str(f, cap_callsite_name(cap_window_closed_site(w)));
	else
		fputs("null", f);
	fprintf(f, ",\n     \"distinct_kernels\": %zu, \"kernels\": {", st.nkernels);
	for (size_t i = 0; i < st.nkernels && i < TOP_KERNELS; i++) {
		fprintf(f, "%s", i ? ", " : "");
		cap__json_str(f, st.kernels[i].name);
		fprintf(f, ": %llu", (unsigned long long)st.kernels[i].n);
	}
	fprintf(f, "},\n     \"pointer_stability\": {\"repeats\": %llu, \"identical\": %llu, \"last_identical\": %s, "
		   "\"moved_ops\": [",
		(unsigned long long)repeats, (unsigned long long)cap_shape_stable(s),
		cap_shape_last_stable(s) ? "true" : "false");
	/* the ops whose bindings changed most often */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t m = cap_shape_moved(s, i), j;

		if (!m)
			continue;
		if (nmoved < TOP_MOVED)
			nmoved++;
		else if (m <= cap_shape_moved(s, order[TOP_MOVED - 1]))
			continue;
		for (j = nmoved - 1; j > 0 && cap_shape_moved(s, order[j - 1]) < m; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (uint32_t j = 0; j < nmoved; j++) {
		const struct cap_op *op = cap_window_op(w, order[j]);
		const char *site = op->callsite ? cap_callsite_name(op->callsite) : NULL;

		fprintf(f, "%s{\"op\": %u, \"name\": ", j ? ", " : "", order[j]);
		cap__json_str(f, cap_op_name(op));
		fprintf(f, ", \"moved\": %u, \"call_site\": ", cap_shape_moved(s, order[j]));
		if (site)
			cap__json_str(f, site);
		else
			fprintf(f, "null");
		fputc('}', f);
	}
	fprintf(f, "]},\n     \"call_sites\": [");
	for (size_t i = 0; i < st.nsites && i < TOP_SITES; i++) {
		fprintf(f, "%s{\"site\": ", i ? ", " : "");
		cap__json_str(f, st.sites[i].name);
		fprintf(f, ", \"ops\": %llu}", (unsigned long long)st.sites[i].n);
	}
	fprintf(f, "]}");
	shape_stats_free(&st);
}

/* Launches by kernel name over the whole run (sorted by name). */
static size_t kernel_launches(struct name_count **out)
{
	size_t n = 0, i = 0;
	struct name_count *v;

	for (struct cap_func *fn = cap__funcs_all(); fn; fn = fn->next)
		n++;
	v = calloc(n + 1, sizeof(*v));
	if (!v) {
		*out = NULL;
		return 0;
	}
	for (struct cap_func *fn = cap__funcs_all(); fn; fn = fn->next) {
		uint64_t l = __atomic_load_n(&fn->launches, __ATOMIC_RELAXED);

		if (l)
			v[i++] = (struct name_count){ fn->name, l };
	}
	*out = v;
	return merge_names(v, i);
}

int cap_write_report(const char *path)
{
	struct cap_site_count sites[20];
	struct name_count *kl = NULL;
	struct cap_totals t;
	bool first = true;
	size_t nk, nsites;
	struct cf_out o;
	FILE *f;
	int rc;

	if (cap__out_open(&o, path, REPORT_MARKER) != 0)
		return -CF_EIO;
	f = o.f;
	cap_get_totals(&t);
	fprintf(f, "{\"cufold_report\": {\"version\": 1, \"mode\": ");
	cap__json_str(f, cap__s.cfg.mode_name ? cap__s.cfg.mode_name : "trace");
	fprintf(f, ", \"pid\": %ld, \"max_templates\": %u, \"barrier_kernels\": ", (long)getpid(),
		cap__s.cfg.max_templates);
	cap__json_str(f, cap__s.barrier);
	fprintf(f, ", \"callsites\": %s},\n", cap__s.cfg.callsites ? "true" : "false");
	fprintf(f, " \"version\": ");
	cap__json_str(f, CUFOLD_VERSION);
	fprintf(f, ", \"run_id\": ");
	cap__json_str(f, cf_config_get()->run_id);
	fprintf(f, ",\n");
	fprintf(f, " \"totals\": {\"windows\": %llu, \"shapes\": %zu, \"shapes_evicted\": %llu, \"ops\": ",
		(unsigned long long)t.windows, cap_shape_count(), (unsigned long long)t.shapes_evicted);
	{
		uint64_t all = 0;

		for (int k = 0; k < CAP_OP_KIND_COUNT; k++)
			all += t.ops[k];
		fprintf(f, "%llu, \"ops_by_kind\": ", (unsigned long long)all);
	}
	write_kinds(f, t.ops);
	fprintf(f, ",\n  \"launches\": %llu, \"copies\": %llu, \"memsets\": %llu, \"bytes_copied\": %llu, "
		   "\"bytes_set\": %llu, \"passed_through_in_capture\": %llu, \"driver_calls_own\": %llu},\n",
		(unsigned long long)t.launches, (unsigned long long)t.copies, (unsigned long long)t.memsets,
		(unsigned long long)t.bytes_copied, (unsigned long long)t.bytes_set,
		(unsigned long long)t.passthrough, (unsigned long long)t.own_calls);
	fprintf(f, " \"boundaries\": {");
	for (int b = 0; b < CAP_BOUNDARY_COUNT; b++) {
		fprintf(f, "%s\n  ", b ? "," : "");
		cap__json_str(f, cap_boundary_name((enum cap_boundary)b));
		fprintf(f, ": {\"label\": ");
		cap__json_str(f, cap_boundary_label((enum cap_boundary)b));
		fprintf(f, ", \"windows_closed\": %llu, \"calls\": %llu}", (unsigned long long)t.windows_by[b],
			(unsigned long long)t.boundaries[b]);
	}
	fprintf(f, "},\n \"launches_by_kernel\": {");
	nk = kernel_launches(&kl);
	for (size_t i = 0; i < nk; i++) {
		fprintf(f, "%s\n  ", i ? "," : "");
		cap__json_str(f, kl[i].name);
		fprintf(f, ": %llu", (unsigned long long)kl[i].n);
	}
	free(kl);
	fprintf(f, "},\n \"memory\": {\"cufold_host_bytes\": %zu, \"allocations_live\": %zu},\n",
		cap_memory_bytes(), cap_alloc_count());
	fprintf(f, " \"call_sites\": [");
	nsites = cap__callsite_top(sites, CF_ARRAY_SIZE(sites));
	for (size_t i = 0; i < nsites && i < CF_ARRAY_SIZE(sites); i++) {
		const char *name = cap_callsite_name(sites[i].hash);

		fprintf(f, "%s\n  {\"site\": ", i ? "," : "");
		cap__json_str(f, name ? name : "?");
		fprintf(f, ", \"ops\": %llu}", (unsigned long long)sites[i].ops);
	}
	fprintf(f, "],\n \"shapes\": [");
	for (struct cap_shape *s = cap_shape_first(); s; s = cap_shape_next(s)) {
		write_shape(f, s, first);
		first = false;
	}
	fprintf(f, "\n ]");
	if (cap__s.cfg.report_extra)
		cap__s.cfg.report_extra(f);
	fprintf(f, "\n}\n");
	rc = cap__out_close(&o);
	return rc;
}

void cap_summary(char *buf, size_t cap)
{
	const struct cap_shape *top = NULL;
	struct cap_totals t;
	size_t n = 0;
	int w;

	cap_get_totals(&t);
	for (const struct cap_shape *s = cap_shape_first(); s; s = cap_shape_next(s))
		if (!top || cap_shape_sightings(s) > cap_shape_sightings(top))
			top = s;
	w = snprintf(buf, cap,
		     "%s: %llu ops (%llu kernels, %llu copies, %llu memsets, %llu event records, %llu waits, "
		     "%llu host functions) in %llu windows of %zu shapes (%llu evicted)",
		     cap__s.cfg.mode_name ? cap__s.cfg.mode_name : "trace",
		     (unsigned long long)(t.ops[0] + t.ops[1] + t.ops[2] + t.ops[3] + t.ops[4] + t.ops[5]),
		     (unsigned long long)t.ops[CAP_OP_KERNEL], (unsigned long long)t.ops[CAP_OP_MEMCPY],
		     (unsigned long long)t.ops[CAP_OP_MEMSET], (unsigned long long)t.ops[CAP_OP_EVENT_RECORD],
		     (unsigned long long)t.ops[CAP_OP_EVENT_WAIT], (unsigned long long)t.ops[CAP_OP_HOST_FN],
		     (unsigned long long)t.windows, cap_shape_count(), (unsigned long long)t.shapes_evicted);
	if (w > 0)
		n = (size_t)w < cap ? (size_t)w : cap - 1;
	if (top && n < cap) {
		uint64_t sight = cap_shape_sightings(top);

		w = snprintf(buf + n, cap - n,
			     "; most repeated: shape %llu, %llu sightings of %u ops, bindings identical in %llu of %llu "
			     "repeats",
			     (unsigned long long)cap_shape_id(top), (unsigned long long)sight,
			     cap_window_nops(cap_shape_last(top)), (unsigned long long)cap_shape_stable(top),
			     (unsigned long long)(sight - 1));
		if (w > 0)
			n += (size_t)w < cap - n ? (size_t)w : cap - n - 1;
	}
	if (n < cap) {
		w = snprintf(buf + n, cap - n, "; windows closed by:");
		if (w > 0)
			n += (size_t)w < cap - n ? (size_t)w : cap - n - 1;
	}
	for (int b = 0, k = 0; b < CAP_BOUNDARY_COUNT && n < cap; b++) {
		if (!t.windows_by[b])
			continue;
		w = snprintf(buf + n, cap - n, "%s %s %llu", k++ ? "," : "", cap_boundary_label((enum cap_boundary)b),
			     (unsigned long long)t.windows_by[b]);
		if (w > 0)
			n += (size_t)w < cap - n ? (size_t)w : cap - n - 1;
	}
	if (n < cap)
		snprintf(buf + n, cap - n,
			 "; %llu launches, %llu bytes copied, %llu bytes set; %llu driver calls of cufold's "
			 "own; host memory %zu KiB",
			 (unsigned long long)t.launches, (unsigned long long)t.bytes_copied,
			 (unsigned long long)t.bytes_set, (unsigned long long)t.own_calls, cap_memory_bytes() / 1024);
}
