//! The bounds on every input (docs/limits.md): one size cap and one
//! regular-file check for every file the tool reads ([`read_text`]), the
//! task cap however tasks are spelled, the sweep-run cap and the event
//! budget per simulated second. Each is one constant here so that the
//! documentation, the checks and the messages cannot drift apart.

use std::path::Path;

/// The largest file the tool reads (scenario, `[[vm]] program`, rt-app,
/// sweep, manifest, published figures): 4 MiB. The largest file in the
/// repository is under 100 KiB; a file of many MiB is a mistake (a wrong
/// path, a device, a log) and would only be parsed at length.
pub const MAX_INPUT_BYTES: u64 = 4 << 20;

/// The most host tasks a scenario may create however they are spelled
/// (`[[task]] count`, messaging senders and receivers, rt-app `instance`,
/// vCPUs). The model's runqueue operations scan the queued entities
/// (docs/model.md, timeline simplification), so n tasks on few CPUs cost
/// O(n^2) to start: 50 000 hogs on 2 CPUs take seconds.
pub const MAX_TASKS: u64 = 50_000;

/// The most runs one sweep (or one reproduction) may expand to (points x
/// seeds), counted before any point is built.
pub const MAX_SWEEP_RUNS: u64 = 100_000;

/// The event budget of a run: at most this many events per simulated
/// second per CPU (host CPUs plus vCPUs), beyond [`EVENT_ALLOWANCE`].
/// The least operation the inputs allow is 100 ns of CPU time (one
/// event per 100 ns per CPU: 10^7/s); the repository's scenarios stay
/// well under 10^6 per CPU per simulated second. A run above the budget
/// is a model that cannot advance simulated time (zero costs with
/// `ple_window = 0`, say) and is stopped with an error instead of running
/// for hours.
pub const MAX_EVENTS_PER_CPU_SECOND: u64 = 10_000_000;

/// Events every run may use whatever its length (start-up, short runs).
pub const EVENT_ALLOWANCE: u64 = 1 << 20;

/// Consecutive zero-time steps a program thread may take between two
/// events that advance simulated time (a finite loop of `lock`/`unlock`
/// repeated many times, say): beyond it the program is refused at load,
/// and a run in which a thread takes more at one instant stops with
/// `RunError::ZeroTimeLoop`.
pub const MAX_ZERO_TIME_STEPS: u64 = 1 << 20;

/// The most worker threads `RAYON_NUM_THREADS` may ask for (the parallel
/// runs of a sweep): more would only contend for the cores, and a number
/// the system cannot spawn made the thread pool's start fail after a long
/// wait (a panic).
pub const MAX_THREADS: u64 = 1024;

/// An environment variable the tool honours, as an integer in `lo ..= hi`:
/// `None` when unset or empty, else the value or one line naming the
/// variable, the value and what is allowed (`meaning` says what it sets).
/// Every variable the tool reads goes through here, checked before the
/// first run, so that a malformed value is refused, not replaced by a
/// default in silence.
pub fn env_int(name: &str, lo: i64, hi: i64, meaning: &str) -> Result<Option<i64>, String> {
    env_int_of(name, std::env::var_os(name).as_deref(), lo, hi, meaning)
}

/// [`env_int`] of the value `raw` (None: unset).
pub fn env_int_of(
    name: &str,
    raw: Option<&std::ffi::OsStr>,
    lo: i64,
    hi: i64,
    meaning: &str,
) -> Result<Option<i64>, String> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    // Empty is unset (as rayon reads it); no blank is trimmed (rayon would
    // take " 4" as unset).
    let text = raw.to_string_lossy();
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<i64>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(Some(v)),
        _ => Err(format!(
            "environment variable {name}={:?}: allowed an integer {lo} ..= {hi} ({meaning}), or unset",
            echo(&text)
        )),
    }
}

/// `RAYON_NUM_THREADS` (the worker threads of a sweep's parallel runs,
/// read by the rayon thread pool), checked before the pool starts: rayon
/// itself takes a malformed value as unset and a huge one as a number of
/// threads to spawn.
pub fn check_threads_env() -> Result<(), String> {
    env_int(
        "RAYON_NUM_THREADS",
        0,
        MAX_THREADS as i64,
        "worker threads of parallel runs; 0: one per core",
    )
    .map(|_| ())
}

/// The longest key or value echoed in an error message (characters); a
/// longer one is cut with its length given.
pub const MAX_ECHO_CHARS: usize = 80;

/// `s` for an error message: cut to [`MAX_ECHO_CHARS`] characters with
/// its length given when longer, so that a multi-megabyte key does not
/// become a multi-megabyte message.
pub fn echo(s: &str) -> String {
    echo_n(s, MAX_ECHO_CHARS)
}

/// [`echo`] with a limit of `n` characters.
pub fn echo_n(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let head: String = s.chars().take(n).collect();
    format!("{head}... ({} bytes)", s.len())
}

/// Opens a file the tool takes as input: a regular file (not a device, a
/// FIFO or a directory) of at most `max` bytes. `what` says what the file
/// should be ("a TOML scenario"). The kind is looked at before the file is
/// opened (opening a FIFO for reading waits for a writer: a hang) and again
/// on the open file. Every reader of an input file goes through here
/// ([`read_text`], `oversub trace report`, `oversub derive`, a sweep's kept
/// runs); the error is one line naming what is allowed, without the file
/// name's prefix (the caller adds it, as every input error does).
pub fn open_regular(path: &Path, what: &str, max: u64) -> Result<std::fs::File, String> {
    let allowed = format!("allowed {what} as a regular file of at most {}", size(max));
    let kind_of = |meta: &std::fs::Metadata| {
        if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a device, FIFO or socket)"
        }
    };
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{}: {allowed}", kind_of(&meta)));
    }
    let f = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let meta = f.metadata().map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{}: {allowed}", kind_of(&meta)));
    }
    if meta.len() > max {
        return Err(format!("{} bytes is too large: {allowed}", meta.len()));
    }
    Ok(f)
}

/// `n` bytes as the limits are written (4 MiB, 64 GiB).
fn size(n: u64) -> String {
    match n {
        n if n >= 1 << 30 && n % (1 << 30) == 0 => format!("{} GiB", n >> 30),
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

/// Reads a text file the tool takes as input: a regular file (not a
/// device, a FIFO or a directory) of at most [`MAX_INPUT_BYTES`], UTF-8.
/// `what` says what the file should be ("a TOML scenario"). The error is
/// one line naming the file and what is allowed, without the file name's
/// prefix (the caller adds it, as every input error does).
pub fn read_text(path: &Path, what: &str) -> Result<String, String> {
    read_text_max(path, what, MAX_INPUT_BYTES)
}

/// [`read_text`] with a cap of `max` bytes (a recording's profile.json).
pub fn read_text_max(path: &Path, what: &str, max: u64) -> Result<String, String> {
    use std::io::Read;
    let allowed = format!("allowed {what} as a regular file of at most {}", size(max));
    let f = open_regular(path, what, max)?;
    let mut bytes = Vec::new();
    // The length can change under us: read one byte past the cap at most.
    f.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(format!("grew past {max} bytes: {allowed}"));
    }
    if bytes.starts_with(&[0xff, 0xfe]) || bytes.starts_with(&[0xfe, 0xff]) {
        return Err(format!(
            "UTF-16 text (byte-order mark {:02x} {:02x}): {allowed}, in UTF-8 (iconv -f UTF-16 -t UTF-8)",
            bytes[0], bytes[1]
        ));
    }
    let mut text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (byte {}): {allowed}, in UTF-8",
            e.utf8_error().valid_up_to()
        )
    })?;
    // A UTF-8 byte-order mark is no part of the text.
    if text.starts_with('\u{feff}') {
        text.drain(..3);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_directories_and_utf16_are_refused() {
        let e = read_text(Path::new("/dev/zero"), "a scenario").unwrap_err();
        assert!(e.starts_with("not a regular file"), "{e}");
        let e = read_text(Path::new("/"), "a scenario").unwrap_err();
        assert!(e.starts_with("a directory"), "{e}");
        let d = std::env::temp_dir().join(format!("oversub-limits-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("u16.toml");
        std::fs::write(&f, [0xff, 0xfe, b'a', 0]).unwrap();
        let e = read_text(&f, "a scenario").unwrap_err();
        assert!(e.starts_with("UTF-16"), "{e}");
        let f = d.join("big.toml");
        std::fs::write(&f, vec![b'#'; MAX_INPUT_BYTES as usize + 1]).unwrap();
        let e = read_text(&f, "a scenario").unwrap_err();
        assert!(e.contains("too large"), "{e}");
        let f = d.join("bom.toml");
        std::fs::write(&f, "\u{feff}a = 1").unwrap();
        assert_eq!(read_text(&f, "a scenario").unwrap(), "a = 1");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn long_echoes_are_cut() {
        let k = "k".repeat(5000);
        let e = echo(&k);
        assert!(e.len() < 120 && e.ends_with("(5000 bytes)"), "{e}");
        assert_eq!(echo("short"), "short");
    }
}
