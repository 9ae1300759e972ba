// SPDX-License-Identifier: GPL-2.0
/*
 * rkprobes_conf_target: the module that rkprobes_conformance's case
 * rkc_module_gone loads, probes and unloads. Writing anything to
 * /sys/module/rkprobes_conf_target/parameters/call calls both functions once.
 */
#include <linux/moduleparam.h>
#include <linux/module.h>

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

MODULE_DESCRIPTION("probe target of rkprobes_conformance, loaded and unloaded by its tests");
MODULE_LICENSE("GPL");
