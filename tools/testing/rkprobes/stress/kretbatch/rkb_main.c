// SPDX-License-Identifier: GPL-2.0
/*
 * rkprobes_kretbatch: the kretprobe-batch scenario of
 * `scripts/rkprobes stress --scenario kretprobe-batch`.
 *
 * A registrar kthread bound to one CPU registers `nprobes` kretprobes, one on
 * the entry of each function of rkb_funcs.S (lone int3 probes: never boosted,
 * never optimized), with one register_kretprobes() call, lets the hitters hit
 * them for `hold_ms`, and unregisters them with one unregister_kretprobes()
 * call, again and again for `duration` seconds. A hitter kthread bound to
 * every other CPU calls every function in a loop.
 *
 * The window it looks for: unregistration frees each kretprobe's instance
 * pool with rethook_free(), which frees the rethook after the next RCU grace
 * period; that is sound only once the probe's int3 is gone from the text and
 * the probe from the hash, as C's order has it. To stretch whatever window
 * an implementation leaves there, a kprobe on rethook_free() (the trigger)
 * wakes, through irq_work, a SCHED_FIFO hog bound to the registrar's CPU the
 * first time the registrar frees a pool in each unregistration: with full
 * preemption the hog preempts the registrar right behind that
 * rethook_free() and spins for `hog_ms`, long enough for a grace period to
 * end and the rethook to be freed. A hitter that still reaches the probe
 * then takes an instance from freed memory, which KASAN reports.
 *
 * Only the public kprobes API is used, so the same object runs on the C core
 * and on the Rust builds. Lines for the host: "RKB start ...", "RKB result
 * ...", "RKB check <name> ok|FAIL <detail>", "RKB end".
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/irq_work.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/string.h>

#include "rkb_funcs.h"

#define RKB_SAVED 16

static unsigned int duration = 60;
module_param(duration, uint, 0444);
MODULE_PARM_DESC(duration, "seconds of register/unregister cycles");

static unsigned int nprobes = 64;
module_param(nprobes, uint, 0444);
MODULE_PARM_DESC(nprobes, "kretprobes per batch (at most 128)");

static unsigned int hold_ms = 2;
module_param(hold_ms, uint, 0444);
MODULE_PARM_DESC(hold_ms, "milliseconds the batch stays registered in each cycle");

static unsigned int hog_ms = 20;
module_param(hog_ms, uint, 0444);
MODULE_PARM_DESC(hog_ms, "milliseconds the hog spins each time the trigger wakes it");

static struct kretprobe rkb_rps[RKB_FUNCS];
static struct kretprobe *rkb_ptrs[RKB_FUNCS];
static u8 rkb_saved[RKB_FUNCS][RKB_SAVED];

static struct task_struct *rkb_registrar;
static struct task_struct *rkb_hog;
static struct task_struct *rkb_hitters[NR_CPUS];
static unsigned int rkb_registrar_cpu;

static atomic_long_t rkb_calls;
static atomic_long_t rkb_returns;
static atomic_t rkb_trigger_armed;
static atomic_t rkb_hog_pending;
static atomic_long_t rkb_triggers;
static long rkb_hog_runs;
static long rkb_cycles;
static long rkb_errors;
static long rkb_nmissed;
static int rkb_first_error;
static bool rkb_trigger_ok;

static int rkb_ret_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_long_inc(&rkb_returns);
	return 0;
}

static void rkb_hog_wake(struct irq_work *work)
{
	atomic_set(&rkb_hog_pending, 1);
	wake_up_process(rkb_hog);
}

static DEFINE_IRQ_WORK(rkb_hog_work, rkb_hog_wake);

/* The trigger: runs in the registrar's rethook_free() calls. */
static int rkb_trigger_pre(struct kprobe *p, struct pt_regs *regs)
{
	if (current == rkb_registrar && atomic_xchg(&rkb_trigger_armed, 0)) {
		atomic_long_inc(&rkb_triggers);
		irq_work_queue(&rkb_hog_work);
	}
	return 0;
}

static struct kprobe rkb_trigger = {
	.symbol_name = "rethook_free",
	.pre_handler = rkb_trigger_pre,
};

static int rkb_hog_fn(void *unused)
{
	while (!kthread_should_stop()) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (!atomic_read(&rkb_hog_pending) && !kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
		if (atomic_xchg(&rkb_hog_pending, 0)) {
			u64 until = ktime_get_ns() + (u64)hog_ms * NSEC_PER_MSEC;

			while (ktime_get_ns() < until)
				cpu_relax();
			rkb_hog_runs++;
		}
	}
	return 0;
}

static int rkb_hitter_fn(void *unused)
{
	unsigned int i, round = 0;

	while (!kthread_should_stop()) {
		for (i = 0; i < nprobes; i++)
			((void (*)(void))rkb_funcs[i])();
		atomic_long_add(nprobes, &rkb_calls);
		/*
		 * A voluntary sleep now and then: with full preemption
		 * cond_resched() does nothing, and a task that never sleeps
		 * holds up every RCU Tasks grace period, which the kprobe
		 * optimizer waits for under kprobe_mutex.
		 */
		if (++round % 8 == 0)
			usleep_range(50, 100);
	}
	return 0;
}

static void rkb_prepare(void)
{
	unsigned int i;

	for (i = 0; i < nprobes; i++) {
		memset(&rkb_rps[i], 0, sizeof(rkb_rps[i]));
		rkb_rps[i].kp.addr = (kprobe_opcode_t *)rkb_funcs[i];
		rkb_rps[i].handler = rkb_ret_handler;
		rkb_rps[i].maxactive = 2 * num_possible_cpus();
		rkb_ptrs[i] = &rkb_rps[i];
	}
}

static int rkb_registrar_fn(void *unused)
{
	unsigned long end = jiffies + duration * HZ;
	unsigned int i;
	int ret;

	while (!kthread_should_stop() && time_before(jiffies, end)) {
		rkb_prepare();
		ret = register_kretprobes(rkb_ptrs, nprobes);
		if (ret) {
			if (!rkb_errors++)
				rkb_first_error = ret;
			msleep(20);
			continue;
		}
		usleep_range(hold_ms * USEC_PER_MSEC, hold_ms * USEC_PER_MSEC + 500);
		atomic_set(&rkb_trigger_armed, rkb_trigger_ok);
		unregister_kretprobes(rkb_ptrs, nprobes);
		atomic_set(&rkb_trigger_armed, 0);
		for (i = 0; i < nprobes; i++)
			rkb_nmissed += rkb_rps[i].nmissed;
		rkb_cycles++;
	}
	/* Wait to be stopped: kthread_stop() needs the task alive. */
	while (!kthread_should_stop())
		msleep(20);
	return 0;
}

static int __init rkb_init(void)
{
	unsigned int i, cpu;
	int ret;

	if (nprobes < 1 || nprobes > RKB_FUNCS) {
		pr_err("nprobes=%u: 1..%d\n", nprobes, RKB_FUNCS);
		return -EINVAL;
	}
	if (num_online_cpus() < 2) {
		pr_err("needs 2 CPUs or more (hitters beside the registrar)\n");
		return -EINVAL;
	}
	for (i = 0; i < nprobes; i++)
		memcpy(rkb_saved[i], (void *)rkb_funcs[i], RKB_SAVED);
	rkb_registrar_cpu = cpumask_first(cpu_online_mask);

	ret = register_kprobe(&rkb_trigger);
	rkb_trigger_ok = ret == 0;
	pr_info("RKB start cpus=%u nprobes=%u hold_ms=%u hog_ms=%u duration=%u trigger=%d\n",
		num_online_cpus(), nprobes, hold_ms, hog_ms, duration, ret);

	rkb_hog = kthread_create(rkb_hog_fn, NULL, "rkb_hog");
	if (IS_ERR(rkb_hog)) {
		ret = PTR_ERR(rkb_hog);
		goto out_trigger;
	}
	kthread_bind(rkb_hog, rkb_registrar_cpu);
	sched_set_fifo(rkb_hog);
	wake_up_process(rkb_hog);

	for_each_online_cpu(cpu) {
		struct task_struct *t;

		if (cpu == rkb_registrar_cpu)
			continue;
		t = kthread_create(rkb_hitter_fn, NULL, "rkb_hit/%u", cpu);
		if (IS_ERR(t)) {
			ret = PTR_ERR(t);
			goto out_threads;
		}
		kthread_bind(t, cpu);
		rkb_hitters[cpu] = t;
		wake_up_process(t);
	}

	rkb_registrar = kthread_create(rkb_registrar_fn, NULL, "rkb_reg");
	if (IS_ERR(rkb_registrar)) {
		ret = PTR_ERR(rkb_registrar);
		rkb_registrar = NULL;
		goto out_threads;
	}
	kthread_bind(rkb_registrar, rkb_registrar_cpu);
	wake_up_process(rkb_registrar);
	return 0;

out_threads:
	for_each_possible_cpu(cpu) {
		if (rkb_hitters[cpu])
			kthread_stop(rkb_hitters[cpu]);
	}
	kthread_stop(rkb_hog);
out_trigger:
	if (rkb_trigger_ok)
		unregister_kprobe(&rkb_trigger);
	return ret;
}

static void __exit rkb_exit(void)
{
	unsigned int i, cpu, bad = 0;

	kthread_stop(rkb_registrar);
	for_each_possible_cpu(cpu) {
		if (rkb_hitters[cpu])
			kthread_stop(rkb_hitters[cpu]);
	}
	kthread_stop(rkb_hog);
	irq_work_sync(&rkb_hog_work);
	if (rkb_trigger_ok)
		unregister_kprobe(&rkb_trigger);

	for (i = 0; i < nprobes; i++)
		if (memcmp(rkb_saved[i], (void *)rkb_funcs[i], RKB_SAVED))
			bad++;

	pr_info("RKB result cycles=%ld errors=%ld first_error=%d triggers=%ld hog_runs=%ld calls=%ld returns=%ld nmissed=%ld\n",
		rkb_cycles, rkb_errors, rkb_first_error,
		atomic_long_read(&rkb_triggers), rkb_hog_runs,
		atomic_long_read(&rkb_calls), atomic_long_read(&rkb_returns),
		rkb_nmissed);
	pr_info("RKB check text %s %u of %u functions differ from before the first probe\n",
		bad ? "FAIL" : "ok", bad, nprobes);
	pr_info("RKB check registered %s %ld of %ld+%ld batches registered\n",
		rkb_errors || !rkb_cycles ? "FAIL" : "ok", rkb_cycles,
		rkb_cycles, rkb_errors);
	pr_info("RKB check fired %s returns=%ld\n",
		atomic_long_read(&rkb_returns) ? "ok" : "FAIL",
		atomic_long_read(&rkb_returns));
	pr_info("RKB end\n");
}

module_init(rkb_init);
module_exit(rkb_exit);
MODULE_DESCRIPTION("kprobes: unregistration batches of lone int3 kretprobes under hits and preemption");
MODULE_LICENSE("GPL");
