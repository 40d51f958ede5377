//! One line of tracefs' text output (`trace_pipe` with `record-tgid` on)
//! into a typed event. The line format is the kernel's
//! `print_trace_fmt()` (kernel/trace/trace.c) header, `COMM-PID (TGID)
//! [CPU] FLAGS TIMESTAMP: EVENT: BODY`, and each event's `print fmt`
//! (/sys/kernel/tracing/events/*/*/format on the recording kernel).

/// Who was current when the event fired.
#[derive(Clone, Debug, PartialEq)]
pub struct Header<'a> {
    pub comm: &'a str,
    pub pid: u32,
    pub tgid: Option<u32>,
    pub cpu: u32,
    /// Fired in hard or soft interrupt context (the `h`/`s`/`H` flag):
    /// `comm`/`pid` are then only who was interrupted.
    pub irq: bool,
    pub ts_ns: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Body<'a> {
    Switch {
        prev_comm: &'a str,
        prev_pid: u32,
        /// `R`, `R+` (preempted), `S`, `D`, ...
        prev_state: &'a str,
        next_comm: &'a str,
        next_pid: u32,
    },
    Waking {
        comm: &'a str,
        pid: u32,
    },
    Wakeup {
        pid: u32,
    },
    Fork {
        child_comm: &'a str,
        child_pid: u32,
    },
    Exit {
        pid: u32,
    },
    SysEnter {
        name: &'a str,
        args: &'a str,
    },
    SysExit {
        name: &'a str,
    },
    PageFault {
        user: bool,
    },
    TlbFlush {
        reason: u32,
        pages: i64,
    },
    Ipi {
        /// Number of target CPUs.
        targets: u32,
        callsite: &'a str,
        callback: &'a str,
    },
    ContentionBegin {
        addr: &'a str,
        flags: &'a str,
    },
    ContentionEnd {
        addr: &'a str,
    },
    /// `mmap_lock:mmap_lock_*` (include/trace/events/mmap_lock.h).
    MmapLock {
        step: MmapLockStep,
        /// The mm's address as printed (`mm=%p`).
        mm: &'a str,
        write: bool,
    },
    /// A wakeup of a polling idle CPU that needed no IPI.
    WakeIdleNoIpi,
    Other,
}

/// Which mmap_lock tracepoint.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MmapLockStep {
    Start,
    Acquired { success: bool },
    Released,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Line<'a> {
    pub h: Header<'a>,
    pub body: Body<'a>,
}

/// The value after `key` up to the next space (or the end).
fn tok<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    let i = s.find(key)? + key.len();
    let r = &s[i..];
    Some(r.split(' ').next().unwrap_or(r))
}

/// The value after `key` up to `until` (comms may contain spaces).
fn between<'a>(s: &'a str, key: &str, until: &str) -> Option<&'a str> {
    let i = s.find(key)? + key.len();
    let j = s[i..].find(until)? + i;
    Some(&s[i..j])
}

fn num(s: Option<&str>) -> Option<u32> {
    s?.trim().parse().ok()
}

/// A symbol without its `+0xOFF/0xLEN` (`ttwu_queue_wakelist+0x.../...`).
fn sym(s: &str) -> &str {
    s.split('+').next().unwrap_or(s)
}

/// Number of CPUs in a cpumask list ("0-3,5").
fn cpus_in(list: &str) -> u32 {
    list.split(',')
        .filter(|r| !r.is_empty())
        .map(|r| match r.split_once('-') {
            Some((a, b)) => match (a.parse::<u32>(), b.parse::<u32>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 1,
            },
            None => 1,
        })
        .sum()
}

/// Parses one line; `None` for lines that are not events (comments, lost
/// event markers are reported by the caller through the buffer stats).
pub fn line(l: &str) -> Option<Line<'_>> {
    // The CPU field "[NNN]" ends the task part.
    let lb = l.find(" [")?;
    let rb = lb + l[lb..].find(']')?;
    let cpu: u32 = l[lb + 2..rb].parse().ok()?;
    let mut task = l[..lb].trim();
    let mut tgid = None;
    if task.ends_with(')') {
        if let Some(op) = task.rfind('(') {
            tgid = task[op + 1..task.len() - 1].trim().parse().ok();
            task = task[..op].trim_end();
        }
    }
    let dash = task.rfind('-')?;
    let comm = &task[..dash];
    let pid: u32 = task[dash + 1..].parse().ok()?;
    let rest = l[rb + 1..].trim_start();
    let (flags, rest) = rest.split_once(' ')?;
    let irq = flags
        .chars()
        .nth(2)
        .is_some_and(|c| matches!(c, 'h' | 's' | 'H'));
    let rest = rest.trim_start();
    let (ts, rest) = rest.split_once(": ")?;
    let ts_ns = parse_ts(ts)?;
    // Syscall events print no event name: "sys_NAME(args)" on entry,
    // "sys_NAME -> 0xRET" on exit.
    if let Some(b) = rest.strip_prefix("sys_") {
        let body = match (b.find('('), b.find(" -> ")) {
            (Some(p), e) if e.is_none_or(|e| p < e) => Body::SysEnter {
                name: &b[..p],
                args: b[p + 1..].trim_end().trim_end_matches(')'),
            },
            (_, Some(e)) => Body::SysExit { name: &b[..e] },
            _ => Body::Other,
        };
        return Some(Line {
            h: Header {
                comm,
                pid,
                tgid,
                cpu,
                irq,
                ts_ns,
            },
            body,
        });
    }
    let (ev, body) = match rest.split_once(": ") {
        Some((e, b)) => (e, b),
        None => (rest.trim_end_matches(':'), ""),
    };
    let body = match ev {
        "sched_switch" => Body::Switch {
            prev_comm: between(body, "prev_comm=", " prev_pid=")?,
            prev_pid: num(tok(body, " prev_pid="))?,
            prev_state: tok(body, " prev_state=")?,
            next_comm: between(body, "next_comm=", " next_pid=")?,
            next_pid: num(tok(body, " next_pid="))?,
        },
        "sched_waking" => Body::Waking {
            comm: between(body, "comm=", " pid=")?,
            pid: num(tok(body, " pid="))?,
        },
        "sched_wakeup" => Body::Wakeup {
            pid: num(tok(body, " pid="))?,
        },
        "sched_process_fork" => Body::Fork {
            child_comm: between(body, "child_comm=", " child_pid=")?,
            child_pid: num(tok(body, " child_pid="))?,
        },
        "sched_process_exit" => Body::Exit {
            pid: num(tok(body, " pid="))?,
        },
        "sched_wake_idle_without_ipi" => Body::WakeIdleNoIpi,
        "mmap_lock_start_locking" | "mmap_lock_acquire_returned" | "mmap_lock_released" => {
            Body::MmapLock {
                step: match ev {
                    "mmap_lock_start_locking" => MmapLockStep::Start,
                    "mmap_lock_released" => MmapLockStep::Released,
                    _ => MmapLockStep::Acquired {
                        success: tok(body, "success=")? == "true",
                    },
                },
                mm: tok(body, "mm=")?,
                write: tok(body, "write=")? == "true",
            }
        }
        "page_fault_user" => Body::PageFault { user: true },
        "page_fault_kernel" => Body::PageFault { user: false },
        "tlb_flush" => {
            let r = body.rfind('(')?;
            Body::TlbFlush {
                reason: body[r + 1..].trim_end_matches(')').parse().ok()?,
                pages: tok(body, "pages:")?.parse().ok()?,
            }
        }
        "ipi_send_cpu" => Body::Ipi {
            targets: 1,
            callsite: sym(tok(body, "callsite=")?),
            callback: sym(tok(body, "callback=")?),
        },
        "ipi_send_cpumask" => Body::Ipi {
            targets: cpus_in(tok(body, "cpumask=")?),
            callsite: sym(tok(body, "callsite=")?),
            callback: sym(tok(body, "callback=")?),
        },
        "contention_begin" => Body::ContentionBegin {
            addr: body.split(' ').next()?,
            flags: between(body, "(flags=", ")")?,
        },
        "contention_end" => Body::ContentionEnd {
            addr: body.split(' ').next()?,
        },
        _ => Body::Other,
    };
    Some(Line {
        h: Header {
            comm,
            pid,
            tgid,
            cpu,
            irq,
            ts_ns,
        },
        body,
    })
}

/// "317.512683" (seconds with up to 9 decimals) into ns.
fn parse_ts(ts: &str) -> Option<u64> {
    let (s, f) = ts.split_once('.').unwrap_or((ts, "0"));
    let s: u64 = s.parse().ok()?;
    if f.len() > 9 || f.is_empty() {
        return None;
    }
    let frac: u64 = f.parse().ok()?;
    Some(s * 1_000_000_000 + frac * 10u64.pow(9 - f.len() as u32))
}

/// A futex call's `uaddr` and command (`op` without the private and
/// realtime flags) from the args of `sys_futex(uaddr: X, op: Y, ...)`.
pub fn futex_args(args: &str) -> Option<(u64, u32)> {
    let ua = tok(args, "uaddr: ")?.trim_end_matches(',');
    let op = tok(args, "op: ")?.trim_end_matches(',');
    let ua = u64::from_str_radix(ua.trim_start_matches("0x"), 16).ok()?;
    let op = u32::from_str_radix(op.trim_start_matches("0x"), 16).ok()?;
    Some((ua, op & !(128 | 256)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernels_lines() {
        let l = line("       hackbench-18808 (  18808) [001] d..3.   323.864617: sched_waking: comm=hackbench pid=18816 prio=120 target_cpu=001").unwrap();
        assert_eq!(l.h.comm, "hackbench");
        assert_eq!(l.h.pid, 18808);
        assert_eq!(l.h.tgid, Some(18808));
        assert_eq!(l.h.cpu, 1);
        assert!(!l.h.irq);
        assert_eq!(l.h.ts_ns, 323_864_617_000);
        assert_eq!(
            l.body,
            Body::Waking {
                comm: "hackbench",
                pid: 18816
            }
        );
        let l = line("  kworker/u8:2-ev-41 (-------) [000] dNs3.   1.000000001: sched_switch: prev_comm=a b prev_pid=7 prev_prio=120 prev_state=R+ ==> next_comm=x-y next_pid=9 next_prio=120").unwrap();
        assert_eq!(l.h.comm, "kworker/u8:2-ev");
        assert_eq!(l.h.pid, 41);
        assert_eq!(l.h.tgid, None);
        assert!(l.h.irq);
        assert_eq!(l.h.ts_ns, 1_000_000_001);
        assert_eq!(
            l.body,
            Body::Switch {
                prev_comm: "a b",
                prev_pid: 7,
                prev_state: "R+",
                next_comm: "x-y",
                next_pid: 9
            }
        );
        let l =
            line("bash-1 (1) [000] d..1.   2.5: tlb_flush: pages:-1 reason:remote IPI send (4)")
                .unwrap();
        assert_eq!(
            l.body,
            Body::TlbFlush {
                reason: 4,
                pages: -1
            }
        );
        let l = line("b-1 (1) [001] ...1.   3.0: ipi_send_cpumask: cpumask=0,2-3 callsite=on_each_cpu_cond_mask+0x20/0x60 callback=flush_tlb_func+0x0/0x200").unwrap();
        assert_eq!(
            l.body,
            Body::Ipi {
                targets: 3,
                callsite: "on_each_cpu_cond_mask",
                callback: "flush_tlb_func"
            }
        );
        let l = line("t-5 (   4) [000] .....   4.0: sys_futex(uaddr: 7f00a0, op: 80, val: 0, utime: 0, uaddr2: 0, val3: 0)").unwrap();
        let Body::SysEnter { name, args } = l.body else {
            panic!("{l:?}")
        };
        assert_eq!(name, "futex");
        assert_eq!(futex_args(args), Some((0x7f00a0, 0)));
        let l = line("t-5 (4) [000] .....   4.0: sys_futex -> 0x0").unwrap();
        assert_eq!(l.body, Body::SysExit { name: "futex" });
        let l = line(
            "t-5 (4) [000] d..1.   4.0: contention_begin: ffff8881003c4cec (flags=SPIN|WRITE)",
        )
        .unwrap();
        assert_eq!(
            l.body,
            Body::ContentionBegin {
                addr: "ffff8881003c4cec",
                flags: "SPIN|WRITE"
            }
        );
        let l = line("e-9 (9) [001] ...1.   5.0: mmap_lock_acquire_returned: mm=00000000a1b2c3d4 memcg_id=1 write=false success=true").unwrap();
        assert_eq!(
            l.body,
            Body::MmapLock {
                step: MmapLockStep::Acquired { success: true },
                mm: "00000000a1b2c3d4",
                write: false
            }
        );
        let l = line("e-9 (9) [001] ...1.   5.1: mmap_lock_released: mm=00000000a1b2c3d4 memcg_id=1 write=true").unwrap();
        assert_eq!(
            l.body,
            Body::MmapLock {
                step: MmapLockStep::Released,
                mm: "00000000a1b2c3d4",
                write: true
            }
        );
        assert_eq!(line("# tracer: nop"), None);
    }
}
