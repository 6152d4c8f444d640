/* cards_int.h - private to the kernel cards (rewrite/cards.c, card_parse.c, card_eval.c): the
 * parsed form of a card and the compiled form of its expressions. rewrite layer. */
#ifndef RW_CARDS_INT_H
#define RW_CARDS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rewrite/cards.h"

#define RW_CARD_MAX_PATTERNS 8  /* patterns on one `kernel` line */
#define RW_CARD_NAME_MAX 48     /* parameter name length, NUL included */
#define RW_EXPR_MAX_OPS 64      /* operations in one compiled expression */
#define RW_EXPR_MAX_DEPTH 16    /* evaluation stack */

/* Grid variables an expression may name; their values follow the parameters in the
 * evaluator's variable array (then the struct fields it names: RW_CARD_MAX_FVARS). */
enum rw_grid_var { RW_GX, RW_GY, RW_GZ, RW_BX, RW_BY, RW_BZ, RW_GRID_VARS };

enum rw_type {
	RW_T_I32,    /* int */
	RW_T_U32,    /* unsigned int */
	RW_T_I64,    /* long long */
	RW_T_U64,    /* unsigned long long */
	RW_T_F32,    /* float (not usable in expressions) */
	RW_T_F64,    /* double (likewise) */
	RW_T_PTR,    /* a device pointer, 8 bytes */
	RW_T_STRUCT, /* an opaque by-value block */
};

enum rw_span {
	RW_SPAN_NONE,    /* not a pointer, or access none */
	RW_SPAN_EXPR,    /* bytes given by an expression */
	RW_SPAN_UNKNOWN, /* the whole allocation */
	RW_SPAN_TABLE,   /* the sum of the card's table lengths */
};

/* Reverse Polish: each op pushes or combines values on a stack. */
enum rw_op_kind {
	RW_OP_CONST, /* push v */
	RW_OP_VAR,   /* push variable v (a parameter index, nparams + enum rw_grid_var, or
		      * nparams + RW_GRID_VARS + a struct field's index in fvars) */
	RW_OP_NEG,   /* unary minus */
	RW_OP_ADD,
	RW_OP_SUB,
	RW_OP_MUL,
	RW_OP_DIV,
	RW_OP_MOD,
	RW_OP_MIN,
	RW_OP_MAX,
	RW_OP_FITS32, /* the top value when it lies in [-2^31, 2^31): else the expression fails */
};

struct rw_op {
	int64_t v;                  /* constant, or variable index */
	uint8_t kind;               /* enum rw_op_kind */
};

/* An expression is a run of ops in its card's pool. */
struct rw_expr {
	uint16_t first;             /* index of its first op in card->ops */
	uint16_t n;                 /* ops; 0 means no expression */
};

struct rw_card_param {
	char name[RW_CARD_NAME_MAX]; /* as written on the card */
	uint8_t type;                /* enum rw_type */
	uint8_t access;              /* RW_ACC_READ | RW_ACC_WRITE, pointers only */
	uint8_t span;                /* enum rw_span */
	uint32_t size;               /* bytes the parameter takes */
	struct rw_expr expr;         /* the span (RW_SPAN_EXPR) */
};

struct rw_card_table {
	uint8_t param;              /* the struct parameter holding it */
	uint8_t access;             /* RW_ACC_* of each range */
	uint8_t len_type;           /* enum rw_type of a length (integer) */
	uint8_t count_type;         /* enum rw_type of the count (integer) */
	uint32_t ptr_off;           /* pointer of entry i at ptr_off + ptr_stride*i */
	uint32_t ptr_stride;
	uint32_t len_off;           /* length of entry i at len_off + len_stride*i */
	uint32_t len_stride;
	uint32_t count_off;         /* the count */
	uint32_t max;               /* the most entries read */
	uint32_t unit;              /* bytes per length unit */
};

#define RW_CARD_MAX_FVARS 16   /* struct fields (NAME@OFF) one card's expressions may name */

/* An integer inside a by-value struct parameter that an expression names (NAME@OFF:TYPE);
 * its value follows the grid variables in the evaluator's variable array. */
struct rw_card_fvar {
	uint8_t param;              /* the struct parameter */
	uint8_t type;               /* enum rw_type: an integer */
	uint32_t off;               /* its bytes start here in the struct */
};

/* A `field` line: one pointer at a fixed offset inside a by-value struct parameter. */
struct rw_card_field {
	uint8_t param;              /* the struct parameter holding it */
	uint8_t access;             /* RW_ACC_READ | RW_ACC_WRITE */
	uint8_t span;               /* RW_SPAN_EXPR or RW_SPAN_UNKNOWN */
	uint32_t off;               /* the pointer's 8 bytes start here in the struct */
	struct rw_expr expr;        /* the span (RW_SPAN_EXPR) */
};

/* A `whole` line: for every k in [0, count) the launch surely writes the unit bytes at its
 * target's pointer + k * stride (target: a pointer parameter, or a field line). */
struct rw_card_whole {
	int16_t param;              /* the pointer parameter, or -1 */
	int16_t field;              /* the field line, or -1 */
	uint32_t unit;              /* bytes each k writes */
	struct rw_expr count;       /* k's range */
	struct rw_expr stride;      /* bytes between two k */
};

struct rw_card {
	char *patterns[RW_CARD_MAX_PATTERNS]; /* globs, malloc'd */
	unsigned npatterns;         /* used entries of patterns */
	char *file;                 /* source, malloc'd */
	unsigned line;              /* line of `kernel` */
	unsigned flags;             /* RW_CARD_* */
	unsigned nparams;           /* entries of params */
	struct rw_card_param *params; /* malloc'd, nparams */
	struct rw_expr count;       /* RW_CARD_COUNT */
	int count_param;            /* count is this parameter alone, or -1 */
	unsigned ntables;           /* entries of tables */
	struct rw_card_table tables[RW_CARD_MAX_TABLES]; /* table, cat and split lines in order */
	int table_ptr;              /* the parameter whose span is `table`, or -1 */
	unsigned nfvars;            /* entries of fvars */
	struct rw_card_fvar fvars[RW_CARD_MAX_FVARS]; /* struct fields named in expressions */
	unsigned nfields;           /* entries of fields */
	struct rw_card_field fields[RW_CARD_MAX_FIELDS]; /* field lines in order */
	unsigned nwhole;            /* entries of whole */
	struct rw_card_whole whole[RW_CARD_MAX_WHOLE]; /* whole lines in order */
	struct rw_op *ops;          /* every expression's ops, malloc'd */
	unsigned nops;              /* used entries of ops */
};

/* The words of cards and expressions alike (card_expr.c): identifiers are [A-Za-z_][A-Za-z0-9_]*;
 * a number is unsigned decimal or 0x hex: rw__parse_number returns the characters it used (0:
 * none, or too large for 64 bits). */
bool rw__is_ident_start(char c);
bool rw__is_ident_char(char c);
size_t rw__parse_number(const char *s, uint64_t *out);

/* The grid variables' names in expressions, in variable order after the card's parameters
 * (card_expr.c); the card parser reserves them. */
extern const char *const rw__grid_names[RW_GRID_VARS];

/* Compile text into card->ops (appending) with the card's parameters as variables; on error
 * returns -CF_EINVAL with a reason in err. */
int rw__expr_compile(struct rw_card *card, const char *text, struct rw_expr *out, char *err,
		     size_t errsize);
/* Evaluate with vars (the card's parameters then the grid variables); a variable whose bit
 * is set in invalid (a u64 beyond int64) makes the result unknown. 0, or -CF_ERANGE for that,
 * an overflow or a division by zero. */
int rw__expr_eval(const struct rw_op *ops, struct rw_expr e, const int64_t *vars, uint64_t invalid,
		  int64_t *out);

/* Free a card and everything it holds. */
void rw__card_free(struct rw_card *card);
/* Add a parsed card to the set (it takes ownership; on failure the card is freed). */
int rw__cards_add(struct rw_cards *set, struct rw_card *card);

/* Size of a type in bytes (struct: 0, the card says). */
unsigned rw__type_size(enum rw_type t);
bool rw__type_is_int(enum rw_type t);

#endif
