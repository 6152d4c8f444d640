/* assert.c - the slow halves of cf_assert and CF_NEVER (compiler.h). common layer. */
#include "common/compiler.h"

#include <stdlib.h>

#include "common/log.h"

void cf__assert_fail(const char *expr, const char *file, int line)
{
	cf_log_write(CF_LOG_ERR, file, line, "assertion failed: %s", expr);
	abort();
}

bool cf__never(const char *expr, const char *file, int line)
{
	cf_log_write(CF_LOG_ERR, file, line, "unexpected: %s", expr);
#ifdef CF_DEBUG
	abort();
#endif
	return true;
}
