// SPDX-License-Identifier: GPL-2.0
/*
 * rkprobes_bench_mf: the RKB_MF_FUNCS functions of rkb_mf.S in a module of
 * their own, loaded only for the bulk registration rows of rkprobes_bench
 * (which finds them by name), so that their symbols do not lengthen the
 * symbol table every other registration row of the benchmark module looks
 * through.
 */
#include <linux/module.h>

MODULE_DESCRIPTION("Functions the kprobes benchmark registers probes on in bulk");
MODULE_LICENSE("GPL");
