/* oracle.c - what each interpreted launch touched in global memory (see oracle.h).
 * tests/simcuda layer. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oracle.h"

struct range {
	uint64_t lo, hi;             /* [lo, hi) */
	int kind;                    /* SIM_ORACLE_* */
};

struct rec {
	struct range *r;             /* ranges noted (adjacent ones merged as they come) */
	size_t n, cap;
	char head[4096];             /* the launch line (mangled names run long) */
	char *params;                /* hex of the parameter buffer */
	uintptr_t excl[3][2];        /* host ranges left out */
	bool lost;                   /* out of memory: the record says so */
};

__thread int sim_oracle_recording;
static __thread struct rec cur;
static int enabled = -1;     /* -1: not read yet */

bool sim_oracle_enabled(void)
{
	int e = __atomic_load_n(&enabled, __ATOMIC_RELAXED);

	if (e < 0) {
		const char *p = getenv("SIMCUDA_ORACLE");

		e = p && *p;
		__atomic_store_n(&enabled, e, __ATOMIC_RELAXED);
	}
	return e;
}

void sim_oracle_begin(const char *name, const unsigned grid[3], const unsigned block[3],
		      const void *params, size_t param_bytes, const void *const excl[3][2])
{
	static const char hex[] = "0123456789abcdef";

	cur.n = 0;
	cur.lost = false;
	snprintf(cur.head, sizeof(cur.head), "launch %s %u %u %u %u %u %u\n", name, grid[0], grid[1],
		 grid[2], block[0], block[1], block[2]);
	free(cur.params);
	cur.params = malloc(param_bytes * 2 + 1);
	if (cur.params) {
		for (size_t i = 0; i < param_bytes; i++) {
			cur.params[2 * i] = hex[((const unsigned char *)params)[i] >> 4];
			cur.params[2 * i + 1] = hex[((const unsigned char *)params)[i] & 15];
		}
		cur.params[param_bytes * 2] = '\0';
	}
	for (int i = 0; i < 3; i++) {
		cur.excl[i][0] = (uintptr_t)excl[i][0];
		cur.excl[i][1] = (uintptr_t)excl[i][1];
	}
	sim_oracle_recording = 1;
}

void sim_oracle_note(uint64_t addr, uint64_t bytes, int kind)
{
	struct range *last = cur.n ? &cur.r[cur.n - 1] : NULL;

	for (int i = 0; i < 3; i++)
		if (addr >= cur.excl[i][0] && addr < cur.excl[i][1])
			return;
	if (last && last->kind == kind && addr <= last->hi && addr + bytes >= last->lo) {
		if (addr < last->lo)
			last->lo = addr;
		if (addr + bytes > last->hi)
			last->hi = addr + bytes;
		return;
	}
	if (cur.n == cur.cap) {
		size_t ncap = cur.cap ? cur.cap * 2 : 1024;
		struct range *nr = realloc(cur.r, ncap * sizeof(*nr));

		if (!nr) {
			cur.lost = true;
			return;
		}
		cur.r = nr;
		cur.cap = ncap;
	}
	cur.r[cur.n++] = (struct range){ addr, addr + bytes, kind };
}

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind - y->kind;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorted by kind and start, overlapping or touching ranges of one kind merged. */
static size_t merge(void)
{
	size_t k = 0;

	qsort(cur.r, cur.n, sizeof(cur.r[0]), range_cmp);
	for (size_t i = 0; i < cur.n; i++) {
		if (k && cur.r[k - 1].kind == cur.r[i].kind && cur.r[i].lo <= cur.r[k - 1].hi) {
			if (cur.r[i].hi > cur.r[k - 1].hi)
				cur.r[k - 1].hi = cur.r[i].hi;
		} else {
			cur.r[k++] = cur.r[i];
		}
	}
	return k;
}

void sim_oracle_end(void)
{
	static const char kinds[] = "rwu";
	size_t n, len, at;
	char *buf;
	int fd;

	sim_oracle_recording = 0;
	n = merge();
	len = strlen(cur.head) + (cur.params ? strlen(cur.params) : 0) + 32 + n * 48;
	buf = malloc(len);
	if (!buf)
		return;
	at = (size_t)snprintf(buf, len, "%sparams %s\n%s", cur.head, cur.params ? cur.params : "",
			      cur.lost ? "lost\n" : "");
	for (size_t i = 0; i < n; i++)
		at += (size_t)snprintf(buf + at, len - at, "%c 0x%llx 0x%llx\n", kinds[cur.r[i].kind],
				       (unsigned long long)cur.r[i].lo, (unsigned long long)cur.r[i].hi);
	at += (size_t)snprintf(buf + at, len - at, "end\n");
	fd = open(getenv("SIMCUDA_ORACLE"), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, buf, at) != (ssize_t)at)
			fprintf(stderr, "simcuda: SIMCUDA_ORACLE: short write\n");
		close(fd);
	}
	free(buf);
	cur.n = 0;
}
