/* file.h - opening a file a user named in a CUFOLD_* variable: regular files only, so that a
 * FIFO, a device or a directory is refused instead of hanging or misleading us. common layer
 * (a leaf: libc only). */
#ifndef CF_FILE_H
#define CF_FILE_H

#include <stddef.h>

/* Open path with flags (O_CLOEXEC is added) and mode (for O_CREAT), and keep it only when it is
 * a regular file. Nothing that is not a regular file is opened where that can be seen from the
 * path beforehand, and the open itself never blocks (O_NONBLOCK, cleared once the descriptor is
 * known to be a regular file), so a FIFO with no writer or no reader cannot hang the program.
 * With O_NOFOLLOW in flags a final symbolic link is refused as well. Returns the descriptor, or
 * -CF_EINVAL (not a regular file, or a link) or -CF_EIO (the open failed), with why (cap bytes,
 * NUL-terminated; may be NULL) saying so, e.g. "it is a FIFO, not a regular file" or
 * "No such file or directory". */
int cf_file_open_regular(const char *path, int flags, unsigned mode, char *why, size_t cap);

#endif
