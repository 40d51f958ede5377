//! A private tracefs instance (`/sys/kernel/tracing/instances/NAME`): the
//! tracepoints a recording needs, filtered to the recorded command and its
//! descendants (`set_event_pid` with the `event-fork` option), with a
//! bounded per-CPU ring buffer. Other users of tracing on the machine keep
//! their own buffers. Removed again on drop.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The tracepoints a recording enables (`system/event`); each must exist.
pub const EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_waking",
    "sched/sched_process_fork",
    "sched/sched_process_exit",
    "sched/sched_wake_idle_without_ipi",
    "syscalls",
    "exceptions/page_fault_user",
    "exceptions/page_fault_kernel",
    "tlb/tlb_flush",
    "ipi/ipi_send_cpu",
    "ipi/ipi_send_cpumask",
    "lock/contention_begin",
    "lock/contention_end",
    "mmap_lock/mmap_lock_start_locking",
    "mmap_lock/mmap_lock_acquire_returned",
    "mmap_lock/mmap_lock_released",
];

/// Why tracing is unavailable (one line each; exit 2).
pub fn check_available(root: &Path) -> Result<(), String> {
    if !rustix::process::geteuid().is_root() {
        return Err("oversub record: tracing needs root (tracefs events); run it as root".into());
    }
    if !root.join("events").is_dir() {
        return Err(format!(
            "oversub record: no tracefs at {} (mount -t tracefs nodev {})",
            root.display(),
            root.display()
        ));
    }
    for e in EVENTS {
        let d = root.join("events").join(e);
        if !d.join("enable").exists() {
            return Err(format!(
                "oversub record: tracepoint {e} missing on this kernel ({} not found)",
                d.display()
            ));
        }
    }
    Ok(())
}

/// Finds tracefs, mounting it at /sys/kernel/tracing when it is not mounted
/// (as root; what `trace-cmd` does too).
pub fn locate() -> Result<PathBuf, String> {
    let std = Path::new("/sys/kernel/tracing");
    if std.join("events").is_dir() {
        return Ok(std.into());
    }
    let dbg = Path::new("/sys/kernel/debug/tracing");
    if dbg.join("events").is_dir() {
        return Ok(dbg.into());
    }
    if rustix::process::geteuid().is_root() && std.is_dir() {
        let _ = std::process::Command::new("mount")
            .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
            .status();
    }
    Ok(std.into())
}

pub struct Instance {
    pub dir: PathBuf,
}

fn put(p: &Path, v: &str) -> Result<(), String> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(p)
        .map_err(|e| format!("oversub record: {}: {e}", p.display()))?;
    f.write_all(v.as_bytes())
        .map_err(|e| format!("oversub record: {}: write {v:?}: {e}", p.display()))
}

impl Instance {
    /// Creates the instance with `buffer_kb` per CPU, filtered to `pid`
    /// and its future children; events enabled, tracing still off.
    pub fn create(root: &Path, name: &str, buffer_kb: u64, pid: u32) -> Result<Instance, String> {
        let dir = root.join("instances").join(name);
        fs::create_dir(&dir)
            .map_err(|e| format!("oversub record: cannot create {}: {e}", dir.display()))?;
        let inst = Instance { dir };
        let d = &inst.dir;
        put(&d.join("tracing_on"), "0")?;
        put(&d.join("buffer_size_kb"), &buffer_kb.to_string())?;
        // Real addresses (lock words, futexes), the tgid in each line.
        put(&d.join("options/hash-ptr"), "0")?;
        put(&d.join("options/record-tgid"), "1")?;
        put(&d.join("options/event-fork"), "1")?;
        put(&d.join("options/overwrite"), "0")?;
        put(&d.join("set_event_pid"), &pid.to_string())?;
        for e in EVENTS {
            put(&d.join("events").join(e).join("enable"), "1")?;
        }
        Ok(inst)
    }

    pub fn on(&self, on: bool) -> Result<(), String> {
        put(&self.dir.join("tracing_on"), if on { "1" } else { "0" })
    }

    /// Events the kernel dropped (buffer full), summed over CPUs.
    pub fn lost(&self) -> u64 {
        let mut n = 0;
        if let Ok(rd) = fs::read_dir(self.dir.join("per_cpu")) {
            for c in rd.flatten() {
                if let Ok(s) = fs::read_to_string(c.path().join("stats")) {
                    for l in s.lines() {
                        if let Some(v) = l
                            .strip_prefix("overrun: ")
                            .or_else(|| l.strip_prefix("dropped events: "))
                        {
                            n += v.trim().parse::<u64>().unwrap_or(0);
                        }
                    }
                }
            }
        }
        n
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = put(&self.dir.join("tracing_on"), "0");
        let _ = put(&self.dir.join("events/enable"), "0");
        let _ = put(&self.dir.join("set_event_pid"), "");
        let _ = fs::remove_dir(&self.dir);
    }
}
