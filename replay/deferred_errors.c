/* deferred_errors.c - errors of deferred work, kept until the program can see them. replay
 * layer; owns the pending errors and their history for the report.
 *
 * A call replay kept was answered CUDA_SUCCESS; when its eager submission later fails, the
 * driver's answer must still reach the program, as the driver reports an asynchronous error:
 * the next call of that context that observes the device (a synchronize, a query, a blocking
 * copy) returns it instead of success. Errors that leave a context unusable (sticky: an illegal
 * address, a launch failure, ...) are returned by every later such call and every later stream
 * work call of the context, as the driver does; any other error is returned once.
 *
 * Invariants (callers hold the engine's mutex):
 *  1. Every failed submission of a deferred op is noted here (launch.c's flush_eager is the one
 *     place deferred ops are issued one by one); nothing drops a result.
 *  2. A pending entry is per context; a second error of the same context is kept only when the
 *     first was not sticky and has been reported (the first error is what the driver would
 *     have shown first). */
#include <inttypes.h>
#include <string.h>

#include "common/compiler.h"
#include "common/json.h"
#include "common/log.h"
#include "replay/replay_int.h"

#define RPL_ERR_LOGGED 8          /* failures described in the log, one line each */

bool rpl__error_is_sticky(CUresult rc)
{
	switch (rc) {
	case CUDA_ERROR_ILLEGAL_ADDRESS:
	case CUDA_ERROR_LAUNCH_TIMEOUT:
	case CUDA_ERROR_ASSERT:
	case CUDA_ERROR_HARDWARE_STACK_ERROR:
	case CUDA_ERROR_ILLEGAL_INSTRUCTION:
	case CUDA_ERROR_MISALIGNED_ADDRESS:
	case CUDA_ERROR_INVALID_ADDRESS_SPACE:
	case CUDA_ERROR_INVALID_PC:
	case CUDA_ERROR_LAUNCH_FAILED:
	case CUDA_ERROR_ECC_UNCORRECTABLE:
		return true;
	default:
		return false;
	}
}

void rpl__error_note(struct rpl_engine *re, const struct cap_op *op, CUresult rc)
{
	struct rpl_pending *p = NULL;
	const char *name = cap_op_name(op);
	uint32_t hist = re->errs.nhist < RPL_ERR_HISTORY ? re->errs.nhist : RPL_ERR_HISTORY; /* its history entry */

	/* an armed lane takes no call while an error is pending (the engine does not ask: the
	 * usual path returns the error); what it took was settled before the launch that failed
	 * (a segment's end) or by the acquisition that made it */
	cf_assert(!re->head.lane_pending);
	re->head.lane_armed_tid = 0;

	re->errs.failures++;
	if (re->errs.failures <= RPL_ERR_LOGGED) {
		const char *site = op->callsite ? cap_callsite_name(re->cap, op->callsite) : NULL;

		cf_log_warn("replay: deferred %s (%s, op %" PRIu64 "%s%s) failed with error %d when submitted; the "
			    "program gets the error from its next synchronize, query or blocking copy%s",
			    name, drv_api[op->api].name, op->seq, site ? ", at " : "", site ? site : "", (int)rc,
			    re->errs.failures == RPL_ERR_LOGGED ? " (further failures are only counted)" : "");
	}
	if (re->errs.nhist < RPL_ERR_HISTORY)
		re->errs.hist[re->errs.nhist++] = (struct rpl_failure){
			.rc = rc, .api = op->api, .name = name, .callsite = op->callsite, .seq = op->seq,
		};
	for (uint32_t i = 0; i < re->head.npending; i++)
		if (re->errs.pending[i].ctx == op->ctx)
			p = &re->errs.pending[i];
	if (p) {
		/* the first error stands, unless this one leaves the context unusable */
		if (!p->sticky && rpl__error_is_sticky(rc)) {
			p->rc = rc;
			p->sticky = true;
			p->hist = hist;
		}
		return;
	}
	if (re->head.npending == RPL_MAX_PENDING)
		return; /* absurdly many failing contexts: the oldest errors stand */
	re->errs.pending[re->head.npending++] =
		(struct rpl_pending){ .ctx = op->ctx, .rc = rc, .sticky = rpl__error_is_sticky(rc), .hist = hist };
}

CUresult rpl_error_take(struct rpl_engine *re, CUcontext ctx, bool work)
{
	for (uint32_t i = 0; i < re->head.npending; i++) {
		struct rpl_pending *p = &re->errs.pending[i];
		CUresult rc = p->rc;

		if (ctx && p->ctx && p->ctx != ctx)
			continue;
		if (work && !p->sticky)
			continue; /* stream work fails only in an unusable context */
		re->errs.reported++;
		if (p->hist < re->errs.nhist)
			re->errs.hist[p->hist].reported = true;
		if (!p->sticky)
			re->errs.pending[i] = re->errs.pending[--re->head.npending];
		return rc;
	}
	return CUDA_SUCCESS;
}

void rpl__errors_at_exit(struct rpl_engine *re)
{
	for (uint32_t i = 0; i < re->head.npending; i++) {
		if (re->errs.pending[i].sticky)
			continue;
		re->errs.unseen_at_exit++;
		cf_log_err("replay: a deferred call failed with error %d and the program exited before any call could "
			   "return it to the program", (int)re->errs.pending[i].rc);
	}
}

void rpl__errors_write_json(struct rpl_engine *re, struct cf_json *j)
{
	cf_json_key(j, "deferred_errors");
	cf_json_obj_begin(j);
	cf_json_ku64(j, "failed", re->errs.failures);
	cf_json_ku64(j, "returned", re->errs.reported);
	cf_json_ku64(j, "unseen_at_exit", re->errs.unseen_at_exit);
	cf_json_key(j, "first");
	cf_json_arr_begin(j);
	for (uint32_t i = 0; i < re->errs.nhist; i++) {
		const struct rpl_failure *h = &re->errs.hist[i];

		cf_json_obj_begin(j);
		cf_json_ku64(j, "op", h->seq);
		cf_json_kstr(j, "name", h->name ? h->name : "?");
		cf_json_kstr(j, "api", drv_api[h->api].name);
		cf_json_key(j, "error");
		cf_json_i64(j, (int64_t)h->rc);
		cf_json_kbool(j, "sticky", rpl__error_is_sticky(h->rc));
		cf_json_kbool(j, "returned", h->reported);
		cf_json_kstr(j, "call_site", h->callsite ? cap_callsite_name(re->cap, h->callsite) : NULL);
		cf_json_obj_end(j);
	}
	cf_json_arr_end(j);
	cf_json_obj_end(j);
}
