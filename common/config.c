/* config.c - parsing and validation of every CUFOLD_* variable (see config.h). common layer. */
#include "common/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "common/compiler.h"
#include "common/errors.h"

extern char **environ;

static const char *const var_names[CF_VAR_COUNT] = {
#define CF_CONFIG_VAR_NAME_(id, name) name,
	CF_CONFIG_VARS(CF_CONFIG_VAR_NAME_)
#undef CF_CONFIG_VAR_NAME_
};

static unsigned reported;       /* bit per variable already reported bad (once per process) */
static int unknown_scanned;     /* the environment was checked for unknown CUFOLD_* names */
static struct cf_config process_cfg; /* what cf_config_get returns */
static int process_state;       /* 0 not parsed, 1 being parsed, 2 ready */

const char *cf_mode_name(enum cf_mode mode)
{
	switch (mode) {
	case CF_MODE_OFF:
		return "off";
	case CF_MODE_TRACE:
		return "trace";
	case CF_MODE_REPLAY:
		return "replay";
	}
	return "?";
}

const char *cf_config_var_name(enum cf_config_var var)
{
	return (unsigned)var < CF_VAR_COUNT ? var_names[var] : "?";
}

void cf_config_defaults(struct cf_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = CF_DEFAULT_MODE;
	cfg->opt = CF_DEFAULT_OPT;
	cfg->warmup = CF_DEFAULT_WARMUP;
	cfg->segment = CF_DEFAULT_SEGMENT;
	cfg->min_ops = CF_DEFAULT_MIN_OPS;
	cfg->max_templates = CF_DEFAULT_MAX_TEMPLATES;
	cfg->rename_max_bytes = CF_DEFAULT_RENAME_MAX_BYTES;
	snprintf(cfg->barrier_kernels, sizeof(cfg->barrier_kernels), "%s", CF_DEFAULT_BARRIER_KERNELS);
	cfg->log_level = CF_LOG_WARN;
	cfg->gate = true;
	cfg->churn = true;
	cfg->derive = true;
	snprintf(cfg->libcuda, sizeof(cfg->libcuda), "%s", CF_DEFAULT_LIBCUDA);
}

/* A printable, bounded copy of a value for a message (control characters become '?'). */
static void printable(char *out, size_t cap, const char *v)
{
	size_t i = 0;

	for (; v[i] && i + 4 < cap; i++)
		out[i] = isprint((unsigned char)v[i]) ? v[i] : '?';
	if (v[i] && cap > 4) {
		memcpy(out + i, "...", 3);
		i += 3;
	}
	out[i] = 0;
}

static void report_bad(struct cf_config *cfg, enum cf_config_var var, const char *value, const char *accepted,
		       const char *dflt)
{
	char shown[160];
	unsigned bit = 1u << var;

	cfg->bad |= bit;
	if (__atomic_fetch_or(&reported, bit, __ATOMIC_RELAXED) & bit)
		return;
	printable(shown, sizeof(shown), value);
	cf_log_write_fd(cf_log_get_stderr_fd(), CF_LOG_WARN, __FILE__, __LINE__,
			"%s=%s is not valid (accepted: %s); using %s", var_names[var], shown, accepted, dflt);
}

/* Decimal without sign, in [lo, hi]. */
static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -CF_EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -CF_ERANGE;
	*out = (unsigned)v;
	return 0;
}

/* One of the given words; returns its index or -1. */
static int parse_word(const char *s, const char *const *words, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(s, words[i]) == 0)
			return i;
	return -1;
}

/* "[+-]name,[+-]name": names of lower-case letters, digits and '-'. */
static bool rules_are_valid(const char *s)
{
	const char *p = s;

	while (*p) {
		const char *start;

		if (*p == '+' || *p == '-')
			p++;
		start = p;
		while (islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-')
			p++;
		if (p == start || (*p && *p != ','))
			return false;
		if (*p == ',' && !*++p)
			return false;
	}
	return true;
}

/* sep-separated items of printable characters other than space: non-empty ones, or with
 * allow_empty any number of empty ones (what "$VAR:item" gives when VAR is unset) as long as one
 * item is not. */
static bool list_is_valid(const char *s, char sep, bool allow_empty)
{
	size_t item = 0, items = 0;

	for (const char *p = s; *p; p++) {
		if (*p == sep) {
			if (item == 0 && !allow_empty)
				return false;
			items += item > 0;
			item = 0;
		} else if (!isgraph((unsigned char)*p)) {
			return false;
		} else {
			item++;
		}
	}
	return allow_empty ? items + (item > 0) > 0 : item > 0;
}

/* 1 to CF_RUN_ID_MAX of letters, digits, '.', '_', '-': safe in a file name and a JSON string. */
static bool run_id_is_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > CF_RUN_ID_MAX)
		return false;
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-')
			return false;
	return true;
}

static bool path_is_valid(const char *s)
{
	for (const char *p = s; *p; p++)
		if (!isprint((unsigned char)*p))
			return false;
	return true;
}

/* Copy a string value into a fixed field; false when it does not fit. */
static bool copy_value(char *dst, size_t cap, const char *v)
{
	size_t n = strlen(v);

	if (n >= cap)
		return false;
	memcpy(dst, v, n + 1);
	return true;
}

static const char *get(enum cf_config_var var)
{
	const char *v = secure_getenv(var_names[var]);

	return v && *v ? v : NULL;
}

static void scan_unknown(void)
{
	if (__atomic_exchange_n(&unknown_scanned, 1, __ATOMIC_RELAXED))
		return;
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
		bool known = false;
		char name[128], shown[160];

		if (strncmp(*e, "CUFOLD_", 7) != 0)
			continue;
		for (int i = 0; i < CF_VAR_COUNT && !known; i++)
			known = strlen(var_names[i]) == len && strncmp(*e, var_names[i], len) == 0;
		/* the cufold command's own variable (where it finds this library), not the library's */
		known = known || (len == 10 && strncmp(*e, "CUFOLD_LIB", 10) == 0);
		if (known)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(len < sizeof(name) ? len : sizeof(name) - 1), *e);
		printable(shown, sizeof(shown), name);
		cf_log_write_fd(cf_log_get_stderr_fd(), CF_LOG_WARN, __FILE__, __LINE__,
				"%s is not a cufold variable; ignored (known: CUFOLD_MODE, CUFOLD_LOG, ... see README)",
				shown);
	}
}

/* The numeric variables: one shape. */
static void parse_numbers(struct cf_config *cfg)
{
	struct {
		enum cf_config_var var;
		unsigned lo, hi;
		unsigned *field;
		unsigned dflt;
	} nums[] = {
		{ CF_VAR_WARMUP, 1, 1000000, &cfg->warmup, CF_DEFAULT_WARMUP },
		{ CF_VAR_SEGMENT, 1, 1000000, &cfg->segment, CF_DEFAULT_SEGMENT },
		{ CF_VAR_MIN_OPS, 0, 1000000, &cfg->min_ops, CF_DEFAULT_MIN_OPS },
		{ CF_VAR_MAX_TEMPLATES, 1, 1000000, &cfg->max_templates, CF_DEFAULT_MAX_TEMPLATES },
		{ CF_VAR_RENAME_MAX_BYTES, 0, 4000000000u, &cfg->rename_max_bytes, CF_DEFAULT_RENAME_MAX_BYTES },
	};
	char accepted[64], num[16];
	const char *v;
	unsigned u;

	for (size_t k = 0; k < CF_ARRAY_SIZE(nums); k++) {
		if (!(v = get(nums[k].var)))
			continue;
		if (parse_uint(v, nums[k].lo, nums[k].hi, &u) == 0) {
			*nums[k].field = u;
			continue;
		}
		snprintf(accepted, sizeof(accepted), "an integer from %u to %u", nums[k].lo, nums[k].hi);
		snprintf(num, sizeof(num), "%u", nums[k].dflt);
		report_bad(cfg, nums[k].var, v, accepted, num);
	}
}

/* The switches: 0 or 1. */
static void parse_switches(struct cf_config *cfg)
{
	struct {
		enum cf_config_var var;
		bool *field;
		const char *dflt;
	} sw[] = {
		{ CF_VAR_CALLSITES, &cfg->callsites, "0" },
		{ CF_VAR_GATE, &cfg->gate, "1" },
		{ CF_VAR_CHURN, &cfg->churn, "1" },
		{ CF_VAR_STRICT, &cfg->strict, "0" },
		{ CF_VAR_DERIVE, &cfg->derive, "1" },
	};
	const char *v;

	for (size_t k = 0; k < CF_ARRAY_SIZE(sw); k++) {
		if (!(v = get(sw[k].var)))
			continue;
		if (strcmp(v, "0") == 0 || strcmp(v, "1") == 0)
			*sw[k].field = v[0] == '1';
		else
			report_bad(cfg, sw[k].var, v, "0, 1", sw[k].dflt);
	}
}

/* Paths: anything printable that fits. */
static void parse_paths(struct cf_config *cfg)
{
	struct {
		enum cf_config_var var;
		char *field;
		const char *what, *dflt;
	} paths[] = {
		{ CF_VAR_LOG_FILE, cfg->log_file, "a file path", "stderr" },
		{ CF_VAR_REPORT, cfg->report, "a file path", "no report" },
		{ CF_VAR_TRACE, cfg->trace, "a file path", "no trace" },
		{ CF_VAR_DOT, cfg->dot, "a directory path", "no pictures" },
		{ CF_VAR_LIBCUDA, cfg->libcuda, "a library name or path", CF_DEFAULT_LIBCUDA },
	};
	char accepted[80];
	const char *v;

	for (size_t k = 0; k < CF_ARRAY_SIZE(paths); k++) {
		if (!(v = get(paths[k].var)))
			continue;
		if (path_is_valid(v) && copy_value(paths[k].field, CF_PATH_MAX, v))
			continue;
		snprintf(accepted, sizeof(accepted), "%s of printable characters, shorter than %d", paths[k].what,
			 CF_PATH_MAX);
		report_bad(cfg, paths[k].var, v, accepted, paths[k].dflt);
	}
}

int cf_config_parse(struct cf_config *cfg)
{
	static const char *const modes[] = { "off", "trace", "replay" };
	const char *v;
	unsigned u;
	int i;

	cf_config_defaults(cfg);
	cfg->secure = getauxval(AT_SECURE) != 0;
	if (!cfg->secure)
		scan_unknown();

	if ((v = get(CF_VAR_MODE))) {
		i = parse_word(v, modes, 3);
		if (i >= 0)
			cfg->mode = (enum cf_mode)i;
		else
			report_bad(cfg, CF_VAR_MODE, v, "off, trace, replay", "replay");
	}
	if ((v = get(CF_VAR_OPT))) {
		if (parse_uint(v, 0, 2, &u) == 0)
			cfg->opt = (int)u;
		else
			report_bad(cfg, CF_VAR_OPT, v, "0, 1, 2", "1");
	}
	if ((v = get(CF_VAR_RULES))) {
		if (!rules_are_valid(v) || !copy_value(cfg->rules, sizeof(cfg->rules), v))
			report_bad(cfg, CF_VAR_RULES, v, "a comma-separated list of +rule or -rule, e.g. -dead-write,+parallel",
				   "no changes to the rule set");
	}
	parse_numbers(cfg);
	if ((v = get(CF_VAR_CARDS))) {
		if (!list_is_valid(v, ':', true) || !copy_value(cfg->cards, sizeof(cfg->cards), v))
			report_bad(cfg, CF_VAR_CARDS, v, "path[:path] of card files", "no user cards");
	}
	if ((v = get(CF_VAR_BARRIER_KERNELS))) {
		if (!list_is_valid(v, ',', false) || !copy_value(cfg->barrier_kernels, sizeof(cfg->barrier_kernels), v))
			report_bad(cfg, CF_VAR_BARRIER_KERNELS, v, "pattern[,pattern] of kernel names, * and ? as wildcards",
				   CF_DEFAULT_BARRIER_KERNELS);
	}
	parse_switches(cfg);
	if ((v = get(CF_VAR_LOG))) {
		if (cf_log_level_parse(v, &cfg->log_level) != 0)
			report_bad(cfg, CF_VAR_LOG, v, "err, warn, info, debug", "warn");
	}
	parse_paths(cfg);
	if ((v = get(CF_VAR_RUN_ID))) {
		if (!run_id_is_valid(v) || !copy_value(cfg->run_id, sizeof(cfg->run_id), v))
			report_bad(cfg, CF_VAR_RUN_ID, v, "1 to 64 of letters, digits, '.', '_', '-'", "no run id");
	}
	if ((v = get(CF_VAR_REPORT_EVERY))) {
		if (strcmp(v, "off") == 0)
			cfg->report_every = 0;
		else if (parse_uint(v, 0, CF_REPORT_EVERY_MAX, &u) == 0)
			cfg->report_every = u;
		else
			report_bad(cfg, CF_VAR_REPORT_EVERY, v, "off, or seconds from 0 (off) to 86400", "off");
	}
	return __builtin_popcount(cfg->bad);
}

/* Make the logger follow the configuration. */
static void apply(struct cf_config *cfg)
{
	char why[128];

	cf_log_set_level(cfg->log_level);
	if (cfg->log_file[0] && !cfg->secure && cf_log_open_file(cfg->log_file, why, sizeof(why)) != 0) {
		char shown[160];

		printable(shown, sizeof(shown), cfg->log_file);
		cf_log_write_fd(cf_log_get_stderr_fd(), CF_LOG_WARN, __FILE__, __LINE__,
				"CUFOLD_LOG_FILE=%s cannot take the log (%s); logging to stderr", shown, why);
		cfg->log_file[0] = 0;
	}
}

const struct cf_config *cf_config_get(void)
{
	int expected = 0;

	if (cf_likely(__atomic_load_n(&process_state, __ATOMIC_ACQUIRE) == 2))
		return &process_cfg;
	if (__atomic_compare_exchange_n(&process_state, &expected, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		cf_config_parse(&process_cfg);
		apply(&process_cfg);
		__atomic_store_n(&process_state, 2, __ATOMIC_RELEASE);
		return &process_cfg;
	}
	/* Another thread is parsing: it takes microseconds and calls nothing that could wait on us. */
	while (__atomic_load_n(&process_state, __ATOMIC_ACQUIRE) != 2)
		sched_yield();
	return &process_cfg;
}

void cf_config__atfork_child(void)
{
	/* A thread of the parent was parsing; it does not exist here. Parse again on next use. */
	if (__atomic_load_n(&process_state, __ATOMIC_RELAXED) == 1)
		__atomic_store_n(&process_state, 0, __ATOMIC_RELAXED);
}

void cf_config__reset_reports(void)
{
	__atomic_store_n(&reported, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&unknown_scanned, 0, __ATOMIC_RELAXED);
}
