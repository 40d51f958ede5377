// SPDX-License-Identifier: GPL-2.0
/*
 * oversub functional tests: a tiny KVM VMM (in-kernel irqchip, several vCPUs, 32-bit
 * protected-mode guest from guest.S) that drives the patched KVM / scheduler paths and
 * measures the series' effects with upstream tracepoints (sched_switch: who runs next),
 * per-thread CPU time and KVM's binary-stats counters in debugfs.
 *
 *   ftest list            list test names
 *   ftest all             run every test
 *   ftest NAME...         run the named tests
 *
 * Prints one "ok N - NAME" / "not ok N - NAME # reason" line per test and ends with
 * "N passed, N failed".  Exit status 0 iff all passed.  Diagnostics start with "# ".
 *
 * Under QEMU TCG there is no SVM pause filter and no AVIC: kvm_vcpu_on_spin() is reached
 * through Hyper-V HvCallNotifyLongSpinWait, yield_to() through KVM_HC_SCHED_YIELD, and
 * guest ICR/EOI writes always exit to kvm_lapic_reg_write().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern const char guest_code_start[], guest_code_end[], guest_irq_handler[], guest_user_loop[];

#define MEM_SIZE	(2u << 20)
#define GDT_GPA		0x2000
#define IDT_GPA		0x3000
#define CODE_GPA	0x10000
#define MBOX_GPA	0x80000
#define STACK_GPA	0x100000	/* per-vCPU stacks grow down from here, 4 KiB each */
#define MAX_VCPUS	8

#define OP_WRITE	1
#define OP_IPI		2
#define OP_EOI		3
#define OP_STI		4
#define OP_CLI		5
#define OP_HV_SPIN	6
#define OP_KVM_YIELD	7
#define OP_READ		8
#define OP_IPI_SPIN	9	/* IPI (arg0=ICR hi, arg1=ICR lo) then one HvCallNotifyLongSpinWait */
#define OP_X2APIC_ENABLE 10	/* IA32_APIC_BASE.EXTD = 1 */
#define OP_X2_IPI_SPIN	11	/* x2APIC ICR MSR (arg0=dest, arg1=low), then one HvCallNotifyLongSpinWait */
#define OP_X2_EOI	12	/* x2APIC EOI MSR */
#define OP_HLT		13	/* sti; hlt */
#define OP_SPIN_YIELD	14	/* arg1 x { spin mbox.result iterations; KVM_HC_SCHED_YIELD(arg0) } */
#define OP_X2_IPI	15	/* x2APIC ICR MSR (arg0=dest, arg1=low) */
#define OP_SWITCHIN_YIELD 16	/* wait until u32 at arg0 changes; KVM_HC_SCHED_YIELD to each APIC ID
				 * set in the mask arg1 (2..7), then to APIC ID 1 */
#define OP_HLT_YIELD	17	/* sti; hlt; cli; KVM_HC_SCHED_YIELD(arg0) at once; EOI */
#define OP_HLT_IPI	18	/* sti; hlt; cli; IPI (arg0=ICR hi, arg1=ICR lo) at once; EOI */
#define OP_IPI_INIT	19	/* IPI (arg0=ICR hi, arg1=ICR lo), then OUT to INIT_PORT: the VMM INITs
				 * the vCPU and restarts it with one HvCallNotifyLongSpinWait next */
#define INIT_PORT	0xf1

/* ICR bits */
#define ICR_FIXED	0x000
#define ICR_LOGICAL	0x800
#define ICR_ASSERT	0x4000
#define ICR_SELF	0x40000
#define ICR_ALL_INC	0x80000
#define ICR_ALL_EXC	0xc0000

struct mbox {
	volatile uint32_t seq, ack, op, arg0, arg1, arg2, irqs, alive, result;
	uint32_t pad[64 - 9];
};

static const char *tracefs = "/sys/kernel/tracing";
static const char *kvm_params = "/sys/module/kvm/parameters";
static int verbose;

static void diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("# ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ------------------------------------------------------------------ files */

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -errno : 0;
}

static int write_filef(const char *val, const char *fmt, ...)
{
	char path[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return write_file(path, val);
}

static char *read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	size_t cap = 1 << 16, n = 0;
	char *buf;
	ssize_t r;

	if (fd < 0)
		return NULL;
	buf = malloc(cap + 1);
	while ((r = read(fd, buf + n, cap - n)) > 0) {
		n += r;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
	}
	close(fd);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

static long read_long(const char *path, long dflt)
{
	char *s = read_file(path, NULL);
	long v = dflt;

	if (s) {
		if (s[0] == 'Y')
			v = 1;
		else if (s[0] == 'N')
			v = 0;
		else
			v = strtol(s, NULL, 0);
		free(s);
	}
	return v;
}

static int exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* ---------------------------------------------------------------- tracing */

static int event_exists(const char *ev) /* "kvm/kvm_ipi_track" */
{
	char p[256];

	snprintf(p, sizeof(p), "%s/events/%s/enable", tracefs, ev);
	return exists(p);
}

static void trace_start(const char **evs)
{
	char p[256];

	write_filef("0", "%s/tracing_on", tracefs);
	write_filef("0", "%s/events/enable", tracefs);
	write_filef("", "%s/trace", tracefs);
	write_filef("8192", "%s/buffer_size_kb", tracefs);
	/* local_clock(): the clock rq_clock() is built on (raw sched_clock() can drift from it
	 * by milliseconds under TCG, where the TSC is not a stable sched_clock) */
	write_filef("perf", "%s/trace_clock", tracefs);
	for (; *evs; evs++) {
		snprintf(p, sizeof(p), "%s/events/%s/enable", tracefs, *evs);
		write_file(p, "1");
	}
	write_filef("1", "%s/tracing_on", tracefs);
}

struct ev {
	int cpu;
	int pid;	/* task that emitted the event */
	uint64_t ts_ns;
	char name[48];
	char args[256];
};

struct evlist {
	struct ev *v;
	int n;
};

/* Stop tracing and parse .../trace: "task-pid [cpu] flags ts: name: args" */
static struct evlist trace_stop(void)
{
	struct evlist l = { 0 };
	char *buf, *line, *save = NULL;
	int cap = 0;

	write_filef("0", "%s/tracing_on", tracefs);
	{
		char p[256];

		snprintf(p, sizeof(p), "%s/trace", tracefs);
		buf = read_file(p, NULL);
	}
	if (!buf)
		return l;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *br, *colon, *name, *nend;
		unsigned long sec, usec;
		struct ev e = { 0 };

		if (line[0] == '#')
			continue;
		br = strstr(line, "] ");
		if (!br || !strchr(line, '['))
			continue;
		e.cpu = atoi(strrchr(line, '[') ? strchr(line, '[') + 1 : "0");
		{
			/* "comm-pid [cpu]": the pid follows the last '-' before the bracket */
			char *lb = strchr(line, '['), *d = NULL, *q;

			for (q = line; q < lb; q++)
				if (*q == '-')
					d = q;
			e.pid = d ? atoi(d + 1) : -1;
		}
		/* timestamp: first "SEC.USEC:" after the bracket */
		colon = strstr(br, ": ");
		if (!colon)
			continue;
		{
			char *t = colon;

			while (t > br && t[-1] != ' ')
				t--;
			if (sscanf(t, "%lu.%lu", &sec, &usec) != 2)
				continue;
			e.ts_ns = sec * 1000000000ull + usec * 1000ull;
		}
		name = colon + 2;
		nend = strstr(name, ": ");
		if (!nend)
			continue;
		snprintf(e.name, sizeof(e.name), "%.*s", (int)(nend - name), name);
		snprintf(e.args, sizeof(e.args), "%s", nend + 2);
		if (l.n == cap) {
			cap = cap ? cap * 2 : 256;
			l.v = realloc(l.v, cap * sizeof(*l.v));
		}
		l.v[l.n++] = e;
		if (verbose)
			diag("trace: [%d] %llu.%06llu %s: %s", e.cpu, (unsigned long long)(e.ts_ns / 1000000000ull), (unsigned long long)(e.ts_ns % 1000000000ull / 1000), e.name, e.args);
	}
	free(buf);
	return l;
}

/* value of "key=" in args, as string (static buffer) */
static const char *arg_str(const struct ev *e, const char *key)
{
	static char out[64];
	char pat[64];
	const char *p = e->args;
	size_t kl;

	snprintf(pat, sizeof(pat), "%s=", key);
	kl = strlen(pat);
	while ((p = strstr(p, pat))) {
		if (p == e->args || p[-1] == ' ') {
			size_t n = strcspn(p + kl, " ");

			snprintf(out, sizeof(out), "%.*s", (int)n, p + kl);
			return out;
		}
		p += kl;
	}
	out[0] = 0;
	return NULL;
}

static long long arg_num(const struct ev *e, const char *key)
{
	const char *s = arg_str(e, key);

	return s ? strtoll(s, NULL, 0) : -999999;
}

static void dump_events(const struct evlist *l, const char *name, int max)
{
	int i, k = 0;

	for (i = 0; i < l->n && k < max; i++)
		if (!name || !strcmp(l->v[i].name, name)) {
			diag("  [%d] %llu.%06llu %s: %s", l->v[i].cpu, (unsigned long long)(l->v[i].ts_ns / 1000000000ull),
			     (unsigned long long)(l->v[i].ts_ns % 1000000000ull / 1000), l->v[i].name, l->v[i].args);
			k++;
		}
}

/* -------------------------------------------------------------------- VM */

struct vm;

struct vcpu {
	struct vm *vm;
	int id, fd, cpl3;
	struct kvm_run *run;
	pthread_t thr;
	volatile pid_t tid;
	volatile int exited;
	int pin_cpu;		/* -1: no pinning */
	char cgroup[128];	/* cgroup v2 dir to join (threaded), "" = none */
};

struct vm {
	int kvm, fd, nr;
	uint8_t *mem;
	int hyperv;
	struct vcpu vcpu[MAX_VCPUS];
	struct mbox *mb;
};

static int kvm_fd = -1;

#define CHECK(x) do { if ((x) < 0) { diag("%s:%d: %s: %s", __FILE__, __LINE__, #x, strerror(errno)); _exit(3); } } while (0)

static void set_seg(struct kvm_segment *s, uint16_t sel, int code, int dpl)
{
	memset(s, 0, sizeof(*s));
	s->base = 0;
	s->limit = 0xffffffff;
	s->selector = sel;
	s->type = code ? 0xb : 0x3;	/* code: exec/read accessed; data: rw accessed */
	s->present = 1;
	s->dpl = dpl;
	s->db = 1;
	s->s = 1;
	s->g = 1;
}

static void setup_cpuid(struct vm *vm, int vfd)
{
	int n = 128;
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));
	int i, j;

	c->nent = n;
	CHECK(ioctl(vm->kvm, KVM_GET_SUPPORTED_CPUID, c));
	if (vm->hyperv) {
		/* drop KVM's own 0x4000000x leaves, present Hyper-V instead */
		for (i = j = 0; i < (int)c->nent; i++)
			if ((c->entries[i].function & 0xffffff00) != 0x40000000)
				c->entries[j++] = c->entries[i];
		c->nent = j;
		struct kvm_cpuid_entry2 hv[] = {
			{ .function = 0x40000000, .eax = 0x40000005, .ebx = 0x7263694d, .ecx = 0x666f736f, .edx = 0x76482074 },
			{ .function = 0x40000001, .eax = 0x31237648 /* "Hv#1" */ },
			{ .function = 0x40000002 },
			{ .function = 0x40000003, .eax = 0x1ff, .edx = 0 },
			{ .function = 0x40000004, .ebx = 0x3fff /* spinlock retries */ },
			{ .function = 0x40000005, .eax = MAX_VCPUS },
		};
		for (i = 0; i < (int)(sizeof(hv) / sizeof(hv[0])); i++)
			c->entries[c->nent++] = hv[i];
	}
	CHECK(ioctl(vfd, KVM_SET_CPUID2, c));
	free(c);
}

/*
 * The state a vCPU starts the guest code in: flat protected mode at guest_code_start (the
 * CPL3 loop for a cpl3 vCPU), its mailbox in ESI, runnable.  Also what vcpu_init_event()
 * restores after an INIT.
 */
static void vcpu_set_state(struct vm *vm, struct vcpu *v)
{
	struct kvm_sregs sr;
	struct kvm_regs r;
	struct kvm_mp_state mp = { .mp_state = KVM_MP_STATE_RUNNABLE };

	CHECK(ioctl(v->fd, KVM_GET_SREGS, &sr));
	set_seg(&sr.cs, v->cpl3 ? 0x1b : 0x08, 1, v->cpl3 ? 3 : 0);
	set_seg(&sr.ds, v->cpl3 ? 0x23 : 0x10, 0, v->cpl3 ? 3 : 0);
	sr.es = sr.fs = sr.gs = sr.ss = sr.ds;
	sr.gdt.base = GDT_GPA;
	sr.gdt.limit = 5 * 8 - 1;
	sr.idt.base = IDT_GPA;
	sr.idt.limit = 256 * 8 - 1;
	sr.cr0 = 0x11;	/* PE | ET */
	sr.cr4 = 0;
	sr.efer = 0;
	CHECK(ioctl(v->fd, KVM_SET_SREGS, &sr));
	memset(&r, 0, sizeof(r));
	r.rflags = 2;
	r.rsi = MBOX_GPA + v->id * sizeof(struct mbox);
	r.rsp = STACK_GPA - v->id * 4096;
	r.rip = CODE_GPA + (v->cpl3 ? guest_user_loop - guest_code_start : 0);
	CHECK(ioctl(v->fd, KVM_SET_REGS, &r));
	if (v->cpl3) {
		/*
		 * The CPL3 loop skips guest_code_start, which software-enables the LAPIC
		 * (SVR = 0x1ff); a disabled LAPIC accepts no IPI, so enable it here.
		 */
		struct kvm_lapic_state ls;
		uint32_t svr = 0x1ff;

		CHECK(ioctl(v->fd, KVM_GET_LAPIC, &ls));
		memcpy(&ls.regs[0xf0], &svr, sizeof(svr));
		CHECK(ioctl(v->fd, KVM_SET_LAPIC, &ls));
	}
	if (vm->hyperv) {
		struct {
			struct kvm_msrs h;
			struct kvm_msr_entry e[1];
		} m = { .h.nmsrs = 1, .e[0] = { .index = 0x40000000 /* HV_X64_MSR_GUEST_OS_ID */,
						  .data = 0x8100000000000000ull } };
		if (ioctl(v->fd, KVM_SET_MSRS, &m) != 1) {
			diag("KVM_SET_MSRS(HV_X64_MSR_GUEST_OS_ID) failed");
			_exit(3);
		}
	}
	CHECK(ioctl(v->fd, KVM_SET_MP_STATE, &mp));
}

static void vcpu_setup(struct vm *vm, struct vcpu *v)
{
	int sz;

	v->fd = ioctl(vm->fd, KVM_CREATE_VCPU, v->id);
	CHECK(v->fd);
	sz = ioctl(vm->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	v->run = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
	if (v->run == MAP_FAILED)
		CHECK(-1);
	setup_cpuid(vm, v->fd);
	vcpu_set_state(vm, v);
}

/*
 * INIT this vCPU as KVM does for an INIT IPI: latch an INIT (KVM_SET_VCPU_EVENTS,
 * smi.latched_init), then KVM_GET_MP_STATE, which runs kvm_apic_accept_events() and so
 * kvm_vcpu_reset(vcpu, true), without entering the guest; then restart the guest code
 * (vcpu_set_state(): the guest's mailbox, in guest memory, is kept).  Called by the vCPU's
 * own thread, outside KVM_RUN.
 */
static void vcpu_init_event(struct vcpu *v)
{
	struct kvm_vcpu_events ev;
	struct kvm_mp_state mp;

	CHECK(ioctl(v->fd, KVM_GET_VCPU_EVENTS, &ev));
	ev.flags |= KVM_VCPUEVENT_VALID_SMM;
	ev.smi.latched_init = 1;
	CHECK(ioctl(v->fd, KVM_SET_VCPU_EVENTS, &ev));
	CHECK(ioctl(v->fd, KVM_GET_MP_STATE, &mp));
	if (mp.mp_state != KVM_MP_STATE_RUNNABLE && mp.mp_state != KVM_MP_STATE_INIT_RECEIVED)
		diag("vcpu%d: mp_state %u after INIT", v->id, mp.mp_state);
	vcpu_set_state(v->vm, v);
}

static void sigusr1(int s) { (void)s; }

static void *vcpu_thread(void *arg)
{
	struct vcpu *v = arg;

	v->tid = syscall(SYS_gettid);
	if (v->cgroup[0]) {
		char t[32];

		snprintf(t, sizeof(t), "%d", v->tid);
		if (write_filef(t, "%s/cgroup.threads", v->cgroup))
			diag("vcpu%d: cannot join %s", v->id, v->cgroup);
	}
	{
		cpu_set_t s;
		int c;

		CPU_ZERO(&s);
		if (v->pin_cpu >= 0)
			CPU_SET(v->pin_cpu, &s);
		else
			for (c = 0; c < CPU_SETSIZE; c++)
				CPU_SET(c, &s);
		if (sched_setaffinity(0, sizeof(s), &s))
			diag("vcpu%d: sched_setaffinity: %s", v->id, strerror(errno));
	}
	for (;;) {
		int r = ioctl(v->fd, KVM_RUN, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			diag("vcpu%d: KVM_RUN: %s", v->id, strerror(errno));
			break;
		}
		if (v->run->exit_reason == KVM_EXIT_HLT)
			continue;
		if (v->run->exit_reason == KVM_EXIT_IO && v->run->io.port == INIT_PORT) {
			/* OP_IPI_INIT: INIT, then the spin as the command of the same seq */
			struct mbox *m = &v->vm->mb[v->id];

			vcpu_init_event(v);
			m->op = OP_HV_SPIN;
			m->arg0 = 1;
			m->arg1 = 0;
			m->arg2 = 0;
			__sync_synchronize();
			continue;
		}
		diag("vcpu%d: unexpected exit %d (hw reason 0x%llx) rip?", v->id, v->run->exit_reason,
		     (unsigned long long)v->run->hw.hardware_exit_reason);
		break;
	}
	v->exited = 1;
	return NULL;
}

struct vm_opts {
	int nr;
	int hyperv;
	int cpl3_mask;		/* vCPUs running the CPL3 user loop */
	int pin_cpu;		/* pin all vCPU threads to this CPU, -1 none */
	int pin_split;		/* if > 0: vCPUs from this index on are pinned to CPU 0 instead */
	const char *cgroup[MAX_VCPUS];
};

static struct vm *vm_create(const struct vm_opts *o)
{
	struct vm *vm = calloc(1, sizeof(*vm));
	struct kvm_userspace_memory_region mr;
	uint64_t *gdt, *idt;
	uint32_t h;
	int i;

	vm->kvm = kvm_fd;
	vm->nr = o->nr;
	vm->hyperv = o->hyperv;
	vm->fd = ioctl(kvm_fd, KVM_CREATE_VM, 0);
	CHECK(vm->fd);
	vm->mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (vm->mem == MAP_FAILED)
		CHECK(-1);
	mr = (struct kvm_userspace_memory_region){ .slot = 0, .guest_phys_addr = 0, .memory_size = MEM_SIZE,
						  .userspace_addr = (uintptr_t)vm->mem };
	CHECK(ioctl(vm->fd, KVM_SET_USER_MEMORY_REGION, &mr));
	CHECK(ioctl(vm->fd, KVM_CREATE_IRQCHIP, 0));
	/* GDT: null, code0, data0, code3, data3 */
	gdt = (uint64_t *)(vm->mem + GDT_GPA);
	gdt[0] = 0;
	gdt[1] = 0x00cf9b000000ffffull;
	gdt[2] = 0x00cf93000000ffffull;
	gdt[3] = 0x00cffb000000ffffull;
	gdt[4] = 0x00cff3000000ffffull;
	/* IDT: every vector -> guest_irq_handler, 32-bit interrupt gate, DPL0 */
	idt = (uint64_t *)(vm->mem + IDT_GPA);
	h = CODE_GPA + (guest_irq_handler - guest_code_start);
	for (i = 0; i < 256; i++)
		idt[i] = (h & 0xffffull) | (0x08ull << 16) | (0x8e00ull << 32) | ((uint64_t)(h >> 16) << 48);
	memcpy(vm->mem + CODE_GPA, guest_code_start, guest_code_end - guest_code_start);
	vm->mb = (struct mbox *)(vm->mem + MBOX_GPA);
	for (i = 0; i < o->nr; i++) {
		struct vcpu *v = &vm->vcpu[i];

		v->vm = vm;
		v->id = i;
		v->cpl3 = !!(o->cpl3_mask & (1 << i));
		v->pin_cpu = o->pin_split && i >= o->pin_split ? 0 : o->pin_cpu;
		if (o->cgroup[i])
			snprintf(v->cgroup, sizeof(v->cgroup), "%s", o->cgroup[i]);
		vcpu_setup(vm, v);
	}
	return vm;
}

static void vm_start(struct vm *vm)
{
	int i;

	for (i = 0; i < vm->nr; i++)
		pthread_create(&vm->vcpu[i].thr, NULL, vcpu_thread, &vm->vcpu[i]);
}

/* wait until every vCPU has executed guest code (alive counter moved) */
static int vm_wait_alive(struct vm *vm, int timeout_ms)
{
	uint64_t end = now_ns() + timeout_ms * 1000000ull;
	int i;

	for (i = 0; i < vm->nr; i++) {
		while (vm->mb[i].alive < 2) {
			if (vm->vcpu[i].exited || now_ns() > end) {
				diag("vcpu%d did not start (alive=%u)", i, vm->mb[i].alive);
				return -1;
			}
			usleep(1000);
		}
	}
	return 0;
}

/* Issue a command to vCPU i and wait for its completion. */
static int cmd(struct vm *vm, int i, uint32_t op, uint32_t a0, uint32_t a1, int timeout_ms)
{
	struct mbox *m = &vm->mb[i];
	uint64_t end = now_ns() + timeout_ms * 1000000ull;
	uint32_t seq = m->seq + 1;

	m->op = op;
	m->arg0 = a0;
	m->arg1 = a1;
	m->arg2 = 0;
	__sync_synchronize();
	m->seq = seq;
	while (m->ack != seq) {
		if (vm->vcpu[i].exited || now_ns() > end) {
			diag("vcpu%d: command %u(0x%x, 0x%x) timed out", i, op, a0, a1);
			return -1;
		}
		usleep(200);
	}
	return 0;
}

/* post a command without waiting */
static void cmd_post(struct vm *vm, int i, uint32_t op, uint32_t a0, uint32_t a1)
{
	struct mbox *m = &vm->mb[i];

	m->op = op;
	m->arg0 = a0;
	m->arg1 = a1;
	m->arg2 = 0;
	__sync_synchronize();
	m->seq = m->seq + 1;
}

static int cmd_wait(struct vm *vm, int i, int timeout_ms)
{
	uint64_t end = now_ns() + timeout_ms * 1000000ull;

	while (vm->mb[i].ack != vm->mb[i].seq) {
		if (vm->vcpu[i].exited || now_ns() > end) {
			diag("vcpu%d: command %u timed out (%u calls done)", i, vm->mb[i].op, vm->mb[i].arg2);
			return -1;
		}
		usleep(500);
	}
	return 0;
}

static int send_ipi(struct vm *vm, int from, uint32_t dest, uint32_t lo)
{
	return cmd(vm, from, OP_IPI, dest << 24, lo, 5000);
}

/* ---------------------------------------------------------- test plumbing */

struct result {
	int ok;
	char why[512];
};

static void fail(struct result *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->ok)
		return;	/* keep the first reason */
	r->ok = 0;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
}

static int need_events(struct result *r, const char **evs)
{
	for (; *evs; evs++)
		if (!event_exists(*evs)) {
			fail(r, "feature absent: no %s tracepoint", *evs);
			return 0;
		}
	return 1;
}

/*
 * Run fn(vm, arg) in a forked child so that the VM and its vCPU threads vanish with the
 * child; returns the child's exit status (0 = scenario ran), or -1 on timeout/crash.
 */
typedef int (*scenario_fn)(struct vm *vm, void *arg);

static int run_scenario(const struct vm_opts *o, scenario_fn fn, void *arg, int timeout_s)
{
	pid_t pid = fork();
	int st;
	uint64_t end = now_ns() + timeout_s * 1000000000ull;

	if (pid == 0) {
		struct vm *vm;
		cpu_set_t cs;
		int rc;

		/* the VMM's own thread stays off the vCPUs' CPU */
		CPU_ZERO(&cs);
		CPU_SET(0, &cs);
		sched_setaffinity(0, sizeof(cs), &cs);
		vm = vm_create(o);
		vm_start(vm);
		if (vm_wait_alive(vm, 20000))
			_exit(4);
		rc = fn(vm, arg);
		fflush(stdout);
		_exit(rc);
	}
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			break;
		if (now_ns() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			diag("scenario timed out after %d s", timeout_s);
			return -1;
		}
		usleep(10000);
	}
	if (!WIFEXITED(st)) {
		diag("scenario died (status 0x%x)", st);
		return -1;
	}
	return WEXITSTATUS(st);
}

/* ------------------------------------------------------------ effect plumbing */

#define SPIN_CPU 1	/* all vCPU threads of a scenario share this L1 CPU */

static const char *sched_features = "/sys/kernel/debug/sched/features";
static const char *kvm_debugfs = "/sys/kernel/debug/kvm";
static const char *cg_root = "/sys/fs/cgroup";

/* Is sched feature @name (e.g. "YIELD_TO_BORROW") known to this kernel? */
static int feat_present(const char *name)
{
	char *f = read_file(sched_features, NULL), *p;
	int found = 0;
	size_t n = strlen(name);

	for (p = f; p && (p = strstr(p, name)); p += n)
		if ((p == f || p[-1] == ' ' || p[-1] == '_') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
			found = 1;
	free(f);
	return found;
}

static int need_feat(struct result *r, const char *name)
{
	if (!feat_present(name)) {
		fail(r, "feature absent: no sched feature %s", name);
		return 0;
	}
	return 1;
}

/* Select the yield_to() policy: "borrow", "penalty", "lag_credit" or "off". */
static void yield_policy(const char *pol)
{
	write_file(sched_features, "NO_YIELD_TO_PENALTY");
	write_file(sched_features, "NO_YIELD_TO_LAG_CREDIT");
	write_file(sched_features, strcmp(pol, "off") ? "YIELD_TO_BORROW" : "NO_YIELD_TO_BORROW");
	if (!strcmp(pol, "penalty"))
		write_file(sched_features, "YIELD_TO_PENALTY");
	if (!strcmp(pol, "lag_credit"))
		write_file(sched_features, "YIELD_TO_LAG_CREDIT");
}

/* KVM stat summed over every vCPU of every VM (debugfs), -1 if it does not exist. */
static long kvm_stat(const char *name)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", kvm_debugfs, name);
	return exists(p) ? read_long(p, -1) : -1;
}

static int need_stat(struct result *r, const char *name)
{
	if (kvm_stat(name) < 0) {
		fail(r, "feature absent: no KVM stat %s", name);
		return 0;
	}
	return 1;
}

/* CPU time of thread @tid so far (ns, from schedstat), 0 if unknown. */
static uint64_t thread_runtime(pid_t tid)
{
	char p[128], *s;
	uint64_t v = 0;

	snprintf(p, sizeof(p), "/proc/self/task/%d/schedstat", tid);
	s = read_file(p, NULL);
	if (s)
		v = strtoull(s, NULL, 10);
	free(s);
	return v;
}

/* Shared between the test (parent) and the scenario (forked child). */
struct shared {
	volatile pid_t tid[MAX_VCPUS + 1];
	volatile uint64_t run_ns[MAX_VCPUS + 1];
	volatile int rounds;
	volatile long st_try, st_ok;	/* receiver-boost stats of the scenario's VM */
};

static struct shared *shm;

static void shm_init(void)
{
	if (!shm)
		shm = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	memset((void *)shm, 0, sizeof(*shm));
}

static void mark(const char *what)
{
	write_filef(what, "%s/trace_marker", tracefs);
}

/*
 * Yields of @y to @t (APIC ID 1) and what followed each: a hit is @t being switched in (possibly
 * after a kernel thread that preempted in between) before @y next enters its guest (kvm_entry); a
 * miss is @y re-entering the guest first.  Only
 * events after the first trace marker containing @after (if given) are counted, and at
 * most @max yields.
 */
struct yield_stats {
	int hits, total;
};

static const char *ev_yield[] = { "kvm/kvm_hypercall", "kvm/kvm_entry", "sched/sched_switch", NULL };

static struct yield_stats yield_outcomes(const struct evlist *l, pid_t y, pid_t t, const char *after, int max)
{
	struct yield_stats st = { 0 };
	int i, pending = 0, started = !after;

	for (i = 0; i < l->n; i++) {
		const struct ev *e = &l->v[i];

		if (!started) {
			started = !strcmp(e->name, "tracing_mark_write") && strstr(e->args, after);
			continue;
		}
		/* KVM_HC_SCHED_YIELD (11) to APIC ID 1 (vCPU1, the target in every scenario) */
		if (!strcmp(e->name, "kvm_hypercall") && e->pid == y && strstr(e->args, "nr 0xb a0 0x1 ")) {
			if (pending)
				st.total++;	/* no switch and no entry in between: count as a miss */
			if (max && st.total >= max)
				break;
			pending = 1;
		} else if (pending && !strcmp(e->name, "sched_switch") && arg_num(e, "next_pid") == t) {
			st.total++;
			st.hits++;
			pending = 0;
		} else if (pending && !strcmp(e->name, "kvm_entry") && e->pid == y) {
			st.total++;
			pending = 0;
		}
		if (max && st.total >= max)
			break;
	}
	return st;
}

/* The first sched_switch away from @y after its first Hyper-V hypercall after marker @after. */
static const char *ev_spin[] = { "kvm/kvm_hv_hypercall", "sched/sched_switch", "kvm/kvm_apic_ipi",
				  NULL };

static pid_t spin_next(const struct evlist *l, pid_t y, const char *after)
{
	int i, started = !after, spun = 0;

	for (i = 0; i < l->n; i++) {
		const struct ev *e = &l->v[i];

		if (!started) {
			started = !strcmp(e->name, "tracing_mark_write") && strstr(e->args, after);
			continue;
		}
		if (!strcmp(e->name, "kvm_hv_hypercall") && e->pid == y)
			spun = 1;
		else if (spun && !strcmp(e->name, "sched_switch") && arg_num(e, "prev_pid") == y)
			return arg_num(e, "next_pid");
	}
	return -1;
}

/* cgroup v2: /ft (domain, +cpu) with threaded children; returns 0 or fails @r. */
static int cg_prepare(struct result *r)
{
	char me[32];

	if (!exists("/sys/fs/cgroup/cgroup.controllers")) {
		fail(r, "cgroup2 not mounted at %s", cg_root);
		return -1;
	}
	write_filef("+cpu", "%s/cgroup.subtree_control", cg_root);
	mkdir("/sys/fs/cgroup/ft", 0755);
	write_filef("+cpu", "%s/ft/cgroup.subtree_control", cg_root);
	snprintf(me, sizeof(me), "%d", getpid());
	/* the forked VMM child inherits /ft; its threads move to threaded children */
	if (write_filef(me, "%s/ft/cgroup.procs", cg_root)) {
		fail(r, "cannot move to %s/ft", cg_root);
		return -1;
	}
	return 0;
}

static void cg_release(void)
{
	char me[32];

	snprintf(me, sizeof(me), "%d", getpid());
	write_filef(me, "%s/cgroup.procs", cg_root);
}

/* mkdir /sys/fs/cgroup/ft/@rel as a threaded cgroup with the cpu controller */
static int cg_threaded(const char *rel, int subtree)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/ft/%s", cg_root, rel);
	mkdir(p, 0755);
	if (write_filef("threaded", "%s/cgroup.type", p))
		return -1;
	if (subtree)
		write_filef("+cpu", "%s/cgroup.subtree_control", p);
	snprintf(p, sizeof(p), "%s/ft/%s/cpu.weight", cg_root, rel);
	return exists(p) ? 0 : -1;
}

static int cg_move(pid_t tid, const char *rel)
{
	char t[32];

	snprintf(t, sizeof(t), "%d", tid);
	return write_filef(t, "%s/ft/%s/cgroup.threads", cg_root, rel);
}

/* Spin loop between two yields: long enough that EEVDF state varies from yield to yield. */
#define YIELD_SPIN_ITERS 200000

/* ---------------------------------------------------------------- yield_to tests */

/* One-sided two-proportion z statistic of a/n over b/m (0 if undefined). */
static double prop_z(int a, int n, int b, int m)
{
	double p, se;

	if (n <= 0 || m <= 0)
		return 0;
	p = (double)(a + b) / (n + m);
	se = sqrt(p * (1 - p) * (1.0 / n + 1.0 / m));
	return se > 0 ? ((double)a / n - (double)b / m) / se : 0;
}


/*
 * Every cycle, 20 ms apart: vCPU0 waits in the guest until vCPU1's mailbox counter moves (it
 * has just been switched back in after vCPU1 ran, so vCPU1's group entity has just run past
 * its share and is ineligible), then yields to every APIC ID in @cross and at once to vCPU1.
 */
struct switchin_arg {
	int cycles;
	uint32_t cross;	/* OP_SWITCHIN_YIELD mask: 0 or CROSS_MASK */
	const char *alt[2];	/* if set: policy of even and odd cycles, each cycle marked */
};

static int sc_switchin(struct vm *vm, void *arg)
{
	struct switchin_arg *a = arg;
	uint32_t watch = MBOX_GPA + sizeof(struct mbox) + offsetof(struct mbox, alive);
	int i;

	shm->tid[0] = vm->vcpu[0].tid;
	shm->tid[1] = vm->vcpu[1].tid;
	usleep(50000);
	for (i = 0; i < a->cycles; i++) {
		if (a->alt[0]) {
			char m[32];

			yield_policy(a->alt[i & 1]);
			snprintf(m, sizeof(m), "ft-cycle-%d", i);
			mark(m);
		}
		usleep(20000);
		if (cmd(vm, 0, OP_SWITCHIN_YIELD, watch, a->cross, 10000))
			return 6;
		shm->rounds++;
	}
	return 0;
}

/*
 * deboost_switches_to_target: vCPU0 in /ft/p/a yields to vCPU1 in /ft/p/b (same CPU) right
 * after it was switched back in, when vCPU1's group entity is ineligible: upstream ignores
 * the ineligible buddy and vCPU0 runs on; with the borrow vCPU1 runs next unless that would
 * break the lag bound.  a has a third of b's weight (as in deboost_cross_cpu_token).  80
 * cycles in one VM, the policy alternating between the feature off (control) and the borrow
 * from cycle to cycle, so that host-load drift hits both alike.
 */
static void t_deboost_switches_to_target(struct result *r)
{
	static const char *pols[] = { "off", "borrow" };
	struct vm_opts o = { .nr = 2, .pin_cpu = SPIN_CPU,
			     .cgroup = { "/sys/fs/cgroup/ft/p/a", "/sys/fs/cgroup/ft/p/b" } };
	struct switchin_arg ya = { .cycles = 80, .cross = 0, .alt = { "off", "borrow" } };
	struct yield_stats st[2] = { 0 };
	struct evlist l;
	double z;
	int i, rc;

	if (!need_feat(r, "YIELD_TO_BORROW") || cg_prepare(r))
		return;
	if (cg_threaded("p", 1) || cg_threaded("p/a", 0) || cg_threaded("p/b", 0) ||
	    write_filef("33", "%s/ft/p/a/cpu.weight", cg_root)) {
		fail(r, "cannot create threaded cgroups under %s/ft", cg_root);
		goto out;
	}
	/* one VM, the policy alternating from cycle to cycle: host-load drift hits both alike */
	shm_init();
	trace_start(ev_yield);
	rc = run_scenario(&o, sc_switchin, &ya, 60);
	l = trace_stop();
	for (i = 0; i < shm->rounds; i++) {
		char m[32];
		struct yield_stats c;

		snprintf(m, sizeof(m), "ft-cycle-%d", i);
		c = yield_outcomes(&l, shm->tid[0], shm->tid[1], m, 1);
		st[i & 1].hits += c.hits;
		st[i & 1].total += c.total;
	}
	free(l.v);
	for (i = 0; i < 2; i++)
		diag("%s: %d of %d yields switched to the target", pols[i], st[i].hits, st[i].total);
	if (rc) {
		fail(r, "scenario failed");
		goto out;
	}
	if (st[0].total < 20 || st[1].total < 20) {
		fail(r, "too few yields observed (off %d, borrow %d)", st[0].total, st[1].total);
		goto out;
	}
	z = prop_z(st[1].hits, st[1].total, st[0].hits, st[0].total);
	diag("borrow vs off: z %.2f", z);
	if (z < 2)
		fail(r, "borrow does not make the target run next significantly more often: %d/%d vs off %d/%d (z %.2f)",
		     st[1].hits, st[1].total, st[0].hits, st[0].total, z);
	/*
	 * A granted borrow lets the target run next, and here it is refused only where the lag
	 * bound says so, so the borrow must close at least half of the control's gap to
	 * "always" (measured 74-100%).  The z test alone passed the kernel with the borrow
	 * reverted once (17/40 vs off 6/40, z 2.72: the cycles are not independent draws, so z
	 * overstates significance); that closes a third of the gap.
	 */
	else if (2.0 * ((double)st[1].hits / st[1].total - (double)st[0].hits / st[0].total) <
		 1.0 - (double)st[0].hits / st[0].total)
		fail(r, "borrow closes less than half the gap between the feature off and always: %d/%d vs off %d/%d",
		     st[1].hits, st[1].total, st[0].hits, st[0].total);
out:
	write_filef("100", "%s/ft/p/a/cpu.weight", cg_root);
	yield_policy("borrow");
	cg_release();
}

/*
 * deboost_fresh_cgroup: the first yield in a freshly created cgroup pair, whose cfs_rq clock
 * starts just below zero (init_cfs_rq(): -(1 << 20) ns).  v1's wrap guard refused a penalty
 * whenever vruntime + penalty wrapped, i.e. for every yielder entity still below zero
 * (review item M2).
 *
 * Every round puts both vCPUs to sleep (HLT), creates /ft/f<n>/{a,b} (b at three times a's
 * weight) and moves vCPU0 into a and vCPU1 into b.  The VMM then wakes vCPU1 with an MSI:
 * b's entity is placed at the fresh clock (about -1.05 ms), and vCPU1's first act is an IPI
 * that wakes vCPU0, whose entity is placed at the average, still below zero.  That wakeup
 * does not preempt vCPU1 (same vruntime, later deadline), so vCPU1 runs to the end of its
 * slice and its entity is ineligible when vCPU0 gets the CPU.  vCPU0's first act is a yield
 * to vCPU1: upstream ignores the ineligible buddy and vCPU0 runs on (the control misses),
 * an applied penalty passes vCPU1's entity (the target runs next), a refused one behaves
 * like the control.  b's higher weight keeps vCPU1's lead, in vruntime, within what one
 * penalty can pass even when the emulated host's clock jumps under host load.  Run with the
 * feature off
 * (control), YIELD_TO_PENALTY and the borrow (printed, not asserted).
 */
struct fresh_arg {
	int rounds;
	int base;	/* cgroup names f<base + round>: fresh in every run */
};

static int sc_fresh(struct vm *vm, void *arg)
{
	struct fresh_arg *a = arg;
	char rel[64], m[64];
	int i, n;

	shm->tid[0] = vm->vcpu[0].tid;
	shm->tid[1] = vm->vcpu[1].tid;
	for (i = 0; i < a->rounds; i++) {
		struct kvm_msi msi = { .address_lo = 0xfee00000u | (1u << 12), .data = 0x41 };

		n = a->base + shm->rounds;
		cmd_post(vm, 0, OP_HLT_YIELD, 1, 0);
		/* vCPU1 wakes vCPU0 with fixed IPI 0x40 to APIC ID 0 */
		cmd_post(vm, 1, OP_HLT_IPI, 0, ICR_FIXED | 0x40);
		/* both halt; long enough for any delayed dequeue to finish */
		usleep(30000);
		snprintf(rel, sizeof(rel), "f%d", n);
		if (cg_threaded(rel, 1))
			return 7;
		snprintf(rel, sizeof(rel), "f%d/a", n);
		cg_threaded(rel, 0);
		cg_move(vm->vcpu[0].tid, rel);
		snprintf(rel, sizeof(rel), "f%d/b", n);
		cg_threaded(rel, 0);
		write_filef("300", "%s/ft/%s/cpu.weight", cg_root, rel);
		cg_move(vm->vcpu[1].tid, rel);
		snprintf(m, sizeof(m), "ft-fresh-%d", shm->rounds);
		mark(m);
		/* wake vCPU1: fixed MSI, vector 0x41, to APIC ID 1 */
		if (ioctl(vm->fd, KVM_SIGNAL_MSI, &msi) < 0) {
			diag("KVM_SIGNAL_MSI: %s", strerror(errno));
			return 6;
		}
		if (cmd_wait(vm, 1, 10000) || cmd_wait(vm, 0, 10000))
			return 6;
		shm->rounds++;
	}
	usleep(30000);
	return 0;
}

static void t_deboost_fresh_cgroup(struct result *r)
{
	static const char *pols[] = { "off", "penalty", "borrow" };
	struct vm_opts o = { .nr = 2, .pin_cpu = SPIN_CPU };
	struct fresh_arg fa = { .rounds = 32 };
	int hits[3] = { 0 }, seen[3] = { 0 };
	double z;
	int k, i;

	if (!need_feat(r, "YIELD_TO_BORROW") || !need_feat(r, "YIELD_TO_PENALTY") || cg_prepare(r))
		return;
	for (k = 0; k < 3 && r->ok; k++) {
		struct evlist l;
		int rc;

		yield_policy(pols[k]);
		shm_init();
		fa.base = k * 100;
		trace_start(ev_yield);
		rc = run_scenario(&o, sc_fresh, &fa, 60);
		l = trace_stop();
		for (i = 0; i < shm->rounds; i++) {
			char m[64];
			struct yield_stats st;

			snprintf(m, sizeof(m), "ft-fresh-%d", i);
			st = yield_outcomes(&l, shm->tid[0], shm->tid[1], m, 1);
			seen[k] += st.total;
			hits[k] += st.hits;
		}
		diag("%s: first yield in a fresh cgroup switched to the target in %d of %d rounds",
		     pols[k], hits[k], seen[k]);
		if (rc)
			fail(r, "scenario (%s) failed", pols[k]);
		else if (seen[k] < fa.rounds / 2)
			fail(r, "%s: only %d of %d rounds observed", pols[k], seen[k], fa.rounds);
		free(l.v);
	}
	if (!r->ok)
		goto out;
	diag("borrow vs off: z %.2f (printed, not asserted)", prop_z(hits[2], seen[2], hits[0], seen[0]));
	/*
	 * A penalty refused in a fresh cgroup (v1's wrap guard, review item M2; the mutant of
	 * `MUTANTS=wrap make test-mutation`) behaves exactly as the feature off.
	 */
	z = prop_z(hits[1], seen[1], hits[0], seen[0]);
	diag("penalty vs off: z %.2f", z);
	if (z < 2)
		fail(r, "penalty acts no more than the feature off in fresh cgroups: %d/%d vs %d/%d (z %.2f)",
		     hits[1], seen[1], hits[0], seen[0], z);
	/*
	 * An applied penalty lets the target run next every time here, so the penalty must
	 * close at least half of the control's gap to "always": a penalty refused in most
	 * rounds still beats a control that never reaches the target (the wrap mutant: 8/32
	 * vs 0/32, z 3.0), but closes a quarter of the gap.
	 */
	else if (2.0 * ((double)hits[1] / seen[1] - (double)hits[0] / seen[0]) <
		 1.0 - (double)hits[0] / seen[0])
		fail(r, "penalty closes less than half the gap between the feature off and always in fresh cgroups: %d/%d vs %d/%d",
		     hits[1], seen[1], hits[0], seen[0]);
out:
	yield_policy("borrow");
	cg_release();
}

/*
 * deboost_cross_cpu_token (penalty): a yield_to() whose target runs on another CPU must not
 * take the rate-limit token of the yielder's CPU (one applied penalty per 6 ms per common
 * ancestor), or the same-CPU yield that follows within the window is refused.
 *
 * vCPU0 (/ft/p/a) and vCPU1 (/ft/p/b) share L1 CPU 1, vCPU2 and vCPU3 share CPU 0.  In every
 * cycle vCPU0 waits in the guest until vCPU1's mailbox counter moves, i.e. until it has just
 * been switched back in after vCPU1 ran: vCPU1's group entity has just run past its share and
 * is ineligible, vCPU0's is eligible.  vCPU0 then yields to vCPU2 and to vCPU3 (one of the
 * two is runnable and not running, so one cross-CPU yield_to() succeeds; with vCPU1's group
 * ineligible the pick after it keeps vCPU0 on the CPU) and at once yields to vCPU1.  Only
 * an applied penalty makes vCPU1's group eligible, so only then does vCPU1 run next: with
 * the feature off, or with the penalty refused because the cross-CPU yield took the token
 * microseconds earlier, vCPU0 runs on.  Three arms, same kernel, same run: feature off with
 * the cross-CPU yields (control), penalty without them (the penalty's own effect), penalty
 * with them (the case under test).  Cycles are 20 ms apart, far beyond the window.
 */
#define CROSS_MASK ((1u << 2) | (1u << 3))	/* APIC IDs of vCPU2 and vCPU3 */

static void t_deboost_cross_cpu_token(struct result *r)
{
	static const struct { const char *pol; uint32_t cross; const char *what; } arm[] = {
		{ "off", CROSS_MASK, "off, after cross-CPU yields" },
		{ "penalty", 0, "penalty, same-CPU yields only" },
		{ "penalty", CROSS_MASK, "penalty, after cross-CPU yields" },
	};
	struct vm_opts o = { .nr = 4, .pin_cpu = SPIN_CPU,
			     .cgroup = { "/sys/fs/cgroup/ft/p/a", "/sys/fs/cgroup/ft/p/b",
					 "/sys/fs/cgroup/ft/p/c", "/sys/fs/cgroup/ft/p/c" } };
	struct yield_stats st[3];
	double z_eff, z_cross, z_cost;
	int k;

	if (!need_feat(r, "YIELD_TO_PENALTY") || cg_prepare(r))
		return;
	/*
	 * vCPU2/3 in a group of their own: in vCPU1's group their load on CPU 0 would leave
	 * that group's entity on CPU 1 a third of vCPU0's weight, its vruntime racing ahead
	 * further than the penalty's cap can follow.
	 */
	if (cg_threaded("p", 1) || cg_threaded("p/a", 0) || cg_threaded("p/b", 0) ||
	    cg_threaded("p/c", 0)) {
		fail(r, "cannot create threaded cgroups under %s/ft", cg_root);
		goto out;
	}
	/*
	 * vCPU0's group at a third of vCPU1's weight: the penalty (in vCPU0's group's virtual
	 * time) is then large enough to pass vCPU1's group even when it overshot by several
	 * ticks, as it does when the emulated host's clock jumps under host load.
	 */
	if (write_filef("33", "%s/ft/p/a/cpu.weight", cg_root)) {
		fail(r, "cannot set %s/ft/p/a/cpu.weight", cg_root);
		goto out;
	}
	o.pin_split = 2;	/* vCPU2 and vCPU3 on CPU 0 */
	for (k = 0; k < 3; k++) {
		struct switchin_arg ca = { .cycles = 40, .cross = arm[k].cross };
		struct evlist l;
		int rc;

		yield_policy(arm[k].pol);
		shm_init();
		trace_start(ev_yield);
		rc = run_scenario(&o, sc_switchin, &ca, 60);
		l = trace_stop();
		/* only the yields to vCPU1 (APIC ID 1) are counted */
		st[k] = yield_outcomes(&l, shm->tid[0], shm->tid[1], NULL, 0);
		free(l.v);
		diag("%s: %d of %d yields to vCPU1 switched to it", arm[k].what, st[k].hits, st[k].total);
		if (rc) {
			fail(r, "scenario (%s) failed", arm[k].what);
			goto out;
		}
		if (st[k].total < 20) {
			fail(r, "%s: only %d yields to vCPU1 observed", arm[k].what, st[k].total);
			goto out;
		}
	}
	z_eff = prop_z(st[1].hits, st[1].total, st[0].hits, st[0].total);
	z_cross = prop_z(st[2].hits, st[2].total, st[0].hits, st[0].total);
	z_cost = prop_z(st[1].hits, st[1].total, st[2].hits, st[2].total);
	diag("penalty vs off: z %.2f without cross-CPU yields, %.2f with them; cost of the cross-CPU yields: z %.2f",
	     z_eff, z_cross, z_cost);
	if (z_eff < 2)
		fail(r, "control: the penalty alone does not reach the target more often than the feature off (%d/%d vs %d/%d, z %.2f): no power",
		     st[1].hits, st[1].total, st[0].hits, st[0].total, z_eff);
	else if (z_cross < 2)
		fail(r, "after cross-CPU yields the penalty acts no more than the feature off: %d/%d vs %d/%d (z %.2f): the token was taken",
		     st[2].hits, st[2].total, st[0].hits, st[0].total, z_cross);
	/*
	 * ...and keeps at least half of its effect: a taken token (the mutant of
	 * `MUTANTS=token make test-mutation`: 7/40 against 37/40 alone and 3/40 off) leaves
	 * the same-CPU yields little more than the control, which host load can lift above z 2.
	 */
	else if (2.0 * ((double)st[2].hits / st[2].total - (double)st[0].hits / st[0].total) <
		 (double)st[1].hits / st[1].total - (double)st[0].hits / st[0].total)
		fail(r, "cross-CPU yields cost the penalty more than half its effect: %d/%d after them, %d/%d without, %d/%d off",
		     st[2].hits, st[2].total, st[1].hits, st[1].total, st[0].hits, st[0].total);
out:
	write_filef("100", "%s/ft/p/a/cpu.weight", cg_root);
	yield_policy("borrow");
	cg_release();
}

/*
 * deboost_sibling_share: CG0 = {A (vCPU0), C (a busy thread)}, CG1 = {B (vCPU1)}, one CPU:
 * one cgroup per vCPU side, so B is alone in its cfs_rq (the layout where the borrow's
 * budget stop must send the reschedule itself).  A yields to B in a loop.  C's share of the
 * CPU with the borrow must equal its share with the feature off (a time shift, not a
 * transfer), while the comparison series' penalty and lag credit, which transfer service,
 * must cost C.  See t_deboost_sibling_share() for the statistics.
 */
#define SHARE_WINDOW_US	1000000
#define SHARE_PILOT	6	/* blocks before the sample size is computed */
#define SHARE_MAX	40	/* blocks at most (the stage's time budget) */

static volatile int c_stop;

static void *busy_thread(void *arg)
{
	cpu_set_t s;

	(void)arg;
	shm->tid[2] = syscall(SYS_gettid);
	CPU_ZERO(&s);
	CPU_SET(SPIN_CPU, &s);
	sched_setaffinity(0, sizeof(s), &s);
	while (!c_stop)
		;
	return NULL;
}

static int sc_share(struct vm *vm, void *arg)
{
	pthread_t c;
	uint64_t t0[3], t1[3];
	int i;

	(void)arg;
	shm->tid[0] = vm->vcpu[0].tid;
	shm->tid[1] = vm->vcpu[1].tid;
	pthread_create(&c, NULL, busy_thread, NULL);
	while (!shm->tid[2])
		usleep(1000);
	if (cg_move(shm->tid[2], "s/cg0"))
		return 7;
	vm->mb[0].result = YIELD_SPIN_ITERS / 4;
	cmd_post(vm, 0, OP_SPIN_YIELD, 1, 100000000);
	usleep(200000);
	for (i = 0; i < 3; i++)
		t0[i] = thread_runtime(shm->tid[i]);
	usleep(SHARE_WINDOW_US);
	for (i = 0; i < 3; i++) {
		t1[i] = thread_runtime(shm->tid[i]);
		shm->run_ns[i] = t1[i] - t0[i];
	}
	c_stop = 1;
	pthread_join(c, NULL);
	return 0;
}



/* Mean and sample standard deviation of x[0..n-1]. */
static void mean_sd(const double *x, int n, double *m, double *sd)
{
	double s = 0, q = 0;
	int i;

	for (i = 0; i < n; i++)
		s += x[i];
	*m = n ? s / n : 0;
	for (i = 0; i < n; i++)
		q += (x[i] - *m) * (x[i] - *m);
	*sd = n > 1 ? sqrt(q / (n - 1)) : 0;
}

/*
 * The borrow changes C's share by more than the margin (half the smaller measured transfer):
 * the 90% confidence interval of the mean difference from off lies wholly outside
 * (-margin, +margin).  A decided failure, unlike "no power" or "not shown equal" (too few
 * blocks to tell): a broken budget stop or lag bound turns the borrow's time shift into a
 * transfer as large as the arms', in either direction (C's group may be paid back later).
 * A small offset inside the margin is not one: blocks of one boot share its placement, so
 * a t statistic over them finds offsets that differ from boot to boot (seen: +0.0123 and
 * -0.0143 unmutated at load ~12).
 */
static void share_borrow_changes(struct result *r, double m, double sd, int n, double margin)
{
	double se = sd / sqrt(n), lo = m - 1.645 * se, hi = m + 1.645 * se;

	if (margin > 0 && (hi <= -margin || lo >= margin))
		fail(r, "borrow changes C's share beyond the margin: 90%% CI [%+.4f, %+.4f] outside +-%.4f after %d blocks",
		     lo, hi, margin, n);
}

/*
 * The comparison arms (penalty, lag credit) must cost C: mean difference from off at t <= -2.
 * Checked also when the sizing gives up, where a margin near 0 is one arm costing nothing:
 * that is the arm's failure (a broken penalty or lag credit), not the borrow's want of power.
 */
static void share_arms_cost(struct result *r, const char **arms, const double *m,
			    const double *sd, int n)
{
	int j;

	for (j = 1; j < 3; j++) {
		double t = sd[j] > 0 ? m[j] / (sd[j] / sqrt(n)) : 0;

		if (t > -2)
			fail(r, "%s did not cost C: mean difference %+.4f, t %.2f (> -2)",
			     arms[j + 1], m[j], t);
	}
}

/*
 * Blocks of four runs, one per arm (off, borrow, penalty, lag credit; the order rotates
 * from block to block so that host-load drift hits every arm alike).  Per block, each arm's
 * difference from the block's off run (C's share), d_borrow, d_penalty, d_lag_credit.
 *
 *  - penalty and lag credit cost C: mean d < 0 with t = mean / se <= -2 each;
 *  - the borrow does not: the margin is half the smaller of the two measured costs (the
 *    smallest transfer the test claims to rule out, measured in the same run), and the
 *    90% confidence interval of mean d_borrow lies inside (-margin, +margin) (two one-sided
 *    tests at 5%).
 *
 * Sample size: after SHARE_PILOT blocks and again whenever the planned number is reached,
 * n = 8.56 * sd(d_borrow)^2 / margin^2 (two one-sided tests at 5%, 80% power when the true
 * difference is 0), with sd and margin measured on every block so far; more blocks are run
 * up to SHARE_MAX.  If n exceeds SHARE_MAX the test fails for want of power rather than
 * pass on too few runs.
 */
static void t_deboost_sibling_share(struct result *r)
{
	static const char *arms[] = { "off", "borrow", "penalty", "lag_credit" };
	struct vm_opts o = { .nr = 2, .pin_cpu = SPIN_CPU,
			     .cgroup = { "/sys/fs/cgroup/ft/s/cg0", "/sys/fs/cgroup/ft/s/cg1" } };
	double d[3][SHARE_MAX], off[SHARE_MAX], m[3], sd[3], margin = 0, need = 0, m_off, sd_off;
	int n = 0, want = SHARE_PILOT, j;

	if (!need_feat(r, "YIELD_TO_BORROW") || !need_feat(r, "YIELD_TO_PENALTY") ||
	    !need_feat(r, "YIELD_TO_LAG_CREDIT") || cg_prepare(r))
		return;
	if (cg_threaded("s", 1) || cg_threaded("s/cg0", 0) || cg_threaded("s/cg1", 0)) {
		fail(r, "cannot create threaded cgroups under %s/ft", cg_root);
		goto out;
	}
	while (n < want) {
		double share[4];

		for (j = 0; j < 4; j++) {
			int arm = (j + n) % 4;
			uint64_t tot;

			yield_policy(arms[arm]);
			shm_init();
			if (run_scenario(&o, sc_share, NULL, 60)) {
				fail(r, "scenario (%s) failed", arms[arm]);
				goto out;
			}
			tot = shm->run_ns[0] + shm->run_ns[1] + shm->run_ns[2];
			share[arm] = tot ? (double)shm->run_ns[2] / tot : 0;
			diag("block %d %s: A %.0f ms, B %.0f ms, C %.0f ms: C's share %.3f", n,
			     arms[arm], shm->run_ns[0] / 1e6, shm->run_ns[1] / 1e6,
			     shm->run_ns[2] / 1e6, share[arm]);
		}
		off[n] = share[0];
		for (j = 0; j < 3; j++)
			d[j][n] = share[j + 1] - share[0];
		n++;
		if (n < want)
			continue;
		/*
		 * Size (again, with every block so far): two one-sided tests at 5% with 80%
		 * power when the true difference is 0 need n = (z.95 + z.90)^2 sd^2 / margin^2
		 * = 8.56 sd^2 / margin^2.  The margin is re-measured too, so the check is
		 * repeated until n suffices or SHARE_MAX is reached.
		 */
		for (j = 0; j < 3; j++)
			mean_sd(d[j], n, &m[j], &sd[j]);
		margin = -(m[1] > m[2] ? m[1] : m[2]) / 2;
		need = margin > 0 ? 8.56 * sd[0] * sd[0] / (margin * margin) : 1e9;
		diag("after %d blocks: d_borrow %.4f (sd %.4f), d_penalty %.4f, d_lag_credit %.4f; margin %.4f; blocks needed %.1f",
		     n, m[0], sd[0], m[1], m[2], margin, need);
		if (need > SHARE_MAX) {
			share_borrow_changes(r, m[0], sd[0], n, margin);
			share_arms_cost(r, arms, m, sd, n);
			fail(r, "no power: %.1f blocks needed for a margin of %.4f (sd %.4f), at most %d run",
			     need, margin, sd[0], SHARE_MAX);
			goto out;
		}
		if (need > n)
			want = (int)ceil(need);
	}
	for (j = 0; j < 3; j++)
		mean_sd(d[j], n, &m[j], &sd[j]);
	mean_sd(off, n, &m_off, &sd_off);
	diag("%d blocks: C's share off %.3f (sd %.4f); differences from off: borrow %+.4f (sd %.4f), penalty %+.4f (sd %.4f), lag credit %+.4f (sd %.4f)",
	     n, m_off, sd_off, m[0], sd[0], m[1], sd[1], m[2], sd[2]);
	share_borrow_changes(r, m[0], sd[0], n, margin);
	share_arms_cost(r, arms, m, sd, n);
	if (r->ok) {
		double se = sd[0] / sqrt(n), lo = m[0] - 1.645 * se, hi = m[0] + 1.645 * se;

		margin = -(m[1] > m[2] ? m[1] : m[2]) / 2;
		diag("borrow: 90%% CI of the difference [%+.4f, %+.4f], margin +-%.4f", lo, hi, margin);
		if (lo <= -margin || hi >= margin)
			fail(r, "borrow not shown equal to off: 90%% CI [%+.4f, %+.4f] not within +-%.4f (half the smaller transfer)",
			     lo, hi, margin);
	}
out:
	yield_policy("borrow");
	cg_release();
}

/* ------------------------------------------------------------ IPI hint tests */

static const char *st_try = "ipi_receiver_boost_attempted";
static const char *st_ok = "ipi_receiver_boost_successful";

/*
 * Read the receiver-boost stats while the scenario's VM is alive: debugfs sums over live
 * VMs only, and this VM is the only one.
 */
static void spin_stats(void)
{
	usleep(20000);
	shm->st_try = kvm_stat(st_try);
	shm->st_ok = kvm_stat(st_ok);
}

struct spin_arg {
	int ipi_to;	/* -1: no IPI */
	int calls;
};

static int sc_spin(struct vm *vm, void *arg)
{
	struct spin_arg *a = arg;
	int i;

	for (i = 0; i < vm->nr; i++)
		shm->tid[i] = vm->vcpu[i].tid;
	/* let every vCPU be scheduled in and out a few times */
	usleep(50000);
	mark("ft-spin");
	/* IPI and spin in one guest step: the sender must not be preempted in between */
	if (a->ipi_to >= 0)
		cmd_post(vm, 0, OP_IPI_SPIN, a->ipi_to << 24, ICR_FIXED | ICR_ASSERT | 0x40);
	else
		cmd_post(vm, 0, OP_HV_SPIN, a->calls, 0);
	if (cmd_wait(vm, 0, 20000))
		return 6;
	if (vm->mb[0].result != 0)
		diag("HvCallNotifyLongSpinWait status 0x%x", vm->mb[0].result);
	spin_stats();
	return 0;
}

/*
 * How long vCPU0 (@y) took from its IPI to its spin: from its first kvm_apic_ipi after the
 * @after mark to its first kvm_hv_hypercall, in ns; -1 if either is missing.
 */
static long long spin_ipi_gap(const struct evlist *l, pid_t y, const char *after)
{
	int i, started = !after;
	long long ipi = -1;

	for (i = 0; i < l->n; i++) {
		const struct ev *e = &l->v[i];

		if (!started) {
			started = !strcmp(e->name, "tracing_mark_write") && strstr(e->args, after);
			continue;
		}
		if (e->pid != y)
			continue;
		if (ipi < 0 && !strcmp(e->name, "kvm_apic_ipi"))
			ipi = (long long)e->ts_ns;
		else if (ipi >= 0 && !strcmp(e->name, "kvm_hv_hypercall"))
			return (long long)e->ts_ns - ipi;
	}
	return -1;
}

/*
 * Margin around ipi_hint_window_us within which an IPI-to-spin gap read from the trace
 * (trace clock "perf") is not compared with the kernel's hint age (ktime_get_mono_fast_ns).
 */
#define SPIN_GAP_GUARD_NS (10 * 1000000LL)

/*
 * want_boost of spin_check(): SPIN_NO_BOOST, SPIN_BOOST (judged only if vCPU0 spun within the
 * window of its IPI), SPIN_NO_BOOST_FRESH (no boost, judged only within the window too: a
 * test of what must clear a still-fresh hint, which an expired hint would pass for nothing).
 */
#define SPIN_NO_BOOST		0
#define SPIN_BOOST		1
#define SPIN_NO_BOOST_FRESH	2

/*
 * Run @fn on a 4-vCPU Hyper-V VM on one CPU; check KVM's choice (the receiver-boost stats,
 * every attempt) and who runs after vCPU0's first spin.  A successful yield_to() does not
 * force the pick (the borrow is refused beyond the lag bound, and then another runnable
 * vCPU may run), so the scenario is judged up to 3 times and the next task must match once.
 * An attempt that expects a boost is judged only if vCPU0 spun within ipi_hint_window_us of
 * its IPI: in the emulated host the sender is often preempted between the two, at load for
 * longer than the window, and then the hint has rightly expired (that attempt must show no
 * boost attempt at all).  At most 6 attempts are run.
 */
static void spin_check_once(struct result *r, const struct vm_opts *o, scenario_fn fn, void *arg,
			    int want_vcpu, int want_boost, const char *after, int *next_ok,
			    int *judged);

static void spin_check(struct result *r, const struct vm_opts *o, scenario_fn fn, void *arg,
		       int want_vcpu, int want_boost, const char *after)
{
	int k, next_ok = 0, judged = 0;

	for (k = 0; k < 6 && judged < 3 && r->ok && !next_ok; k++)
		spin_check_once(r, o, fn, arg, want_vcpu, want_boost, after, &next_ok, &judged);
	if (r->ok && !judged)
		fail(r, "not judged: in %d attempts vCPU0 never spun within the hint's window of its IPI",
		     k);
	else if (r->ok && !next_ok)
		fail(r, "in %d judged attempts vCPU0's spin never switched to vCPU%d", judged,
		     want_vcpu);
}

static void spin_check_once(struct result *r, const struct vm_opts *o, scenario_fn fn, void *arg,
			    int want_vcpu, int want_boost, const char *after, int *next_ok,
			    int *judged)
{
	long t0 = 0, s0 = 0, t1, s1;
	long long gap, window;
	struct evlist l;
	pid_t next;
	int i;
	char p[256];

	if (!need_stat(r, st_try) || !need_stat(r, st_ok))
		return;
	shm_init();
	shm->st_try = shm->st_ok = -1;
	trace_start(ev_spin);
	if (run_scenario(o, fn, arg, 60))
		fail(r, "scenario failed");
	l = trace_stop();
	t1 = shm->st_try;
	s1 = shm->st_ok;
	next = spin_next(&l, shm->tid[0], after);
	for (i = 0; i < MAX_VCPUS && shm->tid[i] && shm->tid[i] != next; i++)
		;
	diag("after vCPU0's spin: next = %d (vCPU%d); receiver boosts attempted +%ld, successful +%ld",
	     next, shm->tid[i] == next ? i : -1, t1 - t0, s1 - s0);
	if (!r->ok)
		goto out;
	if (want_boost) {
		snprintf(p, sizeof(p), "%s/ipi_hint_window_us", kvm_params);
		window = read_long(p, -1) * 1000LL;
		gap = spin_ipi_gap(&l, shm->tid[0], after);
		if (window < 0 || gap < 0) {
			fail(r, "cannot judge: ipi_hint_window_us %lld ns, IPI-to-spin gap %lld ns (no kvm_apic_ipi or kvm_hv_hypercall of vCPU0 traced)",
			     window, gap);
			goto out;
		}
		diag("vCPU0's IPI-to-spin gap %.1f ms (window %.1f ms)", gap / 1e6, window / 1e6);
		if (gap > window + SPIN_GAP_GUARD_NS) {
			if (t1 - t0 != 0)
				fail(r, "a receiver boost was attempted %.1f ms after the IPI, beyond the window",
				     gap / 1e6);
			else
				diag("attempt not judged: the hint expired before the spin, as it must");
			goto out;
		}
		if (gap > window - SPIN_GAP_GUARD_NS) {
			diag("attempt not judged: gap within %lld ms of the window",
			     SPIN_GAP_GUARD_NS / 1000000);
			goto out;
		}
	}
	(*judged)++;
	if (want_boost == SPIN_BOOST && s1 - s0 < 1)
		fail(r, "no successful IPI receiver boost counted");
	else if (want_boost != SPIN_BOOST && t1 - t0 != 0)
		fail(r, "an IPI receiver boost was attempted (%ld)", t1 - t0);
	else
		*next_ok = next >= 0 && next == shm->tid[want_vcpu];
out:
	if (!r->ok)
		dump_events(&l, NULL, 30);
	free(l.v);
}

/*
 * on_spin_prefers_ipi_receiver: vCPU0 spins right after a fixed IPI to vCPU2, which has
 * IF=0 so the vector stays in its IRR; round-robin would boost vCPU1 first.
 */
static void t_on_spin_prefers_ipi_receiver(struct result *r)
{
	struct vm_opts o = { .nr = 4, .hyperv = 1, .pin_cpu = SPIN_CPU };
	struct spin_arg a = { .ipi_to = 2, .calls = 1 };

	spin_check(r, &o, sc_spin, &a, 2, SPIN_BOOST, "ft-spin");
}

/* vCPU2 takes vCPU0's IPI and EOIs it before vCPU0 spins: no preference is left. */
static int sc_spin_after_eoi(struct vm *vm, void *arg)
{
	int i, x2 = arg != NULL;

	for (i = 0; i < vm->nr; i++)
		shm->tid[i] = vm->vcpu[i].tid;
	if (x2)
		for (i = 0; i < vm->nr; i++)
			if (cmd(vm, i, OP_X2APIC_ENABLE, 0, 0, 5000))
				return 6;
	usleep(50000);
	if (cmd(vm, 2, OP_STI, 0, 0, 5000))
		return 6;
	if (x2 ? cmd(vm, 0, OP_X2_IPI, 2, ICR_FIXED | ICR_ASSERT | 0x40, 5000) :
		 send_ipi(vm, 0, 2, ICR_FIXED | ICR_ASSERT | 0x40))
		return 6;
	for (i = 0; i < 2000 && !vm->mb[2].irqs; i++)
		usleep(1000);
	if (!vm->mb[2].irqs) {
		diag("vCPU2 never took the IPI");
		return 7;
	}
	if (cmd(vm, 2, x2 ? OP_X2_EOI : OP_EOI, 0, 0, 5000))
		return 6;
	mark("ft-spin");
	if (cmd(vm, 0, OP_HV_SPIN, 1, 0, 20000))
		return 6;
	spin_stats();
	return 0;
}

static void t_on_spin_after_eoi(struct result *r)
{
	struct vm_opts o = { .nr = 4, .hyperv = 1, .pin_cpu = SPIN_CPU };

	spin_check(r, &o, sc_spin_after_eoi, NULL, 1, SPIN_NO_BOOST, "ft-spin");
}

/*
 * on_spin_after_init: vCPU0 sends vCPU2 (IF=0: the vector stays in its IRR, owed) a fixed
 * IPI, is INITed at once by its own thread (OP_IPI_INIT, vcpu_init_event(): KVM's
 * kvm_vcpu_reset(vcpu, true)), restarted, and spins as its first command.  The INIT must
 * have cleared vCPU0's hint: no receiver boost, upstream's round-robin (vCPU1).  Judged
 * only within the hint's window of the IPI, where a kept hint would still boost vCPU2.
 */
static int sc_spin_after_init(struct vm *vm, void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < vm->nr; i++)
		shm->tid[i] = vm->vcpu[i].tid;
	usleep(50000);
	mark("ft-spin");
	cmd_post(vm, 0, OP_IPI_INIT, 2 << 24, ICR_FIXED | ICR_ASSERT | 0x40);
	if (cmd_wait(vm, 0, 20000))
		return 6;
	if (vm->mb[0].result != 0)
		diag("HvCallNotifyLongSpinWait status 0x%x", vm->mb[0].result);
	spin_stats();
	return 0;
}

static void t_on_spin_after_init(struct result *r)
{
	struct vm_opts o = { .nr = 4, .hyperv = 1, .pin_cpu = SPIN_CPU };

	spin_check(r, &o, sc_spin_after_init, NULL, 1, SPIN_NO_BOOST_FRESH, "ft-spin");
}

/*
 * on_spin_untracked_ipi_keeps_upstream_boost: vCPU1 halts with IF=1; vCPU0 first sends a
 * unicast IPI to vCPU2 (IF=0: it stays in vCPU2's IRR), then wakes vCPU1 with a logical
 * multicast IPI (vCPU1 + vCPU2), which the hint does not record, and spins.  The multicast
 * is vCPU0's latest IPI and names no single vCPU, so it must clear the earlier unicast's
 * hint; the woken vCPU1 (ready, maybe not preempted) must get upstream's boost, as
 * round-robin gives.
 */
static int sc_untracked(struct vm *vm, void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < vm->nr; i++)
		shm->tid[i] = vm->vcpu[i].tid;
	usleep(50000);
	cmd_post(vm, 1, OP_HLT, 0, 0);
	usleep(20000);
	/*
	 * Right before the multicast, well inside the hint's window; the mark comes first so
	 * that the judged gap runs from this unicast to the spin.
	 */
	mark("ft-spin");
	if (send_ipi(vm, 0, 2, ICR_FIXED | ICR_ASSERT | 0x40))
		return 6;
	cmd_post(vm, 0, OP_IPI_SPIN, 0x06 << 24, ICR_FIXED | ICR_LOGICAL | ICR_ASSERT | 0x41);
	if (cmd_wait(vm, 0, 20000))
		return 6;
	spin_stats();
	return 0;
}

static void t_on_spin_untracked_ipi_keeps_upstream_boost(struct result *r)
{
	struct vm_opts o = { .nr = 4, .hyperv = 1, .pin_cpu = SPIN_CPU };

	spin_check(r, &o, sc_untracked, NULL, 1, SPIN_NO_BOOST_FRESH, "ft-spin");
}

/*
 * on_spin_cpl3_receiver: as on_spin_prefers_ipi_receiver, but vCPU2 runs the CPL3 user loop
 * (IF=0), so it is preempted in user mode.  The spin is HvCallNotifyLongSpinWait, i.e.
 * kvm_vcpu_on_spin(yield_to_kernel_mode = true), whose filter rejects a vCPU preempted in
 * user mode unless it has a pending interrupt; without APICv (TCG) upstream cannot see one.
 * The receiver owes the IPI (IRR), which must count as that pending interrupt.
 */
static void t_on_spin_cpl3_receiver(struct result *r)
{
	struct vm_opts o = { .nr = 4, .hyperv = 1, .pin_cpu = SPIN_CPU, .cpl3_mask = 0x4 };
	struct spin_arg a = { .ipi_to = 2, .calls = 1 };

	spin_check(r, &o, sc_spin, &a, 2, SPIN_BOOST, "ft-spin");
}

/*
 * ipi_hint_default_window (was ipi_track_default_window): with the default window (50 ms,
 * read-only), an IPI followed at once by a spin boosts the receiver; an IPI followed by a
 * spin 300 ms later does not.
 */
static int sc_late_spin(struct vm *vm, void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < vm->nr; i++)
		shm->tid[i] = vm->vcpu[i].tid;
	usleep(50000);
	if (send_ipi(vm, 0, 2, ICR_FIXED | ICR_ASSERT | 0x41))
		return 6;
	usleep(300000);
	mark("ft-spin");
	if (cmd(vm, 0, OP_HV_SPIN, 1, 0, 20000))
		return 6;
	spin_stats();
	return 0;
}

static void t_ipi_hint_default_window(struct result *r)
{
	struct vm_opts o = { .nr = 4, .hyperv = 1, .pin_cpu = SPIN_CPU };
	struct spin_arg a = { .ipi_to = 2, .calls = 1 };
	char p[256];

	snprintf(p, sizeof(p), "%s/ipi_hint_window_us", kvm_params);
	if (!exists(p)) {
		fail(r, "feature absent: no kvm module parameter ipi_hint_window_us");
		return;
	}
	if (read_long(p, 0) != 50000) {
		fail(r, "ipi_hint_window_us is %ld, not the default 50000", read_long(p, 0));
		return;
	}
	spin_check(r, &o, sc_spin, &a, 2, SPIN_BOOST, "ft-spin");
	if (r->ok)
		spin_check(r, &o, sc_late_spin, NULL, 1, SPIN_NO_BOOST, "ft-spin");
}

/*
 * ipi_hint_x2apic (was ipi_track_x2apic): every vCPU in x2APIC mode; the IPI is an ICR MSR
 * write and the receiver boosted; then, after the receiver's EOI through the EOI MSR, no
 * preference is left.
 */
static int sc_x2_spin(struct vm *vm, void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < vm->nr; i++)
		shm->tid[i] = vm->vcpu[i].tid;
	for (i = 0; i < vm->nr; i++)
		if (cmd(vm, i, OP_X2APIC_ENABLE, 0, 0, 5000))
			return 6;
	usleep(50000);
	mark("ft-spin");
	if (cmd(vm, 0, OP_X2_IPI_SPIN, 2, ICR_FIXED | ICR_ASSERT | 0x40, 20000))
		return 6;
	spin_stats();
	return 0;
}

static void t_ipi_hint_x2apic(struct result *r)
{
	struct vm_opts o = { .nr = 4, .hyperv = 1, .pin_cpu = SPIN_CPU };

	spin_check(r, &o, sc_x2_spin, NULL, 2, SPIN_BOOST, "ft-spin");
	if (r->ok)
		spin_check(r, &o, sc_spin_after_eoi, (void *)1, 1, SPIN_NO_BOOST, "ft-spin");
}

/*
 * Not a feature test: checks the VMM's own mechanics with upstream tracepoints only, so it
 * must pass on both kernels (ICR write exits and reaches the APIC, the Hyper-V hypercall
 * reaches KVM, a CPL3 vCPU runs).
 */
static const char *ev_self[] = { "kvm/kvm_apic_ipi", "kvm/kvm_hv_hypercall", "kvm/kvm_eoi", NULL };

static void t_vmm_selfcheck(struct result *r)
{
	struct vm_opts o = { .nr = 4, .hyperv = 1, .pin_cpu = SPIN_CPU, .cpl3_mask = 0x8 };
	struct spin_arg a = { .ipi_to = 2, .calls = 1 };
	struct evlist l;
	int i, ipi = 0, hv = 0;

	if (!need_events(r, ev_self))
		return;
	trace_start(ev_self);
	if (run_scenario(&o, sc_spin, &a, 60))
		fail(r, "scenario failed");
	l = trace_stop();
	for (i = 0; i < l.n; i++) {
		if (!strcmp(l.v[i].name, "kvm_apic_ipi") && strstr(l.v[i].args, "vec 64"))
			ipi++;
		if (!strcmp(l.v[i].name, "kvm_hv_hypercall") && strstr(l.v[i].args, "code 0x8 "))
			hv++;
	}
	if (!ipi)
		fail(r, "no kvm_apic_ipi for vector 0x40");
	if (hv != 1)
		fail(r, "%d HvCallNotifyLongSpinWait hypercalls seen, expected 1", hv);
	if (!r->ok || verbose)
		dump_events(&l, NULL, 20);
	free(l.v);
}

/* ------------------------------------------------------------------ main */

static const struct test {
	const char *name;
	void (*fn)(struct result *r);
} tests[] = {
	{ "vmm_selfcheck", t_vmm_selfcheck },
	{ "deboost_switches_to_target", t_deboost_switches_to_target },
	{ "deboost_sibling_share", t_deboost_sibling_share },
	{ "deboost_fresh_cgroup", t_deboost_fresh_cgroup },
	{ "deboost_cross_cpu_token", t_deboost_cross_cpu_token },
	{ "on_spin_prefers_ipi_receiver", t_on_spin_prefers_ipi_receiver },
	{ "on_spin_after_eoi", t_on_spin_after_eoi },
	{ "on_spin_after_init", t_on_spin_after_init },
	{ "on_spin_cpl3_receiver", t_on_spin_cpl3_receiver },
	{ "on_spin_untracked_ipi_keeps_upstream_boost", t_on_spin_untracked_ipi_keeps_upstream_boost },
	{ "ipi_hint_default_window", t_ipi_hint_default_window },
	{ "ipi_hint_x2apic", t_ipi_hint_x2apic },
};
#define NTESTS (int)(sizeof(tests) / sizeof(tests[0]))

int main(int argc, char **argv)
{
	int i, j, passed = 0, failed = 0, n = 0;
	int sel[NTESTS] = { 0 }, any = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGUSR1, sigusr1);
	if (getenv("FTEST_VERBOSE"))
		verbose = 1;
	if (argc < 2 || !strcmp(argv[1], "-h")) {
		fprintf(stderr, "usage: %s list | all | NAME...\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "list")) {
		for (i = 0; i < NTESTS; i++)
			printf("%s\n", tests[i].name);
		return 0;
	}
	for (i = 1; i < argc; i++) {
		int found = 0;

		for (j = 0; j < NTESTS; j++)
			if (!strcmp(argv[i], "all") || !strcmp(argv[i], tests[j].name))
				sel[j] = found = any = 1;
		if (!found) {
			fprintf(stderr, "unknown test %s\n", argv[i]);
			return 2;
		}
	}
	if (!any)
		return 2;
	kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	shm_init();
	if (!exists("/sys/kernel/tracing/trace") && exists("/sys/kernel/debug/tracing/trace"))
		tracefs = "/sys/kernel/debug/tracing";
	for (i = 0; i < NTESTS; i++) {
		struct result r = { .ok = 1 };
		uint64_t t0 = now_ns();

		if (!sel[i])
			continue;
		n++;
		if (kvm_fd < 0)
			fail(&r, "cannot open /dev/kvm: %s", strerror(errno));
		else
			tests[i].fn(&r);
		diag("%s: %.1f s", tests[i].name, (now_ns() - t0) / 1e9);
		if (r.ok) {
			printf("ok %d - %s\n", n, tests[i].name);
			passed++;
		} else {
			printf("not ok %d - %s # %s\n", n, tests[i].name, r.why);
			failed++;
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
