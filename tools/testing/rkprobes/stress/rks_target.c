// SPDX-License-Identifier: GPL-2.0
/*
 * rks_target: the module `scripts/rkprobes stress` loads and unloads in a
 * loop while the stress module (rks_churn.c) registers probes on its
 * functions, so that probes sit on a module that comes and goes.
 *
 * Its init registers, like a module that probes itself, a kprobe on its own
 * init text (rks_tgt_init_work()) and one by symbol name on
 * rks_tgt_work_int3(), calls both RKS_TGT_INIT_CALLS times and reports the
 * hits. Then a kthread calls rks_tgt_work() (an ftrace site: a kprobe on its
 * entry is ftrace-based) and rks_tgt_work_int3() until the module exits.
 * Once init has returned, the kprobe on init text must be GONE (but on
 * ppc64, which keeps a module's init text: RKS_INIT_TEXT_FREED): the exit
 * reports whether it was, then unregisters both.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/kprobes.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched.h>

#include "rks_churn.h"

/* Traceable: a kprobe on its entry uses ftrace. */
static noinline void rks_tgt_work(void)
{
	asm volatile("");
}

/* Not traceable: a kprobe on its entry is a breakpoint. */
static noinline notrace void rks_tgt_work_int3(void)
{
	asm volatile("");
}

static noinline notrace void __init rks_tgt_init_work(void)
{
	asm volatile("");
}

static atomic_long_t rks_tgt_init_hits = ATOMIC_LONG_INIT(0);
static atomic_long_t rks_tgt_work_hits = ATOMIC_LONG_INIT(0);
static unsigned long rks_tgt_calls;
static struct task_struct *rks_tgt_thread;

static int rks_tgt_init_pre(struct kprobe *kp, struct pt_regs *regs)
{
	atomic_long_inc(&rks_tgt_init_hits);
	return 0;
}

static int rks_tgt_work_pre(struct kprobe *kp, struct pt_regs *regs)
{
	atomic_long_inc(&rks_tgt_work_hits);
	return 0;
}

static struct kprobe rks_tgt_init_kp = { .pre_handler = rks_tgt_init_pre };
static struct kprobe rks_tgt_work_kp = {
	.symbol_name = "rks_tgt_work_int3",
	.pre_handler = rks_tgt_work_pre,
};

/* Sleeps a jiffy now and then, for the optimizer's RCU-tasks grace periods. */
static int rks_tgt_fn(void *arg)
{
	unsigned int round = 0;

	while (!kthread_should_stop()) {
		rks_tgt_work();
		rks_tgt_work_int3();
		WRITE_ONCE(rks_tgt_calls, rks_tgt_calls + 1);
		if (++round % 16)
			cond_resched();
		else
			schedule_timeout_idle(1);
	}
	return 0;
}

static int __init rks_tgt_init(void)
{
	int init_ret, work_ret, i;

	rks_tgt_init_kp.addr = (kprobe_opcode_t *)rks_tgt_init_work;
	init_ret = register_kprobe(&rks_tgt_init_kp);
	work_ret = register_kprobe(&rks_tgt_work_kp);
	for (i = 0; i < RKS_TGT_INIT_CALLS; i++) {
		rks_tgt_init_work();
		rks_tgt_work_int3();
		usleep_range(500, 1000);
	}
	rks_tgt_calls = RKS_TGT_INIT_CALLS;
	rks_churn_target_loaded(init_ret, work_ret, atomic_long_read(&rks_tgt_init_hits),
				atomic_long_read(&rks_tgt_work_hits), RKS_TGT_INIT_CALLS);
	rks_tgt_thread = kthread_run(rks_tgt_fn, NULL, "rks_tgt");
	if (IS_ERR(rks_tgt_thread))
		rks_tgt_thread = NULL;
	return 0;
}

static void __exit rks_tgt_exit(void)
{
	bool gone = rks_tgt_init_kp.flags & KPROBE_FLAG_GONE;

	if (rks_tgt_thread)
		kthread_stop(rks_tgt_thread);
	/* A registration that failed left nothing to unregister; this is a no-op then. */
	unregister_kprobe(&rks_tgt_init_kp);
	unregister_kprobe(&rks_tgt_work_kp);
	rks_churn_target_unloaded(gone, atomic_long_read(&rks_tgt_work_hits),
				  READ_ONCE(rks_tgt_calls));
}

module_init(rks_tgt_init);
module_exit(rks_tgt_exit);
MODULE_DESCRIPTION("Module loaded and unloaded under probes by scripts/rkprobes stress");
MODULE_LICENSE("GPL");
