// SPDX-License-Identifier: GPL-2.0

#include <linux/kprobes.h>
#include <linux/ptrace.h>

#ifdef CONFIG_KPROBES

unsigned long rust_helper_instruction_pointer(struct pt_regs *regs)
{
	return instruction_pointer(regs);
}

unsigned long rust_helper_kernel_stack_pointer(struct pt_regs *regs)
{
	return kernel_stack_pointer(regs);
}

unsigned long rust_helper_regs_return_value(struct pt_regs *regs)
{
	return regs_return_value(regs);
}

unsigned long rust_helper_regs_get_kernel_argument(struct pt_regs *regs,
						  unsigned int n)
{
	return regs_get_kernel_argument(regs, n);
}

#ifdef CONFIG_KRETPROBES
struct kretprobe *rust_helper_get_kretprobe(struct kretprobe_instance *ri)
{
	return get_kretprobe(ri);
}
#endif /* CONFIG_KRETPROBES */

#endif /* CONFIG_KPROBES */
