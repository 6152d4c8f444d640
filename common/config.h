/* config.h - every CUFOLD_* environment variable, parsed once with secure_getenv. common layer.
 *
 * A bad value is reported once per process on stderr, naming the variable, the value and what
 * is accepted; the default is then used. Empty means unset. For a setuid/setgid process
 * secure_getenv returns nothing, so every variable keeps its default and no file is written. */
#ifndef CF_CONFIG_H
#define CF_CONFIG_H

#include <stdbool.h>

#include "common/log.h"

#define CF_PATH_MAX 4096

enum cf_mode {
	CF_MODE_OFF = 0,    /* pass everything to the driver; lookups hand out real pointers */
	CF_MODE_TRACE = 1,  /* observe and count; never change what reaches the driver */
	CF_MODE_REPLAY = 2, /* record, rewrite and replay repeated windows (default) */
};

/* X(field index name, variable): the variables cufold knows, in the order of struct cf_config. */
#define CF_CONFIG_VARS(X) \
	X(MODE, "CUFOLD_MODE") \
	X(OPT, "CUFOLD_OPT") \
	X(RULES, "CUFOLD_RULES") \
	X(WARMUP, "CUFOLD_WARMUP") \
	X(SEGMENT, "CUFOLD_SEGMENT") \
	X(MIN_OPS, "CUFOLD_MIN_OPS") \
	X(MAX_TEMPLATES, "CUFOLD_MAX_TEMPLATES") \
	X(RENAME_MAX_BYTES, "CUFOLD_RENAME_MAX_BYTES") \
	X(CARDS, "CUFOLD_CARDS") \
	X(BARRIER_KERNELS, "CUFOLD_BARRIER_KERNELS") \
	X(CALLSITES, "CUFOLD_CALLSITES") \
	X(GATE, "CUFOLD_GATE") \
	X(CHURN, "CUFOLD_CHURN") \
	X(STRICT, "CUFOLD_STRICT") \
	X(LOG, "CUFOLD_LOG") \
	X(LOG_FILE, "CUFOLD_LOG_FILE") \
	X(REPORT, "CUFOLD_REPORT") \
	X(TRACE, "CUFOLD_TRACE") \
	X(DOT, "CUFOLD_DOT") \
	X(LIBCUDA, "CUFOLD_LIBCUDA") \
	X(RUN_ID, "CUFOLD_RUN_ID") \
	X(REPORT_EVERY, "CUFOLD_REPORT_EVERY") \
	X(DERIVE, "CUFOLD_DERIVE")

enum cf_config_var {
#define CF_CONFIG_VAR_ENUM_(id, name) CF_VAR_##id,
	CF_CONFIG_VARS(CF_CONFIG_VAR_ENUM_)
#undef CF_CONFIG_VAR_ENUM_
	CF_VAR_COUNT
};

/* Defaults (the README's table repeats them). */
#define CF_DEFAULT_MODE CF_MODE_REPLAY
#define CF_DEFAULT_OPT 1
#define CF_DEFAULT_WARMUP 2
#define CF_DEFAULT_SEGMENT 512
#define CF_DEFAULT_MIN_OPS 8
#define CF_DEFAULT_MAX_TEMPLATES 256
#define CF_DEFAULT_RENAME_MAX_BYTES (64u << 20)
#define CF_DEFAULT_BARRIER_KERNELS "nccl*"
#define CF_DEFAULT_LIBCUDA "libcuda.so.1"
#define CF_RUN_ID_MAX 64           /* longest CUFOLD_RUN_ID */
#define CF_REPORT_EVERY_MAX 86400  /* longest CUFOLD_REPORT_EVERY period, seconds */

/* cufold's version, from the top-level VERSION file (the Makefile passes it). */
#ifndef CUFOLD_VERSION
#define CUFOLD_VERSION "unknown"
#endif

struct cf_config {
	enum cf_mode mode;             /* CUFOLD_MODE: off|trace|replay */
	int opt;                       /* CUFOLD_OPT: rewrite level 0, 1 or 2 */
	char rules[512];               /* CUFOLD_RULES: "+name,-name" as given; "" when unset */
	unsigned warmup;               /* CUFOLD_WARMUP: sightings before a window becomes a template */
	unsigned segment;              /* CUFOLD_SEGMENT: most ops per graph segment */
	unsigned min_ops;              /* CUFOLD_MIN_OPS: shorter windows stay eager */
	unsigned max_templates;        /* CUFOLD_MAX_TEMPLATES: templates kept (LRU) */
	unsigned rename_max_bytes;     /* CUFOLD_RENAME_MAX_BYTES: device bytes cufold's buffers for
				        * writing elsewhere may take at once (0: no renaming) */
	char cards[CF_PATH_MAX];       /* CUFOLD_CARDS: path[:path] of kernel cards (empty entries
				        * skipped); "" none */
	char barrier_kernels[1024];    /* CUFOLD_BARRIER_KERNELS: pattern[,pattern] (glob) */
	bool callsites;                /* CUFOLD_CALLSITES: 0|1, hash call sites with libunwind */
	bool gate;                     /* CUFOLD_GATE: 0|1, replay a shape only while it pays (1) */
	bool churn;                    /* CUFOLD_CHURN: 0|1, a template whose bindings move on most
				        * launches goes back to eager where patching costs more (1) */
	bool strict;                   /* CUFOLD_STRICT: 0|1, a failure of cufold's own or a failed
				        * guard is an error and exit status 70 (0) */
	bool derive;                   /* CUFOLD_DERIVE: 0|1, cards derived from kernels' PTX where no
				        * user card names them (1) */
	enum cf_log_level log_level;   /* CUFOLD_LOG: err|warn|info|debug */
	char log_file[CF_PATH_MAX];    /* CUFOLD_LOG_FILE: log destination ("%p" expanded when
				        * opened); "" is stderr */
	char report[CF_PATH_MAX];      /* CUFOLD_REPORT: JSON summary at exit; "" none */
	char trace[CF_PATH_MAX];       /* CUFOLD_TRACE: Chrome trace file; "" none */
	char dot[CF_PATH_MAX];         /* CUFOLD_DOT: directory for Graphviz files; "" none */
	char libcuda[CF_PATH_MAX];     /* CUFOLD_LIBCUDA: the real driver to dlopen */
	char run_id[CF_RUN_ID_MAX + 1]; /* CUFOLD_RUN_ID: [A-Za-z0-9._-]{1,64} the wrapper sets per
				        * run, copied into the report; "" none */
	unsigned report_every;         /* CUFOLD_REPORT_EVERY: rewrite the report at most every so
				        * many seconds while the program runs; 0 only at exit */
	unsigned bad;                  /* bit (1 << CF_VAR_x) per rejected value */
	bool secure;                   /* setuid/setgid process: environment ignored, no files */
};

/* The process's configuration: parsed and applied (log level, log file) on first use;
 * thread-safe; never NULL. */
const struct cf_config *cf_config_get(void);

/* Fill *cfg with the defaults. */
void cf_config_defaults(struct cf_config *cfg);
/* Parse the environment into *cfg now (reporting bad values not reported before). Returns the
 * number of rejected values. */
int cf_config_parse(struct cf_config *cfg);

const char *cf_mode_name(enum cf_mode mode);
const char *cf_config_var_name(enum cf_config_var var);

/* Internal, for the shim's fork handler and for tests. */
void cf_config__atfork_child(void);
void cf_config__reset_reports(void);

#endif
