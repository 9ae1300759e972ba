/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's fixed-width types, for the host builds of upstream's kprobes
 * code (included by each crate's csrc/rk_kernel.h; build.rs puts this
 * directory on the include path).
 */
#ifndef RK_TYPES_H
#define RK_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;
typedef uint8_t __u8;
typedef uint32_t __u32;
typedef uint64_t __u64;
typedef int32_t __s32;
typedef int64_t __s64;

#endif /* RK_TYPES_H */
