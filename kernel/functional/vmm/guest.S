/*
 * Guest code for the oversub functional test VMM (kernel/functional/vmm/ftest.c).
 * 32-bit protected mode, flat segments, no paging; copied to a fixed guest address,
 * position independent (relative jumps, absolute LAPIC/mailbox addresses only).
 *
 * ESI = this vCPU's mailbox (set by the VMM through KVM_SET_REGS), never changed.
 * Mailbox layout (u32 words), see struct mbox in ftest.c:
 *   0 seq (VMM), 1 ack (guest), 2 op, 3 arg0, 4 arg1, 5 arg2, 6 irq count, 7 alive, 8 result
 */
#define APIC		0xfee00000
#define APIC_EOI	0xb0
#define APIC_SVR	0xf0
#define APIC_LDR	0xd0
#define APIC_DFR	0xe0
#define APIC_ICR_LO	0x300
#define APIC_ICR_HI	0x310

	.text
	.code32
	.globl guest_code_start, guest_code_end, guest_irq_handler, guest_user_loop
guest_code_start:
	/* software-enable the LAPIC, flat logical mode, LDR = 1 << (24 + apic id) */
	movl $0x1ff, APIC+APIC_SVR
	movl $0xffffffff, APIC+APIC_DFR
	movl APIC+0x20, %ecx		/* APIC ID register: id in bits 31:24 */
	shrl $24, %ecx
	movl $1, %eax
	shll %cl, %eax
	shll $24, %eax
	movl %eax, APIC+APIC_LDR
loop:
	incl 28(%esi)
	movl 0(%esi), %eax
	cmpl 4(%esi), %eax
	je loop
	movl 8(%esi), %eax
	cmpl $1, %eax
	je op_write
	cmpl $2, %eax
	je op_ipi
	cmpl $3, %eax
	je op_eoi
	cmpl $4, %eax
	je op_sti
	cmpl $5, %eax
	je op_cli
	cmpl $6, %eax
	je op_hv_spin
	cmpl $7, %eax
	je op_kvm_yield
	cmpl $8, %eax
	je op_read
	cmpl $9, %eax
	je op_ipi_spin
	cmpl $10, %eax
	je op_x2apic_enable
	cmpl $11, %eax
	je op_x2_ipi_spin
	cmpl $12, %eax
	je op_x2_eoi
	cmpl $13, %eax
	je op_hlt
	cmpl $14, %eax
	je op_spin_yield
	cmpl $15, %eax
	je op_x2_ipi
	cmpl $16, %eax
	je op_switchin_yield
	cmpl $17, %eax
	je op_hlt_yield
	cmpl $18, %eax
	je op_hlt_ipi
	cmpl $19, %eax
	je op_ipi_init
	jmp done
op_write:				/* *(u32 *)arg0 = arg1 */
	movl 12(%esi), %edx
	movl 16(%esi), %eax
	movl %eax, (%edx)
	jmp done
op_read:				/* result = *(u32 *)arg0 */
	movl 12(%esi), %edx
	movl (%edx), %eax
	movl %eax, 32(%esi)
	jmp done
op_ipi:					/* ICR_HI = arg0, ICR_LO = arg1 */
	movl 12(%esi), %eax
	movl %eax, APIC+APIC_ICR_HI
	movl 16(%esi), %eax
	movl %eax, APIC+APIC_ICR_LO
	jmp done
op_eoi:
	movl $0, APIC+APIC_EOI
	jmp done
op_ipi_init:				/* ICR_HI = arg0, ICR_LO = arg1, then OUT to port 0xf1: */
	movl 12(%esi), %eax		/* the VMM INITs this vCPU and restarts it at */
	movl %eax, APIC+APIC_ICR_HI	/* guest_code_start with the next command in */
	movl 16(%esi), %eax		/* the mailbox (vcpu_thread()) */
	movl %eax, APIC+APIC_ICR_LO
	movw $0xf1, %dx
	outb %al, %dx
	jmp done
op_sti:
	sti
	nop
	jmp done
op_cli:
	cli
	jmp done
op_ipi_spin:				/* ICR_HI = arg0, ICR_LO = arg1, then one HvCallNotifyLongSpinWait */
	movl 12(%esi), %eax
	movl %eax, APIC+APIC_ICR_HI
	movl 16(%esi), %eax
	movl %eax, APIC+APIC_ICR_LO
	movl $1, %ebp
	jmp 1f
op_hv_spin:				/* arg0 x HvCallNotifyLongSpinWait (code 0x0008) */
	movl 12(%esi), %ebp
hv_spin_loop:
1:	testl %ebp, %ebp
	jz done
	pushl %esi
	movl $0x0008, %eax		/* control, low half */
	xorl %edx, %edx			/* control, high half */
	xorl %ebx, %ebx
	xorl %ecx, %ecx
	xorl %edi, %edi
	vmmcall
	popl %esi
	movl %eax, 32(%esi)		/* hv status */
	decl %ebp
	incl 20(%esi)			/* arg2 counts calls done */
	jmp 1b
op_kvm_yield:				/* arg1 x KVM_HC_SCHED_YIELD(arg0 = dest apic id) */
	movl 16(%esi), %ebp
1:	testl %ebp, %ebp
	jz done
	movl $11, %eax
	movl 12(%esi), %ebx
	xorl %ecx, %ecx
	xorl %edx, %edx
	vmmcall
	movl %eax, 32(%esi)
	decl %ebp
	incl 20(%esi)
	jmp 1b
op_x2apic_enable:			/* IA32_APIC_BASE |= EXTD (x2APIC mode) */
	movl $0x1b, %ecx
	rdmsr
	orl $0x400, %eax
	wrmsr
	jmp done
op_x2_ipi:				/* x2APIC ICR (MSR 0x830): dest = arg0, low = arg1 */
	movl $0x830, %ecx
	movl 12(%esi), %edx
	movl 16(%esi), %eax
	wrmsr
	jmp done
op_x2_ipi_spin:				/* x2APIC ICR write, then one HvCallNotifyLongSpinWait */
	movl $0x830, %ecx
	movl 12(%esi), %edx
	movl 16(%esi), %eax
	wrmsr
	movl $1, %ebp
	jmp hv_spin_loop
op_x2_eoi:				/* x2APIC EOI (MSR 0x80b) */
	movl $0x80b, %ecx
	xorl %eax, %eax
	xorl %edx, %edx
	wrmsr
	jmp done
op_hlt:					/* sti; hlt: wait for an interrupt */
	sti
	hlt
	jmp done
op_spin_yield:				/* arg1 x { spin result iterations; KVM_HC_SCHED_YIELD(arg0) } */
	movl 16(%esi), %ebp
2:	testl %ebp, %ebp
	jz done
	movl 32(%esi), %ecx
3:	decl %ecx
	jnz 3b
	movl $11, %eax
	movl 12(%esi), %ebx
	xorl %ecx, %ecx
	xorl %edx, %edx
	vmmcall
	decl %ebp
	incl 20(%esi)
	jmp 2b
op_switchin_yield:			/* wait until *arg0 changes (the other vCPU ran), then */
	movl 12(%esi), %edx		/* KVM_HC_SCHED_YIELD to every APIC ID in the bit mask */
	movl (%edx), %ecx		/* arg1, then to APIC ID 1 */
4:	cmpl (%edx), %ecx
	je 4b
	movl $2, %ebp
5:	cmpl $8, %ebp
	je 6f
	btl %ebp, 16(%esi)
	jnc 7f
	movl $11, %eax
	movl %ebp, %ebx
	xorl %ecx, %ecx
	xorl %edx, %edx
	vmmcall
	incl 20(%esi)
7:	incl %ebp
	jmp 5b
6:	movl $11, %eax
	movl $1, %ebx
	xorl %ecx, %ecx
	xorl %edx, %edx
	vmmcall
	incl 20(%esi)
	jmp done
op_hlt_yield:				/* sti; hlt; cli; at once KVM_HC_SCHED_YIELD(arg0); */
	sti				/* then EOI (an EOI write exits: not before the yield) */
	hlt
	cli
	movl $11, %eax
	movl 12(%esi), %ebx
	xorl %ecx, %ecx
	xorl %edx, %edx
	vmmcall
	incl 20(%esi)
	movl $0, APIC+APIC_EOI
	jmp done
op_hlt_ipi:				/* sti; hlt; cli; at once ICR_HI = arg0, */
	sti				/* ICR_LO = arg1; then EOI */
	hlt
	cli
	movl 12(%esi), %eax
	movl %eax, APIC+APIC_ICR_HI
	movl 16(%esi), %eax
	movl %eax, APIC+APIC_ICR_LO
	movl $0, APIC+APIC_EOI
	jmp done
done:
	movl 0(%esi), %eax
	movl %eax, 4(%esi)
	jmp loop

/* interrupt gate target for every vector: count, no EOI (the VMM asks for EOIs) */
guest_irq_handler:
	lock incl 24(%esi)
	iret

/* CPL3 spinner: never exits, only counts */
guest_user_loop:
	incl 28(%esi)
	jmp guest_user_loop
guest_code_end:
	.section .note.GNU-stack,"",@progbits
