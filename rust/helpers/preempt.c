// SPDX-License-Identifier: GPL-2.0

/*
 * Used by kernel::preempt where C's macros are not inline in Rust. notrace and
 * NOKPROBE_SYMBOL: function-tracer and kprobe callbacks use them.
 */

#include <linux/kprobes.h>
#include <linux/preempt.h>

notrace int rust_helper_preempt_count(void)
{
	return preempt_count();
}
NOKPROBE_SYMBOL(rust_helper_preempt_count);

notrace void rust_helper_preempt_disable(void)
{
	preempt_disable();
}
NOKPROBE_SYMBOL(rust_helper_preempt_disable);

notrace void rust_helper_preempt_enable(void)
{
	preempt_enable();
}
NOKPROBE_SYMBOL(rust_helper_preempt_enable);

notrace void rust_helper_preempt_disable_notrace(void)
{
	preempt_disable_notrace();
}
NOKPROBE_SYMBOL(rust_helper_preempt_disable_notrace);

notrace void rust_helper_preempt_enable_notrace(void)
{
	preempt_enable_notrace();
}
NOKPROBE_SYMBOL(rust_helper_preempt_enable_notrace);

#ifdef CONFIG_PREEMPTION
/* The reschedule at the end of an inline preempt_enable(). */
notrace void rust_helper___preempt_schedule(void)
{
	__preempt_schedule();
}
NOKPROBE_SYMBOL(rust_helper___preempt_schedule);

notrace void rust_helper___preempt_schedule_notrace(void)
{
	__preempt_schedule_notrace();
}
NOKPROBE_SYMBOL(rust_helper___preempt_schedule_notrace);
#endif
