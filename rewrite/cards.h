/* cards.h - kernel cards: what cufold knows about a kernel (which parameters are pointers, what
 * each reads and writes, over what span; its element count; whether it is elementwise, pure,
 * cat-like), loaded from small declarative text files. rewrite layer; the rewriter and the
 * capture layer use it. Everything here is pure computation: no driver call.
 *
 * ---------------------------------------------------------------------------------------------
 * The card format
 *
 * Line based. `#` starts a comment; blank lines are ignored; words are separated by blanks.
 * One card per kernel family:
 *
 *   kernel PATTERN [PATTERN ...]   opens a card. A pattern is a glob (fnmatch: * ? [..]); it is
 *                                  matched against the kernel's name as the driver reports it
 *                                  and, for an Itanium-mangled C++ name (_Z...), against its
 *                                  qualified name (ns::kernel) and its base name (kernel), with
 *                                  template arguments and parameter types left out.
 *   param NAME TYPE                a by-value parameter; TYPE is i32 u32 i64 u64 f32 f64, or
 *                                  `struct SIZE` for an opaque by-value block of SIZE bytes.
 *   param NAME ptr ACCESS SPAN     a pointer parameter. ACCESS: r, w, rw, or none (never
 *                                  dereferenced). SPAN, the bytes from the pointer on that the
 *                                  kernel may touch: an expression, `unknown` (the whole
 *                                  allocation the pointer points into), or `table` (the sum of
 *                                  the card's table lengths, for a cat's output).
 *                                  One param line per parameter, in order: the card's list must
 *                                  have the kernel's parameter count and sizes, or the card is
 *                                  not used for that kernel.
 *   count EXPR                     the element count.
 *   elementwise                    element i (i in [0, count), i = blockIdx.x*blockDim.x +
 *                                  threadIdx.x, guarded by i < count) touches only element i of
 *                                  each pointer. Needs `count` to be one integer parameter.
 *   pure                           what it writes depends only on what it reads, and it has no
 *                                  other effect: run again on the same inputs it writes the same
 *                                  bytes (a rule must still check that the launch's write set
 *                                  does not overlap its read set: rw_access_set_self_overlaps).
 *   indirect                       it reaches memory through pointers stored in device memory:
 *                                  its access set is incomplete (treat it as an unknown kernel).
 *   table PARAM ACCESS KEYS        a table of ranges inside the by-value struct parameter PARAM,
 *                                  each range read (r), written (w) or both (rw). KEYS:
 *                                    ptr=OFF+STRIDEi        entry i's pointer (8 bytes) at
 *                                                           OFF + STRIDE*i in the struct
 *                                    len=OFF+STRIDEi[:T]    entry i's length at OFF + STRIDE*i,
 *                                                           type T (i32 default, u32 i64 u64)
 *                                    count=OFF[:T]          the number of entries used (i32)
 *                                    max=N                  the most entries the kernel reads
 *                                    unit=U                 bytes per length unit (default 1)
 *                                  Entries used: min(max(count, 0), N).
 *                                  Without len= each entry's span is unknown (the whole
 *                                  allocation its pointer points into): what a derived card
 *                                  says of pointers it finds in a table but cannot bound.
 *   field PARAM OFF ACCESS SPAN    a pointer inside the by-value struct parameter PARAM: its
 *                                  8 bytes at byte OFF of the struct, ACCESS r, w or rw, SPAN an
 *                                  expression or `unknown`, as for a pointer parameter.
 *   whole TARGET UNIT COUNT STRIDE for every k in [0, COUNT) the kernel surely writes the UNIT
 *                                  bytes at TARGET + k*STRIDE, whatever the grid (what a
 *                                  grid-stride loop storing element k on every iteration
 *                                  does). TARGET: a written pointer parameter, or PARAM@OFF of
 *                                  a written field line. COUNT and STRIDE are expressions of one
 *                                  word each (no blanks). A launch's access for TARGET has
 *                                  RW_ACC_WHOLE when its span is known, COUNT >= 1,
 *                                  0 < STRIDE <= UNIT and the span is at most
 *                                  (COUNT-1)*STRIDE + UNIT: every byte of it is written.
 *   cat PARAM KEYS                 a read table (as above) whose ranges the kernel gathers, in
 *                                  order, into the contiguous output: the pointer whose SPAN is
 *                                  `table` (ACCESS w). The cat-like property.
 *   split PARAM KEYS               the inverse: the pointer whose SPAN is `table` (ACCESS r) is
 *                                  scattered, in order, into the table's ranges (written).
 *   end                            closes the card.
 *
 * Expressions: integers (decimal or 0x hex), integer parameters by name, an integer inside a
 * by-value struct parameter as NAME@OFF[:T] (T i32 default, u32 i64 u64; OFF its byte offset
 * in struct NAME: `args@96` is cat_args.count), the launch's grid
 * gx gy gz and block bx by bz, + - * / % with C precedence and truncation, unary minus,
 * parentheses, min(a, b), max(a, b) and fits32(a) (a, when it lies in [-2^31, 2^31): a card
 * whose kernel computes offsets in 32-bit integers says so). Evaluated in 64-bit signed
 * arithmetic; an overflow, a division by zero or a fits32 out of range makes that span unknown;
 * a negative span counts as 0.
 *
 * A malformed card is rejected with one warning naming file, line and reason; the other cards
 * of the file still load. Cards are looked up newest first: a card loaded later overrides an
 * earlier one for every name both match (a card repeating an earlier card's pattern is logged
 * at info). Load order: the built-in cards (rewrite/builtin_cards.txt: cufold's own kernels
 * only), then each file of CUFOLD_CARDS=path[:path] in order (the test kernels' cards are
 * tests/kernels/test-kernels.cards, which the tests and benchmarks load this way).
 *
 * Example:
 *
 *   kernel axpy _Z4axpy*             # y[i] = a*x[i] + y[i]
 *     param y ptr rw n*4
 *     param x ptr r  n*4
 *     param a f32
 *     param n i32
 *     count n
 *     elementwise
 *   end
 *
 * Spans are upper bounds (what the kernel may touch). A written span is also what the kernel
 * surely writes only for an elementwise (or cat/split) launch whose access set has
 * RW_SET_COVERS, or for an access with RW_ACC_WHOLE.
 * --------------------------------------------------------------------------------------------- */
#ifndef RW_CARDS_H
#define RW_CARDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

#define RW_CARD_MAX_PARAMS 32   /* parameters a card may list */
#define RW_CARD_MAX_TABLES 4    /* table/cat/split lines per card */
#define RW_CARD_MAX_ENTRIES 64  /* table entries per card, all tables together */
#define RW_CARD_MAX_FIELDS 32   /* field lines per card */
#define RW_CARD_MAX_WHOLE 8     /* whole lines per card */
#define RW_ACCESS_MAX (RW_CARD_MAX_PARAMS + RW_CARD_MAX_ENTRIES + RW_CARD_MAX_FIELDS)
#define RW_ACCESS_FIELD 0xff    /* struct rw_access.table of a `field` line's access */

struct rw_card;  /* one parsed card; immutable, owned by its set */
struct rw_cards; /* a set of cards with a name cache; thread-safe */

/* Card properties (rw_card_flags) and access-set properties (struct rw_access_set). */
enum {
	RW_CARD_ELEMENTWISE = 1u << 0, /* see `elementwise` */
	RW_CARD_PURE = 1u << 1,        /* see `pure` */
	RW_CARD_CAT = 1u << 2,         /* see `cat` */
	RW_CARD_SPLIT = 1u << 3,       /* see `split` */
	RW_CARD_INDIRECT = 1u << 4,    /* see `indirect` */
	RW_CARD_COUNT = 1u << 5,       /* the card has a `count` */
};

/* ------------------------------------------------------------------ sets and lookup */

struct rw_cards *rw_cards_create(void);
void rw_cards_destroy(struct rw_cards *set);

/* Parse text (len bytes, need not be NUL-terminated) and add its good cards; file names the
 * source in warnings. Returns the number of cards rejected (each warned once), or -CF_ENOMEM
 * (cards parsed before stay). */
int rw_cards_parse(struct rw_cards *set, const char *file, const char *text, size_t len);
/* Read and parse one file. Returns the cards rejected, or -CF_EIO when the file cannot be
 * read or is not a regular file (a FIFO, a device, a directory: refused without blocking;
 * warned, naming CUFOLD_CARDS, the file and the reason). */
int rw_cards_load_file(struct rw_cards *set, const char *path);
/* Each file of a colon-separated list, in order (empty elements are skipped). Returns the
 * cards rejected plus the files that could not be read, or -CF_ENOMEM. */
int rw_cards_load_list(struct rw_cards *set, const char *list);
/* The built-in cards. Returns the cards rejected (0 unless the build is broken). */
int rw_cards_add_builtin(struct rw_cards *set);
/* Cards in the set. */
unsigned rw_cards_count(const struct rw_cards *set);

/* The card for a kernel name (mangled or not), NULL when none matches. Cached per name. */
const struct rw_card *rw_cards_find(struct rw_cards *set, const char *name);

/* The process's cards: the built-in ones, then CUFOLD_CARDS; loaded on first use, never
 * NULL after a successful load (NULL only when out of memory). */
struct rw_cards *rw_cards_global(void);
/* rw_cards_find on the process's cards. */
const struct rw_card *rw_card_lookup(const char *name);

/* ------------------------------------------------------------------ one card */

unsigned rw_card_flags(const struct rw_card *card);
/* The card's first pattern (its name in logs). */
const char *rw_card_name(const struct rw_card *card);
/* Where the card was defined. */
const char *rw_card_file(const struct rw_card *card);
unsigned rw_card_line(const struct rw_card *card);
unsigned rw_card_param_count(const struct rw_card *card);
/* Index of the parameter called name, or -1. */
int rw_card_param_index(const struct rw_card *card, const char *name);
/* Index of the count parameter when `count` is a single parameter, else -1. */
int rw_card_count_param(const struct rw_card *card);

/* ------------------------------------------------------------------ access sets */

/* One parameter's place in the packed parameter buffer, as cuFuncGetParamInfo reports it. */
struct rw_param_info {
	size_t offset;                      /* bytes from the start of the buffer */
	size_t size;                        /* bytes */
};

/* A launch as the capture layer recorded it. */
struct rw_launch_args {
	const void *buf;                    /* the packed parameter bytes */
	size_t buf_size;                    /* bytes in buf */
	const struct rw_param_info *params; /* layout of each parameter */
	unsigned int nparams;               /* entries in params */
	unsigned int grid[3];               /* gridDim x, y, z */
	unsigned int block[3];              /* blockDim x, y, z */
};

enum {
	RW_ACC_READ = 1u << 0,    /* the range is read */
	RW_ACC_WRITE = 1u << 1,   /* the range is written */
	RW_ACC_UNKNOWN = 1u << 2, /* span unknown: the whole allocation addr points into */
	RW_ACC_WHOLE = 1u << 3,   /* written, and every byte of the span surely written (a
				     `whole` line held for this launch) */
};

/* One range the launch may touch. */
struct rw_access {
	uint64_t addr;            /* device address (the pointer's value) */
	uint64_t bytes;           /* length; 0 with RW_ACC_UNKNOWN (or when nothing is touched) */
	uint16_t param;           /* the parameter it comes from */
	int16_t entry;            /* table entry or field line index, -1 for a pointer parameter */
	uint8_t table;            /* which table of the card (when entry >= 0), RW_ACCESS_FIELD
				     for a field line */
	uint8_t flags;            /* RW_ACC_* */
	uint32_t word;            /* bytes from the start of the parameter buffer to the pointer's
				     own 8 bytes (a parameter, a table entry's or a field's) */
};

enum {
	RW_SET_PURE = 1u << 0,         /* the card is pure */
	RW_SET_ELEMENTWISE = 1u << 1,  /* the card is elementwise and the launch is 1-D */
	RW_SET_CAT = 1u << 2,          /* cat-like; the table decoded (cat_out, tables[0]) */
	RW_SET_SPLIT = 1u << 3,        /* split-like; likewise */
	RW_SET_INDIRECT = 1u << 4,     /* incomplete: treat as an unknown kernel */
	RW_SET_UNKNOWN_SPAN = 1u << 5, /* some access has RW_ACC_UNKNOWN */
	RW_SET_COUNT = 1u << 6,        /* count holds the element count */
	RW_SET_COVERS = 1u << 7,       /* 1-D launch whose gridDim.x*blockDim.x >= count */
};

struct rw_access_table {
	uint16_t first;           /* index in acc[] of entry 0 */
	uint16_t n;               /* entries used, in table order */
};

struct rw_access_set {
	unsigned flags;                           /* RW_SET_* */
	unsigned n;                               /* accesses in acc[] */
	int64_t count;                            /* element count (RW_SET_COUNT); for cat/split
						     without a `count`, the table's total length */
	int count_param;                          /* parameter holding the count, or -1 */
	int cat_out;                              /* cat/split: acc[] index of the contiguous side, else -1 */
	unsigned ntables;                         /* tables decoded */
	struct rw_access_table tables[RW_CARD_MAX_TABLES]; /* where each table's entries are */
	struct rw_access acc[RW_ACCESS_MAX];      /* pointer parameters in order, then table
						     entries, then field lines */
};

/* Evaluate what a launch of card's kernel touches. Returns 0, or -CF_EINVAL when the launch's
 * parameters do not match the card (count, sizes, or a parameter outside buf): then *set says
 * nothing and the kernel must be treated as unknown. */
int rw_card_access(const struct rw_card *card, const struct rw_launch_args *args,
		   struct rw_access_set *set);

/* Whether a written range of the set overlaps a range it reads (an unknown span overlaps
 * every range of its allocation, so any unknown span with a write counts). A pure kernel whose
 * set self-overlaps is not idempotent. */
bool rw_access_set_self_overlaps(const struct rw_access_set *set);

/* ------------------------------------------------------------------ names */

/* For an Itanium-mangled name (_Z...): write the qualified function name without template
 * arguments or parameters ("ns::kernel") into qual (size bytes) and return the offset of the
 * base name ("kernel") in it; -1 when name is not mangled or not understood (then only the
 * raw name is matched: an unknown kernel is safe). */
int rw_demangle_base(const char *name, char *qual, size_t size);

/* ------------------------------------------------------------------ expressions, for tests */

/* Compile and evaluate expression text with the given variables (names[i] = values[i]; grid
 * names are ordinary names here). 0 and *out, -CF_EINVAL for a syntax error or an unknown name
 * (err, when given, gets the reason), -CF_ERANGE for overflow or division by zero. */
int rw_expr_eval_text(const char *text, const char *const *names, const int64_t *values,
		      unsigned n, int64_t *out, char *err, size_t errsize);

/* Internal, for common setup and tests: load into set the built-in cards and the files of
 * cfg->cards. Returns the cards and files rejected. */
int rw_cards__load_config(struct rw_cards *set, const struct cf_config *cfg);

#endif
