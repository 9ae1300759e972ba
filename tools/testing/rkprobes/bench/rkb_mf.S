/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The module functions of the bulk registration rows of rkprobes_bench
 * (module rkprobes_bench_mf, rkb_mf_mod.c):
 * RKB_MF_FUNCS (10000) never-called functions rkb_mf_0000 ... rkb_mf_9999,
 * each an eight-byte NOP and a return, with nothing but their symbols to
 * find them by: the rows register kprobes on them by name, one per
 * function, as tools attaching to every function of a module do.
 */
#include <linux/linkage.h>

	.text
.irp a, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
.irp b, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
.irp c, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
.irp d, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
SYM_FUNC_START_LOCAL(rkb_mf_\a\b\c\d)
	.byte 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00
	RET
SYM_FUNC_END(rkb_mf_\a\b\c\d)
.endr
.endr
.endr
.endr
