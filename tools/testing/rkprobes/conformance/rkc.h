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

/* 8-byte NOP (nopl 0x0(%rax,%rax,1)): a site that can be copied, boosted and optimized. */
#define RKC_NOP8_ASM	".byte 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00\n\t"

/* A 2-byte NOP (xchg %ax,%ax) and two 8-byte NOPs (rkc_f_optblock). */
#define RKC_OPTBLOCK_ASM	".byte 0x66, 0x90\n\t" RKC_NOP8_ASM RKC_NOP8_ASM

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
