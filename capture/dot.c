/* dot.c - one Graphviz file per window shape (CUFOLD_DOT=dir): the trace graph of the shape's
 * last sighting, nodes colored by stream, edges of stream order solid and edges across streams
 * (events, the legacy stream's implicit synchronization) dashed; ops the rewrite removed, merged
 * or rewrote marked as replay told (cap_shape_mark). capture layer.
 *
 * Files are dir/shape-<id>.dot; each starts with the marker line "// cufold window shape", the
 * only kind of existing file cap__out_openat lets this replace (written whole, then renamed). The folder ("%p" expanded) is
 * created if missing (one level), then opened once without following a symlink, and every file
 * is created relative to that descriptor: a folder swapped for a symlink afterwards is not
 * followed either. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/capture_int.h"
#include "common/compiler.h"
#include "common/config.h"
#include "common/errors.h"

#define DOT_MARKER "// cufold window shape"

static const char *const palette[] = { "#a6cee3", "#b2df8a", "#fb9a99", "#fdbf6f",
				       "#cab2d6", "#ffff99", "#8dd3c7", "#d9d9d9" };

static void node_label(FILE *f, const struct cap_op *op, uint32_t i)
{
	char name[160];
	size_t j = 0;

	for (const char *s = cap_op_name(op); *s && j + 1 < sizeof(name); s++)
		name[j++] = (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20) ? '?' : *s;
	name[j] = 0;
	fprintf(f, "%u %s", i, name);
	switch (op->kind) {
	case CAP_OP_KERNEL:
		fprintf(f, "\\n<<<(%u,%u,%u),(%u,%u,%u)>>>", op->u.kernel.grid[0], op->u.kernel.grid[1],
			op->u.kernel.grid[2], op->u.kernel.block[0], op->u.kernel.block[1], op->u.kernel.block[2]);
		break;
	case CAP_OP_MEMCPY: {
		static const char *const dirs[] = { "HtoD", "DtoH", "DtoD", "HtoH" };

		fprintf(f, "\\n%s %llu B", dirs[op->u.memcpy.dir & 3], (unsigned long long)op->u.memcpy.bytes);
		break;
	}
	case CAP_OP_MEMSET:
		fprintf(f, "\\n%llu B = %u", (unsigned long long)cap_op_bytes(op), op->u.memset.value);
		break;
	case CAP_OP_EVENT_RECORD:
	case CAP_OP_EVENT_WAIT:
		fprintf(f, "\\nevent %u", op->u.event.slot);
		break;
	default:
		break;
	}
}

static int write_shape(int dfd, const struct cap_shape *s)
{
	const struct cap_window *w = cap_shape_last(s);
	struct cap_graph *g = cap_graph_build(w);
	char path[CF_PATH_MAX];
	struct cf_out o;
	FILE *f;
	int rc;

	if (!g)
		return -CF_ENOMEM;
	if (snprintf(path, sizeof(path), "shape-%llu.dot", (unsigned long long)cap_shape_id(s)) >= (int)sizeof(path)) {
		cap_graph_destroy(g);
		errno = ENAMETOOLONG;
		return -CF_EIO;
	}
	if (cap__out_openat(&o, dfd, path, DOT_MARKER) != 0) {
		cap_graph_destroy(g);
		return -CF_EIO;
	}
	f = o.f;
	fprintf(f, "%s %llu: %u ops, %llu sightings, %u streams\n", DOT_MARKER, (unsigned long long)cap_shape_id(s),
		cap_window_nops(w), (unsigned long long)cap_shape_sightings(s), cap_window_nstreams(w));
	fprintf(f, "digraph shape_%llu {\n", (unsigned long long)cap_shape_id(s));
	fprintf(f, "  label=\"window shape %llu: %u ops on %u streams, seen %llu times, ended by %s (%s)\";\n",
		(unsigned long long)cap_shape_id(s), cap_window_nops(w), cap_window_nstreams(w),
		(unsigned long long)cap_shape_sightings(s), cap_boundary_label(cap_window_closed_by(w)),
		cap_window_closed_api(w) < DRV_API_COUNT ? drv_api[cap_window_closed_api(w)].name : "?");
	fprintf(f, "  labelloc=t; rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fontname=\"monospace\", "
		   "fontsize=10];\n");
	for (uint32_t sl = 0; sl < cap_window_nstreams(w); sl++) {
		const struct cap_wstream *ws = cap_window_stream(w, sl);

		fprintf(f, "  // stream slot %u: stream %u, kind %u, color %s\n", sl, ws->id, ws->kind,
			palette[sl % CF_ARRAY_SIZE(palette)]);
	}
	for (uint32_t i = 0; i < cap_window_nops(w); i++) {
		const struct cap_op *op = cap_window_op(w, i);
		const struct cap_mark *m = s->marks && i < s->nops ? &s->marks[i] : NULL;
		const char *rule = m && m->rule ? m->rule : "?";

		fprintf(f, "  n%u [label=\"", i);
		node_label(f, op, i);
		/* what the rewrite did: removed nodes grey and dashed, merged ones dotted with the op
		 * that does their work, rewritten ones (merged nodes stand there) with a bold border */
		if (m && m->kind == CAP_MARK_REMOVED)
			fprintf(f, "\\nremoved by %s\", fillcolor=\"#eeeeee\", style=\"rounded,filled,dashed\", "
				   "fontcolor=\"#777777\"%s];\n", rule, op->kind == CAP_OP_KERNEL ? "" : ", shape=note");
		else if (m && m->kind == CAP_MARK_MERGED)
			fprintf(f, "\\nmerged into %u by %s\", fillcolor=\"%s\", style=\"rounded,filled,dotted\"%s];\n",
				m->into, rule, palette[op->stream_slot % CF_ARRAY_SIZE(palette)],
				op->kind == CAP_OP_KERNEL ? "" : ", shape=note");
		else if (m && m->kind == CAP_MARK_REWRITTEN)
			fprintf(f, "\\nrewritten by %s\", fillcolor=\"%s\", penwidth=3%s];\n", rule,
				palette[op->stream_slot % CF_ARRAY_SIZE(palette)], op->kind == CAP_OP_KERNEL ? "" : ", shape=note");
		else
			fprintf(f, "\", fillcolor=\"%s\"%s];\n", palette[op->stream_slot % CF_ARRAY_SIZE(palette)],
				op->kind == CAP_OP_KERNEL ? "" : ", shape=note");
	}
	for (uint32_t i = 0; s->marks && i < cap_window_nops(w) && i < s->nops; i++)
		if (s->marks[i].kind == CAP_MARK_MERGED && s->marks[i].into < s->nops)
			fprintf(f, "  n%u -> n%u [style=dotted, arrowhead=none, constraint=false];\n", i, s->marks[i].into);
	for (uint32_t i = 0; i < cap_graph_nnodes(g); i++) {
		const uint32_t *p = cap_graph_pred(g, i);

		for (uint32_t j = 0; j < cap_graph_npred(g, i); j++) {
			bool same = cap_window_op(w, p[j])->stream_slot == cap_window_op(w, i)->stream_slot;

			fprintf(f, "  n%u -> n%u%s;\n", p[j], i, same ? "" : " [style=dashed]");
		}
	}
	fprintf(f, "}\n");
	rc = cap__out_close(&o);
	cap_graph_destroy(g);
	return rc;
}

int cap_write_dot(struct cap_engine *ce, const char *path)
{
	char dir[CF_PATH_MAX];
	int rc = 0, dfd, saved;

	if (!cap__path_expand(path, dir, sizeof(dir))) {
		errno = ENAMETOOLONG;
		return -CF_EIO;
	}
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return -CF_EIO;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		struct stat st;

		/* Linux answers ENOTDIR for a symlink here; say what it is */
		if (errno == ENOTDIR && lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
			errno = ELOOP;
		return -CF_EIO;
	}
	for (struct cap_shape *s = cap_shape_first(ce); s; s = cap_shape_next(s)) {
		int r = write_shape(dfd, s);

		if (r && !rc)
			rc = r;
		if (r && errno != EEXIST)
			break; /* the folder is unusable: do not try every shape */
	}
	saved = errno;
	close(dfd);
	errno = saved;
	return rc;
}
