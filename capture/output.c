/* output.c - opening output files safely, and JSON strings. capture layer.
 *
 * cufold writes where the user points it, often in shared folders: it must never be the tool
 * that follows a planted symlink or clobbers someone's file. A path is created with
 * O_CREAT|O_EXCL|O_NOFOLLOW; if it exists, it is reopened with O_NOFOLLOW and truncated only
 * when it is a regular file that starts with the marker of cufold's own output of that kind
 * (an earlier run's report, trace or picture). "%p" in a path becomes the process id, so every
 * rank of a multi-process job can write its own file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/capture_int.h"
#include "common/config.h"

bool cap__path_expand(const char *path, char *out, size_t cap)
{
	size_t n = 0;

	for (const char *p = path; *p; p++) {
		int w;

		if (p[0] == '%' && p[1] == 'p') {
			w = snprintf(out + n, cap - n, "%ld", (long)getpid());
			p++;
		} else {
			w = snprintf(out + n, cap - n, "%c", *p);
		}
		if (w < 0 || (size_t)w >= cap - n)
			return false;
		n += (size_t)w;
	}
	out[n] = 0;
	return true;
}

FILE *cap__out_open(const char *path, const char *marker)
{
	char p[CF_PATH_MAX];

	if (!cap__path_expand(path, p, sizeof(p))) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return cap__out_openat(AT_FDCWD, p, marker);
}

FILE *cap__out_openat(int dirfd, const char *p, const char *marker)
{
	char head[64];
	size_t mlen = strlen(marker);
	struct stat st;
	FILE *f;
	int fd, saved;

	if (mlen > sizeof(head)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	fd = openat(dirfd, p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 && errno == EEXIST) {
		fd = openat(dirfd, p, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			return NULL; /* ELOOP: a symlink */
		if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
			close(fd);
			errno = EINVAL;
			return NULL;
		}
		if (pread(fd, head, mlen, 0) != (ssize_t)mlen || memcmp(head, marker, mlen) != 0) {
			close(fd);
			errno = EEXIST; /* someone else's file: leave it alone */
			return NULL;
		}
		if (ftruncate(fd, 0) != 0) {
			saved = errno;
			close(fd);
			errno = saved;
			return NULL;
		}
	}
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f) {
		saved = errno;
		close(fd);
		errno = saved;
	}
	return f;
}

void cap__json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}
