/* clock.c - storage of the cached thread id (see clock.h). common layer. */
#include "common/clock.h"

__thread uint32_t cf__tid;
