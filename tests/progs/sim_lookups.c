/* sim_lookups.c - the software device answers the CUDA runtime's 440 driver lookups (recorded
 * from libcudart 13.0, tests/data/cudart-lookups.txt) with exactly the exported variant the
 * real driver returns. Names the toolkit's stub does not export (graphics interop) must come
 * back NULL with "symbol not found". Prints a summary; exits 1 on the first mismatch.
 * usage: sim_lookups tests/data/cudart-lookups.txt   tests layer. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

int main(int argc, char **argv)
{
	FILE *f = fopen(argc > 1 ? argv[1] : "tests/data/cudart-lookups.txt", "r");
	char tok[256];
	int n = 0, found = 0, absent = 0;

	if (!f) {
		perror("cudart-lookups.txt");
		return 1;
	}
	CHECK(cuInit(0));
	while (fscanf(f, "%255s", tok) == 1) {
		char name[256], want[300], *at, *arrow, *slash;
		int version;
		cuuint64_t flags = 0;
		void *p = NULL;
		CUdriverProcAddressQueryResult st;
		Dl_info info;

		if (tok[0] == '#') {
			int c;

			while ((c = fgetc(f)) != '\n' && c != EOF)
				;
			continue;
		}
		if (!strncmp(tok, "\"\"@", 3))
			continue; /* the runtime's empty probe */
		at = strchr(tok, '@');
		if (!at)
			continue;
		*at = 0;
		snprintf(name, sizeof(name), "%s", tok);
		version = atoi(at + 1);
		slash = strstr(at + 1, "/PTDS");
		if (slash)
			flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
		arrow = strstr(at + 1, "->");
		snprintf(want, sizeof(want), "%s%s", name, arrow ? arrow + 2 : "");
		CHECK(cuGetProcAddress(name, &p, version, flags, &st));
		n++;
		if (!p) {
			if (st != CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) {
				fprintf(stderr, "%s@%d: NULL with status %d\n", name, version, (int)st);
				return 1;
			}
			absent++;
			continue;
		}
		if (!dladdr(p, &info) || !info.dli_sname || strcmp(info.dli_sname, want)) {
			fprintf(stderr, "%s@%d flags %llu: got %s, the driver returns %s\n", name, version,
				(unsigned long long)flags, p && info.dli_sname ? info.dli_sname : "?", want);
			return 1;
		}
		found++;
	}
	fclose(f);
	printf("lookups=%d exact=%d not-exported=%d\n", n, found, absent);
	return n >= 400 && absent <= 40 ? 0 : 1;
}
