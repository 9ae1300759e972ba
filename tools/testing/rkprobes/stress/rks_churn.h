/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Module and task churn of the stress (rks_churn.c), and what the churned
 * target module (rks_target.c) reports to it.
 */
#ifndef RKS_CHURN_H
#define RKS_CHURN_H

#include <linux/compiler.h>
#include <linux/kconfig.h>
#include <linux/types.h>

/*
 * @fn, through a pointer the compiler cannot see through on ppc64, where a
 * module function that sets up its TOC opens with the large code model's
 * global entry (ld r2,-8(r12)), which 6.12's ppc_function_entry() does not
 * step over: a probe on its symbol sits there, and direct calls in the
 * module take the local entry past it, on C as on Rust
 * (docs/findings/ppc64-module-global-entry.md). Elsewhere @fn itself.
 */
#ifdef CONFIG_PPC64
#define RKS_VIA_PTR(fn)	({ typeof(&(fn)) __fn = (fn); OPTIMIZER_HIDE_VAR(__fn); __fn; })
#else
#define RKS_VIA_PTR(fn)	(fn)
#endif

/*
 * Whether a module's init text is freed once its init has returned, so that a
 * probe there is GONE from then on (MODULE_STATE_LIVE): everywhere but ppc64,
 * whose module loader keeps .init sections in the module's core text
 * (module_init_section() is false in arch/powerpc/kernel/module_64.c), so
 * that within_module_init() never holds there and such a probe stays live, on
 * C as on Rust, until the module goes.
 */
#define RKS_INIT_TEXT_FREED	(!IS_ENABLED(CONFIG_PPC64))

/* Calls of each of its functions that rks_target makes in its init. */
#define RKS_TGT_INIT_CALLS	20

/* Called by rks_target at the end of its init and in its exit. */
void rks_churn_target_loaded(int init_ret, int work_ret, unsigned long init_hits,
			     unsigned long work_hits, unsigned long calls);
void rks_churn_target_unloaded(bool init_gone, unsigned long work_hits,
			       unsigned long calls);

/* rks_churn.c, for rks_main.c: at module init, "stop", "finish" and exit. */
int rks_churn_start(void);
void rks_churn_stop(void);
void rks_churn_finish(void);

/* rks_main.c, for rks_churn.c: whether the stress phase goes on. */
bool rks_stress_running(void);

#endif /* RKS_CHURN_H */
