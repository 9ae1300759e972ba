// SPDX-License-Identifier: GPL-2.0

/*
 * Used by kernel::ftrace where C's inline functions are not inline in Rust.
 * notrace and NOKPROBE_SYMBOL: function-tracer callbacks use them.
 */

#include <linux/ftrace.h>
#include <linux/kprobes.h>
#include <linux/trace_recursion.h>

#ifdef CONFIG_FUNCTION_TRACER
notrace int rust_helper_ftrace_test_recursion_trylock(unsigned long ip,
						      unsigned long parent_ip)
{
	return ftrace_test_recursion_trylock(ip, parent_ip);
}
NOKPROBE_SYMBOL(rust_helper_ftrace_test_recursion_trylock);

notrace void rust_helper_ftrace_test_recursion_unlock(int bit)
{
	ftrace_test_recursion_unlock(bit);
}
NOKPROBE_SYMBOL(rust_helper_ftrace_test_recursion_unlock);

notrace struct pt_regs *rust_helper_ftrace_get_regs(struct ftrace_regs *fregs)
{
	return ftrace_get_regs(fregs);
}
NOKPROBE_SYMBOL(rust_helper_ftrace_get_regs);
#endif
