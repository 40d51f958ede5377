//! What `oversub record` is asked to do (`Options`, from the command line)
//! and the bounds of a recording's length and trace.

use std::path::PathBuf;
use std::time::Duration;

/// The longest recording.
pub const MAX_DURATION: Duration = Duration::from_secs(600);
/// Default cap on trace events (each folded as it arrives; the cap bounds
/// the recording's cost, not its memory).
pub const DEFAULT_MAX_EVENTS: u64 = 50_000_000;
/// Default ring buffer per CPU (KiB).
pub const DEFAULT_BUFFER_KB: u64 = 32 * 1024;

/// What `oversub record` was asked to do.
#[derive(Clone, Debug)]
pub struct Options {
    pub out: PathBuf,
    pub duration: Duration,
    pub command: Vec<String>,
    /// Operations the run did, if known (for per-op figures).
    pub ops: Option<u64>,
    /// Take the ops from the number after the last occurrence of this text
    /// in the program's output.
    pub ops_from: Option<String>,
    pub max_events: u64,
    pub buffer_kb: u64,
    pub progress: bool,
    /// Replace an `out` directory that holds files (`--force`); without
    /// it, such a directory is refused ([`crate::outdir`]).
    pub force: bool,
}

/// "5s", "250ms", "1.5s", "2m" into a duration (1 ms ..= [`MAX_DURATION`]).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, mult) = if let Some(v) = s.strip_suffix("ms") {
        (v, 1e-3)
    } else if let Some(v) = s.strip_suffix('s') {
        (v, 1.0)
    } else if let Some(v) = s.strip_suffix('m') {
        (v, 60.0)
    } else {
        return Err(format!(
            "--duration: {s:?} has no unit: allowed e.g. 500ms, 5s, 2m"
        ));
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("--duration: {s:?} is not a number with a unit (500ms, 5s, 2m)"))?;
    let secs = v * mult;
    if !(0.001..=MAX_DURATION.as_secs_f64()).contains(&secs) {
        return Err(format!(
            "--duration: {s} is out of range: allowed 1ms ..= {}s",
            MAX_DURATION.as_secs()
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}
