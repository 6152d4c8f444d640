/* sim_graph_int.h - the software device's graphs, graph execs and stream capture, shared by
 * graph.c and capture.c. tests/simcuda layer; private to those two files.
 *
 * Invariants:
 *  1. A graph owns its nodes; a node owns its payload template (events are referenced, never
 *     owned). An exec owns a deep copy of every node of the graph it was made from, so later
 *     edits or the destruction of the graph never reach it.
 *  2. A launch clones each exec node's payload into a fresh work item: pending items never
 *     point into an exec, so destroying an exec (or updating it) after a launch is safe.
 *  3. A node's dependencies are nodes of the same graph, without duplicates.
 *  4. A stream belongs to at most one capture (s->capture); a capture's stream list names
 *     exactly the streams whose s->capture points at it.
 */
#ifndef SIM_GRAPH_INT_H
#define SIM_GRAPH_INT_H

#include "sim_int.h"

/* What one node is, apart from its place in a graph: the same for graph nodes, exec nodes and
 * nodes captured from a stream. */
struct sim_node_body {
	CUgraphNodeType type;           /* CU_GRAPH_NODE_TYPE_* */
	const struct sim_work_ops *ops; /* kind of work a launch makes (kernel, copy, memset, ...) */
	void *payload;                  /* owned template; NULL for empty and event nodes */
	struct sim_event *event;        /* event record / wait nodes: the event (not owned) */
	CUfunction func;                /* kernel nodes: the CUfunction given, or NULL */
	CUkernel kern;                  /* kernel nodes: the CUkernel given (when func is NULL) */
	CUDA_MEMCPY3D copy;             /* memcpy nodes: the descriptor given (GetParams) */
	CUDA_MEMSET_NODE_PARAMS memset; /* memset nodes: the parameters given (GetParams) */
};

struct sim_graph;

struct sim_gnode {
	uint32_t magic;                 /* SIM_MAGIC_GNODE */
	struct sim_graph *graph;        /* owning graph */
	unsigned int index;             /* position in graph->nodes (creation order) */
	struct sim_node_body body;      /* what it does */
	struct sim_gnode **deps;        /* nodes that run first (same graph) */
	unsigned int ndeps, capdeps;    /* used and allocated slots of deps */
	const struct sim_gnode *clone_of; /* node it was cloned from (compared only), or NULL */
};

struct sim_graph {
	uint32_t magic;                 /* SIM_MAGIC_GRAPH */
	struct sim_gnode **nodes;       /* every node, in creation order */
	unsigned int n, cap;            /* used and allocated slots of nodes */
};

/* A node of an exec: the exec's own copy. */
struct sim_xnode {
	struct sim_node_body body;      /* owned copy of the node */
	const struct sim_gnode *orig;   /* node of the instantiated graph (compared only) */
	const struct sim_gnode *alias;  /* matching node of the graph of the last update, or NULL */
	unsigned int orig_index;        /* creation position in the instantiated graph */
	unsigned int *deps;             /* exec positions of its dependencies (all smaller) */
	unsigned int ndeps;             /* used entries of deps */
	bool enabled;                   /* cuGraphNodeSetEnabled: disabled nodes run as empty */
};

struct sim_gexec {
	uint32_t magic;                 /* SIM_MAGIC_GEXEC */
	struct sim_xnode *nodes;        /* in topological order */
	unsigned int n;                 /* number of nodes */
	cuuint64_t flags;               /* instantiation flags */
	uint64_t launches;              /* launches so far */
	struct sim_work *last_join;     /* join item of the latest launch (a reference), or NULL:
					 * CUDA orders each launch behind the exec's previous one */
};

/* ---------------------------------------------------------------- graph.c */

struct sim_graph *sim_graph_from(CUgraph h);
struct sim_gnode *sim_gnode_from(CUgraphNode h);
struct sim_gexec *sim_gexec_from(CUgraphExec h);

struct sim_graph *sim_graph_new(void);
void sim_graph_free(struct sim_graph *g);

/* Add a node with body b (its payload passes to the node, also on failure) depending on
 * deps[0..ndeps) (nodes of g, duplicates ignored). */
CUresult sim_graph_add(struct sim_graph *g, struct sim_node_body *b, struct sim_gnode *const *deps,
		       size_t ndeps, struct sim_gnode **out);

/* The node type of a work kind captured from a stream. */
CUgraphNodeType sim_node_type_of(const struct sim_work_ops *ops);
/* A deep copy of src's payload into dst (other fields copied as they are). */
CUresult sim_node_body_copy(struct sim_node_body *dst, const struct sim_node_body *src);
/* Release a body's payload. */
void sim_node_body_fini(struct sim_node_body *b);
/* A body for work captured from a stream: ops and payload (which passes to the body), with the
 * descriptors GetParams answers with rebuilt from the payload. */
void sim_node_body_from_work(struct sim_node_body *b, const struct sim_work_ops *ops, void *payload);
/* An empty node's body (also what a disabled exec node runs as). */
void sim_node_body_empty(struct sim_node_body *b);

/* ---------------------------------------------------------------- capture.c */

/* Whether g is the graph of a capture in progress (it may not be destroyed, nor lose nodes). */
bool sim__capture_owns_graph(const struct sim_graph *g);
/* cuGraphLaunch into a capturing stream: the exec's nodes join the capture's graph. */
CUresult sim__capture_graph_exec(struct sim_stream *s, const struct sim_gexec *x);

#endif
