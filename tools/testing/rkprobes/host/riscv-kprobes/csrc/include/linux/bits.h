/* SPDX-License-Identifier: GPL-2.0 */
/* Empty: csrc/rk_kernel.h stands for it. */
