/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel state upstream's kprobes decisions read, answered by the Rust
 * harness (src/ffi.rs) from the same image the Rust decisions read.
 */
#ifndef RK_KPROBES_ENV_H
#define RK_KPROBES_ENV_H

int rk_env_read(unsigned long addr, unsigned char *buf, int len);
int rk_env_recover(unsigned long addr, unsigned char *buf);
int rk_env_lookup(unsigned long addr, unsigned long *size,
		  unsigned long *offset);
int rk_env_extable(unsigned long addr);
int rk_env_cfi_trap(unsigned long addr);
int rk_env_kgdb(unsigned long addr);
int rk_env_alternatives(unsigned long start, unsigned long end);
int rk_env_reserved(unsigned long start, unsigned long end);
int rk_env_probe(unsigned long addr, unsigned char *opcode, int *optimized,
		 unsigned char *copied);
int rk_env_ftrace(unsigned long addr);

/* As upstream's common.h declares it: opt.c defines it, core.c calls it. */
unsigned long __recover_optprobed_insn(unsigned char *buf, unsigned long addr);

#endif
