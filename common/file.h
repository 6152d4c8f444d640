/* file.h - opening a file a user named in a CUFOLD_* variable: regular files only, so that a
 * FIFO, a device or a directory is refused instead of hanging or misleading us. common layer
 * (a leaf: libc only). */
#ifndef CF_FILE_H
#define CF_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Open path with flags (O_CLOEXEC is added) and mode (for O_CREAT), and keep it only when it is
 * a regular file. Nothing that is not a regular file is opened where that can be seen from the
 * path beforehand, and the open itself never blocks (O_NONBLOCK, cleared once the descriptor is
 * known to be a regular file), so a FIFO with no writer or no reader cannot hang the program.
 * With O_NOFOLLOW in flags a final symbolic link is refused as well. Returns the descriptor, or
 * -CF_EINVAL (not a regular file, or a link) or -CF_EIO (the open failed), with why (cap bytes,
 * NUL-terminated; may be NULL) saying so, e.g. "it is a FIFO, not a regular file" or
 * "No such file or directory". */
int cf_file_open_regular(const char *path, int flags, unsigned mode, char *why, size_t cap);

/* Copy path into out (cap bytes) with "%p" replaced by the process id and "%%" by one '%' (any
 * other '%' is kept as it is); false when the result does not fit. */
bool cf_path_expand(const char *path, char *out, size_t cap);
/* Whether cf_path_expand would put the process id into path ("%p", not "%%p"). */
bool cf_path_has_pid(const char *path);

/* Writing an output file atomically: the text goes to a temporary file in the same folder
 * (".NAME.PID.N.tmp", created O_EXCL|O_NOFOLLOW, 0644 less the umask), which is flushed,
 * fsync'ed and renamed over NAME only when all of it was written; a full disk, a size limit or a
 * kill leaves either the old file or the new one, never a torn one, and on failure the
 * temporary file is removed. An existing NAME is replaced only when cufold wrote it (see
 * cf_out_is_ours); anything else there (someone's file, a symlink, a FIFO) is left alone. */
struct cf_out {
	FILE *f;                     /* write the text here; NULL once committed or aborted */
	int dirfd;                   /* the folder NAME is relative to (AT_FDCWD: the cwd) */
	char name[4096];             /* NAME as given */
	char tmp[4096 + 48];         /* the temporary file, relative to dirfd */
};
/* Start writing name (relative to dirfd; "%p" is not expanded here). marker is how every file
 * of this kind that cufold writes begins. Returns 0, or -1 with errno: EEXIST (a file that is not
 * cufold's is there), ELOOP (a symbolic link is there), EINVAL (not a regular file), or the
 * error of creating the temporary file. */
int cf_out_begin(struct cf_out *o, int dirfd, const char *name, const char *marker);
/* Finish: flush, fsync, close and rename over NAME. 0, or -1 with errno (the temporary file is
 * removed, NAME untouched). Always closes o->f. */
int cf_out_commit(struct cf_out *o);
/* Give up: close and remove the temporary file. */
void cf_out_abort(struct cf_out *o);
/* Whether the regular file open at fd is an output cufold wrote: it starts with marker, ends with
 * "}\n" and, when marker starts with '{', holds exactly one complete JSON value (braces,
 * brackets and strings balanced, nothing after it but white space). At most 1 GiB is read. */
bool cf_out_is_ours(int fd, const char *marker);

#endif
