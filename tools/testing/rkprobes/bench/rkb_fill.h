/* SPDX-License-Identifier: GPL-2.0 */
/* What rkb_main.c uses of rkb_fill.S. */
#ifndef RKB_FILL_H
#define RKB_FILL_H

#define RKB_FILL_FUNCS		256

/* RKB_FILL_FUNCS never-called functions of 16 eight-byte NOPs each. */
extern void (*const rkb_fill_funcs[RKB_FILL_FUNCS])(void);

/* The probed functions of the emulated and RIP-relative sites. */
void rkb_jcc(void);
void rkb_call(void);
void rkb_riprel(void);

#endif /* RKB_FILL_H */
