#!/usr/bin/env python3
"""Emulated-host functional stage of oversub.

Boots the unpatched and the patched kernel (built by kernel/scripts/build.sh) under
QEMU TCG (-cpu EPYC: TCG emulates SVM, so the built-in kvm_amd runs nested guests) with a
busybox initramfs carrying the upstream KVM selftests of the same tree and our functional
test VMM (kernel/functional/vmm), collects the results from the serial console and
compares unpatched vs patched.

Expectations (each one counts as one passed/failed line in the final summary):
  * selftests: same outcome (PASS/SKIP/FAIL) on both kernels, and the core ones PASS;
  * functional tests: ok on patched, not ok (failing or feature absent) on unpatched.
Exit status non-zero on any unmet expectation, boot failure or timeout.

See kernel/functional/README.md.
"""
import argparse
import fcntl
import hashlib
import os
import re
import selectors
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
REPO = os.path.realpath(os.path.join(HERE, "..", ".."))
CACHE = os.path.join(os.environ.get("OVERSUB_CACHE", os.path.expanduser("~/.cache/oversub")), "functional")
BUILD_SH = os.path.join(REPO, "kernel", "scripts", "build.sh")

# Upstream KVM selftests run in the emulated host: (path, args, core).  "core" ones must PASS.
SELFTESTS = [
    ("x86_64/xapic_ipi_test", "-s 2", True),     # IPIs through the LAPIC ICR (tracked path), HLT wakeups
    ("x86_64/xapic_state_test", "", True),       # xAPIC/x2APIC register state, ICR writes
    ("x86_64/hyperv_ipi", "", True),             # Hyper-V PV IPI hypercalls (HvCallSendSyntheticClusterIpi*)
    ("x86_64/kvm_pv_test", "", True),            # KVM PV MSRs/hypercalls (KVM_HC_SCHED_YIELD, ...)
    ("x86_64/hyperv_features", "", False),       # Hyper-V hypercall access (incl. HvCallNotifyLongSpinWait)
    ("x86_64/recalc_apic_map_test", "", False),  # APIC map rebuild vs vCPU creation
    ("x86_64/set_boot_cpu_id", "", False),       # BSP/AP start-up through INIT/SIPI IPIs
    ("x86_64/fix_hypercall_test", "", False),    # hypercall instruction emulation path
]

# Selftests that touch the same areas but cannot run under TCG (documented, not run).
NOT_UNDER_TCG = [
    ("x86_64/vmx_*, hyperv_evmcs, vmx_apic_access_test", "TCG does not emulate VMX; kvm_intel cannot load"),
    ("x86_64/pmu_counters_test, pmu_event_filter_test", "TCG exposes no PMU (no PerfCtr MSRs to virtualize)"),
    ("x86_64/hyperv_svm_test, svm_int_ctl_test", "needs L2 under TCG-emulated SVM: three levels, minutes per test"),
    ("PAUSE-loop exiting (any PLE test)", "TCG has no SVM pause filter: PAUSE never exits (pause_in_guest)"),
    ("AVIC / IPI virtualization paths", "TCG emulates no AVIC: ICR/EOI writes always exit (good for tracking)"),
]

# vmm_selfcheck uses upstream tracepoints only: it must pass on both kernels (harness sanity).
BOTH_OK = {"vmm_selfcheck"}
# KUnit suites built into the patched kernel (kernel/config/functional.config): they run at
# boot and report through the kernel log, which init.sh dumps; absent from the unpatched one.
KUNIT_SUITES = ["kvm_x86_ipi_hint", "sched_yield_to", "sched_yield_to_fair"]
# Effect tests (who runs next, CPU shares, KVM stats): ok on patched, not ok on unpatched.
FUNCTIONAL = [
    "vmm_selfcheck",
    "deboost_switches_to_target",
    "deboost_sibling_share",
    "deboost_fresh_cgroup",
    "deboost_cross_cpu_token",
    "on_spin_prefers_ipi_receiver",
    "on_spin_after_eoi",
    "on_spin_after_init",
    "on_spin_cpl3_receiver",
    "on_spin_untracked_ipi_keeps_upstream_boost",
    "ipi_hint_default_window",
    "ipi_hint_x2apic",
]

# Kernel reports that fail the stage (debug kernel: lockdep, DEBUG_ATOMIC_SLEEP, UBSAN, WARN, BUG),
# matched on timestamped kernel log lines of the console and of the final dmesg dump.
KERNEL_REPORT = re.compile(
    r"^\[\s*\d+\.\d+\]\s+(WARNING:|BUG:|UBSAN:|------------\[ cut here \]|Kernel panic|Oops|"
    r"INFO: (possible|task|trying|lockdep|suspicious|inconsistent))")


def log(msg):
    print(f"[functional] {msg}", flush=True)


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


def kernel_for(variant, args):
    """(bzImage, tree) for a variant: env overrides, else the kernel series' build script."""
    env_bz = os.environ.get(f"FT_BZIMAGE_{variant.upper()}")
    env_tree = os.environ.get(f"FT_TREE_{variant.upper()}")
    if env_bz and env_tree:
        return env_bz, env_tree
    if not os.access(BUILD_SH, os.X_OK):
        sys.exit(f"functional: {BUILD_SH} missing (set FT_BZIMAGE_{variant.upper()} and FT_TREE_{variant.upper()})")
    t0 = time.time()
    log(f"building {variant} kernel: {BUILD_SH} {variant}")
    # Serialize with any other user of the kernel cache that takes the same lock
    # (two builds in one O= directory corrupt it).
    lock_path = os.path.join(os.path.dirname(CACHE), "build.lock")
    os.makedirs(os.path.dirname(lock_path), exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        out = sh([BUILD_SH, variant], stdout=subprocess.PIPE).stdout.strip().splitlines()
    bz = env_bz or out[-1].strip()
    tree = env_tree or sh([BUILD_SH, "--print-tree", variant], stdout=subprocess.PIPE).stdout.strip().splitlines()[-1]
    log(f"{variant}: bzImage {bz} ({time.time() - t0:.0f} s), tree {tree}")
    return bz, tree


def build_ftest():
    out = os.path.join(CACHE, "ftest")
    srcs = [os.path.join(HERE, "vmm", f) for f in ("ftest.c", "guest.S")]
    if not os.path.exists(out) or any(os.path.getmtime(s) > os.path.getmtime(out) for s in srcs):
        os.makedirs(CACHE, exist_ok=True)
        sh(["gcc", "-O2", "-Wall", "-Werror", "-static", "-o", out + ".tmp"] + srcs + ["-lpthread", "-lm"])
        os.replace(out + ".tmp", out)
    return out


# What the selftests and their UAPI headers are built from.  The series touches none of it, so
# the unpatched and the patched tree give the same selftests (they differed only in the source
# paths recorded in their debug info): they are built once, from the first tree, and one
# initramfs serves both kernels.  A tree whose inputs differ (a series that changes a UAPI
# header, say) gets its own build.
SELFTEST_INPUTS = ["tools", "include/uapi", "arch/x86/include/uapi", "scripts", "Makefile"]


def selftest_source_id(variant, tree):
    """Id of the selftests' inputs in a git tree (committed and clean); else one per variant."""
    try:
        # GIT_OPTIONAL_LOCKS=0: status must not write the tree's index (a build may be using it).
        dirty = sh(["git", "-C", tree, "status", "--porcelain", "--"] + SELFTEST_INPUTS,
                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                   env=dict(os.environ, GIT_OPTIONAL_LOCKS="0")).stdout.strip()
        ids = sh(["git", "-C", tree, "rev-parse"] + [f"HEAD:{i}" for i in SELFTEST_INPUTS],
                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.split()
    except (subprocess.CalledProcessError, OSError):
        return variant
    if dirty:
        return variant
    return "src-" + hashlib.sha256(" ".join(ids).encode()).hexdigest()[:12]


def build_guest_image(variant, tree, ftest, selftests, built):
    """The initramfs for a variant; `built` maps a selftest source id to its initramfs."""
    sid = selftest_source_id(variant, tree)
    if sid in built:
        log(f"{variant}: selftests + initramfs shared with {built[sid][1]} (same selftest sources, {sid})")
        return built[sid][0]
    d = os.path.join(CACHE, "selftests", sid)
    os.makedirs(d, exist_ok=True)
    st_dir = os.path.join(d, "selftests")
    t0 = time.time()
    sh([os.path.join(HERE, "build-selftests.sh"), tree, st_dir] + [s for s, _, _ in selftests])
    initrd = os.path.join(d, "initrd.gz")
    specs = [f"{s}:{a}" if a else s for s, a, _ in selftests]
    sh([os.path.join(HERE, "build-initramfs.sh"), initrd, ftest, os.path.join(st_dir, "kvm")] + specs)
    log(f"{variant}: selftests + initramfs ready from {tree} ({sid}, {time.time() - t0:.0f} s)")
    built[sid] = (initrd, variant)
    return initrd


def boot(variant, bz, initrd, suites, tests, timeout, smp):
    """Boot one kernel, stream its console, return (lines, status)."""
    d = os.path.join(CACHE, variant)
    os.makedirs(d, exist_ok=True)
    append = (f"console=ttyS0 loglevel=4 no_timer_check panic=-1 oops=panic ft.suites={','.join(suites)}"
              + (f" ft.tests={','.join(tests)}" if tests else ""))
    cmd = ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "EPYC", "-smp", str(smp), "-m", "1024",
           "-nographic", "-no-reboot", "-monitor", "none", "-serial", "stdio",
           "-kernel", bz, "-initrd", initrd, "-append", append]
    log(f"{variant}: booting: {' '.join(shlex.quote(c) for c in cmd)}")
    t0 = time.time()
    lines, status = [], None
    with open(os.path.join(d, "console.log"), "w") as con:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        sel = selectors.DefaultSelector()
        sel.register(p.stdout, selectors.EVENT_READ)
        buf = b""
        booted = False
        while True:
            left = t0 + timeout - time.time()
            if not booted:
                left = min(left, t0 + 300 - time.time())  # boot timeout: @@BEGIN within 300 s (hang guard)
            if left <= 0:
                status = "timeout" if booted else "boot timeout"
                p.kill()
                break
            if not sel.select(timeout=min(left, 5)):
                continue
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                raw, buf = buf.split(b"\n", 1)
                line = raw.decode("utf-8", "replace").rstrip("\r")
                con.write(line + "\n")
                con.flush()
                lines.append(line)
                if "TCG doesn't support requested feature" in line:
                    continue  # -cpu EPYC lists features TCG lacks; harmless
                print(f"  [{variant} {time.time() - t0:6.1f}s] {line}", flush=True)
                if "@@BEGIN" in line:
                    booted = True
                if "@@DONE" in line:
                    status = "done"
                if "rcu: INFO: rcu_sched detected stalls" in line:
                    # A CPU stopped taking ticks: the boot cannot finish; stop it now
                    # rather than at the whole-boot timeout.
                    status = "rcu stall"
                    p.kill()
                    break
        if status is None:
            status = "exited early (crash/panic?)" if booted else "no boot"
        p.wait()
    log(f"{variant}: {status} after {time.time() - t0:.0f} s")
    return lines, status, time.time() - t0


def kernel_reports(lines):
    """Timestamped kernel log lines reporting a WARNING/BUG/lockdep/UBSAN problem."""
    return [l for l in lines if KERNEL_REPORT.match(l.strip())]


def parse_kunit(lines):
    """Top-level KTAP results of the boot-time KUnit run: {suite: "ok"/"not ok"}."""
    res = {}
    for line in lines:
        m = re.match(r"^\[\s*\d+\.\d+\] (not ok|ok) \d+ (\S+)\s*$", line.strip())
        if m and m.group(2) in KUNIT_SUITES:
            res[m.group(2)] = m.group(1)
    return res


def parse(lines):
    st, ft = {}, {}
    in_ft = False
    for line in lines:
        if "@@FT_BEGIN" in line:
            in_ft = True
        elif "@@FT_END" in line:
            in_ft = False
        m = re.search(r"@@ST_RETRY (\S+) rc=(\d+)", line)
        if m:
            log(f"selftest {m.group(1)} failed with rc={m.group(2)} and is run once more (init.sh)")
            continue
        m = re.search(r"@@ST_END (\S+) rc=(\d+)(?: t0=(\S+) t1=(\S+))?", line)
        if m:
            rc = int(m.group(2))
            st[m.group(1)] = ("PASS" if rc == 0 else "SKIP" if rc == 4 else
                              "TIMEOUT" if rc in (124, 143) else f"FAIL({rc})")
            continue
        m = re.match(r"^(not ok|ok) \d+ - (\S+)(?: # (.*))?$", line.strip())
        if m and in_ft:
            ft[m.group(2)] = ("ok" if m.group(1) == "ok" else "not ok", m.group(3) or "")
    return st, ft


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variants", default="unpatched,patched", help="kernels to boot (default unpatched,patched)")
    ap.add_argument("--suites", default="selftests,functional")
    ap.add_argument("--tests", default="", help="comma-separated selftest/functional test names (default all)")
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("FT_BOOT_TIMEOUT", 1200)),
                    help="whole-boot timeout per kernel, seconds")
    ap.add_argument("--smp", type=int, default=2)
    a = ap.parse_args()
    t_start = time.time()
    variants = [v for v in a.variants.split(",") if v]
    suites = [s for s in a.suites.split(",") if s]
    tests = [t for t in a.tests.split(",") if t]
    selftests = [s for s in SELFTESTS if not tests or s[0].split("/")[-1] in tests]
    functional = [t for t in FUNCTIONAL if not tests or t in tests]
    if "selftests" not in suites:
        selftests_run = []
    else:
        selftests_run = selftests
    if "functional" not in suites:
        functional = []
    unknown = set(tests) - {s[0].split("/")[-1] for s in SELFTESTS} - set(FUNCTIONAL)
    if unknown:
        sys.exit(f"functional: unknown test(s): {', '.join(sorted(unknown))}")

    ftest = build_ftest()
    res = {}
    timing = {}
    kernel_build_s = 0.0
    images = {}
    for v in variants:
        t_k = time.time()
        try:
            bz, tree = kernel_for(v, a)
        except subprocess.CalledProcessError as e:
            print(f"{v}: kernel build failed ({e})")
            print("0 passed, 1 failed")
            return 1
        kernel_build_s += time.time() - t_k
        initrd = build_guest_image(v, tree, ftest, SELFTESTS, images)
        lines, status, secs = boot(v, bz, initrd, suites, tests, a.timeout, a.smp)
        first = None
        if status != "done":
            # One more boot after a boot that did not finish (a crash, an RCU stall, a
            # timeout): some boots of an unchanged patched kernel have not finished, and
            # whether the series or nested SVM under TCG causes it is not triaged
            # (kernel/functional/README.md, "boot:").  The failed boot is
            # kept (console-attempt1.log), named in the boot row and in the summary, and
            # the verdict is the second boot's; a kernel that fails twice fails the stage.
            reps = kernel_reports(lines)
            stall = [l for l in lines if "detected stalls on CPUs" in l]
            sig = (reps or stall or ["no kernel report"])[0].strip()
            con = os.path.join(CACHE, v, "console.log")
            shutil.copyfile(con, os.path.join(CACHE, v, "console-attempt1.log"))
            first = f"{status}: {sig}"
            log(f"{v}: RETRY: the boot did not finish ({first}); "
                f"console kept in {os.path.join(CACHE, v, 'console-attempt1.log')}; booting once more")
            lines, status, secs2 = boot(v, bz, initrd, suites, tests, a.timeout, a.smp)
            secs += secs2
        st, ft = parse(lines)
        kvm = any("@@KVM yes" in l for l in lines)
        res[v] = dict(status=status, st=st, ft=ft, kvm=kvm, reports=kernel_reports(lines),
                      kunit=parse_kunit(lines), first=first)
        timing[v] = secs

    for v in variants:
        r = res[v]
        st_pass = sum(1 for x in r["st"].values() if x == "PASS")
        ft_ok = sum(1 for x in r["ft"].values() if x[0] == "ok")
        log(f"{v}: {r['status']}; selftests {st_pass}/{len(r['st'])} PASS; "
            f"functional {ft_ok} ok, {len(r['ft']) - ft_ok} not ok")

    # ---- expectations
    rows = []  # (name, {variant: text}, met, note)
    passed = failed = 0

    def expect(name, cells, met, note=""):
        nonlocal passed, failed
        rows.append((name, cells, met, note))
        if met:
            passed += 1
        else:
            failed += 1

    stage_s = time.time() - t_start - kernel_build_s
    # Informational: wall time depends on the machine (TCG speed, load), and
    # no test threshold may (issue 9); the 15 min figure is a target, not a check.
    expect("budget:stage (info)", {v: f"{timing[v]:.0f} s" for v in variants}, True,
           f"stage {stage_s:.0f} s excluding kernel builds (target 15 min; not judged)")
    for v in variants:
        r = res[v]
        expect(f"boot:{v}", {v: r["status"] + ("" if r["kvm"] else ", no /dev/kvm")},
               r["status"] == "done" and r["kvm"],
               f"second boot; the first did not finish ({r['first'][:120]})" if r["first"] else "")
    for v in variants:
        reps = res[v]["reports"]
        for l in reps[:20]:
            log(f"{v}: kernel report: {l.strip()}")
        expect(f"console-clean:{v}", {v: f"{len(reps)} reports" if reps else "clean"}, not reps,
               "no WARNING/BUG/lockdep/UBSAN")
    for n in KUNIT_SUITES:
        cells = {v: res[v]["kunit"].get(n, "absent") for v in variants}
        met = all(c == ("ok" if v == "patched" else "absent") for v, c in cells.items())
        expect(f"kunit:{n}", cells, met, "boot-time KUnit, patched only")
    for path, _, core in selftests_run:
        n = path.split("/")[-1]
        cells = {v: res[v]["st"].get(n, "MISSING") for v in variants}
        outs = set(cells.values())
        met = len(outs) == 1 and "MISSING" not in outs and "TIMEOUT" not in outs
        if core and "patched" in cells:
            met = met and cells["patched"] == "PASS"
        expect(f"selftest:{n}", cells, met, "core" if core else "")
    for n in functional:
        cells, met = {}, True
        for v in variants:
            ok, why = res[v]["ft"].get(n, ("MISSING", ""))
            why = why.replace("feature absent: no ", "absent: ").replace(" tracepoint", "")
            cells[v] = ok + (f" ({why})" if why and ok != "ok" else "")
            if v == "patched" or n in BOTH_OK:
                met = met and ok == "ok"
            elif v == "unpatched":
                met = met and ok == "not ok"  # must fail or report the feature absent
        expect(f"functional:{n}", cells, met)

    # ---- report
    print()
    print("=" * 100)
    print("emulated-host stage: unpatched vs patched (QEMU TCG, -cpu EPYC, nested KVM via SVM)")
    w = max(len(r[0]) for r in rows) + 2
    hdr = f"{'test':<{w}}" + "".join(f"{v:<40}" for v in variants) + "expectation"
    print(hdr)
    print("-" * len(hdr))
    for name, cells, met, note in rows:
        print(f"{name:<{w}}" + "".join(f"{cells.get(v, '-')[:39]:<40}" for v in variants)
              + ("met" if met else "NOT MET") + (f" [{note}]" if note else ""))
    print("-" * len(hdr))
    print("not run (cannot run under TCG):")
    for t, why in NOT_UNDER_TCG:
        print(f"  {t}: {why}")
    print("timings: " + ", ".join(f"{v} boot+tests {timing[v]:.0f} s" for v in variants)
          + f", stage total {stage_s:.0f} s (+ {kernel_build_s:.0f} s in kernel/scripts/build.sh)")
    for v in variants:
        if res[v]["first"]:
            print(f"RETRIED: {v}: the first boot did not finish ({res[v]['first']}); "
                  f"the verdicts above are the second boot's")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
