/* gate.c - keep a template only while it pays: each window shape's time per window, eager and
 * replayed, measured on the program's own clock, and the decision to replay it or not. replay
 * layer; owns the window timing of match.c's matcher.
 *
 * A window's time is the time from its first call to the first call of the next window: what
 * the program waits for its work (a window ends where the host observes the device) plus its
 * own host time until the next window begins, the same for both ways of running it. The clock
 * is the monotonic clock; on a software device that exports `simcuda_host_now_ns` (its modeled
 * host clock) that clock, plus, for a replayed window, cufold's own measured matching cost for
 * its ops (the model does not see cufold's CPU time; eager windows are not charged cufold's
 * recording cost, which favours eager: the gate errs towards turning replay off).
 *
 * States of a shape (struct rpl_gate in its rpl_shape_note):
 *
 *   TRIAL --RPL_GATE_TRIAL_WINDOWS replayed windows, lower median below 99 % of eager's--> ON
 *     ^   \
 *     |    +--otherwise, first loss with big cuts--> TRIAL again with small cuts (rebuilt)
 *     |    +--otherwise--> OFF: its template is not followed (windows eager, measured again)
 *     +----------------------- for 16 << (trials - 1) sightings (at most 16 << 6)
 *
 * Cuts. Segments that grow to CUFOLD_SEGMENT (512) cost the fewest launches, which is what a
 * window bound by launch cost needs; where the device is as busy as the host, a big segment
 * leaves the device idle while the host issues it (the device got the previous, half-size one),
 * and replay loses. So a shape whose first trial loses is rebuilt with segments capped at
 * RPL_SEG_SMALL and tried again at once; if that loses too it goes OFF, and later trials keep
 * whichever cuts had the lower replayed median. Cuts stay a function of the shape and its
 * template (match.c, invariant 3): each template is built with one cap.
 *
 * Samples of windows that neither replayed to the end nor ran wholly eager (a mismatch, a
 * fallback) are not taken, nor that of a window a template build ran in (match.c: the build
 * overlapped the device work the window's closing call waits for, by an unknown amount). A trial
 * left with no eager sample that way (CUFOLD_WARMUP=1) runs one window eagerly to get one.
 *
 * Builds are a line of their own: the shape's builds so far (first, rebuilt with other cuts),
 * on the gate clock, charged to replay spread over RPL_GATE_AMORTIZE windows, the longest a
 * decision stands before the gate looks again. Spread, not charged to the trial's windows: at the
 * decision the build is spent whichever way it goes; what it still says is whether replay pays
 * back what it cost over the windows the decision is for.
 * With CUFOLD_GATE=0 samples are still taken and reported, but nothing is turned off. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/compiler.h"
#include "common/log.h"
#include "replay/replay_int.h"

static uint64_t (*model_clock)(void); /* the software device's modeled host clock, or NULL */
static uint64_t (*device_cpu)(void);  /* its CPU time inside its calls on this thread, or NULL */

void rpl__gate_init(void)
{
	void *h = drv_real_handle();
	/* in the driver cufold loaded: a program that opens the driver itself with RTLD_LOCAL
	 * (Python's CuPy, numba, PyTorch) hides it from RTLD_DEFAULT */
	void *f = h ? drv_real_dlsym(h, "simcuda_host_now_ns") : NULL;

	if (!f)
		f = drv_real_dlsym(RTLD_DEFAULT, "simcuda_host_now_ns");

	/* a data pointer to a function pointer: through memcpy, as ISO C allows */
	memcpy(&model_clock, &f, sizeof(f));
	f = h ? drv_real_dlsym(h, "simcuda_device_cpu_ns") : NULL;
	if (!f)
		f = drv_real_dlsym(RTLD_DEFAULT, "simcuda_device_cpu_ns");
	memcpy(&device_cpu, &f, sizeof(f));
}

uint64_t rpl_own_clock(void)
{
	return cf_now_ns() - (device_cpu ? device_cpu() : 0);
}

uint64_t rpl__gate_clock(void)
{
	return model_clock ? model_clock() : cf_now_ns();
}

bool rpl__gate_is_modeled(void)
{
	return model_clock != NULL;
}

/* The lower median of n samples (n <= RPL_GATE_SAMPLES). */
static uint64_t lower_median(const uint64_t *v, uint32_t n)
{
	uint64_t s[RPL_GATE_SAMPLES];

	memcpy(s, v, n * sizeof(*s));
	for (uint32_t i = 1; i < n; i++)
		for (uint32_t j = i; j > 0 && s[j - 1] > s[j]; j--) {
			uint64_t x = s[j];

			s[j] = s[j - 1];
			s[j - 1] = x;
		}
	return s[(n - 1) / 2];
}

uint64_t rpl__gate_build_charge(const struct rpl_gate *g)
{
	return g->build_ns / RPL_GATE_AMORTIZE;
}

/* Decide a trial; true when the shape is to be rebuilt with small cuts (still TRIAL). */
static bool decide(struct rpl_gate *g, uint64_t sightings, uint64_t shape_id, bool enabled, bool can_shrink)
{
	uint32_t ne = g->neager < RPL_GATE_SAMPLES ? g->neager : RPL_GATE_SAMPLES;

	cf_assert(g->state == RPL_GATE_TRIAL); /* state diagram: only a trial decides (ON or OFF) */
	cf_assert(g->nreplayed <= RPL_GATE_SAMPLES);
	if (g->nreplayed < RPL_GATE_TRIAL_WINDOWS || ne == 0)
		return false;
	g->eager_med = lower_median(g->eager, ne);
	g->replay_med = lower_median(g->replayed, g->nreplayed);
	g->decided_at = sightings;
	if (!enabled || (g->replay_med + rpl__gate_build_charge(g)) * 100 < g->eager_med * 99) {
		g->state = RPL_GATE_ON;
		return false;
	}
	if (g->cuts == 0 && !g->big_med && can_shrink) {
		g->big_med = g->replay_med;
		g->cuts = 1;
		g->nreplayed = 0;
		cf_log_info("replay: window shape %llu: %.1f us per window replayed, %.1f us eager; tried again with "
			    "segments of at most %d ops",
			    (unsigned long long)shape_id, (double)g->replay_med / 1e3, (double)g->eager_med / 1e3,
			    RPL_SEG_SMALL);
		return true;
	}
	g->state = RPL_GATE_OFF;
	g->trials++;
	g->off_until = sightings + (RPL_GATE_BACKOFF << (g->trials - 1 < 6 ? g->trials - 1 : 6));
	cf_log_info("replay: window shape %llu goes back to eager: %.1f us per window replayed, %.1f us eager; tried "
		    "again after %llu more windows",
		    (unsigned long long)shape_id, (double)g->replay_med / 1e3, (double)g->eager_med / 1e3,
		    (unsigned long long)(g->off_until - sightings));
	if (g->cuts == 1 && g->big_med < g->replay_med) {
		g->cuts = 0; /* later trials with the cuts that did better */
		return true;
	}
	return false;
}

bool rpl__gate_sample(struct rpl_gate *g, bool replayed, uint64_t ns, uint64_t sightings, uint64_t shape_id,
		      bool enabled, bool can_shrink)
{
	if (replayed) {
		if (g->state != RPL_GATE_TRIAL)
			return false; /* ON: nothing left to decide; OFF: its template is not followed */
		if (g->nreplayed < RPL_GATE_SAMPLES)
			g->replayed[g->nreplayed++] = ns;
		return decide(g, sightings, shape_id, enabled, can_shrink);
	}
	g->eager[g->neager++ % RPL_GATE_SAMPLES] = ns;
	return false;
}

bool rpl__gate_allows(struct rpl_gate *g, uint64_t sightings)
{
	cf_assert(g->state <= RPL_GATE_OFF); /* state diagram: TRIAL, ON or OFF */
	if (g->state == RPL_GATE_TRIAL)
		/* its replayed windows are in but no eager one is (the only one ran the build) */
		return g->neager > 0 || g->nreplayed < RPL_GATE_TRIAL_WINDOWS;
	if (g->state != RPL_GATE_OFF)
		return true;
	if (sightings < g->off_until)
		return false;
	g->state = RPL_GATE_TRIAL; /* try again: fresh replayed samples against recent eager ones */
	g->nreplayed = 0;
	return true;
}

const char *rpl__gate_state_name(const struct rpl_gate *g)
{
	switch (g->state) {
	case RPL_GATE_ON:
		return "on";
	case RPL_GATE_OFF:
		return "off";
	default:
		return "trial";
	}
}
