//! What the running machine is: CPU count, HZ, kernel release, and where its
//! cpu controller lives (cgroup v2 `cpu.weight` or v1 `cpu.shares`).

use oversub::sched::features::KernelPreset;
use std::path::{Path, PathBuf};

/// How HZ was found.
#[derive(Clone, Debug, PartialEq)]
pub enum HzSource {
    Config(String),
    Jiffies,
    Default,
}

/// The running machine.
#[derive(Clone, Debug)]
pub struct HostInfo {
    pub cpus: u32,
    pub hz: u32,
    pub hz_source: HzSource,
    pub release: String,
    pub preset: KernelPreset,
}

impl HostInfo {
    pub fn detect() -> HostInfo {
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1);
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        let (hz, hz_source) = detect_hz(&release);
        HostInfo {
            cpus,
            hz,
            hz_source,
            preset: preset_for(&release),
            release,
        }
    }

    pub fn hz_note(&self) -> String {
        match &self.hz_source {
            HzSource::Config(f) => format!("HZ={} from {f}", self.hz),
            HzSource::Jiffies => format!("HZ={} inferred from /proc/timer_list jiffies", self.hz),
            HzSource::Default => format!("HZ={} assumed (could not read or infer it)", self.hz),
        }
    }
}

/// `major.minor` of a kernel release string ("6.18.0-foo" -> (6, 18)).
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// The preset that approximates a running kernel: 6.19 from v6.19 on, 6.18
/// for v6.17 and v6.18 (the run-to-parity rework of v6.17 and the delayed
/// task's wakeup of v6.13), 6.12.117 from v6.6 (EEVDF; forfeit on yield and
/// PICK_BUDDY; v6.13..v6.16 also have TTWU_DEQUEUE_DELAYED, which this leaves
/// out), and the CFS preset 6.1 before v6.6 (the last CFS kernels). An
/// unreadable release is taken as 6.12.117, the project's base.
pub fn preset_for(release: &str) -> KernelPreset {
    match kernel_version(release) {
        Some(v) if v >= (6, 19) => KernelPreset::V6_19,
        Some(v) if v >= (6, 17) => KernelPreset::V6_18,
        Some(v) if v < (6, 6) => KernelPreset::V6_1,
        _ => KernelPreset::V6_12_117,
    }
}

/// CONFIG_HZ from a kernel config text.
pub fn hz_from_config(text: &str) -> Option<u32> {
    text.lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
}

fn read_jiffies() -> Option<u64> {
    let t = std::fs::read_to_string("/proc/timer_list").ok()?;
    t.lines()
        .find_map(|l| l.strip_prefix("jiffies: "))
        .and_then(|v| v.trim().parse().ok())
}

/// Rounds a measured tick rate to the nearest of the kernel's HZ choices.
pub fn nearest_hz(rate: f64) -> u32 {
    let mut best = 250;
    for hz in [100u32, 250, 300, 1000] {
        if (rate - hz as f64).abs() < (rate - best as f64).abs() {
            best = hz;
        }
    }
    best
}

fn detect_hz(release: &str) -> (u32, HzSource) {
    let boot = format!("/boot/config-{release}");
    if let Ok(t) = std::fs::read_to_string(&boot) {
        if let Some(hz) = hz_from_config(&t) {
            return (hz, HzSource::Config(boot));
        }
    }
    if let Some(a) = read_jiffies() {
        let t0 = std::time::Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(200));
        if let Some(b) = read_jiffies() {
            let rate = (b.saturating_sub(a)) as f64 / t0.elapsed().as_secs_f64();
            if rate > 50.0 {
                return (nearest_hz(rate), HzSource::Jiffies);
            }
        }
    }
    (250, HzSource::Default)
}

/// The phase of the periodic tick on CLOCK_MONOTONIC, in ns within a tick
/// period of `tick_ns`: the expiry of a CPU's tick hrtimer
/// (`tick_nohz_handler` since v6.8, `tick_sched_timer` before; both
/// CPUs' ticks expire together unless `skew_tick=1`) as `/proc/timer_list`
/// prints it ("expires at SOFT-HARD nsecs", on the monotonic base), modulo
/// the period. `None` when no tick timer is listed (every CPU idle with its
/// tick stopped) or the text cannot be read.
pub fn tick_phase_from_timer_list(text: &str, tick_ns: u64) -> Option<u64> {
    if tick_ns == 0 {
        return None;
    }
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if !(l.contains("tick_nohz_handler") || l.contains("tick_sched_timer")) {
            continue;
        }
        let next = lines.next()?;
        let at = next.split("expires at ").nth(1)?;
        let soft: u64 = at.split('-').next()?.trim().parse().ok()?;
        return Some(soft % tick_ns);
    }
    None
}

/// [`tick_phase_from_timer_list`] of this machine's `/proc/timer_list`.
pub fn tick_phase(tick_ns: u64) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/timer_list").ok()?;
    tick_phase_from_timer_list(&text, tick_ns)
}

/// The first instant at or after `t` that lies at `phase` within the tick
/// period `tick_ns`: a real run started there has the simulator's tick grid
/// (ticks at multiples of the period after the start).
pub fn align_to_tick(t: u64, tick_ns: u64, phase: u64) -> u64 {
    if tick_ns == 0 {
        return t;
    }
    let base = t - t % tick_ns + phase % tick_ns;
    if base >= t {
        base
    } else {
        base + tick_ns
    }
}

/// Which interface sets a cgroup's CPU weight.
#[derive(Clone, Debug, PartialEq)]
pub enum CpuController {
    /// cgroup v2 with the cpu controller enabled at `root`: `cpu.weight`.
    V2 { root: PathBuf },
    /// cgroup v1 cpu hierarchy at `root`: `cpu.shares` = weight x 1024 / 100.
    V1 { root: PathBuf },
}

impl CpuController {
    pub fn root(&self) -> &Path {
        match self {
            CpuController::V2 { root } | CpuController::V1 { root } => root,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            CpuController::V2 { root } => format!("cgroup v2 cpu.weight at {}", root.display()),
            CpuController::V1 { root } => {
                format!("cgroup v1 cpu.shares at {}", root.display())
            }
        }
    }

    /// The file and value that give a cgroup `weight` (cpu.weight units).
    pub fn weight_file(&self, weight: u32) -> (&'static str, String) {
        match self {
            CpuController::V2 { .. } => ("cpu.weight", weight.to_string()),
            CpuController::V1 { .. } => ("cpu.shares", shares_of(weight).to_string()),
        }
    }
}

/// The 1-minute load average of a `/proc/loadavg` text ("27.41 30.12
/// 29.80 5/812 4242" -> 27.41).
pub fn load_average_from(text: &str) -> Option<f64> {
    text.split_whitespace()
        .next()?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// This machine's 1-minute load average now (other jobs' demand beside a
/// real run: conform prints it with the runs).
pub fn load_average() -> Option<f64> {
    load_average_from(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

/// "load average 27.4..31.2 at the real runs' starts" (or one value).
pub fn load_note(loads: &[f64]) -> String {
    let lo = loads.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = loads.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if loads.is_empty() {
        "load average unknown".into()
    } else if hi - lo < 0.05 {
        format!("load average {lo:.1} at the real runs' starts")
    } else {
        format!("load average {lo:.1}..{hi:.1} at the real runs' starts")
    }
}

/// v1 shares of a v2 weight (both end in `sched_group_set_shares()`).
pub fn shares_of(weight: u32) -> u64 {
    weight as u64 * 1024 / 100
}

/// Finds the cpu controller from a mountinfo text; `controllers_of` reads a
/// v2 root's `cgroup.controllers`.
pub fn find_cpu_controller(
    mountinfo: &str,
    controllers_of: impl Fn(&Path) -> Option<String>,
) -> Option<CpuController> {
    let mut v1 = None;
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if l.len() < 5 || r.is_empty() {
            continue;
        }
        let mnt = PathBuf::from(l[4]);
        match r[0] {
            "cgroup2" => {
                let c = controllers_of(&mnt).unwrap_or_default();
                if c.split_whitespace().any(|w| w == "cpu") {
                    return Some(CpuController::V2 { root: mnt });
                }
            }
            "cgroup" if v1.is_none() => {
                let opts = r.get(2).copied().unwrap_or("");
                if opts.split(',').any(|o| o == "cpu") {
                    v1 = Some(CpuController::V1 { root: mnt });
                }
            }
            _ => {}
        }
    }
    v1
}

/// Detects the cpu controller of this machine, or says why it cannot be used.
pub fn detect_cpu_controller() -> Result<CpuController, String> {
    let mi = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let c = find_cpu_controller(&mi, |p| {
        std::fs::read_to_string(p.join("cgroup.controllers")).ok()
    })
    .ok_or_else(|| "no cgroup hierarchy with the cpu controller is mounted".to_string())?;
    if !rustix::process::geteuid().is_root() {
        return Err(format!(
            "not root (cannot create cgroups under {})",
            c.describe()
        ));
    }
    let probe = c
        .root()
        .join(format!("oversub-conform-probe-{}", std::process::id()));
    std::fs::create_dir(&probe).map_err(|e| format!("{} is not writable: {e}", c.describe()))?;
    let _ = std::fs::remove_dir(&probe);
    Ok(c)
}

#[cfg(test)]
mod tests {

    #[test]
    fn load_average_is_the_first_field_of_proc_loadavg() {
        assert_eq!(
            load_average_from("27.41 30.12 29.80 5/812 4242\n"),
            Some(27.41)
        );
        assert_eq!(load_average_from(""), None);
        assert_eq!(load_average_from("x 1 2"), None);
        assert_eq!(
            load_note(&[27.41, 31.2, 29.0]),
            "load average 27.4..31.2 at the real runs' starts"
        );
        assert_eq!(
            load_note(&[3.0, 3.01]),
            "load average 3.0 at the real runs' starts"
        );
        assert_eq!(load_note(&[]), "load average unknown");
    }

    use super::*;

    const HYBRID: &str = "\
30 23 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate
35 30 0:31 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu
36 30 0:32 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct
";

    #[test]
    fn hybrid_uses_v1_when_v2_lacks_cpu() {
        let c = find_cpu_controller(HYBRID, |_| Some("memory pids".into())).unwrap();
        assert_eq!(
            c,
            CpuController::V1 {
                root: "/sys/fs/cgroup/cpu".into()
            }
        );
        assert_eq!(c.weight_file(300), ("cpu.shares", "3072".to_string()));
    }

    #[test]
    fn v2_preferred_when_it_has_cpu() {
        let c = find_cpu_controller(HYBRID, |_| Some("cpu io memory".into())).unwrap();
        assert_eq!(c.weight_file(300), ("cpu.weight", "300".to_string()));
        assert!(find_cpu_controller("", |_| None).is_none());
    }

    #[test]
    fn tick_phase_and_alignment() {
        let text = "active timers:\n #0: <00000000f1855edf>, tick_nohz_handler, S:01\n # expires at 40616496000000-40616496000000 nsecs [in 742507 to 742507 nsecs]\n";
        assert_eq!(tick_phase_from_timer_list(text, 4_000_000), Some(0));
        let old = " #0: <x>, tick_sched_timer, S:01\n # expires at 1001500-1001500 nsecs [in 5 to 5 nsecs]\n";
        assert_eq!(tick_phase_from_timer_list(old, 1_000_000), Some(1500));
        assert_eq!(
            tick_phase_from_timer_list(" #0: <x>, hrtimer_wakeup, S:01\n", 4_000_000),
            None
        );
        assert_eq!(align_to_tick(10_000_001, 4_000_000, 0), 12_000_000);
        assert_eq!(align_to_tick(12_000_000, 4_000_000, 0), 12_000_000);
        assert_eq!(align_to_tick(12_000_001, 4_000_000, 1500), 12_001_500);
        assert_eq!(align_to_tick(12_002_000, 4_000_000, 1500), 16_001_500);
        assert_eq!(align_to_tick(12_000_001, 4_000_000, 3_999_999), 15_999_999);
    }

    #[test]
    fn versions_and_hz() {
        assert_eq!(kernel_version("6.18.0-1-cloud-amd64"), Some((6, 18)));
        assert_eq!(preset_for("6.18.3"), KernelPreset::V6_18);
        assert_eq!(preset_for("6.17.0"), KernelPreset::V6_18);
        assert_eq!(preset_for("6.16.9"), KernelPreset::V6_12_117);
        assert_eq!(preset_for("6.12.117"), KernelPreset::V6_12_117);
        assert_eq!(preset_for("6.6.0"), KernelPreset::V6_12_117);
        assert_eq!(preset_for("6.5.13"), KernelPreset::V6_1);
        assert_eq!(preset_for("5.15.0-91-generic"), KernelPreset::V6_1);
        assert_eq!(preset_for("6.19.0"), KernelPreset::V6_19);
        assert_eq!(preset_for("7.0"), KernelPreset::V6_19);
        assert_eq!(
            hz_from_config("# x\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n"),
            Some(250)
        );
        assert_eq!(nearest_hz(247.0), 250);
        assert_eq!(nearest_hz(990.0), 1000);
        assert_eq!(shares_of(100), 1024);
    }
}
