/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared declarations of the rkprobes_conformance KUnit module: the probed
 * functions (rkc_sites.c) and the helpers that reach user-visible files
 * and record the transcript (rkc_util.c).
 */
#ifndef _RKC_H
#define _RKC_H

#include <kunit/test.h>
#include <linux/kprobes.h>

/*
 * One transcript line: "# <case>: rkc: <key>=<value>". The host diffs the
 * lines of the C kernel against those of the Rust kernel, so a value goes
 * here only when it is the same on every boot (no raw addresses).
 */
#define RKC_NOTE(test, key, fmt, ...) \
	kunit_info(test, "rkc: %s=" fmt, key, ##__VA_ARGS__)

/* Record an integer and expect upstream C's value for it. */
#define RKC_EXPECT_INT(test, key, actual, expected)			\
	do {								\
		long __a = (long)(actual), __e = (long)(expected);	\
		RKC_NOTE(test, key, "%ld", __a);			\
		KUNIT_EXPECT_EQ_MSG(test, __a, __e, "%s", key);		\
	} while (0)

/* Record a string and expect upstream C's value for it. */
#define RKC_EXPECT_STR(test, key, actual, expected)			\
	do {								\
		const char *__a = (actual), *__e = (expected);		\
		RKC_NOTE(test, key, "%s", __a);				\
		KUNIT_EXPECT_STREQ_MSG(test, __a, __e, "%s", key);	\
	} while (0)

/*
 * What differs between arches, each value upstream C's on that arch:
 *
 * RKC_NOP8_ASM: 8 bytes of NOPs, a site that can be copied and stepped
 *	(boosted and optimized on x86); one instruction on x86, two on the
 *	others, so that +8 is a boundary and +3 never is. rkc_sites.c finds
 *	it by its bytes.
 * RKC_MID_INSN_ERRNO: a probe 3 bytes into that site (arch_prepare_kprobe()
 *	or the decoder: -EILSEQ, or -EINVAL for a misaligned address).
 * RKC_BREAK_HANDLER: the arch's breakpoint handler, in the blacklist.
 * RKC_ENTRY_TEXT: a symbol of the text the arch blacklists as a whole
 *	(entry, irqentry or head text); not defined where that text is empty.
 * RKC_NOINSTR: a noinstr function (.noinstr.text, blacklisted by the core).
 * RKC_SWITCH_TO_ERRNO: a kretprobe on __switch_to (x86's kretprobe
 *	blacklist, riscv's irqentry text).
 * RKC_FTRACE_CALL_AT_ENTRY: a probe on a traced function's symbol lands on
 *	its ftrace call, which only kprobes on ftrace can probe (arm64's entry
 *	is a NOP saving the link register, or BTI, before the call).
 */
#if defined(CONFIG_X86_64)
/* nopl 0x0(%rax,%rax,1) */
#define RKC_NOP8_ASM		".byte 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00\n\t"
#define RKC_MID_INSN_ERRNO	(-EILSEQ)
#define RKC_BREAK_HANDLER	"kprobe_int3_handler"
#define RKC_ENTRY_TEXT		"asm_exc_int3"
#define RKC_NOINSTR		"exc_int3"
#define RKC_SWITCH_TO_ERRNO	(IS_ENABLED(CONFIG_X86_KERNEL_IBT) ? 0 : -EINVAL)
#define RKC_FTRACE_CALL_AT_ENTRY	1
#elif defined(CONFIG_ARM64)
/* nop; nop (0xd503201f, little-endian) */
#define RKC_NOP8_ASM		".byte 0x1f, 0x20, 0x03, 0xd5, 0x1f, 0x20, 0x03, 0xd5\n\t"
#define RKC_MID_INSN_ERRNO	(-EINVAL)
#define RKC_BREAK_HANDLER	"kprobe_brk_handler"
#define RKC_ENTRY_TEXT		"el1h_64_sync"
#define RKC_NOINSTR		"el1h_64_sync_handler"
#define RKC_SWITCH_TO_ERRNO	0
#define RKC_FTRACE_CALL_AT_ENTRY	0
#elif defined(CONFIG_RISCV)
/* nop; nop, uncompressed (addi x0, x0, 0) */
#define RKC_NOP8_ASM		".byte 0x13, 0x00, 0x00, 0x00, 0x13, 0x00, 0x00, 0x00\n\t"
#define RKC_MID_INSN_ERRNO	(-EILSEQ)
#define RKC_BREAK_HANDLER	"kprobe_breakpoint_handler"
#define RKC_ENTRY_TEXT		"handle_exception"
#define RKC_NOINSTR		"do_trap_break"
#define RKC_SWITCH_TO_ERRNO	(-EINVAL)
#define RKC_FTRACE_CALL_AT_ENTRY	1
#elif defined(CONFIG_LOONGARCH)
/* nop; nop (andi $zero, $zero, 0) */
#define RKC_NOP8_ASM		".byte 0x00, 0x00, 0x40, 0x03, 0x00, 0x00, 0x40, 0x03\n\t"
#define RKC_MID_INSN_ERRNO	(-EILSEQ)
#define RKC_BREAK_HANDLER	"kprobe_breakpoint_handler"
/* No RKC_ENTRY_TEXT: its irqentry text is empty. */
#define RKC_NOINSTR		"do_bp"
#define RKC_SWITCH_TO_ERRNO	0
#define RKC_FTRACE_CALL_AT_ENTRY	1
#elif defined(CONFIG_PPC64) && defined(CONFIG_CPU_LITTLE_ENDIAN)
/* nop; nop (ori 0, 0, 0), little-endian */
#define RKC_NOP8_ASM		".byte 0x00, 0x00, 0x00, 0x60, 0x00, 0x00, 0x00, 0x60\n\t"
#define RKC_MID_INSN_ERRNO	(-EINVAL)
#define RKC_BREAK_HANDLER	"kprobe_handler"
#define RKC_ENTRY_TEXT		"__secondary_hold_spinloop"	/* head text */
#define RKC_NOINSTR		"hv_nmi_check_nonrecoverable"
#define RKC_SWITCH_TO_ERRNO	0
/* Built with clang, -pg: the _mcount call comes after the prologue. */
#define RKC_FTRACE_CALL_AT_ENTRY	0
#elif defined(CONFIG_S390)
/* nop 0; nop 0 (bc 0, 0), big-endian */
#define RKC_NOP8_ASM		".byte 0x47, 0x00, 0x00, 0x00, 0x47, 0x00, 0x00, 0x00\n\t"
#define RKC_MID_INSN_ERRNO	(-EINVAL)
#define RKC_BREAK_HANDLER	"kprobe_handler"
#define RKC_ENTRY_TEXT		"io_int_handler"
#define RKC_NOINSTR		"__do_pgm_check"
#define RKC_SWITCH_TO_ERRNO	0
#define RKC_FTRACE_CALL_AT_ENTRY	1
#else
#error "rkprobes_conformance: no probe sites for this architecture"
#endif

/* A function's first argument at its entry: s390 exports no regs_get_register(). */
#ifdef CONFIG_S390
#define RKC_ARG0(regs)		((regs)->gprs[2])
#else
#define RKC_ARG0(regs)		regs_get_kernel_argument(regs, 0)
#endif

/*
 * Call @fn(@a) through a pointer the compiler cannot see through. On ppc64 a
 * module function that sets up its TOC opens with the large code model's
 * global entry (ld r2,-8(r12)), which ppc_function_entry() does not step
 * over: a probe on its symbol sits there, and only calls through a pointer
 * go through it (direct calls in the module take the local entry).
 */
#define RKC_CALL(fn, a)	({ int (*__fn)(int) = (fn); OPTIMIZER_HIDE_VAR(__fn); __fn(a); })

/*
 * Whether a module's init text is freed once its init has returned, so that a
 * probe there is GONE from then on (MODULE_STATE_LIVE): not on ppc64, whose
 * module loader keeps .init sections in the module's core text
 * (module_init_section() is false in arch/powerpc/kernel/module_64.c), so
 * within_module_init() never holds there and such a probe stays live until
 * the module goes, on C as on Rust.
 */
#define RKC_MODULE_INIT_FREED	(!IS_ENABLED(CONFIG_PPC64))

/* Whether a probe on a traced function's symbol is accepted (as the probes of kprobe_events). */
#define RKC_TRACED_ENTRY_PROBEABLE \
	(IS_ENABLED(CONFIG_KPROBES_ON_FTRACE) || !RKC_FTRACE_CALL_AT_ENTRY)
/*
 * The attribute of the module's functions that the module-unload and
 * kprobe_events cases probe at entry: traced (an [FTRACE] probe) where that
 * is accepted, notrace elsewhere (riscv 6.12 has no kprobes on ftrace).
 */
#if !RKC_TRACED_ENTRY_PROBEABLE
#define RKC_ENTRY_TRACE	notrace
#else
#define RKC_ENTRY_TRACE
#endif

/*
 * rkc_f_optblock: on x86 a 2-byte NOP (xchg %ax,%ax) and two 8-byte NOPs,
 * so that an optprobe on the first covers the second; the optprobe cases
 * that use it run on x86 only, and elsewhere it holds one RKC_NOP8_ASM.
 */
#ifdef CONFIG_X86
#define RKC_OPTBLOCK_ASM	".byte 0x66, 0x90\n\t" RKC_NOP8_ASM RKC_NOP8_ASM
#else
#define RKC_OPTBLOCK_ASM	RKC_NOP8_ASM
#endif

/* Where rkc_f_bl_inner's _kprobe_blacklist entry points: not a symbol start. */
#define RKC_BL_INSIDE	0x20

/* rkc_sites.c: the probed functions; notrace ones are int3 sites, the others ftrace sites. */
int rkc_f_plain(int a);
int rkc_f_plain2(int a);
int rkc_f_three(int a);
int rkc_f_outer(int a);
int rkc_f_inner(int a);
int rkc_f_inner_traced(int a);
int rkc_f_inner_ret(int a);
int rkc_f_recurse(int n);
int rkc_f_data(int a);
int rkc_f_entry(int a);
int rkc_f_traced(int a);
int rkc_f_opt(int a);
int rkc_f_enabled(int a);
int rkc_f_enabled2(int a);
int rkc_f_enabled_traced(int a);
int rkc_f_aggr_traced(int a);
int rkc_f_event(int a);
int rkc_event_caller(int a);
int rkc_f_batch1(int a);
int rkc_f_batch2(int a);
int rkc_f_batch3(int a);
int rkc_f_past(int a);
int rkc_f_past2(int a);
int rkc_ft_b1(int a);
int rkc_ft_b2(int a);
int rkc_ft_b3(int a);
int rkc_f_nokprobe(int a);
int rkc_f_kprobes_text(int a);
int rkc_f_warn(int a);
int rkc_f_optblock(int a);
int rkc_f_bl_inner(int a);
int rkc_f_bl_next(int a);
/*
 * RKC_SLED_FNS functions (rkc_sleds[]), each a run of RKC_SLED_NOPS
 * RKC_NOP8_ASM sites (rkc_sites.c).
 */
#define RKC_SLED_FNS	30
#define RKC_SLED_NOPS	70
extern int (*const rkc_sleds[RKC_SLED_FNS])(int a);

/* The bytes of RKC_NOP8_ASM (rkc_sites.c). */
extern const u8 rkc_nop8[8];
/* Offset of the first 8-byte NOP in @fn, or -1. */
int rkc_nop8_offset(void *fn);
/* Offset of the 2-byte NOP that starts RKC_OPTBLOCK_ASM in @fn, or -1. */
int rkc_optblock_offset(void *fn);
/* Address of the ud2 of the WARN in rkc_f_warn() from this module's bug table, or NULL. */
void *rkc_warn_site(void);

/* rkc_util.c */
int rkc_sh(struct kunit *test, const char *fmt, ...) __printf(2, 3);
char *rkc_sh_out(struct kunit *test, const char *fmt, ...) __printf(2, 3);
char *rkc_list_at(struct kunit *test, const void *addr);
char *rkc_list_sym(struct kunit *test, const char *sym);
char *rkc_file_sym(struct kunit *test, const char *path, const char *sym);
char *rkc_list_line(struct kunit *test, const char *type, const char *sym,
		    unsigned long off, const char *mod, const char *tags);
char *rkc_fmt(struct kunit *test, const char *fmt, ...) __printf(2, 3);
int rkc_write(struct kunit *test, const char *path, const char *val);
char *rkc_read_trim(struct kunit *test, const char *path);
bool rkc_wait_list(struct kunit *test, const void *addr, const char *tag,
		   bool present, unsigned int secs);

int rkc_reg_kp(struct kunit *test, struct kprobe *kp);
void rkc_unreg_kp(struct kunit *test, struct kprobe *kp);
void rkc_forget_kp(struct kunit *test, struct kprobe *kp);
int rkc_reg_krp(struct kunit *test, struct kretprobe *rp);
void rkc_unreg_krp(struct kunit *test, struct kretprobe *rp);
int rkc_reg_kps(struct kunit *test, struct kprobe **kps, int num);
int rkc_reg_krps(struct kunit *test, struct kretprobe **rps, int num);

#define RKC_MOD		"rkprobes_conformance"
#define RKC_TARGET_MOD	"rkprobes_conf_target"
#define RKC_KP_DIR	"/sys/kernel/debug/kprobes"
#define RKC_TRACING	"/sys/kernel/tracing"
#define RKC_OPT_SYSCTL	"/proc/sys/debug/kprobes-optimization"

#endif /* _RKC_H */
