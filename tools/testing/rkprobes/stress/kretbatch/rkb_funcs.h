/* SPDX-License-Identifier: GPL-2.0 */
#ifndef RKB_FUNCS_H
#define RKB_FUNCS_H

/* The probed functions of rkb_funcs.S and the table of their addresses. */
#define RKB_FUNCS 128
extern const unsigned long rkb_funcs[RKB_FUNCS];

#endif /* RKB_FUNCS_H */
