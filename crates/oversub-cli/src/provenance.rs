//! How an output was made: the tool's version and git commit (embedded at
//! build time by build.rs), the command line, the date, the machine (CPU
//! model, cores, kernel) and the kernel presets the runs modelled.
//!
//! The date and the machine vary between two runs of the same sweep, so they
//! live in exactly these places, which the determinism tests skip: the
//! `*.meta.json` sidecar of each CSV, the first line of `results.jsonl`
//! (`{"provenance": ...}`), the one line of `summary.md` that starts with
//! [`MD_PREFIX`], and report.html's provenance paragraph. Every other byte of
//! the outputs is the same for the same sweep and seeds.
//! `SOURCE_DATE_EPOCH` (reproducible-builds.org) replaces the clock.

use serde::Serialize;
use std::collections::BTreeSet;

/// The commit the binary was built from (`git describe --always --dirty`).
pub const COMMIT: &str = env!("OVERSUB_COMMIT");

/// `oversub --version`: "0.1.0 (commit 919eb19-dirty)".
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("OVERSUB_COMMIT"),
    ")"
);

/// The start of `summary.md`'s provenance line.
pub const MD_PREFIX: &str = "Provenance: ";

#[derive(Serialize, Clone, Debug)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub kernel: String,
}

#[derive(Serialize, Clone, Debug)]
pub struct Provenance {
    pub tool: &'static str,
    pub version: &'static str,
    pub commit: &'static str,
    pub command: String,
    /// UTC, RFC 3339, seconds.
    pub date: String,
    pub machine: Machine,
    /// The host kernel presets the runs modelled, sorted.
    pub kernel_presets: Vec<String>,
}

/// Shell-like quoting of one argument (for the command line shown).
fn quote(a: &str) -> String {
    if !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c))
    {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

/// Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// RFC 3339 UTC text of a Unix time in seconds.
pub fn rfc3339(secs: i64) -> String {
    let (y, mo, d) = civil(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// The last second RFC 3339's four-digit years can write
/// (9999-12-31T23:59:59Z).
const MAX_DATE_EPOCH: i64 = 253_402_300_799;

/// `SOURCE_DATE_EPOCH`, checked (`oversub::limits::env_int`): seconds since
/// 1970 that replace the clock, or None. A malformed value is refused (the
/// reproducible-builds specification's rule), not replaced by the clock.
pub fn source_date_epoch() -> Result<Option<i64>, String> {
    oversub::limits::env_int(
        "SOURCE_DATE_EPOCH",
        0,
        MAX_DATE_EPOCH,
        "seconds since 1970-01-01 for the provenance's date",
    )
}

fn now() -> i64 {
    if let Ok(Some(e)) = source_date_epoch() {
        return e;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn machine() -> Machine {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    Machine {
        cpu,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel,
    }
}

impl Provenance {
    /// This process's provenance for runs that modelled `kernels`.
    pub fn new<'a>(kernels: impl IntoIterator<Item = &'a str>) -> Provenance {
        let set: BTreeSet<String> = kernels.into_iter().map(str::to_string).collect();
        Provenance {
            tool: "oversub",
            version: env!("CARGO_PKG_VERSION"),
            commit: COMMIT,
            command: std::env::args()
                .map(|a| quote(&a))
                .collect::<Vec<_>>()
                .join(" "),
            date: rfc3339(now()),
            machine: machine(),
            kernel_presets: set.into_iter().collect(),
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// The sidecar of a CSV (`results.csv.meta.json`): the provenance and
    /// the file it describes.
    pub fn sidecar(&self, file: &str) -> String {
        let v = serde_json::json!({ "file": file, "provenance": self.to_json() });
        format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default())
    }

    /// The first line of `results.jsonl`.
    pub fn jsonl_line(&self) -> String {
        format!("{}\n", serde_json::json!({ "provenance": self.to_json() }))
    }

    /// One line of text (summary.md, the terminal).
    pub fn line(&self) -> String {
        format!(
            "oversub {} (commit {}); `{}`; {}; {}, {} cores, Linux {}; kernel presets {}",
            self.version,
            self.commit,
            self.command,
            self.date,
            self.machine.cpu,
            self.machine.cores,
            self.machine.kernel,
            if self.kernel_presets.is_empty() {
                "-".into()
            } else {
                self.kernel_presets.join(", ")
            }
        )
    }

    /// `summary.md`'s provenance line.
    pub fn md_line(&self) -> String {
        format!("{MD_PREFIX}{}\n", self.line())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        // 2000-02-29 (a leap day of a century leap year) 12:34:56.
        assert_eq!(rfc3339(951_827_696), "2000-02-29T12:34:56Z");
        assert_eq!(rfc3339(1_795_000_000), "2026-11-18T11:06:40Z");
    }

    #[test]
    fn arguments_are_quoted_only_when_needed() {
        assert_eq!(quote("--set"), "--set");
        assert_eq!(quote("kvm.on_spin='6.12'"), "'kvm.on_spin='\\''6.12'\\'''");
        assert_eq!(quote("a b"), "'a b'");
    }
}
