/* output.c - writing output files safely (JSON is written with common/json.h). capture layer.
 *
 * cufold writes where the user points it, often in shared folders: it must never be the tool
 * that follows a planted symlink, clobbers someone's file or leaves a torn one. Every output is
 * written to a temporary file in the same folder and renamed over the path once complete
 * (common/file.h, cf_out); an existing path is replaced only when it is a regular file that
 * cufold wrote: it starts with the marker of cufold's output of that kind (an earlier run's
 * report, trace or picture), ends with a closing brace and, for JSON, is one complete value.
 * "%p" in a path becomes the process id ("%%" a percent sign), so every rank of a
 * multi-process job can write its own file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/capture_int.h"
#include "common/config.h"
#include "common/errors.h"
#include "common/file.h"

bool cap__path_expand(const char *path, char *out, size_t cap)
{
	return cf_path_expand(path, out, cap);
}

int cap__out_open(struct cf_out *o, const char *path, const char *marker)
{
	char p[CF_PATH_MAX];

	if (!cap__path_expand(path, p, sizeof(p))) {
		errno = ENAMETOOLONG;
		return -CF_EIO;
	}
	return cap__out_openat(o, AT_FDCWD, p, marker);
}

int cap__out_openat(struct cf_out *o, int dirfd, const char *name, const char *marker)
{
	return cf_out_begin(o, dirfd, name, marker) == 0 ? 0 : -CF_EIO;
}

int cap__out_close(struct cf_out *o)
{
	return cf_out_commit(o) == 0 ? 0 : -CF_EIO;
}
