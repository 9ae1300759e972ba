// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit test of the Rust x86 instruction decoder (insn_decoder_rs.rs)
 * against upstream's C decoder (insn.c), inside the running kernel.
 *
 * rust_insn_kernel_text walks the core kernel text, _stext to _etext, one
 * position at a time. At each position it copies up to MAX_INSN_SIZE bytes
 * (fewer at _etext) into a buffer, so text patched concurrently cannot make
 * the two decoders see different bytes, and decodes that buffer with both
 * insn_decode(..., INSN_MODE_64) and the Rust decoder. It compares:
 *
 *   - the result: both decode, or both fail with the same errno;
 *   - the length, the emulate prefix size, the legacy prefixes (bytes and
 *     count), REX/REX2, VEX/EVEX, opcode, ModRM and SIB bytes with their
 *     sizes, the displacement and both immediates (value and size), the
 *     opcode attribute word, the address size and the operand size (not for
 *     EVEX: upstream reads EVEX.W from the wrong byte, see insn.rs);
 *   - insn_rip_relative() and the RIP-relative target, addr + length +
 *     displacement;
 *   - relative branches, which insn.h has no helper for: the C side
 *     classifies them from its own opcode bytes with the rules of upstream's
 *     x86 kprobes (prepare_emulation(), insn_jump_into_range()): jmp rel8/32,
 *     call rel32, jcc (one and two bytes) with the condition code, loop and
 *     jcxz, each with the target addr + length + immediate; legacy encodings
 *     only. The jump target (a branch that is not a call) is compared too.
 *
 * How the walk advances (resynchronises):
 *   - both decode and agree: by the length;
 *   - both fail with the same errno (padding, data, or bytes running into
 *     _etext): the position is counted as undecodable and the walk moves on
 *     by one byte, as objdump does after "(bad)";
 *   - the Rust decoder decodes AMD XOP (8f with map_select >= 8), which
 *     upstream reads as POP Ev: a deliberate difference, counted and not
 *     compared;
 *   - otherwise a mismatch is counted and reported.
 * In the last two cases the walk follows the C decoder (its length, or one
 * byte if it failed), so it stays in step with upstream's reading of text.
 *
 * rust_insn_golden_vectors runs every line of golden.txt, embedded in the
 * Rust object, through golden::check_line(). The other cases show that the
 * comparison and the golden checker can fail.
 */

#include <kunit/test.h>
#include <linux/kernel.h>
#include <linux/minmax.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <asm/insn.h>
#include <asm/text-patching.h>
#include <asm/sections.h>

#include "insn_decoder_rs.h"

/* Mismatches reported in full; the rest are only counted. */
#define RUST_INSN_MAX_REPORTS 10

/* A relative branch as upstream's x86 kprobes classify it. */
struct c_branch {
	u8 kind;
	u8 cc;
	u64 target;
};

static struct c_branch c_branch_of(struct insn *insn, u64 addr)
{
	struct c_branch b = { .kind = RUST_INSN_BRANCH_NONE };
	u8 op = insn->opcode.bytes[0];
	bool map1;

	/* Under VEX/EVEX the opcode bytes mean something else. */
	if (insn->vex_prefix.nbytes)
		return b;
	/* REX2.M0 selects map 1 without the 0f escape byte. */
	map1 = insn_is_rex2(insn) && insn_rex2_m_bit(insn);
	if (!map1 && insn->opcode.nbytes == 2 && op == 0x0f) {
		map1 = true;
		op = insn->opcode.bytes[1];
	} else if (insn->opcode.nbytes != 1) {
		return b;
	}

	if (map1) {
		if (op >= 0x80 && op <= 0x8f) {
			b.kind = RUST_INSN_BRANCH_JCC;
			b.cc = op & 0xf;
		}
	} else if (op >= 0x70 && op <= 0x7f) {
		b.kind = RUST_INSN_BRANCH_JCC;
		b.cc = op & 0xf;
	} else if (op >= 0xe0 && op <= 0xe3) {
		b.kind = RUST_INSN_BRANCH_LOOP;
		b.cc = op & 3;
	} else if (op == 0xe8) {
		b.kind = RUST_INSN_BRANCH_CALL;
	} else if (op == 0xe9 || op == 0xeb) {
		b.kind = RUST_INSN_BRANCH_JMP;
	}
	if (b.kind != RUST_INSN_BRANCH_NONE)
		b.target = addr + insn->length + (s64)insn->immediate.value;
	return b;
}

static bool field_differs(const struct insn_field *c, s32 value, u8 nbytes)
{
	return c->nbytes != nbytes || (nbytes && c->value != value);
}

/*
 * Compares a successful C decode with the Rust one of the same bytes at
 * @addr; returns the name of the first attribute that differs, or NULL.
 */
static const char *rust_insn_differs(struct insn *c, const struct rust_insn *r,
				     u64 addr)
{
	struct c_branch b;
	u64 rip_target;
	bool rip;

	if (c->length != r->length)
		return "length";
	if (c->emulate_prefix_size != r->emulate_prefix_size)
		return "emulate prefix";
	if (c->prefixes.nbytes != r->prefix_nbytes ||
	    memcmp(c->prefixes.bytes, r->prefixes, 4))
		return "legacy prefixes";
	if (c->rex_prefix.nbytes != r->rex_nbytes ||
	    memcmp(c->rex_prefix.bytes, r->rex, r->rex_nbytes))
		return "REX prefix";
	if (c->vex_prefix.nbytes != r->vex_nbytes ||
	    memcmp(c->vex_prefix.bytes, r->vex, r->vex_nbytes))
		return "VEX prefix";
	if (c->opcode.nbytes != r->opcode_nbytes ||
	    memcmp(c->opcode.bytes, r->opcode, r->opcode_nbytes))
		return "opcode";
	if (c->modrm.nbytes != r->modrm_nbytes ||
	    (r->modrm_nbytes && c->modrm.bytes[0] != r->modrm))
		return "ModRM";
	if (c->sib.nbytes != r->sib_nbytes ||
	    (r->sib_nbytes && c->sib.bytes[0] != r->sib))
		return "SIB";
	if (field_differs(&c->displacement, r->disp, r->disp_nbytes))
		return "displacement";
	if (field_differs(&c->immediate1, r->imm1, r->imm1_nbytes))
		return "immediate";
	if (field_differs(&c->immediate2, r->imm2, r->imm2_nbytes))
		return "second immediate";
	if (c->attr != r->attr)
		return "attribute";
	if (c->addr_bytes != r->addr_bytes)
		return "address size";
	if (c->vex_prefix.nbytes != 4 && c->opnd_bytes != r->opnd_bytes)
		return "operand size";

	rip = insn_rip_relative(c);
	if (rip != !!r->rip_relative)
		return "RIP-relative";
	rip_target = rip ? addr + c->length + (s64)c->displacement.value : 0;
	if (rip_target != r->rip_target)
		return "RIP-relative target";

	b = c_branch_of(c, addr);
	if (b.kind != r->branch || b.cc != r->branch_cc)
		return "relative branch";
	if (b.target != r->branch_target)
		return "branch target";
	if ((b.kind != RUST_INSN_BRANCH_NONE && b.kind != RUST_INSN_BRANCH_CALL) !=
	    !!r->has_jump_target ||
	    (r->has_jump_target && b.target != r->jump_target))
		return "jump target";
	return NULL;
}

static void rust_insn_abi(struct kunit *test)
{
	/* mov 0x12345678(%rip),%rax */
	static const u8 mov[] = { 0x48, 0x8b, 0x05, 0x78, 0x56, 0x34, 0x12 };
	/* jne .+0x10 (rel32) */
	static const u8 jne[] = { 0x0f, 0x85, 0x10, 0x00, 0x00, 0x00 };
	const u64 addr = 0xffffffff81000000ULL;
	struct rust_insn r;

	KUNIT_ASSERT_EQ(test, rust_insn_size(), sizeof(struct rust_insn));

	/* Every field, at its place, as the Rust side wrote it. */
	KUNIT_ASSERT_EQ(test, rust_insn_decode(mov, sizeof(mov), addr, &r), 0);
	KUNIT_EXPECT_EQ(test, r.length, 7);
	KUNIT_EXPECT_EQ(test, r.rex_nbytes, 1);
	KUNIT_EXPECT_EQ(test, r.rex[0], 0x48);
	KUNIT_EXPECT_EQ(test, r.opcode_nbytes, 1);
	KUNIT_EXPECT_EQ(test, r.opcode[0], 0x8b);
	KUNIT_EXPECT_EQ(test, r.modrm_nbytes, 1);
	KUNIT_EXPECT_EQ(test, r.modrm, 0x05);
	KUNIT_EXPECT_EQ(test, r.sib_nbytes, 0);
	KUNIT_EXPECT_EQ(test, r.disp_nbytes, 4);
	KUNIT_EXPECT_EQ(test, r.disp, 0x12345678);
	KUNIT_EXPECT_EQ(test, r.imm1_nbytes, 0);
	KUNIT_EXPECT_EQ(test, r.opnd_bytes, 8);
	KUNIT_EXPECT_EQ(test, r.addr_bytes, 8);
	KUNIT_EXPECT_EQ(test, r.rip_relative, 1);
	KUNIT_EXPECT_EQ(test, r.rip_target, addr + 7 + 0x12345678);
	KUNIT_EXPECT_EQ(test, r.branch, RUST_INSN_BRANCH_NONE);
	KUNIT_EXPECT_EQ(test, r.has_jump_target, 0);

	KUNIT_ASSERT_EQ(test, rust_insn_decode(jne, sizeof(jne), addr, &r), 0);
	KUNIT_EXPECT_EQ(test, r.length, 6);
	KUNIT_EXPECT_EQ(test, r.opcode_nbytes, 2);
	KUNIT_EXPECT_EQ(test, r.opcode[1], 0x85);
	KUNIT_EXPECT_EQ(test, r.imm1_nbytes, 4);
	KUNIT_EXPECT_EQ(test, r.imm1, 0x10);
	KUNIT_EXPECT_EQ(test, r.branch, RUST_INSN_BRANCH_JCC);
	KUNIT_EXPECT_EQ(test, r.branch_cc, 5);
	KUNIT_EXPECT_EQ(test, r.branch_target, addr + 6 + 0x10);
	KUNIT_EXPECT_EQ(test, r.has_jump_target, 1);
	KUNIT_EXPECT_EQ(test, r.jump_target, addr + 6 + 0x10);

	/* A truncated instruction is -ENODATA, as insn_decode() says. */
	KUNIT_EXPECT_EQ(test, rust_insn_decode(jne, 3, addr, &r), -ENODATA);
	KUNIT_EXPECT_EQ(test, r.ret, -ENODATA);
}

/* The comparison notices a difference in what it compares. */
static void rust_insn_compare_detects_differences(struct kunit *test)
{
	/* call .+0x100 */
	static const u8 call[] = { 0xe8, 0x00, 0x01, 0x00, 0x00 };
	const u64 addr = 0xffffffff81000000ULL;
	struct rust_insn r, bad;
	struct insn c;

	KUNIT_ASSERT_EQ(test, insn_decode(&c, call, sizeof(call), INSN_MODE_64), 0);
	KUNIT_ASSERT_EQ(test, rust_insn_decode(call, sizeof(call), addr, &r), 0);
	KUNIT_EXPECT_NULL(test, rust_insn_differs(&c, &r, addr));
	KUNIT_EXPECT_EQ(test, r.branch, RUST_INSN_BRANCH_CALL);
	KUNIT_EXPECT_EQ(test, r.branch_target, addr + 5 + 0x100);

	bad = r;
	bad.length = 4;
	KUNIT_EXPECT_STREQ(test, rust_insn_differs(&c, &bad, addr), "length");
	bad = r;
	bad.imm1 = 0x101;
	KUNIT_EXPECT_STREQ(test, rust_insn_differs(&c, &bad, addr), "immediate");
	bad = r;
	bad.branch = RUST_INSN_BRANCH_JMP;
	KUNIT_EXPECT_STREQ(test, rust_insn_differs(&c, &bad, addr),
			   "relative branch");
	bad = r;
	bad.branch_target += 1;
	KUNIT_EXPECT_STREQ(test, rust_insn_differs(&c, &bad, addr),
			   "branch target");
	bad = r;
	bad.has_jump_target = 1;
	bad.jump_target = r.branch_target;
	KUNIT_EXPECT_STREQ(test, rust_insn_differs(&c, &bad, addr),
			   "jump target");
	/* The same bytes seen at another address have another target. */
	KUNIT_EXPECT_STREQ(test, rust_insn_differs(&c, &r, addr + 1),
			   "branch target");
}

static void rust_insn_kernel_text(struct kunit *test)
{
	const u64 start = (unsigned long)_stext, end = (unsigned long)_etext;
	unsigned long insns = 0, undecodable = 0, xop = 0, mismatches = 0;
	unsigned long int3 = 0, branches = 0, rip = 0;
	u64 addr = start;

	while (addr < end) {
		size_t n = min_t(u64, end - addr, MAX_INSN_SIZE);
		const char *what = NULL;
		u8 buf[MAX_INSN_SIZE];
		struct rust_insn r;
		struct insn c;
		int c_ret;

		memcpy(buf, (const void *)(unsigned long)addr, n);
		c_ret = insn_decode(&c, buf, n, INSN_MODE_64);
		rust_insn_decode(buf, n, addr, &r);

		if (c_ret < 0 && c_ret == r.ret) {
			undecodable++;
			addr++;
			continue;
		}
		if (r.ret == 0 && r.xop) {
			xop++;
		} else if (c_ret == 0 && r.ret == 0) {
			what = rust_insn_differs(&c, &r, addr);
			if (!what) {
				insns++;
				int3 += c.length == 1 && buf[0] == INT3_INSN_OPCODE;
				branches += r.branch != RUST_INSN_BRANCH_NONE;
				rip += r.rip_relative;
				addr += c.length;
				/* Let RCU Tasks see a quiescent state too. */
				if (!(insns % 4096))
					cond_resched_tasks_rcu_qs();
				continue;
			}
		} else {
			what = c_ret ? "C fails, Rust decodes" :
				       "C decodes, Rust fails";
		}
		if (what && ++mismatches <= RUST_INSN_MAX_REPORTS)
			KUNIT_FAIL(test,
				   "%pS: %*ph: %s (C: %d, length %u; Rust: %d, length %u)",
				   (void *)(unsigned long)addr, (int)n, buf, what,
				   c_ret, c_ret ? 0 : c.length, r.ret, r.length);
		addr += c_ret ? 1 : c.length;
	}

	kunit_info(test, "%lu instructions, %lu mismatches", insns, mismatches);
	kunit_info(test,
		   "of them %lu int3 (padding), %lu relative branches, %lu RIP-relative",
		   int3, branches, rip);
	kunit_info(test,
		   "_stext.._etext: %llu bytes, %lu undecodable positions skipped, %lu XOP",
		   end - start, undecodable, xop);
	KUNIT_EXPECT_EQ(test, mismatches, 0);
	/* A walk that compared next to nothing would prove nothing. */
	KUNIT_EXPECT_GT(test, insns - int3, (end - start) / 16);
	KUNIT_EXPECT_GT(test, branches, 0);
	KUNIT_EXPECT_GT(test, rip, 0);
}

/* Runs one line; returns what rust_insn_golden_check() returns. */
static int golden_line(struct kunit *test, const u8 *line, size_t len,
		       unsigned int lineno)
{
	const u8 *why = NULL;
	size_t why_len = 0;
	int ret;

	ret = rust_insn_golden_check(line, len, &why, &why_len);
	if (ret < 0)
		KUNIT_FAIL(test, "golden.txt:%u: %.*s: %.*s", lineno,
			   (int)len, line, (int)why_len, why);
	return ret;
}

static void rust_insn_golden_vectors(struct kunit *test)
{
	unsigned int lineno = 0, vectors = 0, expected = 0, failed = 0;
	const u8 *text, *end, *line;
	size_t size;

	text = rust_insn_golden(&size);
	end = text + size;
	for (line = text; line < end; ) {
		const u8 *nl = memchr(line, '\n', end - line);
		size_t len = nl ? nl - line : end - line;
		const u8 *p = line;
		int ret;

		lineno++;
		/* Counted here independently: a vector is a line not blank or '#'. */
		while (p < line + len && (*p == ' ' || *p == '\t'))
			p++;
		if (p < line + len && *p != '#')
			expected++;

		ret = golden_line(test, line, len, lineno);
		if (ret > 0)
			vectors++;
		else if (ret < 0)
			failed++;
		line += len + 1;
	}

	kunit_info(test, "golden.txt: %u lines, %u vectors hold, %u fail",
		   lineno, vectors, failed);
	KUNIT_EXPECT_EQ(test, failed, 0);
	KUNIT_EXPECT_EQ(test, vectors, expected);
	KUNIT_EXPECT_GT(test, vectors, 0);
}

/* The golden checker refuses vectors that do not hold. */
static void rust_insn_golden_detects_wrong_vectors(struct kunit *test)
{
	static const struct {
		const char *line;
		const char *why;
	} wrong[] = {
		{ "64 90 ; len=2", "length" },
		{ "64 e8 00 01 00 00 ; len=5 branch=jmp target=0x105 emul=call",
		  "branch kind" },
		{ "64 e9 00 01 00 00 ; len=5 branch=jmp target=0x104 emul=jmp",
		  "branch target" },
		{ "64 48 8b 05 10 00 00 00 ; len=7", "unexpectedly RIP-relative" },
		{ "64 0f ; len=2", "decoding fails" },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(wrong); i++) {
		const u8 *why = NULL;
		size_t why_len = 0;
		int ret;

		ret = rust_insn_golden_check((const u8 *)wrong[i].line,
					     strlen(wrong[i].line), &why,
					     &why_len);
		KUNIT_EXPECT_EQ_MSG(test, ret, -EINVAL, "%s", wrong[i].line);
		if (ret != -EINVAL)
			continue;
		KUNIT_EXPECT_EQ_MSG(test, why_len, strlen(wrong[i].why),
				    "%s: %.*s", wrong[i].line, (int)why_len,
				    why);
		KUNIT_EXPECT_TRUE_MSG(test, !memcmp(why, wrong[i].why,
						    min(why_len,
							strlen(wrong[i].why))),
				      "%s: %.*s", wrong[i].line, (int)why_len,
				      why);
	}
}

static struct kunit_case rust_insn_decoder_cases[] = {
	KUNIT_CASE(rust_insn_abi),
	KUNIT_CASE(rust_insn_compare_detects_differences),
	KUNIT_CASE_SLOW(rust_insn_kernel_text),
	KUNIT_CASE(rust_insn_golden_vectors),
	KUNIT_CASE(rust_insn_golden_detects_wrong_vectors),
	{}
};

static struct kunit_suite rust_insn_decoder_suite = {
	.name = "rust_insn_decoder",
	.test_cases = rust_insn_decoder_cases,
};

kunit_test_suite(rust_insn_decoder_suite);
