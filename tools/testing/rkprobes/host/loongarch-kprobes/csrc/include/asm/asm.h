/* SPDX-License-Identifier: GPL-2.0 */
/* Empty: rk_kernel.h (included first) has what the kernel header would give. */
