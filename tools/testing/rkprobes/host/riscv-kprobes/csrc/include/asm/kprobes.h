/* SPDX-License-Identifier: GPL-2.0 */
/* The kprobes types of asm/kprobes.h that decode-insn.h needs: the tree's asm/probes.h. */
#include <asm/probes.h>
