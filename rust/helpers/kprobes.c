// SPDX-License-Identifier: GPL-2.0

#include <linux/kprobes.h>
#include <linux/ptrace.h>
#ifdef CONFIG_PPC64_ELF_ABI_V2
#include <linux/kernel.h>
#include <asm/code-patching.h>
#endif

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

/*
 * The entry point direct calls use, of the function at addr. On ELFv2
 * powerpc a function that sets up its TOC pointer is entered by direct calls
 * past that setup; ppc_function_entry() knows the forms. Only addresses in
 * kernel text are read, so any value is safe to pass.
 */
unsigned long rust_helper_kprobes_function_entry(unsigned long addr)
{
#ifdef CONFIG_PPC64_ELF_ABI_V2
	if (kernel_text_address(addr))
		return ppc_function_entry((void *)addr);
#endif
	return addr;
}

#ifdef CONFIG_KRETPROBES
struct kretprobe *rust_helper_get_kretprobe(struct kretprobe_instance *ri)
{
	return get_kretprobe(ri);
}
#endif /* CONFIG_KRETPROBES */

#endif /* CONFIG_KPROBES */
