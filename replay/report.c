/* report.c - replay's part of the JSON report: per template its segments, launches, ops
 * replayed, fallbacks with their reasons, patches and the call sites whose bindings moved, host
 * submissions saved, what the rewrite did (rules fired, kernels, copies, memsets and bytes before
 * and after, call sites of the ops it changed); totals; the measured matching cost. replay layer. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "replay/replay_int.h"
#include "rewrite/derived.h"

static void write_fallbacks(struct cf_json *j, const uint64_t *fb)
{
	cf_json_obj_begin(j);
	for (int i = 0; i < RPL_FB_COUNT; i++)
		if (fb[i])
			cf_json_ku64(j, rpl_fallback_name((enum rpl_fallback)i), fb[i]);
	cf_json_obj_end(j);
}

/* Call sites by hash as an array of their names. */
static void write_sites(struct rpl_engine *re, struct cf_json *j, const uint64_t *sites, uint32_t n)
{
	cf_json_arr_begin(j);
	for (uint32_t i = 0; i < n; i++) {
		const char *name = cap_callsite_name(re->cap, sites[i]);

		cf_json_str(j, name ? name : "?");
	}
	cf_json_arr_end(j);
}

/* [before, after] */
static void write_pair(struct cf_json *j, const char *key, uint64_t before, uint64_t after)
{
	cf_json_key(j, key);
	cf_json_arr_begin(j);
	cf_json_u64(j, before);
	cf_json_u64(j, after);
	cf_json_arr_end(j);
}

/* Kernel launches a window of t runs after the rewrite, as the device ran them: each segment's
 * and block's plan (a block's plan, made over several segments' ops, may fuse more or less than
 * theirs) weighed by how often it was launched. Per segment position, the launches that covered
 * it (its own, and those of the blocks holding it, whose kernels are shared out evenly among
 * their segments), averaged: positions are covered unequally often (a window whose tail went
 * eagerly, a probe). planned (the segments' plans) when nothing was launched. */
static uint64_t kernels_launched(const struct rpl_template *t, uint64_t planned)
{
	double per_window = 0;
	bool any = false;

	for (uint32_t k = 0; t->segs && k < t->nsegs; k++) {
		const struct rpl_seg *g = &t->segs[k];
		double ran = (double)g->launches * g->kernels_run, covered = (double)g->launches;

		for (uint32_t b = 0; t->blocks && b < t->nblocks; b++) {
			const struct rpl_seg *bl = &t->blocks[b];

			if (!bl->nseg || !bl->launches || g->first < bl->first || g->first >= bl->first + bl->n)
				continue;
			ran += (double)bl->launches * bl->kernels_run / bl->nseg;
			covered += (double)bl->launches;
		}
		if (covered > 0) {
			per_window += ran / covered;
			any = true;
		} else {
			per_window += g->kernels_run;
		}
	}
	return any ? (uint64_t)(per_window + 0.5) : planned;
}

/* What the rewrite did: the rules that fired (how often, at which call sites), graphable ops
 * before and after by kind (kernels after as launched: kernels_launched), bytes, and the call
 * sites of every op it changed. */
static void write_rewrite(struct rpl_engine *re, struct cf_json *j, const struct rpl_template *t)
{
	const struct rpl_rewrite_figures *w = &t->rw;

	cf_json_key(j, "rewrite");
	cf_json_obj_begin(j);
	cf_json_key(j, "rules");
	cf_json_obj_begin(j);
	for (uint32_t i = 0; i < w->nrules; i++)
		cf_json_ku64(j, w->rules[i].rule, w->rules[i].count);
	cf_json_obj_end(j);
	cf_json_key(j, "rule_call_sites");
	cf_json_obj_begin(j);
	for (uint32_t i = 0; i < w->nrules; i++) {
		cf_json_key(j, w->rules[i].rule);
		write_sites(re, j, w->rules[i].sites, w->rules[i].nsites);
	}
	cf_json_obj_end(j);
	write_pair(j, "kernels", w->kernels[0], kernels_launched(t, w->kernels[1]));
	write_pair(j, "copies", w->copies[0], w->copies[1]);
	write_pair(j, "memsets", w->memsets[0], w->memsets[1]);
	write_pair(j, "bytes", w->bytes[0], w->bytes[1]);
	write_pair(j, "kernels_fused", w->fused[0], w->fused[1]);
	cf_json_key(j, "kernels_apart");
	cf_json_obj_begin(j);
	for (uint32_t a = 0; a < RW_APART_COUNT; a++)
		cf_json_ku64(j, rw_apart_name((enum rw_apart)a), w->apart[a]);
	cf_json_obj_end(j);
	cf_json_key(j, "renamable");
	cf_json_obj_begin(j);
	cf_json_ku64(j, "launches", w->renamable.launches);
	cf_json_ku64(j, "whole", w->renamable.whole);
	cf_json_ku64(j, "bytes", w->renamable.bytes);
	cf_json_ku64(j, "renamed", w->renamable.renamed);
	cf_json_ku64(j, "renamed_bytes", w->renamable.renamed_bytes);
	cf_json_ku64(j, "copied_back", w->renamable.copied_back);
	cf_json_ku64(j, "copied_back_for_readers", w->renamable.copied_back_for_readers);
	cf_json_ku64(j, "readers_kept", w->renamable.readers_kept);
	cf_json_obj_end(j);
	cf_json_key(j, "call_sites");
	write_sites(re, j, w->sites, w->nsites);
	cf_json_obj_end(j);
}

/* Whether replaying the template's shape pays (gate.c): its state, the time per window eager and
 * replayed that the last decision compared, and when it was taken (the shape's sighting). */
static void write_gate(struct cf_json *j, const struct rpl_template *t)
{
	const struct rpl_shape_note *n = t->shape ? cap_shape_user(t->shape) : NULL;
	const struct rpl_gate *g;

	cf_json_key(j, "gate");
	if (!n) {
		cf_json_null(j);
		return;
	}
	g = &n->gate;
	cf_json_obj_begin(j);
	cf_json_kstr(j, "state", rpl__gate_state_name(g));
	cf_json_ku64(j, "eager_ns_per_window", g->eager_med);
	cf_json_ku64(j, "replayed_ns_per_window", g->replay_med);
	cf_json_ku64(j, "decided_at_sighting", g->decided_at);
	cf_json_ku64(j, "trials_lost", g->trials);
	cf_json_ku64(j, "eager_samples", g->neager);
	cf_json_ku64(j, "replayed_samples", g->nreplayed);
	cf_json_kbool(j, "small_cuts", g->cuts);
	cf_json_ku64(j, "big_cuts_replayed_ns_per_window", g->big_med);
	cf_json_ku64(j, "builds", g->builds);
	cf_json_ku64(j, "build_ns", g->build_ns);
	cf_json_ku64(j, "build_ns_per_window", rpl__gate_build_charge(g));
	cf_json_kstr(j, "clock", rpl__gate_is_modeled() ? "modeled" : "monotonic");
	cf_json_obj_end(j);
}

/* X(key, expression): a template's counters, in the report's order (t is the template) */
#define RPL_TEMPLATE_FIGURES(X) \
	X("shape", t->shape_id) \
	X("built_from_window", t->built_window) \
	X("ops", t->nops) \
	X("graph_ops", t->ngraph) \
	X("segments", t->nsegs) \
	X("segment_cap", t->seg_cap) \
	X("split_segments", t->split_segs) \
	X("blocks", t->nblocks) \
	X("block_nodes", t->block_nodes) \
	X("block_launches", t->block_launches) \
	X("boundaries_idle", t->boundaries_idle) \
	X("boundaries_busy", t->boundaries_busy) \
	X("boundaries_starved", t->boundaries_starved) \
	X("boundaries_held", t->boundaries_held) \
	X("windows_replayed", t->windows) \
	X("launches", t->launches) \
	X("ops_replayed", t->ops_replayed) \
	X("patches", t->patches) \
	X("host_submissions_saved", t->ops_replayed >= t->graph_launches ? t->ops_replayed - t->graph_launches : 0)

/* What patching cost (per launch of a segment, on the gate clock) against eager submission
 * (the churn check's figures, retire.c), and the bindings that moved most: op index in the
 * window, kernel name (or node kind), parameter index (-1: the whole node), launches. */
static void write_patching(struct rpl_engine *re, struct cf_json *j, const struct rpl_template *t)
{
	double l = t->launches ? (double)t->launches : 1.0;
	uint32_t order[RPL_MOVED], nshow = 0;

	cf_json_key(j, "patching");
	cf_json_obj_begin(j);
	cf_json_key(j, "nodes_patched_per_launch");
	cf_json_f64(j, (double)t->patches / l, 2);
	cf_json_key(j, "patch_ns_per_launch");
	cf_json_f64(j, (double)t->patch_ns / l, 0);
	cf_json_key(j, "launch_ns_per_launch");
	cf_json_f64(j, (double)t->launch_ns / l, 0);
	cf_json_key(j, "replayed_ns_per_op");
	cf_json_f64(j, t->ops_replayed ? (double)(t->patch_ns + t->launch_ns) / (double)t->ops_replayed +
					       rpl_host_ns_per_op(re) : 0.0, 1);
	cf_json_key(j, "eager_ns_per_op");
	cf_json_f64(j, re->eager_kernels ? (double)re->eager_ns / (double)re->eager_kernels : 0.0, 1);
	cf_json_kstr(j, "clock", rpl__gate_is_modeled() ? "modeled" : "monotonic");
	cf_json_obj_end(j);
	for (uint32_t i = 0; i < t->nmoved; i++) {
		uint32_t k = nshow < 8 ? nshow++ : 8; /* the 8 that moved on most launches, most first */

		if (k == 8 && t->moved[i].launches <= t->moved[order[7]].launches)
			continue;
		if (k == 8)
			k = 7;
		while (k > 0 && t->moved[order[k - 1]].launches < t->moved[i].launches) {
			order[k] = order[k - 1];
			k--;
		}
		order[k] = i;
	}
	cf_json_key(j, "moved_bindings");
	cf_json_arr_begin(j);
	for (uint32_t k = 0; k < nshow; k++) {
		const struct rpl_moved *m = &t->moved[order[k]];

		cf_json_obj_begin(j);
		cf_json_ku64(j, "op", m->op);
		cf_json_kstr(j, "kernel", m->what);
		cf_json_key(j, "param");
		cf_json_i64(j, m->param);
		cf_json_ku64(j, "launches", m->launches);
		cf_json_obj_end(j);
	}
	cf_json_arr_end(j);
}

static void write_template(struct rpl_engine *re, struct cf_json *j, const struct rpl_template *t)
{
	cf_json_nl(j, 6);
	cf_json_obj_begin(j);
#define RPL_TEMPLATE_FIGURE_(key, v) cf_json_ku64(j, key, (uint64_t)(v));
	RPL_TEMPLATE_FIGURES(RPL_TEMPLATE_FIGURE_)
#undef RPL_TEMPLATE_FIGURE_
	cf_json_key(j, "fallbacks");
	write_fallbacks(j, t->fallbacks);
	cf_json_kstr(j, "retired", t->retired_why);
	cf_json_key(j, "moved_call_sites");
	write_sites(re, j, t->moved_sites, t->nmoved_sites);
	write_patching(re, j, t);
	write_gate(j, t);
	write_rewrite(re, j, t);
	cf_json_key(j, "segment_launches");
	cf_json_arr_begin(j);
	for (uint32_t k = 0; k < t->nsegs; k++) {
		cf_json_obj_begin(j);
		cf_json_ku64(j, "first", t->segs[k].first);
		cf_json_ku64(j, "ops", t->segs[k].n);
		cf_json_ku64(j, "launches", t->segs[k].launches);
		cf_json_ku64(j, "patched_launches", t->segs[k].patched_launches);
		cf_json_ku64(j, "patches", t->segs[k].patches);
		cf_json_ku64(j, "kernels", t->segs[k].kernels_run);
		cf_json_obj_end(j);
	}
	cf_json_arr_end(j);
	/* buddy blocks (launch.c): segments launched as one graph while the device was busy;
	 * "segments" 0: not used (it would have joined streams its segments keep apart) */
	cf_json_key(j, "block_launches_by_block");
	cf_json_arr_begin(j);
	for (uint32_t k = 0; k < t->nblocks; k++) {
		cf_json_obj_begin(j);
		cf_json_ku64(j, "first", t->blocks[k].first);
		cf_json_ku64(j, "ops", t->blocks[k].n);
		cf_json_ku64(j, "segments", t->blocks[k].nseg);
		cf_json_ku64(j, "launches", t->blocks[k].launches);
		cf_json_ku64(j, "kernels", t->blocks[k].kernels_run);
		cf_json_obj_end(j);
	}
	cf_json_arr_end(j);
	cf_json_obj_end(j);
}

/* Shapes replay will not replay, and why (too few ops, a failure, passthrough, churn). */
static void write_rejected(struct rpl_engine *re, struct cf_json *j)
{
	cf_json_key(j, "rejected_shapes");
	cf_json_arr_begin(j);
	for (const struct rpl_note_link *l = re->notes; l; l = l->next) {
		if (!l->note.rejected || !l->shape)
			continue;
		cf_json_obj_begin(j);
		cf_json_ku64(j, "shape", cap_shape_id(l->shape));
		cf_json_kstr(j, "why", l->note.why ? l->note.why : "?");
		cf_json_obj_end(j);
	}
	cf_json_arr_end(j);
}

/* X(kind, key, expression): replay's totals in the report, in order (s is struct rpl_totals);
 * kind u64 or f1 (a double with one decimal) or flag (a bool). scripts/cufold merges them by key. */
#define RPL_REPORT_TOTALS(X) \
	X(u64, "templates_built", s->templates) \
	X(u64, "templates_live", s->templates_live) \
	X(u64, "segments_built", s->segments) \
	X(u64, "graph_launches", s->graph_launches) \
	X(u64, "ops_replayed", s->ops_replayed) \
	X(u64, "ops_deferred", s->ops_deferred) \
	X(u64, "ops_flushed_eagerly", s->ops_flushed) \
	X(u64, "patches", s->patches) \
	X(u64, "retired", s->retired) \
	X(u64, "host_submissions_saved", s->ops_replayed >= s->graph_launches ? s->ops_replayed - s->graph_launches : 0) \
	X(u64, "driver_calls", s->own_calls) \
	X(u64, "matched_ops", s->matched_ops) \
	X(u64, "lane_ops", s->lane_ops) \
	X(f1, "host_ns_per_op", rpl_host_ns_per_op(re)) \
	X(f1, "own_ns_per_op", rpl_own_ns_per_op(re)) \
	X(f1, "own_ns_per_op_with_builds", rpl_own_ns_per_op_with_builds(re)) \
	X(u64, "own_ns", s->own_ns) \
	X(u64, "own_samples", s->own_samples) \
	X(u64, "host_bytes", rpl_memory_bytes(re)) \
	X(u64, "host_bytes_peak", s->host_bytes_peak > rpl_memory_bytes(re) ? s->host_bytes_peak : rpl_memory_bytes(re)) \
	X(u64, "pinned_bytes", pinned) \
	X(u64, "rename_bytes", __atomic_load_n(&re->rename.used, __ATOMIC_RELAXED)) \
	X(u64, "rename_bytes_peak", __atomic_load_n(&re->rename.peak, __ATOMIC_RELAXED)) \
	X(u64, "renames_refused", __atomic_load_n(&re->rename.refused, __ATOMIC_RELAXED)) \
	X(u64, "graph_nodes_live", nodes) \
	X(u64, "build_ns_max", s->build_ns_max) \
	X(u64, "build_ops_max", s->build_ops_max) \
	X(u64, "builds", s->builds) \
	X(u64, "build_own_ns", s->build_own_ns) \
	X(flag, "passthrough_after_failure", s->failed)

static void total_u64(struct cf_json *j, const char *key, uint64_t v)
{
	cf_json_ku64(j, key, v);
}

static void total_f1(struct cf_json *j, const char *key, double v)
{
	cf_json_key(j, key);
	cf_json_f64(j, v, 1);
}

static void total_flag(struct cf_json *j, const char *key, bool v)
{
	cf_json_kbool(j, key, v);
}

/* What the live templates hold outside cufold's heap: pinned stage buffers (bytes) and graph
 * nodes (the driver's memory for their execs is not visible here: counted as nodes). */
static void held_figures(struct rpl_engine *re, uint64_t *pinned, uint64_t *nodes)
{
	*pinned = *nodes = 0;
	for (const struct rpl_template *t = rpl__templates(re); t; t = t->next) {
		for (uint32_t k = 0; k < t->nsegs + t->nblocks; k++) {
			const struct rpl_seg *g = k < t->nsegs ? &t->segs[k] : &t->blocks[k - t->nsegs];

			*nodes += g->n;
			for (uint32_t i = 0; g->nodes && i < g->n; i++)
				*pinned += g->nodes[i].stage ? g->nodes[i].stage_bytes : 0;
		}
	}
}

/* "kernel_cards": where each launched kernel's card came from (issue 23): "user card",
 * "derived", "refused: why", "no PTX", or "none" (no card, no image known, derivation off, or
 * no template asked about it). One entry per name: the first record's (newest) wins. */
static void write_kernel_cards(struct rpl_engine *re, struct cf_json *j)
{
	const struct cap_func *fn, *g;

	cf_json_key(j, "kernel_cards");
	cf_json_obj_begin(j);
	for (fn = cap_funcs_all(re->cap); fn; fn = fn->next) {
		enum rw_card_source src = rw_card_source_of(fn);
		char buf[200];

		if (!__atomic_load_n(&fn->launches, __ATOMIC_RELAXED))
			continue;
		for (g = cap_funcs_all(re->cap); g != fn && strcmp(g->name, fn->name); g = g->next)
			;
		if (g != fn)
			continue; /* a newer record of the name was written */
		if (src == RW_CARD_REFUSED)
			snprintf(buf, sizeof(buf), "refused: %s", rw_card_refused_why(fn));
		else
			snprintf(buf, sizeof(buf), "%s", rw_card_source_name(src));
		cf_json_nl(j, 6);
		cf_json_kstr(j, fn->name, buf);
	}
	cf_json_obj_end(j);
}

void rpl_write_report_json(struct rpl_engine *re, struct cf_json *j)
{
	struct rpl_totals tot;
	const struct rpl_totals *s = &tot;
	uint64_t pinned, nodes;

	rpl_get_totals(re, &tot); /* own_calls is counted atomically (builds run outside the lock) */
	held_figures(re, &pinned, &nodes);

	cf_json_nl(j, 1);
	cf_json_key(j, "replay");
	cf_json_obj_begin(j);
	cf_json_nl(j, 4);
#define RPL_REPORT_TOTAL_(kind, key, v) total_##kind(j, key, v);
	RPL_REPORT_TOTALS(RPL_REPORT_TOTAL_)
#undef RPL_REPORT_TOTAL_
	cf_json_nl(j, 4);
	cf_json_key(j, "fallbacks");
	write_fallbacks(j, s->fallbacks);
	cf_json_ku64(j, "queries_answered_not_ready", s->polls_not_ready);
	cf_json_nl(j, 4);
	write_rejected(re, j);
	cf_json_nl(j, 4);
	rpl__errors_write_json(re, j);
	cf_json_nl(j, 4);
	write_kernel_cards(re, j);
	cf_json_nl(j, 4);
	cf_json_key(j, "templates");
	cf_json_arr_begin(j);
	for (const struct rpl_template *t = rpl__templates(re); t; t = t->next)
		write_template(re, j, t);
	for (const struct rpl_template *t = rpl__retired(re); t; t = t->next)
		write_template(re, j, t);
	cf_json_nl(j, 4);
	cf_json_arr_end(j);
	cf_json_nl(j, 2);
	cf_json_obj_end(j);
	cf_json_nl(j, 1);
	cf_json_key(j, "host_ns_per_op");
	cf_json_f64(j, rpl_host_ns_per_op(re), 1);
	cf_json_nl(j, 1);
	cf_json_key(j, "own_ns_per_op");
	cf_json_f64(j, rpl_own_ns_per_op(re), 1);
	cf_json_nl(j, 1);
	cf_json_key(j, "own_ns_per_op_with_builds");
	cf_json_f64(j, rpl_own_ns_per_op_with_builds(re), 1);
}
