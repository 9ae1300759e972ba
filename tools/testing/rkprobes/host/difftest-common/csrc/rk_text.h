/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probed text of a shim: a host buffer of the harness (rk_set_text()),
 * which upstream dereferences kprobe_opcode_t pointers into; rk_kaddr() turns
 * such a pointer back into the kernel address the harness knows, rk_host() a
 * kernel address into a pointer. Included by the arm64 and riscv shims once
 * kprobe_opcode_t is defined.
 */
#ifndef RK_TEXT_H
#define RK_TEXT_H

static _Thread_local const unsigned char *rk_text_host;
static _Thread_local unsigned long rk_text_base;

void rk_set_text(const void *host, unsigned long base)
{
	rk_text_host = host;
	rk_text_base = base;
}

unsigned long rk_kaddr(const void *host)
{
	return rk_text_base +
	       ((unsigned long)host - (unsigned long)rk_text_host);
}

static kprobe_opcode_t *rk_host(unsigned long kaddr)
{
	return (kprobe_opcode_t *)(rk_text_host + (kaddr - rk_text_base));
}

#endif /* RK_TEXT_H */
