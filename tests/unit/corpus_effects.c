/* corpus_effects.c - runs the PTX-derived card (rewrite/derive_card.c) over every kernel of the
 * PTX files named on the command line and prints, per kernel, how far the analysis got and how
 * long it took; `make corpus-effects` (scripts/corpus-effects) runs it over the corpus it can
 * gather. tests layer (a tool, not a test: tests/run does not run it; links libcufold.a).
 *
 * Classes: exact (every pointer parameter has a bound in launch terms), mixed (some unknown),
 * all-unknown (every pointer unknown), indirect (refused: pointers loaded from memory, a struct
 * parameter's included when read at an offset that is not constant), refused (any other refusal, with its reason). Time: the median of 5
 * derivations of the kernel, on one core. CORPUS_CARDS=1 prints each derived card as well. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/errors.h"
#include "driver/ptx.h"
#include "rewrite/derive_card.h"

#define RUNS 5

enum { C_EXACT, C_MIXED, C_ALLUNK, C_INDIRECT, C_REFUSED, C_N };
static const char *const class_names[C_N] = { "exact", "mixed", "all-unknown", "indirect", "refused" };

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The class of a derived card from its pointer lines (parameters and struct fields). */
static int classify(const char *card)
{
	unsigned known = 0, unknown = 0;

	for (const char *l = card; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		unsigned k, off;
		char acc[8], span[16];

		if (sscanf(l, " param p%u ptr %7s %15s", &k, acc, span) == 3 ||
		    sscanf(l, " field p%u %u %7s %15s", &k, &off, acc, span) == 4) {
			if (!strncmp(span, "unknown", 7))
				unknown++;
			else
				known++;
		}
	}
	if (unknown == 0)
		return C_EXACT;
	return known ? C_MIXED : C_ALLUNK;
}

static char *read_all(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *text;
	long n;

	if (!fp)
		return NULL;
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	text = malloc((size_t)n + 1);
	if (text && fread(text, 1, (size_t)n, fp) != (size_t)n) {
		free(text);
		text = NULL;
	}
	if (text)
		text[n] = '\0';
	*len = text ? (size_t)n : 0;
	fclose(fp);
	return text;
}

int main(int argc, char **argv)
{
	static char card[65536];
	unsigned count[C_N] = { 0 }, nk = 0, bad_files = 0;
	double *times = NULL;
	size_t cap = 0;

	for (int a = 1; a < argc; a++) {
		size_t len;
		char err[256], *text = read_all(argv[a], &len);
		struct ptx_module *m = text ? ptx_parse(text, len, err, sizeof(err)) : NULL;

		if (!m) {
			printf("%-11s %8s  %s: %s\n", "unparsed", "-", argv[a], text ? err : "cannot read");
			bad_files++;
			free(text);
			continue;
		}
		for (uint32_t i = 0; i < m->nfuncs; i++) {
			const struct ptx_func *f = &m->funcs[i];
			double t[RUNS];
			char why[256];
			int rc = 0, cls;

			if (!f->is_entry || f->is_decl)
				continue;
			for (int r = 0; r < RUNS; r++) {
				double t0 = now_ms();

				rc = rw_card_derive(m, f->name, card, sizeof(card), why, sizeof(why));
				t[r] = now_ms() - t0;
			}
			qsort(t, RUNS, sizeof(t[0]), cmp_double);
			if (rc == 0)
				cls = classify(card);
			else
				cls = !strncmp(why, "indirect", 8) ? C_INDIRECT : C_REFUSED;
			if (rc != 0 && rc != -CF_ENOSYS)
				snprintf(why, sizeof(why), "error %d", rc);
			count[cls]++;
			if (nk == cap) {
				cap = cap ? cap * 2 : 256;
				times = realloc(times, cap * sizeof(*times));
				if (!times)
					return 1;
			}
			times[nk++] = t[RUNS / 2];
			printf("%-11s %8.3f  %s:%.80s%s%s\n", class_names[cls], t[RUNS / 2], argv[a], f->name,
			       rc ? "  - " : "", rc ? why : "");
			if (rc == 0 && getenv("CORPUS_CARDS")) /* CORPUS_CARDS=1: the cards too */
				fputs(card, stdout);
		}
		ptx_module_free(m);
		free(text);
	}
	if (nk) {
		double worst;

		qsort(times, nk, sizeof(times[0]), cmp_double);
		worst = times[nk - 1];
		printf("\n%u kernels: %u exact, %u mixed, %u all-unknown, %u indirect, %u refused; "
		       "%u files unparsed\n", nk, count[C_EXACT], count[C_MIXED], count[C_ALLUNK],
		       count[C_INDIRECT], count[C_REFUSED], bad_files);
		printf("analysis time per kernel (median of %d runs, one core): median %.3f ms, worst %.3f ms\n",
		       RUNS, times[nk / 2], worst);
	}
	free(times);
	return 0;
}
