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
#include "common/json.h"

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

static void shape_stats(struct cap_engine *ce, const struct cap_shape *s, struct shape_stats *st)
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
			const char *name = cap_callsite_name(ce, op->callsite);

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

static void write_kinds(struct cf_json *j, const uint64_t *by_kind)
{
	cf_json_obj_begin(j);
	for (int k = 0; k < CAP_OP_KIND_COUNT; k++)
		cf_json_ku64(j, cap_op_kind_name((enum cap_op_kind)k), by_kind[k]);
	cf_json_obj_end(j);
}

/* The ops of s's last window whose bindings changed most often (at most TOP_MOVED, most first):
 * their indexes into order, their count returned. */
static uint32_t most_moved(const struct cap_shape *s, uint32_t n, uint32_t order[TOP_MOVED])
{
	uint32_t nmoved = 0;

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
	return nmoved;
}

static void write_stability(struct cap_engine *ce, struct cf_json *j, const struct cap_shape *s)
{
	const struct cap_window *w = cap_shape_last(s);
	uint32_t order[TOP_MOVED], nmoved = most_moved(s, cap_window_nops(w), order);

	cf_json_obj_begin(j);
	cf_json_ku64(j, "repeats", cap_shape_sightings(s) - 1);
	cf_json_ku64(j, "identical", cap_shape_stable(s));
	cf_json_kbool(j, "last_identical", cap_shape_last_stable(s));
	cf_json_key(j, "moved_ops");
	cf_json_arr_begin(j);
	for (uint32_t k = 0; k < nmoved; k++) {
		const struct cap_op *op = cap_window_op(w, order[k]);

		cf_json_obj_begin(j);
		cf_json_ku64(j, "op", order[k]);
		cf_json_kstr(j, "name", cap_op_name(op));
		cf_json_ku64(j, "moved", cap_shape_moved(s, order[k]));
		cf_json_kstr(j, "call_site", op->callsite ? cap_callsite_name(ce, op->callsite) : NULL);
		cf_json_obj_end(j);
	}
	cf_json_arr_end(j);
	cf_json_obj_end(j);
}

static void write_shape(struct cap_engine *ce, struct cf_json *j, const struct cap_shape *s)
{
	const struct cap_window *w = cap_shape_last(s);
	uint64_t closed_site = cap_window_closed_site(w);
	struct shape_stats st;

	shape_stats(ce, s, &st);
	cf_json_nl(j, 4);
	cf_json_obj_begin(j);
	cf_json_ku64(j, "id", cap_shape_id(s));
	cf_json_ku64(j, "sightings", cap_shape_sightings(s));
	cf_json_ku64(j, "ops", cap_window_nops(w));
	cf_json_key(j, "ops_by_kind");
	write_kinds(j, st.by_kind);
	cf_json_nl(j, 5);
	cf_json_ku64(j, "streams", cap_window_nstreams(w));
	cf_json_ku64(j, "events", cap_window_nevents(w));
	cf_json_ku64(j, "bytes_copied", st.bytes_copied);
	cf_json_ku64(j, "bytes_set", st.bytes_set);
	cf_json_nl(j, 5);
	cf_json_ku64(j, "first_window", s->first_window);
	cf_json_ku64(j, "last_window", s->last_window);
	cf_json_kstr(j, "closed_by", cap_boundary_name(cap_window_closed_by(w)));
	cf_json_kstr(j, "closed_by_api",
		     cap_window_closed_api(w) < DRV_API_COUNT ? drv_api[cap_window_closed_api(w)].name : "?");
	cf_json_kstr(j, "closed_by_site", closed_site ? cap_callsite_name(ce, closed_site) : NULL);
	cf_json_nl(j, 5);
	cf_json_ku64(j, "distinct_kernels", st.nkernels);
	cf_json_key(j, "kernels");
	cf_json_obj_begin(j);
	for (size_t i = 0; i < st.nkernels && i < TOP_KERNELS; i++)
		cf_json_ku64(j, st.kernels[i].name, st.kernels[i].n);
	cf_json_obj_end(j);
	cf_json_nl(j, 5);
	cf_json_key(j, "pointer_stability");
	write_stability(ce, j, s);
	cf_json_nl(j, 5);
	cf_json_key(j, "call_sites");
	cf_json_arr_begin(j);
	for (size_t i = 0; i < st.nsites && i < TOP_SITES; i++) {
		cf_json_obj_begin(j);
		cf_json_kstr(j, "site", st.sites[i].name);
		cf_json_ku64(j, "ops", st.sites[i].n);
		cf_json_obj_end(j);
	}
	cf_json_arr_end(j);
	cf_json_obj_end(j);
	shape_stats_free(&st);
}

/* Launches by kernel name over the whole run (sorted by name). */
static size_t kernel_launches(struct cap_engine *ce, struct name_count **out)
{
	size_t n = 0, i = 0;
	struct name_count *v;

	for (struct cap_func *fn = cap__funcs_all(ce); fn; fn = fn->next)
		n++;
	v = calloc(n + 1, sizeof(*v));
	if (!v) {
		*out = NULL;
		return 0;
	}
	for (struct cap_func *fn = cap__funcs_all(ce); fn; fn = fn->next) {
		uint64_t l = __atomic_load_n(&fn->launches, __ATOMIC_RELAXED);

		if (l)
			v[i++] = (struct name_count){ fn->name, l };
	}
	*out = v;
	return merge_names(v, i);
}

struct name_code {
	const char *name;            /* kernel name (borrowed) */
	enum cap_code code;          /* what its image offers */
};

static int cmp_name_code(const void *a, const void *b)
{
	return strcmp(((const struct name_code *)a)->name, ((const struct name_code *)b)->name);
}

/* "kernel_code": each launched kernel's name and what its image offers ("ptx", "machine_code",
 * "none", "unknown"; "mixed" when records of one name were loaded from different kinds). */
static void write_kernel_code(struct cap_engine *ce, struct cf_json *j)
{
	size_t n = 0, k = 0;
	struct name_code *v;

	for (struct cap_func *fn = cap__funcs_all(ce); fn; fn = fn->next)
		n++;
	v = calloc(n + 1, sizeof(*v));
	cf_json_obj_begin(j);
	for (struct cap_func *fn = cap__funcs_all(ce); v && fn; fn = fn->next)
		if (__atomic_load_n(&fn->launches, __ATOMIC_RELAXED))
			v[k++] = (struct name_code){ fn->name, cap_func_code(fn) };
	if (k)
		qsort(v, k, sizeof(*v), cmp_name_code);
	for (size_t i = 0; i < k;) {
		size_t e = i + 1;
		bool mixed = false;

		for (; e < k && !strcmp(v[e].name, v[i].name); e++)
			mixed |= v[e].code != v[i].code;
		cf_json_nl(j, 2);
		cf_json_kstr(j, v[i].name, mixed ? "mixed" : cap_code_name(v[i].code));
		i = e;
	}
	cf_json_obj_end(j);
	free(v);
}

/* X(key, field): the capture totals written after "ops_by_kind", in order (struct cap_totals) */
#define CAP_REPORT_TOTALS(X) \
	X("launches", launches) \
	X("copies", copies) \
	X("memsets", memsets) \
	X("bytes_copied", bytes_copied) \
	X("bytes_set", bytes_set) \
	X("passed_through_in_capture", passthrough) \
	X("driver_calls_own", own_calls) \
	X("images_loaded", images_loaded) \
	X("images_ptx", images_ptx) \
	X("images_machine_code", images_machine_code) \
	X("images_no_code", images_no_code) \
	X("ptx_texts_kept", ptx_texts_kept) \
	X("ptx_bytes_kept", ptx_bytes_kept)

static void write_totals(struct cap_engine *ce, struct cf_json *j, const struct cap_totals *t)
{
	uint64_t all = cap_totals_ops(t);

	cf_json_obj_begin(j);
	cf_json_ku64(j, "windows", t->windows);
	cf_json_ku64(j, "shapes", cap_shape_count(ce));
	cf_json_ku64(j, "shapes_evicted", t->shapes_evicted);
	cf_json_ku64(j, "ops", all);
	cf_json_key(j, "ops_by_kind");
	write_kinds(j, t->ops);
	cf_json_nl(j, 2);
#define CAP_REPORT_TOTAL_(key, field) cf_json_ku64(j, key, t->field);
	CAP_REPORT_TOTALS(CAP_REPORT_TOTAL_)
#undef CAP_REPORT_TOTAL_
	cf_json_obj_end(j);
}

static void write_boundaries(struct cf_json *j, const struct cap_totals *t)
{
	cf_json_obj_begin(j);
	for (int b = 0; b < CAP_BOUNDARY_COUNT; b++) {
		cf_json_nl(j, 2);
		cf_json_key(j, cap_boundary_name((enum cap_boundary)b));
		cf_json_obj_begin(j);
		cf_json_kstr(j, "label", cap_boundary_label((enum cap_boundary)b));
		cf_json_ku64(j, "windows_closed", t->windows_by[b]);
		cf_json_ku64(j, "calls", t->boundaries[b]);
		cf_json_obj_end(j);
	}
	cf_json_obj_end(j);
}

/* The report's members after "cufold_report" and "version"/"run_id". */
static void write_body(struct cap_engine *ce, struct cf_json *j)
{
	struct cap_site_count sites[20];
	struct name_count *kl = NULL;
	struct cap_totals t;
	size_t nk, nsites;
	struct cap_memory_parts mem;

	cap_get_totals(ce, &t);
	cf_json_nl(j, 1);
	cf_json_key(j, "totals");
	write_totals(ce, j, &t);
	cf_json_nl(j, 1);
	cf_json_key(j, "boundaries");
	write_boundaries(j, &t);
	cf_json_nl(j, 1);
	cf_json_key(j, "launches_by_kernel");
	cf_json_obj_begin(j);
	nk = kernel_launches(ce, &kl);
	for (size_t i = 0; i < nk; i++) {
		cf_json_nl(j, 2);
		cf_json_ku64(j, kl[i].name, kl[i].n);
	}
	free(kl);
	cf_json_obj_end(j);
	cf_json_nl(j, 1);
	cf_json_key(j, "kernel_code");
	write_kernel_code(ce, j);
	cf_json_nl(j, 1);
	cf_json_key(j, "memory");
	cf_json_obj_begin(j);
	cf_json_ku64(j, "cufold_host_bytes", cap_memory_parts(ce, &mem));
	cf_json_ku64(j, "allocations_live", cap_alloc_count(ce));
	cf_json_key(j, "parts");
	cf_json_obj_begin(j);
#define MEMORY_PART_(name) cf_json_ku64(j, #name, mem.name);
	CAP_MEMORY_PARTS(MEMORY_PART_)
#undef MEMORY_PART_
	cf_json_obj_end(j);
	cf_json_obj_end(j);
	cf_json_nl(j, 1);
	cf_json_key(j, "call_sites");
	cf_json_arr_begin(j);
	nsites = cap__callsite_top(ce, sites, CF_ARRAY_SIZE(sites));
	for (size_t i = 0; i < nsites && i < CF_ARRAY_SIZE(sites); i++) {
		const char *name = cap_callsite_name(ce, sites[i].hash);

		cf_json_nl(j, 2);
		cf_json_obj_begin(j);
		cf_json_kstr(j, "site", name ? name : "?");
		cf_json_ku64(j, "ops", sites[i].ops);
		cf_json_obj_end(j);
	}
	cf_json_arr_end(j);
	cf_json_nl(j, 1);
	cf_json_key(j, "shapes");
	cf_json_arr_begin(j);
	for (struct cap_shape *s = cap_shape_first(ce); s; s = cap_shape_next(s))
		write_shape(ce, j, s);
	cf_json_nl(j, 1);
	cf_json_arr_end(j);
}

int cap_write_report(struct cap_engine *ce, const char *path)
{
	struct cf_out o;
	struct cf_json j;
	int rc;

	if (cap__out_open(&o, path, REPORT_MARKER) != 0)
		return -CF_EIO;
	cf_json_init_file(&j, o.f);
	cf_json_obj_begin(&j);
	/* the marker: this key first, so that an earlier report is recognized (REPORT_MARKER) */
	cf_json_key(&j, "cufold_report");
	cf_json_obj_begin(&j);
	cf_json_ku64(&j, "version", 1);
	cf_json_kstr(&j, "mode", ce->cfg.mode_name ? ce->cfg.mode_name : "trace");
	cf_json_ku64(&j, "pid", (uint64_t)getpid());
	cf_json_ku64(&j, "max_templates", ce->cfg.max_templates);
	cf_json_kstr(&j, "barrier_kernels", ce->barrier);
	cf_json_kbool(&j, "callsites", ce->cfg.callsites);
	cf_json_obj_end(&j);
	cf_json_nl(&j, 1);
	cf_json_kstr(&j, "version", CUFOLD_VERSION);
	cf_json_kstr(&j, "run_id", cf_config_get()->run_id);
	write_body(ce, &j);
	if (ce->cfg.report_extra)
		ce->cfg.report_extra(ce->cfg.arg, &j);
	cf_json_nl(&j, 0);
	cf_json_obj_end(&j);
	fputc('\n', o.f);
	if (cf_json_failed(&j)) {
		cf_out_abort(&o);
		return -CF_EIO;
	}
	rc = cap__out_close(&o);
	return rc;
}

void cap_summary(struct cap_engine *ce, char *buf, size_t cap)
{
	const struct cap_shape *top = NULL;
	struct cap_totals t;
	size_t n = 0;
	int w;

	cap_get_totals(ce, &t);
	for (const struct cap_shape *s = cap_shape_first(ce); s; s = cap_shape_next(s))
		if (!top || cap_shape_sightings(s) > cap_shape_sightings(top))
			top = s;
	w = snprintf(buf, cap,
		     "%s: %llu ops (%llu kernels, %llu copies, %llu memsets, %llu event records, %llu waits, "
		     "%llu host functions) in %llu windows of %zu shapes (%llu evicted)",
		     ce->cfg.mode_name ? ce->cfg.mode_name : "trace",
		     (unsigned long long)(t.ops[0] + t.ops[1] + t.ops[2] + t.ops[3] + t.ops[4] + t.ops[5]),
		     (unsigned long long)t.ops[CAP_OP_KERNEL], (unsigned long long)t.ops[CAP_OP_MEMCPY],
		     (unsigned long long)t.ops[CAP_OP_MEMSET], (unsigned long long)t.ops[CAP_OP_EVENT_RECORD],
		     (unsigned long long)t.ops[CAP_OP_EVENT_WAIT], (unsigned long long)t.ops[CAP_OP_HOST_FN],
		     (unsigned long long)t.windows, cap_shape_count(ce), (unsigned long long)t.shapes_evicted);
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
			 (unsigned long long)t.bytes_set, (unsigned long long)t.own_calls, cap_memory_bytes(ce) / 1024);
}
