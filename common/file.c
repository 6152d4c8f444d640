/* file.c - opening user-named files as regular files only (see file.h). common layer. */
#include "common/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errors.h"

/* What a path that is not a regular file is, as a phrase for a message. */
static const char *kind_of(mode_t m)
{
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISSOCK(m))
		return "a socket";
	return "of an unknown kind";
}

/* The reason for the caller, when it asked for one. */
static void say(char *why, size_t cap, const char *text)
{
	if (why && cap)
		snprintf(why, cap, "%s", text);
}

int cf_file_open_regular(const char *path, int flags, unsigned mode, char *why, size_t cap)
{
	bool nofollow = (flags & O_NOFOLLOW) != 0;
	char buf[128];
	struct stat st;
	int fd = -1, fl, saved;

	/* Look first: a FIFO or a device is then never opened at all (opening a FIFO would
	 * release a writer blocked in its own open, opening some devices has effects). */
	if ((nofollow ? lstat(path, &st) : stat(path, &st)) == 0 && !S_ISREG(st.st_mode))
		goto out_refused;
	/* The path may have changed since: the open cannot block, and fstat decides. */
	fd = open(path, flags | O_CLOEXEC | O_NONBLOCK, (mode_t)mode);
	if (fd < 0) {
		saved = errno;
		if (nofollow && saved == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
			goto out_refused;
		errno = saved;
		goto out_errno;
	}
	if (fstat(fd, &st) != 0)
		goto out_errno;
	if (!S_ISREG(st.st_mode))
		goto out_refused;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
		goto out_errno;
	return fd;

out_refused:
	if (fd >= 0)
		close(fd);
	if (S_ISLNK(st.st_mode))
		say(why, cap, "it is a symbolic link, which cufold does not follow here");
	else if (why && cap)
		snprintf(why, cap, "it is %s, not a regular file", kind_of(st.st_mode));
	return -CF_EINVAL;

out_errno:
	saved = errno;
	if (fd >= 0)
		close(fd);
	say(why, cap, strerror_r(saved, buf, sizeof(buf)));
	errno = saved;
	return -CF_EIO;
}

bool cf_path_expand(const char *path, char *out, size_t cap)
{
	size_t n = 0;

	if (!cap)
		return false;
	for (const char *p = path; *p; p++) {
		int w;

		if (p[0] == '%' && p[1] == 'p') {
			w = snprintf(out + n, cap - n, "%ld", (long)getpid());
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			w = snprintf(out + n, cap - n, "%%");
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

bool cf_path_has_pid(const char *path)
{
	for (const char *p = path; *p; p++) {
		if (p[0] == '%' && p[1] == 'p')
			return true;
		if (p[0] == '%' && p[1] == '%')
			p++;
	}
	return false;
}

#define OURS_MAX (1ull << 30) /* larger files are not taken for cufold's */

/* The JSON scanner's state across the chunks of a file. */
struct scan {
	unsigned long depth;         /* open braces and brackets */
	bool in_str, esc;            /* inside a string; after a backslash in it */
	bool closed;                 /* the outermost value ended */
	bool bad;                    /* unbalanced, or text after the value */
};

static void scan_chunk(struct scan *s, const char *b, size_t n)
{
	for (size_t i = 0; i < n && !s->bad; i++) {
		char c = b[i];

		if (s->closed) {
			s->bad = !(c == ' ' || c == '\n' || c == '\t' || c == '\r');
		} else if (s->in_str) {
			if (s->esc)
				s->esc = false;
			else if (c == '\\')
				s->esc = true;
			else if (c == '"')
				s->in_str = false;
		} else if (c == '"') {
			s->in_str = true;
		} else if (c == '{' || c == '[') {
			s->depth++;
		} else if (c == '}' || c == ']') {
			s->bad = s->depth == 0;
			s->closed = --s->depth == 0;
		}
	}
}

bool cf_out_is_ours(int fd, const char *marker)
{
	size_t mlen = strlen(marker);
	struct scan s = { 0 };
	struct stat st;
	char buf[65536];
	off_t off = 0;

	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (unsigned long long)st.st_size > OURS_MAX ||
	    (size_t)st.st_size < mlen + 2 || mlen > sizeof(buf))
		return false;
	if (pread(fd, buf, mlen, 0) != (ssize_t)mlen || memcmp(buf, marker, mlen) != 0)
		return false;
	if (pread(fd, buf, 2, st.st_size - 2) != 2 || buf[0] != '}' || buf[1] != '\n')
		return false;
	if (marker[0] != '{')
		return true;
	while (off < st.st_size && !s.bad) {
		ssize_t r = pread(fd, buf, sizeof(buf), off);

		if (r <= 0)
			return false;
		scan_chunk(&s, buf, (size_t)r);
		off += r;
	}
	return !s.bad && s.closed;
}

/* Whether an existing name may be replaced: nothing there, or cufold's own output. Sets errno. */
static bool may_replace(int dirfd, const char *name, const char *marker)
{
	struct stat st;
	bool ok;
	int fd;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT;
	if (S_ISLNK(st.st_mode)) {
		errno = ELOOP;
		return false;
	}
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return false;
	}
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	ok = cf_out_is_ours(fd, marker);
	close(fd);
	if (!ok)
		errno = EEXIST; /* someone else's file: leave it alone */
	return ok;
}

int cf_out_begin(struct cf_out *o, int dirfd, const char *name, const char *marker)
{
	static unsigned seq;
	const char *slash = strrchr(name, '/');
	size_t dlen = slash ? (size_t)(slash - name + 1) : 0;
	int fd = -1, saved;

	memset(o, 0, sizeof(*o));
	o->dirfd = dirfd;
	if (snprintf(o->name, sizeof(o->name), "%s", name) >= (int)sizeof(o->name) || !name[dlen]) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (!may_replace(dirfd, name, marker))
		return -1;
	for (int tries = 0; fd < 0 && tries < 16; tries++) {
		snprintf(o->tmp, sizeof(o->tmp), "%.*s.%s.%ld.%u.tmp", (int)dlen, name, name + dlen, (long)getpid(),
			 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
		fd = openat(dirfd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			return -1;
	}
	if (fd < 0)
		return -1;
	o->f = fdopen(fd, "w");
	if (!o->f) {
		saved = errno;
		close(fd);
		unlinkat(dirfd, o->tmp, 0);
		errno = saved;
		return -1;
	}
	return 0;
}

void cf_out_abort(struct cf_out *o)
{
	int saved = errno;

	if (o->f) {
		fclose(o->f);
		unlinkat(o->dirfd, o->tmp, 0);
	}
	o->f = NULL;
	errno = saved;
}

int cf_out_commit(struct cf_out *o)
{
	int saved;

	if (!o->f) {
		errno = EBADF;
		return -1;
	}
	errno = 0;
	if (fflush(o->f) != 0 || ferror(o->f) || fsync(fileno(o->f)) != 0)
		goto out_fail;
	if (fclose(o->f) != 0) {
		o->f = NULL;
		goto out_unlink;
	}
	o->f = NULL;
	if (renameat(o->dirfd, o->tmp, o->dirfd, o->name) != 0)
		goto out_unlink;
	return 0;

out_fail:
	saved = errno ? errno : EIO;
	fclose(o->f);
	o->f = NULL;
	errno = saved;
out_unlink:
	saved = errno ? errno : EIO;
	unlinkat(o->dirfd, o->tmp, 0);
	errno = saved;
	return -1;
}
