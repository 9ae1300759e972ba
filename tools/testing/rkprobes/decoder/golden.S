# SPDX-License-Identifier: GPL-2.0
#
# Source of golden.txt: one instruction per line, annotated after "#=" with what the decoder
# must say about it (see golden.txt's header for the keys). Lengths and bytes come from the
# assembler (clang-22); the annotations are written by hand. Lines of .byte give raw vectors
# the assembler cannot produce, with their length (or error) written by hand.
# Regenerate golden.txt with ./mkgolden.py.

.code64
# Legacy one-byte opcodes, ModRM/SIB/displacement forms.
	nop					#= boost=y
	ret					#= emul=ret boost=y
	ret $8					#= emul=ret
	lret					#= emul=ret
	lret $16				#= emul=ret
	int3					#= exc=y emul=unsupported boost=n copy=invalid
	int $0x80				#= exc=y boost=n
	.byte 0xf1				#= len=1 exc=y boost=n
	iretq					#= emul=unsupported
	iretl					#= emul=unsupported
	hlt					#= boost=n
	cli					#= emul=if
	sti					#= emul=if
	pushfq					#= emul=if
	popfq					#= emul=if
	cld					#= boost=y
	movl %eax, %ebx				#= boost=y
	movq %rax, %rbx				#= boost=y
	movq (%rax), %rbx			#= boost=y
	movq 8(%rax), %rbx			#= boost=y
	movq 0x1000(%rax), %rbx			#= boost=y
	movq (%rsp), %rbx			#= boost=y
	movq 8(%rsp,%rcx,4), %rbx		#= boost=y
	movq 0x12345678(,%rcx,8), %rbx		#= boost=y
	movq 0x12345678, %rbx			#= boost=y
	movq (%rbp), %rbx			#= boost=y
	movq (%r13), %rbx			#= boost=y
	movq (%r12), %rbx			#= boost=y
	movq %r8, %r15				#= boost=y
	movb %al, %sil				#= boost=y
	movw $0x1234, %ax			#= boost=y
	movl $0x12345678, %eax			#= boost=y
	movabsq $0x1122334455667788, %rax	#= boost=y
	movq $-1, %rax				#= boost=y
	movabsb 0x1122334455667788, %al		#= boost=y
	movabsq %rax, 0x1122334455667788	#= boost=y
	addl $0x12345678, %eax			#= boost=y
	addq $0x7f, (%rdi)			#= boost=y
	addw $0x1234, (%rdi)			#= boost=y
	imull $0x12345678, %eax, %ebx		#= boost=y
	imulw $0x1234, %ax, %bx			#= boost=y
	enter $0x10, $1				#= boost=y
	leave					#= boost=y
	pushq $0x12345678			#= boost=y
	pushq $1				#= boost=y
	pushw $0x1234				#= boost=y
	xchgw %ax, %ax				#= boost=y
	testb $1, (%rax)			#= boost=y
	testl $0x10000, (%rax)			#= boost=y
	notq %rax				#= boost=y
	shlq $3, %rax				#= boost=y
	sarl %cl, %eax				#= boost=y
	incq (%rax)				#= boost=y
	incb (%rax)				#= boost=y
	decb %al				#= boost=y
	lock incq (%rax)			#= boost=y
	rep movsb				#= boost=y
	rep stosq				#= boost=y
	repne scasb				#= boost=y
	cs nop					#= boost=n
	addr32 movl (%eax), %ebx		#= boost=n
	fs movq 0x28, %rax			#= boost=y
	gs movq (%rax), %rax			#= boost=y
	lea 0x10(%rip), %rax			#= disp=0x10 boost=y
	movq 0x12345678(%rip), %rax		#= disp=0x12345678 boost=y
	movq -0x10(%rip), %rax			#= disp=-0x10 boost=y
	cmpb $0x7f, 0x100(%rip)			#= disp=0x100 boost=y
	cmpl $0x12345678, 0x100(%rip)		#= disp=0x100 boost=y
	movl $0x12345678, 0x100(%rip)		#= disp=0x100 boost=y
	addr32 movl 0x40(%eip), %eax		#= disp=0x40 boost=n
	vmovdqu 0x80(%rip), %ymm0		#= disp=0x80 boost=y
	vaddps -0x200(%rip), %zmm1, %zmm2	#= disp=-0x200 boost=y
	movq %fs:0x28, %rax			#= boost=y

# Relative branches.
	jmp .+0x40				#= branch=jmp target=+0x40 emul=jmp boost=n
	jmp .+0x1000				#= branch=jmp target=+0x1000 emul=jmp boost=n
	jmp .-0x1000				#= branch=jmp target=-0x1000 emul=jmp boost=n
	call .+0x1000				#= branch=call target=+0x1000 emul=call boost=n
	call .-0x10				#= branch=call target=-0x10 emul=call boost=n
	je .+0x20				#= branch=jcc.4 target=+0x20 emul=jcc boost=n
	jne .-0x20				#= branch=jcc.5 target=-0x20 emul=jcc boost=n
	jo .+0x2000				#= branch=jcc.0 target=+0x2000 emul=jcc boost=n
	jg .-0x2000				#= branch=jcc.15 target=-0x2000 emul=jcc boost=n
	loopne .+0x10				#= branch=loop.0 target=+0x10 emul=loop boost=n
	loope .+0x10				#= branch=loop.1 target=+0x10 emul=loop boost=n
	loop .-0x10				#= branch=loop.2 target=-0x10 emul=loop boost=n
	jrcxz .+0x10				#= branch=loop.3 target=+0x10 emul=loop boost=n
	jecxz .+0x10				#= branch=loop.3 target=+0x10 emul=loop boost=n
	xbegin .+0x100				#=

# Indirect branches.
	call *%rax				#= emul=callind.0 boost=n
	call *%r11				#= emul=callind.11 boost=n
	jmp *%rax				#= emul=jmpind.0 ijmp=y boost=y
	jmp *%r15				#= emul=jmpind.15 ijmp=y boost=y
	notrack jmp *%rax			#= emul=jmpind.0 ijmp=y boost=y
	call *(%rax)				#= emul=unsupported boost=n
	jmp *0x10(%rip)				#= disp=0x10 emul=unsupported ijmp=y boost=y
	call *0x10(%rip)			#= disp=0x10 emul=unsupported boost=n
	lcall *(%rax)				#= emul=unsupported boost=n
	ljmp *(%rax)				#= emul=unsupported ijmp=y boost=n
	addr32 call *%rax			#= emul=unsupported boost=n

# Exception and single-step special cases.
	ud2					#= exc=y boost=n
	ud1 %eax, %eax				#= exc=y boost=n
	ud1 (%rax), %eax			#= exc=y boost=n
# UD0: the opcode map gives it no ModRM (as AMD does), so neither does the C decoder.
	.byte 0x0f, 0xff, 0xc0			#= len=2 exc=y boost=n
	movw %ax, %ss				#= masks=y boost=y copy=invalid
	movw %ax, %ds				#= boost=y
	movw %ss, %ax				#= boost=y
	vmcall					#= emul=unsupported boost=n
	vmlaunch				#= emul=unsupported boost=n
	sgdt (%rax)				#= boost=n
	swapgs					#= boost=n
	syscall					#= boost=n
	sysretq					#= boost=n
	rdmsr					#= boost=n
	wrmsr					#= boost=n
	cpuid					#= boost=n
	rdtsc					#= boost=y
	pause					#= boost=y
	lfence					#= boost=n
	mfence					#= boost=n
	clflush (%rax)				#= boost=n
	endbr64					#= boost=n
	cmovel %eax, %ebx			#= boost=y
	sete %al				#= boost=y
	movzbl (%rax), %eax			#= boost=y
	movsbq %al, %rax			#= boost=y
	bswapq %rax				#= boost=y
	btsq $3, (%rax)				#= boost=n
	cmpxchgq %rbx, (%rax)			#= boost=y
	lock cmpxchg16b (%rax)			#= boost=n
	xaddq %rax, (%rbx)			#= boost=y
	nopl 0x0(%rax,%rax,1)			#= boost=y
	nopw %cs:0x0(%rax,%rax,1)		#= boost=y
	prefetcht0 (%rax)			#= boost=n
	popcntq %rax, %rbx			#= boost=n
	tzcntq %rax, %rbx			#= boost=y
	rdrand %rax				#= boost=n

# Newer system instructions found in kernel text.
	lkgs %di				#= boost=n
# 0f 01 /0 with mod=3 is refused as VMX, as upstream does; WRMSRNS shares that encoding.
	wrmsrns					#= emul=unsupported boost=n
	serialize				#= boost=n
	rdpid %rax				#= boost=n
	clac					#= boost=n
	stac					#= boost=n
	xsaves (%rdi)				#= boost=n
	rdfsbase %rax				#= boost=n
	repz ret				#= emul=ret boost=y
	.byte 0xf2, 0xff, 0xe0			#= len=3 emul=jmpind.0 ijmp=y boost=y
	xacquire lock incl (%rax)		#= boost=y
	ds call *%r11				#= emul=callind.11 boost=n

# x87, MMX and SSE.
	fldl (%rax)				#= boost=n
	fwait					#= boost=y
	fnstcw (%rax)				#= boost=n
	paddb %mm1, %mm0			#= boost=y
	movaps %xmm1, %xmm0			#= boost=n
	movdqu (%rax), %xmm0			#= boost=y
	pshufd $0x1b, %xmm1, %xmm0		#= boost=n
	psrlw $3, %xmm0				#= boost=n
	pshufb %xmm1, %xmm0			#= boost=n
	palignr $4, %xmm1, %xmm0		#= boost=n
	pclmulqdq $0x11, %xmm1, %xmm0		#= boost=n
	aesenc %xmm1, %xmm0			#= boost=n
	crc32q %rax, %rbx			#= boost=n
	sha256rnds2 %xmm1, %xmm0		#= boost=n

# VEX, EVEX, XOP, REX2.
	vzeroupper				#= boost=y
	vpxor %ymm1, %ymm2, %ymm3		#= boost=y
	vpxor %ymm9, %ymm10, %ymm11		#= boost=y
	vcmpeqps %xmm1, %xmm0, %xmm0		#= boost=y
	vpshufd $0x1b, %ymm1, %ymm0		#= boost=y
	vpsrlw $3, %ymm1, %ymm0			#= boost=y
	andnq %rax, %rbx, %rcx			#= boost=y
	blsrq %rax, %rbx			#= boost=y
	shlxq %rax, %rbx, %rcx			#= boost=y
	rorxq $3, %rax, %rbx			#= boost=y
	vpternlogd $0x96, %zmm1, %zmm2, %zmm3	#= boost=y
	vmovdqu64 0x40(%rax), %zmm0{%k1}{z}	#= boost=y
	vpbroadcastd %eax, %zmm0		#= boost=y
	kmovw %k1, %eax				#= boost=y
	vpcmov %xmm1, %xmm2, %xmm3, %xmm4	#= boost=y
	vprotb $3, %xmm1, %xmm2			#= boost=y
	bextr $0x1234, %eax, %ebx		#= boost=y
	vfrczps %xmm1, %xmm2			#= boost=y
	addq %r16, %r17				#= boost=y
	movq (%r20), %r21			#= boost=y
	movq 0x10(%rip), %r18			#= disp=0x10 boost=y
	{evex} addq %rax, %rbx			#= boost=y
	push2 %r16, %r17			#= boost=y
	jmpabs $0x1122334455667788		#= boost=y
	call *%r16				#= emul=unsupported boost=n

# Raw vectors.
# In 64-bit mode near branches ignore 66 (f64): the displacement stays 32 bits.
	.byte 0x66, 0xe9, 0x10, 0x00, 0x00, 0x00	#= len=6 branch=jmp target=+0x16 emul=jmp boost=n
	.byte 0x66, 0xe8, 0xf0, 0xff, 0xff, 0xff	#= len=6 branch=call target=-0xa emul=call boost=n
	.byte 0x9a, 0x00, 0x10, 0x00, 0x00, 0x10, 0x00	#= len=7 emul=unsupported boost=n
	.byte 0xea, 0x00, 0x10, 0x00, 0x00, 0x10, 0x00	#= len=7 emul=unsupported ijmp=y boost=y
	.byte 0x17				#= len=1 masks=y copy=invalid
	.byte 0x1f				#= len=1 masks=y copy=invalid
	.byte 0x0f, 0x0b, 0x78, 0x65, 0x6e, 0x0f, 0xa2	#= len=7 emu=y copy=invalid
	.byte 0x0f, 0x0b, 0x6b, 0x76, 0x6d, 0x90	#= len=6 emu=y copy=invalid
	.byte 0x66, 0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00	#= len=12 boost=y
	.byte 0xf0, 0xf2, 0xf3, 0x2e, 0x3e, 0x90	#= len=5
	.byte 0x48					#= err=NoData
	.byte 0x0f					#= err=NoData
	.byte 0xe8, 0x00, 0x00, 0x00			#= err=NoData
	.byte 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x90	#= len=15
	.byte 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x90	#= err=NoData
	.byte 0x0f, 0x38, 0x00				#= err=NoData
	.byte 0xc5, 0xf8, 0x0b				#= err=Invalid
	.byte 0xc5, 0xf8, 0x10				#= err=NoData
	.byte 0x0f, 0x38, 0xf2, 0xc0			#= err=Invalid
	.byte 0x62, 0xf1, 0x7c, 0x08, 0xff, 0xc0	#= err=Invalid
	.byte 0xc4, 0xe2, 0x79, 0x00, 0xc1		#= len=5 boost=y
	.byte 0x8f, 0xe8, 0x78, 0xc0, 0xd1, 0x03	#= len=6 boost=y
	.byte 0x8f, 0xeb, 0x78, 0xc0, 0xd1, 0x03	#= err=Invalid
	.byte 0x8f, 0xc0				#= len=2 boost=y
	.byte 0xc5, 0xf8, 0xc2, 0xc1, 0x00		#= len=5 boost=y
	.byte 0xc5, 0xf8, 0xcc, 0xc1			#= err=Invalid

.code32
	nop					#= boost=y
	ret					#= emul=ret
	movl 0x12345678, %eax			#= boost=y
	movl (%eax), %ebx			#= boost=y
	leal 8(%esp,%ecx,4), %ebx		#= boost=y
	addr16 movl (%bx,%si), %eax		#= boost=n
	.byte 0x67, 0xa1, 0x34, 0x12		#= len=4 boost=n
	.byte 0x66, 0xe9, 0x10, 0x00		#= len=4 branch=jmp target=+0x14 emul=jmp boost=n
	.byte 0x66, 0xe8, 0xf0, 0xff		#= len=4 branch=call target=-0xc emul=call boost=n
	movw $0x1234, %ax			#= boost=y
	jmp .+0x40				#= branch=jmp target=+0x40 emul=jmp
	jmp .+0x1000				#= branch=jmp target=+0x1000 emul=jmp
	call .+0x1000				#= branch=call target=+0x1000 emul=call
	jcxz .+0x10				#= branch=loop.3 target=+0x10 emul=loop
	call *%eax				#= emul=callind.0
	jmp *%ecx				#= emul=jmpind.1 ijmp=y
	lcall $0x10, $0x1000			#= emul=unsupported boost=n
	ljmp $0x10, $0x1000			#= emul=unsupported ijmp=y
	pushl %ss				#= boost=y
	popl %ss				#= masks=y copy=invalid
	popl %ds				#= masks=y copy=invalid
	incl %eax				#= boost=y
	bound %eax, (%ebx)			#= boost=n
	lds (%eax), %ebx			#= boost=y
	les (%eax), %ebx			#= boost=y
	vpxor %xmm1, %xmm2, %xmm3		#= boost=y
	vaddps %zmm1, %zmm2, %zmm3		#= boost=y
	movl 0x10, %eax				#= boost=y
	aad $10					#= boost=y
	into					#= exc=y boost=n
	pushal					#= boost=y
