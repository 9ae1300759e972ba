/* SPDX-License-Identifier: GPL-2.0 */
/* What rks_main.c uses of rks_fill.S. */
#ifndef RKS_FILL_H
#define RKS_FILL_H

#define RKS_FILL_FUNCS		128

/* RKS_FILL_FUNCS small functions (NOPs and a return: rks_fill.S). */
extern void (*const rks_fill_funcs[RKS_FILL_FUNCS])(void);

#endif /* RKS_FILL_H */
