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
