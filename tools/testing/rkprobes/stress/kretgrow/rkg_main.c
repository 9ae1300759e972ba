// SPDX-License-Identifier: GPL-2.0
/*
 * rkprobes_kretgrow: the kretprobe-grow scenario of
 * `scripts/rkprobes stress --scenario kretprobe-grow` (issue 40).
 *
 * `sleepers` kthreads (default 256) each call rkg_sleep_in(), which sleeps
 * until the wave is released, so that all of them are inside the function at
 * once: more calls in flight than a kretprobe's default maxactive
 * (max(10, 2 * possible CPUs)). /init runs the phases by writing their name
 * to the module parameter `run`; each runs `waves` waves:
 *
 *   fixed   a kretprobe on rkg_sleep_in() with the default maxactive and
 *           grow_max 0: C's fixed pool on every build;
 *   grow    the same with grow_max = `grow_max` (default 1024): the Rust
 *           core grows its pool, the C core ignores grow_max;
 *   plain   no kretprobe of this module: /init has put an r: event of
 *           kprobe_events on rkg_sleep_in() (with and without the sysctl
 *           debug.kretprobe-grow); "plain-wave" runs one wave of it, so
 *           that /init can read kprobe_profile after each;
 *   account after every probe is gone and every sleeper is back: the
 *           instance pools allocated (rethook_alloc(), counted by a kprobe
 *           since load) against those freed (rethook_fini_pool(), the
 *           release callback objpool_free() calls; objpool_free() itself
 *           is inlined into its callers). Without KRETPROBE_ON_RETHOOK
 *           (arm64's objpool path), where a pool is a kretprobe_holder's
 *           objpool: objpool_init() against kretprobe_fini_pool(), its
 *           release callback (the only objpool user there).
 *
 * Each wave prints "RKG wave <phase> <i> entries=E returns=R missed=M":
 * E calls of the function, R returns the handler saw, M the wave's nmissed.
 * Only the public kprobes API is used, so the same object runs on the C core
 * and on the Rust builds; the host compares them.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/objpool.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/wait.h>

static unsigned int sleepers = 256;
module_param(sleepers, uint, 0444);
MODULE_PARM_DESC(sleepers, "kthreads sleeping inside the probed function in each wave");

static unsigned int waves = 16;
module_param(waves, uint, 0444);
MODULE_PARM_DESC(waves, "waves of each phase");

static int grow_max = 1024;
module_param(grow_max, int, 0444);
MODULE_PARM_DESC(grow_max, "grow_max of the kretprobe of the grow phase");

static unsigned int settle_ms = 200;
module_param(settle_ms, uint, 0444);
MODULE_PARM_DESC(settle_ms, "milliseconds between two waves");

static struct task_struct **rkg_threads;
static DECLARE_WAIT_QUEUE_HEAD(rkg_start_wq);
static DECLARE_WAIT_QUEUE_HEAD(rkg_release_wq);
static DECLARE_WAIT_QUEUE_HEAD(rkg_done_wq);
static unsigned int rkg_wave;
static unsigned int rkg_released;
static atomic_t rkg_inside;
static atomic_t rkg_back;
static DEFINE_MUTEX(rkg_run_lock);

/*
 * The growing pools' timeline of a wave: when each rethook_alloc() began
 * (the worker at work), in ns since the wave's wake-up, how many calls were
 * inside the function then, and when the Rust core published it (the
 * allocation's end); printed after a wave that allocated.
 */
#define RKG_TIMELINE 8
static struct {
	s64 ns;
	int entries;
	int num;
	s64 published_ns;
} rkg_tl[RKG_TIMELINE];
static atomic_t rkg_tl_allocs, rkg_tl_publishes;
/*
 * And when the worker was asked for and when it ran: the Rust core's
 * irq_work handler that queues it (rkp_kretprobe_grow_irq(), on the CPU of
 * the hit that kicked) and its work function (rkp_kretprobe_grow_work_fn(),
 * on the worker's CPU), each with the calls inside the function then.
 */
static struct {
	s64 ns;
	int entries;
	int cpu;
} rkg_tl_irq[RKG_TIMELINE], rkg_tl_work[RKG_TIMELINE];
static atomic_t rkg_tl_irqs, rkg_tl_works;
static bool rkg_tl_kicks;
/* The Rust core's publish of a grown pool: the allocation's end (none on C). */
static bool rkg_tl_publish;
static bool rkg_tl_on;
static ktime_t rkg_tl_t0;

static atomic_long_t rkg_returns;
static atomic_long_t rkg_pool_inits, rkg_pool_init_objs;
static atomic_long_t rkg_pool_frees, rkg_pool_free_objs;
static bool rkg_accounting;

/* The probed function: every sleeper is inside it until the wave is released. */
static noinline int rkg_sleep_in(unsigned int wave)
{
	atomic_inc(&rkg_inside);
	wake_up(&rkg_done_wq);
	wait_event_idle(rkg_release_wq, READ_ONCE(rkg_released) == wave);
	return wave;
}

static int rkg_sleeper(void *unused)
{
	unsigned int seen = 0;

	while (!kthread_should_stop()) {
		wait_event_idle(rkg_start_wq,
				READ_ONCE(rkg_wave) != seen || kthread_should_stop());
		if (kthread_should_stop())
			break;
		seen = READ_ONCE(rkg_wave);
		rkg_sleep_in(seen);
		atomic_inc(&rkg_back);
		wake_up(&rkg_done_wq);
	}
	return 0;
}

static int rkg_ret_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_long_inc(&rkg_returns);
	return 0;
}

#ifdef CONFIG_KRETPROBE_ON_RETHOOK
/* rethook_alloc(data, handler, size, num) */
#define RKG_POOL_INIT "rethook_alloc"
#define RKG_POOL_INIT_NUM 3
/* rethook_fini_pool(head, context), once the pool's last object is back */
#define RKG_POOL_FREE "rethook_fini_pool"
#else
/* objpool_init(head, nr_objs, object_size, gfp, context, objinit, release) */
#define RKG_POOL_INIT "objpool_init"
#define RKG_POOL_INIT_NUM 1
/* kretprobe_fini_pool(head, context), once the pool's last object is back */
#define RKG_POOL_FREE "kretprobe_fini_pool"
#endif

static int rkg_pool_init_pre(struct kprobe *p, struct pt_regs *regs)
{
	int num = (int)regs_get_kernel_argument(regs, RKG_POOL_INIT_NUM);

	atomic_long_inc(&rkg_pool_inits);
	atomic_long_add(num, &rkg_pool_init_objs);
	if (READ_ONCE(rkg_tl_on)) {
		int n = atomic_inc_return(&rkg_tl_allocs) - 1;

		if (n < RKG_TIMELINE) {
			rkg_tl[n].ns = ktime_to_ns(ktime_sub(ktime_get(), rkg_tl_t0));
			rkg_tl[n].entries = atomic_read(&rkg_inside);
			rkg_tl[n].num = num;
		}
	}
	return 0;
}

/* The release callback of a pool: (head, context) */
static int rkg_pool_free_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct objpool_head *pool = (void *)regs_get_kernel_argument(regs, 0);

	atomic_long_inc(&rkg_pool_frees);
	atomic_long_add(pool->nr_objs, &rkg_pool_free_objs);
	return 0;
}

static struct kprobe rkg_kp_init = {
	.symbol_name = RKG_POOL_INIT,
	.pre_handler = rkg_pool_init_pre,
};

/* rkp_kretprobe_grow_publish(g, rh, n): the worker has allocated a pool */
static int rkg_publish_pre(struct kprobe *p, struct pt_regs *regs)
{
	if (READ_ONCE(rkg_tl_on)) {
		int n = atomic_inc_return(&rkg_tl_publishes) - 1;

		if (n < RKG_TIMELINE)
			rkg_tl[n].published_ns = ktime_to_ns(ktime_sub(ktime_get(), rkg_tl_t0));
	}
	return 0;
}

static struct kprobe rkg_kp_publish = {
	.symbol_name = "rkp_kretprobe_grow_publish",
	.pre_handler = rkg_publish_pre,
};

static void rkg_tl_note(typeof(rkg_tl_irq[0]) *tl, atomic_t *count)
{
	int n;

	if (!READ_ONCE(rkg_tl_on))
		return;
	n = atomic_inc_return(count) - 1;
	if (n < RKG_TIMELINE) {
		tl[n].ns = ktime_to_ns(ktime_sub(ktime_get(), rkg_tl_t0));
		tl[n].entries = atomic_read(&rkg_inside);
		tl[n].cpu = raw_smp_processor_id();
	}
}

static int rkg_irq_pre(struct kprobe *p, struct pt_regs *regs)
{
	rkg_tl_note(rkg_tl_irq, &rkg_tl_irqs);
	return 0;
}

static int rkg_work_pre(struct kprobe *p, struct pt_regs *regs)
{
	rkg_tl_note(rkg_tl_work, &rkg_tl_works);
	return 0;
}

static struct kprobe rkg_kp_irq = {
	.symbol_name = "rkp_kretprobe_grow_irq",
	.pre_handler = rkg_irq_pre,
};

static struct kprobe rkg_kp_work = {
	.symbol_name = "rkp_kretprobe_grow_work_fn",
	.pre_handler = rkg_work_pre,
};

static struct kprobe rkg_kp_free = {
	.symbol_name = RKG_POOL_FREE,
	.pre_handler = rkg_pool_free_pre,
};

/* One wave; returns false when the sleepers did not all get in or out. */
static bool rkg_one_wave(const char *phase, unsigned int i, struct kretprobe *rp)
{
	long returns0 = atomic_long_read(&rkg_returns);
	unsigned long irq_missed0 = rkg_kp_irq.nmissed;
	int missed0 = rp ? READ_ONCE(rp->nmissed) : 0;
	unsigned int wave, entries;
	bool ok = true;
	int allocs;
	s64 all_in;

	atomic_set(&rkg_inside, 0);
	atomic_set(&rkg_back, 0);
	atomic_set(&rkg_tl_allocs, 0);
	atomic_set(&rkg_tl_publishes, 0);
	atomic_set(&rkg_tl_irqs, 0);
	atomic_set(&rkg_tl_works, 0);
	memset(rkg_tl, 0, sizeof(rkg_tl));
	memset(rkg_tl_irq, 0, sizeof(rkg_tl_irq));
	memset(rkg_tl_work, 0, sizeof(rkg_tl_work));
	wave = READ_ONCE(rkg_wave) + 1;
	rkg_tl_t0 = ktime_get();
	WRITE_ONCE(rkg_tl_on, true);
	WRITE_ONCE(rkg_wave, wave);
	wake_up_all(&rkg_start_wq);
	if (!wait_event_timeout(rkg_done_wq, atomic_read(&rkg_inside) == sleepers, 60 * HZ))
		ok = false;
	all_in = ktime_to_ns(ktime_sub(ktime_get(), rkg_tl_t0));
	entries = atomic_read(&rkg_inside);
	WRITE_ONCE(rkg_released, wave);
	wake_up_all(&rkg_release_wq);
	if (!wait_event_timeout(rkg_done_wq, atomic_read(&rkg_back) == sleepers, 60 * HZ))
		ok = false;
	WRITE_ONCE(rkg_tl_on, false);
	pr_info("RKG wave %s %u entries=%u returns=%ld missed=%d%s\n", phase, i, entries,
		atomic_long_read(&rkg_returns) - returns0,
		rp ? READ_ONCE(rp->nmissed) - missed0 : 0, ok ? "" : " timeout");
	allocs = atomic_read(&rkg_tl_allocs);
	if (allocs) {
		char line[RKG_TIMELINE * 40] = "";
		int n, len = 0;

		for (n = 0; n < min(allocs, RKG_TIMELINE); n++)
			len += scnprintf(line + len, sizeof(line) - len, " %d@%lldus/%d-%lldus",
					 rkg_tl[n].num, rkg_tl[n].ns / 1000, rkg_tl[n].entries,
					 rkg_tl[n].published_ns / 1000);
		pr_info("RKG timeline %s %u all_in=%lldus allocs=%d:%s\n", phase, i,
			all_in / 1000, allocs, line);
	}
	if (rkg_tl_kicks && (atomic_read(&rkg_tl_irqs) || atomic_read(&rkg_tl_works))) {
		char line[RKG_TIMELINE * 2 * 32] = "";
		int n, len = 0;

		for (n = 0; n < min(atomic_read(&rkg_tl_irqs), RKG_TIMELINE); n++)
			len += scnprintf(line + len, sizeof(line) - len, " %lldus/%d@cpu%d",
					 rkg_tl_irq[n].ns / 1000, rkg_tl_irq[n].entries,
					 rkg_tl_irq[n].cpu);
		len += scnprintf(line + len, sizeof(line) - len, " | worker:");
		for (n = 0; n < min(atomic_read(&rkg_tl_works), RKG_TIMELINE); n++)
			len += scnprintf(line + len, sizeof(line) - len, " %lldus/%d@cpu%d",
					 rkg_tl_work[n].ns / 1000, rkg_tl_work[n].entries,
					 rkg_tl_work[n].cpu);
		/*
		 * An irq_work that ran inside a kprobe handler (its self-IPI taken
		 * in the optimized probe's callback) is a miss of its kprobe, not
		 * a time here: counted apart.
		 */
		pr_info("RKG kicks %s %u irq_work (%lu more inside a probe handler):%s\n", phase,
			i, rkg_kp_irq.nmissed - irq_missed0, line);
	}
	return ok;
}

static int rkg_phase(const char *phase, int grow)
{
	struct kretprobe *rp = NULL;
	long returns0 = atomic_long_read(&rkg_returns);
	unsigned int i, ok = 0;
	int ret;

	if (grow >= 0) {
		rp = kzalloc(sizeof(*rp), GFP_KERNEL);
		if (!rp)
			return -ENOMEM;
		rp->kp.addr = (kprobe_opcode_t *)rkg_sleep_in;
		rp->handler = rkg_ret_handler;
		rp->grow_max = grow;
		ret = register_kretprobe(rp);
		if (ret) {
			pr_info("RKG phase %s register=%d\n", phase, ret);
			kfree(rp);
			return ret;
		}
		pr_info("RKG phase %s maxactive=%d grow_max=%d\n", phase, rp->maxactive, grow);
	}
	for (i = 1; i <= waves; i++) {
		ok += rkg_one_wave(phase, i, rp);
		msleep(settle_ms);
	}
	if (rp) {
		pr_info("RKG phase %s end waves=%u returns=%ld nmissed=%d\n", phase, ok,
			atomic_long_read(&rkg_returns) - returns0, READ_ONCE(rp->nmissed));
		unregister_kretprobe(rp);
		kfree(rp);
	} else {
		pr_info("RKG phase %s end waves=%u\n", phase, ok);
	}
	return ok == waves ? 0 : -ETIMEDOUT;
}

/* One wave of the plain phase, for /init to read kprobe_profile after it. */
static int rkg_plain_wave(void)
{
	static unsigned int i;
	bool ok = rkg_one_wave("plain", ++i, NULL);

	msleep(settle_ms);
	return ok ? 0 : -ETIMEDOUT;
}

static void rkg_account(void)
{
	long inits, init_objs, frees, free_objs;

	/* Pools freed by rethook_free() go after a grace period; their objects too. */
	rcu_barrier();
	synchronize_rcu();
	rcu_barrier();
	inits = atomic_long_read(&rkg_pool_inits);
	init_objs = atomic_long_read(&rkg_pool_init_objs);
	frees = atomic_long_read(&rkg_pool_frees);
	free_objs = atomic_long_read(&rkg_pool_free_objs);
	pr_info("RKG result pools_allocated=%ld pools_freed=%ld instances_allocated=%ld instances_freed=%ld\n",
		inits, frees, init_objs, free_objs);
	if (!rkg_accounting)
		pr_info("RKG check freed FAIL no kprobe on %s()/%s()\n", RKG_POOL_INIT,
			RKG_POOL_FREE);
	else if (inits == frees && init_objs == free_objs && inits > 0)
		pr_info("RKG check freed ok %ld pools, %ld instances allocated and freed\n",
			inits, init_objs);
	else
		pr_info("RKG check freed FAIL %ld pools (%ld instances) allocated, %ld (%ld) freed\n",
			inits, init_objs, frees, free_objs);
}

static int rkg_run_set(const char *val, const struct kernel_param *kp)
{
	int ret = 0;

	mutex_lock(&rkg_run_lock);
	if (sysfs_streq(val, "fixed"))
		ret = rkg_phase("fixed", 0);
	else if (sysfs_streq(val, "grow"))
		ret = rkg_phase("grow", grow_max);
	else if (sysfs_streq(val, "plain"))
		ret = rkg_phase("plain", -1);
	else if (sysfs_streq(val, "plain-wave"))
		ret = rkg_plain_wave();
	else if (sysfs_streq(val, "account"))
		rkg_account();
	else
		ret = -EINVAL;
	mutex_unlock(&rkg_run_lock);
	return ret;
}

static const struct kernel_param_ops rkg_run_ops = {
	.set = rkg_run_set,
};
module_param_cb(run, &rkg_run_ops, NULL, 0200);
MODULE_PARM_DESC(run, "write a phase to run it: fixed, grow, plain, plain-wave, account");

static void rkg_stop(void)
{
	unsigned int i;

	for (i = 0; i < sleepers; i++)
		if (!IS_ERR_OR_NULL(rkg_threads[i]))
			kthread_stop(rkg_threads[i]);
	kfree(rkg_threads);
}

static int __init rkg_init(void)
{
	unsigned int i;
	int ret;

	if (!sleepers || !waves)
		return -EINVAL;
	rkg_threads = kcalloc(sleepers, sizeof(*rkg_threads), GFP_KERNEL);
	if (!rkg_threads)
		return -ENOMEM;
	rkg_tl_publish = !register_kprobe(&rkg_kp_publish);
	ret = register_kprobe(&rkg_kp_irq);
	rkg_tl_kicks = !ret;
	if (rkg_tl_kicks) {
		ret = register_kprobe(&rkg_kp_work);
		if (ret) {
			unregister_kprobe(&rkg_kp_irq);
			rkg_tl_kicks = false;
		}
	}
	/* -ENOENT on C, which has neither function. */
	pr_info("RKG kick-probes %d\n", ret);
	rkg_accounting = !register_kprobe(&rkg_kp_init);
	if (rkg_accounting && register_kprobe(&rkg_kp_free)) {
		unregister_kprobe(&rkg_kp_init);
		rkg_accounting = false;
	}
	for (i = 0; i < sleepers; i++) {
		rkg_threads[i] = kthread_run(rkg_sleeper, NULL, "rkg/%u", i);
		if (IS_ERR(rkg_threads[i])) {
			int err = PTR_ERR(rkg_threads[i]);

			rkg_stop();
			if (rkg_tl_publish)
				unregister_kprobe(&rkg_kp_publish);
			if (rkg_tl_kicks) {
				unregister_kprobe(&rkg_kp_work);
				unregister_kprobe(&rkg_kp_irq);
			}
			if (rkg_accounting) {
				unregister_kprobe(&rkg_kp_free);
				unregister_kprobe(&rkg_kp_init);
			}
			return err;
		}
	}
	pr_info("RKG start sleepers=%u waves=%u grow_max=%d accounting=%d\n", sleepers, waves,
		grow_max, rkg_accounting);
	return 0;
}

static void __exit rkg_exit(void)
{
	rkg_stop();
	if (rkg_tl_publish)
		unregister_kprobe(&rkg_kp_publish);
	if (rkg_tl_kicks) {
		unregister_kprobe(&rkg_kp_work);
		unregister_kprobe(&rkg_kp_irq);
	}
	if (rkg_accounting) {
		unregister_kprobe(&rkg_kp_free);
		unregister_kprobe(&rkg_kp_init);
	}
	pr_info("RKG end\n");
}

module_init(rkg_init);
module_exit(rkg_exit);
MODULE_DESCRIPTION("kprobes: kretprobes whose callers sleep, more of them than maxactive, in waves");
MODULE_LICENSE("GPL");
