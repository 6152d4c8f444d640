/* report.c - replay's part of the JSON report: per template its segments, launches, ops
 * replayed, fallbacks with their reasons, patches and the call sites whose bindings moved, host
 * submissions saved, what the rewrite did (rules fired, kernels, copies, memsets and bytes before
 * and after, call sites of the ops it changed); totals; the measured matching cost. replay layer. */
#include <inttypes.h>

#include "replay/replay_int.h"

static void write_fallbacks(FILE *f, const uint64_t *fb)
{
	bool first = true;

	fputc('{', f);
	for (int i = 0; i < RPL_FB_COUNT; i++) {
		if (!fb[i])
			continue;
		fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", rpl_fallback_name((enum rpl_fallback)i), fb[i]);
		first = false;
	}
	fputc('}', f);
}

void rpl__json_text(FILE *f, const char *text)
{
	for (const char *p = text ? text : "?"; *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', f);
		if ((unsigned char)*p >= 0x20)
			fputc(*p, f);
	}
}

/* A call site's name as a JSON string. */
static void write_site(struct rpl_engine *re, FILE *f, uint64_t site)
{
	fputc('"', f);
	rpl__json_text(f, cap_callsite_name(re->cap, site));
	fputc('"', f);
}

/* What the rewrite did: the rules that fired (how often, at which call sites), graphable ops
 * before and after by kind, bytes, and the call sites of every op it changed. */
static void write_rewrite(struct rpl_engine *re, FILE *f, const struct rpl_rewrite_figures *w)
{
	fputs("\"rewrite\": {\"rules\": {", f);
	for (uint32_t i = 0; i < w->nrules; i++)
		fprintf(f, "%s\"%s\": %u", i ? ", " : "", w->rules[i].rule, w->rules[i].count);
	fputs("}, \"rule_call_sites\": {", f);
	for (uint32_t i = 0; i < w->nrules; i++) {
		fprintf(f, "%s\"%s\": [", i ? ", " : "", w->rules[i].rule);
		for (uint32_t j = 0; j < w->rules[i].nsites; j++) {
			if (j)
				fputs(", ", f);
			write_site(re, f, w->rules[i].sites[j]);
		}
		fputc(']', f);
	}
	fprintf(f,
		"}, \"kernels\": [%u, %u], \"copies\": [%u, %u], \"memsets\": [%u, %u], \"bytes\": [%" PRIu64
		", %" PRIu64 "], \"call_sites\": [",
		w->kernels[0], w->kernels[1], w->copies[0], w->copies[1], w->memsets[0], w->memsets[1], w->bytes[0],
		w->bytes[1]);
	for (uint32_t i = 0; i < w->nsites; i++) {
		if (i)
			fputs(", ", f);
		write_site(re, f, w->sites[i]);
	}
	fputs("]}", f);
}

/* Whether replaying the template's shape pays (gate.c): its state, the time per window eager and
 * replayed that the last decision compared, and when it was taken (the shape's sighting). */
static void write_gate(FILE *f, const struct rpl_template *t)
{
	const struct rpl_shape_note *n = t->shape ? cap_shape_user(t->shape) : NULL;
	const struct rpl_gate *g;

	if (!n) {
		fputs("\"gate\": null, ", f);
		return;
	}
	g = &n->gate;
	fprintf(f,
		"\"gate\": {\"state\": \"%s\", \"eager_ns_per_window\": %" PRIu64 ", \"replayed_ns_per_window\": %" PRIu64
		", \"decided_at_sighting\": %" PRIu64 ", \"trials_lost\": %u, \"eager_samples\": %u, \"replayed_samples\": %u, "
		"\"small_cuts\": %s, \"big_cuts_replayed_ns_per_window\": %" PRIu64 ", \"clock\": \"%s\"}, ",
		rpl__gate_state_name(g), g->eager_med, g->replay_med, g->decided_at, g->trials, g->neager, g->nreplayed,
		g->cuts ? "true" : "false", g->big_med,
		rpl__gate_is_modeled() ? "modeled" : "monotonic");
}

/* What patching cost (per launch of a segment, on the gate clock) against eager submission
 * (the churn check's figures, retire.c), and the bindings that moved most: op index in the
 * window, kernel name (or node kind), parameter index (-1: the whole node), launches. */
static void write_patching(struct rpl_engine *re, FILE *f, const struct rpl_template *t)
{
	double l = t->launches ? (double)t->launches : 1.0;
	uint32_t order[RPL_MOVED], nshow = 0;

	fprintf(f,
		"\"patching\": {\"nodes_patched_per_launch\": %.2f, \"patch_ns_per_launch\": %.0f, \"launch_ns_per_launch\": "
		"%.0f, \"replayed_ns_per_op\": %.1f, \"eager_ns_per_op\": %.1f, \"clock\": \"%s\"}, \"moved_bindings\": [",
		(double)t->patches / l, (double)t->patch_ns / l, (double)t->launch_ns / l,
		t->ops_replayed ? (double)(t->patch_ns + t->launch_ns) / (double)t->ops_replayed + rpl_host_ns_per_op(re)
				: 0.0,
		re->eager_kernels ? (double)re->eager_ns / (double)re->eager_kernels : 0.0,
		rpl__gate_is_modeled() ? "modeled" : "monotonic");
	for (uint32_t i = 0; i < t->nmoved; i++) {
		uint32_t j = nshow < 8 ? nshow++ : 8; /* the 8 that moved on most launches, most first */

		if (j == 8 && t->moved[i].launches <= t->moved[order[7]].launches)
			continue;
		if (j == 8)
			j = 7;
		while (j > 0 && t->moved[order[j - 1]].launches < t->moved[i].launches) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	for (uint32_t k = 0; k < nshow; k++) {
		const struct rpl_moved *m = &t->moved[order[k]];

		fprintf(f, "%s{\"op\": %u, \"kernel\": \"", k ? ", " : "", m->op);
		rpl__json_text(f, m->what);
		fprintf(f, "\", \"param\": %d, \"launches\": %" PRIu64 "}", m->param, m->launches);
	}
	fputs("], ", f);
}

static void write_template(struct rpl_engine *re, FILE *f, const struct rpl_template *t)
{
	uint64_t saved = t->ops_replayed >= t->graph_launches ? t->ops_replayed - t->graph_launches : 0;

	fprintf(f,
		"      {\"shape\": %" PRIu64 ", \"built_from_window\": %" PRIu64 ", \"ops\": %u, \"graph_ops\": %u, "
		"\"segments\": %u, \"segment_cap\": %u, \"split_segments\": %u, \"windows_replayed\": %" PRIu64 ", \"launches\": %" PRIu64
		", \"ops_replayed\": %" PRIu64 ", \"patches\": %" PRIu64 ", \"host_submissions_saved\": %" PRIu64
		", \"fallbacks\": ",
		t->shape_id, t->built_window, t->nops, t->ngraph, t->nsegs, t->seg_cap, t->split_segs, t->windows, t->launches, t->ops_replayed,
		t->patches, saved);
	write_fallbacks(f, t->fallbacks);
	fputs(", \"retired\": ", f);
	if (t->retired_why)
		fprintf(f, "\"%s\"", t->retired_why);
	else
		fputs("null", f);
	fputs(", \"moved_call_sites\": [", f);
	for (uint32_t i = 0; i < t->nmoved_sites; i++) {
		if (i)
			fputs(", ", f);
		write_site(re, f, t->moved_sites[i]);
	}
	fputs("], ", f);
	write_patching(re, f, t);
	write_gate(f, t);
	write_rewrite(re, f, &t->rw);
	fputs(", \"segment_launches\": [", f);
	for (uint32_t k = 0; k < t->nsegs; k++)
		fprintf(f, "%s{\"first\": %u, \"ops\": %u, \"launches\": %" PRIu64 ", \"patched_launches\": %" PRIu64
			   ", \"patches\": %" PRIu64 "}",
			k ? ", " : "", t->segs[k].first, t->segs[k].n, t->segs[k].launches, t->segs[k].patched_launches,
			t->segs[k].patches);
	fputs("]}", f);
}

/* Shapes replay will not replay, and why (too few ops, a failure, passthrough, churn). */
static void write_rejected(struct rpl_engine *re, FILE *f)
{
	bool first = true;

	for (const struct note_link *l = re->notes; l; l = l->next) {
		if (!l->note.rejected || !l->shape)
			continue;
		fprintf(f, "%s{\"shape\": %" PRIu64 ", \"why\": \"", first ? "" : ", ", cap_shape_id(l->shape));
		rpl__json_text(f, l->note.why);
		fputs("\"}", f);
		first = false;
	}
}

/* What the live templates hold outside cufold's heap: pinned stage buffers (bytes) and graph
 * nodes (the driver's memory for their execs is not visible here: counted as nodes). */
static void held_figures(struct rpl_engine *re, uint64_t *pinned, uint64_t *nodes)
{
	*pinned = *nodes = 0;
	for (const struct rpl_template *t = rpl__templates(re); t; t = t->next) {
		for (uint32_t k = 0; k < t->nsegs; k++) {
			*nodes += t->segs[k].n;
			for (uint32_t i = 0; i < t->segs[k].n; i++)
				*pinned += t->segs[k].nodes[i].stage ? t->segs[k].nodes[i].stage_bytes : 0;
		}
	}
}

void rpl_write_report_json(struct rpl_engine *re, FILE *f)
{
	struct rpl_totals tot;
	const struct rpl_totals *s = &tot;
	uint64_t pinned, nodes;
	bool first = true;

	rpl_get_totals(re, &tot); /* own_calls is counted atomically (builds run outside the lock) */
	held_figures(re, &pinned, &nodes);
	fprintf(f,
		",\n \"replay\": {\n    \"templates_built\": %" PRIu64 ", \"templates_live\": %" PRIu64
		", \"segments_built\": %" PRIu64 ", \"graph_launches\": %" PRIu64 ", \"ops_replayed\": %" PRIu64
		", \"ops_deferred\": %" PRIu64 ", \"ops_flushed_eagerly\": %" PRIu64 ", \"patches\": %" PRIu64
		", \"retired\": %" PRIu64 ", \"host_submissions_saved\": %" PRIu64 ", \"driver_calls\": %" PRIu64
		", \"matched_ops\": %" PRIu64 ", \"host_ns_per_op\": %.1f, \"host_bytes\": %zu, "
		"\"pinned_bytes\": %" PRIu64 ", \"graph_nodes_live\": %" PRIu64 ", \"build_ns_max\": %" PRIu64
		", \"build_ops_max\": %" PRIu64 ", \"passthrough_after_failure\": %s,\n"
		"    \"fallbacks\": ",
		s->templates, s->templates_live, s->segments, s->graph_launches, s->ops_replayed, s->ops_deferred,
		s->ops_flushed, s->patches, s->retired,
		s->ops_replayed >= s->graph_launches ? s->ops_replayed - s->graph_launches : 0, s->own_calls,
		s->matched_ops, rpl_host_ns_per_op(re), rpl_memory_bytes(re), pinned, nodes, s->build_ns_max,
		s->build_ops_max, s->failed ? "true" : "false");
	write_fallbacks(f, s->fallbacks);
	fprintf(f, ", \"queries_answered_not_ready\": %" PRIu64 ",\n    \"rejected_shapes\": [", s->polls_not_ready);
	write_rejected(re, f);
	fputs("],\n    ", f);
	rpl__errors_write_json(re, f);
	fputs(",\n    \"templates\": [\n", f);
	for (const struct rpl_template *t = rpl__templates(re); t; t = t->next) {
		if (!first)
			fputs(",\n", f);
		write_template(re, f, t);
		first = false;
	}
	for (const struct rpl_template *t = rpl__retired(re); t; t = t->next) {
		if (!first)
			fputs(",\n", f);
		write_template(re, f, t);
		first = false;
	}
	fprintf(f, "\n    ]\n  },\n \"host_ns_per_op\": %.1f", rpl_host_ns_per_op(re));
}
