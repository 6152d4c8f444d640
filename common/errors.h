/* errors.h - cufold's internal error codes: one X-macro list expanded into the enum and its
 * strings. common layer. Internal functions return 0 or a negative CF_E* code. */
#ifndef CF_ERRORS_H
#define CF_ERRORS_H

/* X(name, message): the code is CF_E<name>; the list order fixes the numbers. */
#define CF_ERROR_LIST(X) \
	X(NOMEM, "out of memory") \
	X(INVAL, "invalid argument") \
	X(NOENT, "not found") \
	X(BUSY, "re-entered while busy") \
	X(RANGE, "value out of range") \
	X(NODRIVER, "the CUDA driver could not be loaded") \
	X(NOSYS, "not supported") \
	X(IO, "input/output error") \
	X(STATE, "wrong state for this operation")

enum cf_err {
	CF_OK = 0, /* success */
#define CF_ERR_ENUM_(name, msg) CF_E##name,
	CF_ERROR_LIST(CF_ERR_ENUM_)
#undef CF_ERR_ENUM_
	CF_ECOUNT_ /* number of codes + 1; not an error */
};

/* The message of a code; takes the code negative (as returned) or positive. */
static inline const char *cf_strerror(int code)
{
	static const char *const msgs[] = {
		"success",
#define CF_ERR_STR_(name, msg) msg,
		CF_ERROR_LIST(CF_ERR_STR_)
#undef CF_ERR_STR_
	};

	if (code < 0)
		code = -code;
	if (code >= (int)(sizeof(msgs) / sizeof(msgs[0])))
		return "unknown error";
	return msgs[code];
}

/* The code's name without the CF_E prefix ("NOMEM"), for logs and tests. */
static inline const char *cf_errname(int code)
{
	static const char *const names[] = {
		"OK",
#define CF_ERR_NAME_(name, msg) #name,
		CF_ERROR_LIST(CF_ERR_NAME_)
#undef CF_ERR_NAME_
	};

	if (code < 0)
		code = -code;
	if (code >= (int)(sizeof(names) / sizeof(names[0])))
		return "?";
	return names[code];
}

#endif
