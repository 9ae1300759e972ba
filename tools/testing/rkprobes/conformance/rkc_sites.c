// SPDX-License-Identifier: GPL-2.0
/*
 * The probed functions of rkprobes_conformance. Each case probes its own
 * functions, so kprobes/list lines and hit counts never mix between cases.
 *
 * Every site is noinline, global (so its symbol keeps its name) and has a
 * side effect the compiler cannot drop (asm volatile 8 bytes of NOPs,
 * RKC_NOP8_ASM, also a clean site to single-step, boost or optimize). The
 * notrace ones are breakpoint sites; the others start with an ftrace call,
 * so a probe on their entry is a kprobe-on-ftrace ([FTRACE]) where the arch
 * has kprobes on ftrace.
 */
#include <linux/bug.h>
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/string.h>
#include <linux/stringify.h>

#include "rkc.h"

/* The body of every site; always inlined, so each site has its own copy. */
static __always_inline int rkc_body(int a)
{
	asm volatile(RKC_NOP8_ASM RKC_NOP8_ASM ::: "memory");
	return a + 1;
}

noinline notrace int rkc_f_plain(int a)
{
	return rkc_body(a);
}

noinline notrace int rkc_f_plain2(int a)
{
	return rkc_body(a);
}

noinline notrace int rkc_f_three(int a)
{
	return rkc_body(a);
}

noinline notrace int rkc_f_outer(int a)
{
	return rkc_body(a);
}

noinline notrace int rkc_f_inner(int a)
{
	return rkc_body(a);
}

noinline int rkc_f_inner_traced(int a)
{
	return rkc_body(a);
}

noinline notrace int rkc_f_inner_ret(int a)
{
	return rkc_body(a);
}

noinline notrace int rkc_f_data(int a)
{
	return rkc_body(a);
}

noinline notrace int rkc_f_entry(int a)
{
	return rkc_body(a);
}

noinline int rkc_f_traced(int a)
{
	return rkc_body(a);
}

noinline notrace int rkc_f_opt(int a)
{
	return rkc_body(a);
}

noinline notrace int rkc_f_enabled(int a)
{
	return rkc_body(a);
}

noinline notrace int rkc_f_enabled2(int a)
{
	return rkc_body(a);
}

noinline int rkc_f_enabled_traced(int a)
{
	return rkc_body(a);
}

/* An ftrace site for rkc_ftrace_aggr_gains_post_handler alone. */
noinline int rkc_f_aggr_traced(int a)
{
	return rkc_body(a);
}

/* An ftrace site where kprobe_events can probe one at entry (RKC_ENTRY_TRACE). */
noinline RKC_ENTRY_TRACE int rkc_f_event(int a)
{
	return rkc_body(a);
}

noinline notrace int rkc_f_batch1(int a)
{
	return rkc_body(a);
}

noinline notrace int rkc_f_batch2(int a)
{
	return rkc_body(a);
}

noinline notrace int rkc_f_batch3(int a)
{
	return rkc_body(a);
}

/* rkc_offset_past_end: an offset past the end of one of these lands in the other. */
noinline notrace int rkc_f_past(int a)
{
	return rkc_body(a);
}

noinline notrace int rkc_f_past2(int a)
{
	return rkc_body(a);
}

/*
 * RKC_SLED_FNS functions of RKC_SLED_NOPS RKC_NOP8_ASM sites each, one probe
 * on each site for a batch larger than the one from which the Rust core
 * looks hash entries up in an index (rkc_unregister_big_batch). Many short
 * functions rather than one long one: C's x86 arch decodes a probe's
 * function from its start for each probe.
 */
#define RKC_SLED_FN(n)							\
static noinline notrace int rkc_f_sled##n(int a)			\
{									\
	asm volatile(".rept " __stringify(RKC_SLED_NOPS) "\n\t"		\
		     RKC_NOP8_ASM ".endr" ::: "memory");			\
	return a + 1;							\
}

RKC_SLED_FN(0)
RKC_SLED_FN(1)
RKC_SLED_FN(2)
RKC_SLED_FN(3)
RKC_SLED_FN(4)
RKC_SLED_FN(5)
RKC_SLED_FN(6)
RKC_SLED_FN(7)
RKC_SLED_FN(8)
RKC_SLED_FN(9)
RKC_SLED_FN(10)
RKC_SLED_FN(11)
RKC_SLED_FN(12)
RKC_SLED_FN(13)
RKC_SLED_FN(14)
RKC_SLED_FN(15)
RKC_SLED_FN(16)
RKC_SLED_FN(17)
RKC_SLED_FN(18)
RKC_SLED_FN(19)
RKC_SLED_FN(20)
RKC_SLED_FN(21)
RKC_SLED_FN(22)
RKC_SLED_FN(23)
RKC_SLED_FN(24)
RKC_SLED_FN(25)
RKC_SLED_FN(26)
RKC_SLED_FN(27)
RKC_SLED_FN(28)
RKC_SLED_FN(29)

int (*const rkc_sleds[RKC_SLED_FNS])(int a) = {
	rkc_f_sled0,
	rkc_f_sled1,
	rkc_f_sled2,
	rkc_f_sled3,
	rkc_f_sled4,
	rkc_f_sled5,
	rkc_f_sled6,
	rkc_f_sled7,
	rkc_f_sled8,
	rkc_f_sled9,
	rkc_f_sled10,
	rkc_f_sled11,
	rkc_f_sled12,
	rkc_f_sled13,
	rkc_f_sled14,
	rkc_f_sled15,
	rkc_f_sled16,
	rkc_f_sled17,
	rkc_f_sled18,
	rkc_f_sled19,
	rkc_f_sled20,
	rkc_f_sled21,
	rkc_f_sled22,
	rkc_f_sled23,
	rkc_f_sled24,
	rkc_f_sled25,
	rkc_f_sled26,
	rkc_f_sled27,
	rkc_f_sled28,
	rkc_f_sled29,
};

/* ftrace sites for batches (rkc_batch_ftrace). */
noinline int rkc_ft_b1(int a)
{
	return rkc_body(a);
}

noinline int rkc_ft_b2(int a)
{
	return rkc_body(a);
}

noinline int rkc_ft_b3(int a)
{
	return rkc_body(a);
}

/*
 * A 2-byte NOP, then two 8-byte NOPs: an optprobe on the first copies 10
 * bytes, so a probe on the second lies under its jump (and blocks it).
 */
noinline notrace int rkc_f_optblock(int a)
{
	asm volatile(RKC_OPTBLOCK_ASM ::: "memory");
	return a + 1;
}

/*
 * rkc_f_bl_inner has a _kprobe_blacklist entry RKC_BL_INSIDE bytes into it,
 * not at a symbol start; 6.12 blacklisted [entry, entry + its size), which
 * runs into rkc_f_bl_next, placed right after it.
 */
noinline notrace int rkc_f_bl_inner(int a)
{
	asm volatile(RKC_NOP8_ASM RKC_NOP8_ASM RKC_NOP8_ASM RKC_NOP8_ASM RKC_NOP8_ASM
		     RKC_NOP8_ASM ::: "memory");
	return a + 1;
}

noinline notrace int rkc_f_bl_next(int a)
{
	return rkc_body(a);
}

static unsigned long __used __section("_kprobe_blacklist") rkc_kbl_inside =
	(unsigned long)rkc_f_bl_inner + RKC_BL_INSIDE;

/* A kprobe_events caller of its own, so the r: event's "caller+off" is stable. */
noinline notrace int rkc_event_caller(int a)
{
	return RKC_CALL(rkc_f_event, a) * 2;
}

/* Called through a pointer read with READ_ONCE(), so the compiler cannot turn the recursion into a loop. */
static int (*rkc_recurse_ptr)(int) = rkc_f_recurse;

noinline notrace int rkc_f_recurse(int n)
{
	asm volatile(RKC_NOP8_ASM ::: "memory");
	if (n > 0)
		return READ_ONCE(rkc_recurse_ptr)(n - 1) + 1;
	return 0;
}

/* Blacklisted by this module's _kprobe_blacklist section. */
noinline notrace int rkc_f_nokprobe(int a)
{
	asm volatile(RKC_NOP8_ASM ::: "memory");
	return a + 1;
}
NOKPROBE_SYMBOL(rkc_f_nokprobe);

/* In this module's .kprobes.text. */
noinline int __kprobes rkc_f_kprobes_text(int a)
{
	asm volatile(RKC_NOP8_ASM ::: "memory");
	return a + 1;
}

/* Holds a WARN, whose ud2 is in the bug table: not probeable. */
noinline notrace int rkc_f_warn(int a)
{
	asm volatile(RKC_NOP8_ASM ::: "memory");
	WARN_ON(a == 0x7eadbeef);
	return a + 1;
}

/* rkc_nop8[]: the bytes of RKC_NOP8_ASM, as the assembler wrote them. */
asm(".pushsection .rodata\n\t"
	".globl rkc_nop8\n\t"
	"rkc_nop8:\n\t" RKC_NOP8_ASM
	".popsection");

int rkc_nop8_offset(void *fn)
{
	int off;

	for (off = 0; off < 64; off++)
		if (!memcmp((u8 *)fn + off, rkc_nop8, 8))
			return off;
	return -1;
}

int rkc_optblock_offset(void *fn)
{
#ifdef CONFIG_X86
	static const u8 rkc_optblock[] = { 0x66, 0x90, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 };
	int off;

	for (off = 0; off < 64; off++)
		if (!memcmp((u8 *)fn + off, rkc_optblock, sizeof(rkc_optblock)))
			return off;
#endif
	return -1;
}

void *rkc_warn_site(void)
{
#ifdef CONFIG_GENERIC_BUG
	unsigned long start = (unsigned long)rkc_f_warn, best = 0;
	char name[KSYM_SYMBOL_LEN];
	unsigned int i;

	for (i = 0; i < THIS_MODULE->num_bugs; i++) {
		const struct bug_entry *bug = &THIS_MODULE->bug_table[i];
		unsigned long addr;

#ifdef CONFIG_GENERIC_BUG_RELATIVE_POINTERS
		addr = (unsigned long)&bug->bug_addr_disp + bug->bug_addr_disp;
#else
		addr = bug->bug_addr;
#endif
		if (addr > start && (!best || addr < best))
			best = addr;
	}
	if (!best)
		return NULL;
	sprint_symbol_no_offset(name, best);
	if (strncmp(name, "rkc_f_warn ", strlen("rkc_f_warn ")))
		return NULL;
	return (void *)best;
#else
	return NULL;
#endif
}
