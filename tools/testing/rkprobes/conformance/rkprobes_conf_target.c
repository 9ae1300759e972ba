// SPDX-License-Identifier: GPL-2.0
/*
 * rkprobes_conf_target: the module that rkprobes_conformance's case
 * rkc_module_gone loads, probes and unloads. Writing anything to
 * /sys/module/rkprobes_conf_target/parameters/call calls both functions once.
 *
 * Loaded with init_probe=1 (case rkc_module_init_gone), its init probes its
 * own init text as a module that probes itself does: a kprobe by address on
 * rkc_target_init_addr() and one by name on rkc_target_init_named(), each
 * called once. Once init has returned, both must be GONE (but on ppc64,
 * which keeps a module's init text: RKC_MODULE_INIT_FREED);
 * parameters/init_probe_state says "ret=A,B hits=A,B gone=A,B" (the two
 * registrations' results, hits, and whether each is GONE now).
 */
#include <linux/atomic.h>
#include <linux/kprobes.h>
#include <linux/moduleparam.h>
#include <linux/module.h>
#include <linux/sysfs.h>

#include "rkc.h"

/* A breakpoint site. */
static noinline notrace int rkc_target_notrace(int a)
{
	asm volatile(RKC_NOP8_ASM ::: "memory");
	return a + 1;
}

/* An ftrace site where a probe at entry is accepted there (RKC_ENTRY_TRACE). */
static noinline RKC_ENTRY_TRACE int rkc_target_traced(int a)
{
	asm volatile(RKC_NOP8_ASM ::: "memory");
	return a + 1;
}

static int rkc_target_call(const char *val, const struct kernel_param *kp)
{
	RKC_CALL(rkc_target_notrace, 1);
	RKC_CALL(rkc_target_traced, 1);
	return 0;
}

static const struct kernel_param_ops rkc_target_call_ops = {
	.set = rkc_target_call,
};
module_param_cb(call, &rkc_target_call_ops, NULL, 0200);
MODULE_PARM_DESC(call, "write anything: call the probed functions once");

/* Init text, probed by this module's own init (init_probe=1). */
static noinline notrace int __init rkc_target_init_addr(int a)
{
	asm volatile(RKC_NOP8_ASM ::: "memory");
	return a + 1;
}

static noinline notrace int __init rkc_target_init_named(int a)
{
	asm volatile(RKC_NOP8_ASM ::: "memory");
	return a + 2;
}

static bool init_probe;
module_param(init_probe, bool, 0400);
MODULE_PARM_DESC(init_probe, "probe the module's own init text from its init");

static atomic_t rkc_init_hits[2];
static int rkc_init_ret[2];

static int rkc_target_init_pre(struct kprobe *kp, struct pt_regs *regs);

static struct kprobe rkc_init_kp[2] = {
	{ .pre_handler = rkc_target_init_pre },
	{ .symbol_name = "rkc_target_init_named", .pre_handler = rkc_target_init_pre },
};

static int rkc_target_init_pre(struct kprobe *kp, struct pt_regs *regs)
{
	atomic_inc(&rkc_init_hits[kp == &rkc_init_kp[1]]);
	return 0;
}

static int rkc_target_init_state(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "ret=%d,%d hits=%d,%d gone=%d,%d\n",
			  rkc_init_ret[0], rkc_init_ret[1],
			  atomic_read(&rkc_init_hits[0]), atomic_read(&rkc_init_hits[1]),
			  !!(rkc_init_kp[0].flags & KPROBE_FLAG_GONE),
			  !!(rkc_init_kp[1].flags & KPROBE_FLAG_GONE));
}

static const struct kernel_param_ops rkc_target_init_state_ops = {
	.get = rkc_target_init_state,
};
module_param_cb(init_probe_state, &rkc_target_init_state_ops, NULL, 0400);
MODULE_PARM_DESC(init_probe_state, "the init-text probes: results, hits, GONE now");

static int __init rkc_target_init(void)
{
	if (!init_probe)
		return 0;
	rkc_init_kp[0].addr = (kprobe_opcode_t *)rkc_target_init_addr;
	rkc_init_ret[0] = register_kprobe(&rkc_init_kp[0]);
	rkc_init_ret[1] = register_kprobe(&rkc_init_kp[1]);
	RKC_CALL(rkc_target_init_addr, 1);
	RKC_CALL(rkc_target_init_named, 1);
	return 0;
}

static void __exit rkc_target_exit(void)
{
	/* A registration that failed left nothing to unregister: a no-op then. */
	if (init_probe) {
		unregister_kprobe(&rkc_init_kp[0]);
		unregister_kprobe(&rkc_init_kp[1]);
	}
}

module_init(rkc_target_init);
module_exit(rkc_target_exit);
MODULE_DESCRIPTION("probe target of rkprobes_conformance, loaded and unloaded by its tests");
MODULE_LICENSE("GPL");
