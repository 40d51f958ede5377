//! Hostile input against what was added after issue 28 (`oversub derive`,
//! `record`, `trace report`, `completions`, the help, the reproduction's
//! self-contained sections, `sweep --adaptive-metric`, a sweep's kept
//! runs): every case the attack found is exit 2 and one line naming the
//! file, the field and what is allowed, before any run, in bounded memory;
//! none hangs, panics or succeeds with nothing written.

use crate::common::{assert_full_disk_refused, assert_refused, s, ROOT};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn oversub(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_oversub"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run oversub")
}

/// A fresh directory for one test.
fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("oversub-new-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn mkfifo(p: &Path) {
    let _ = std::fs::remove_file(p);
    assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
}

/// Exit 2, one line on stderr holding every `must`, nothing on stdout.
fn refused(args: &[&str], must: &[&str]) -> String {
    assert_refused(args, &oversub(args), must)
}

/// A copy of a committed recording (profile.json, ops.txt) in `d`.
fn recording(d: &Path) {
    let r = Path::new(ROOT).join("recordings/ebizzy");
    for f in ["profile.json", "ops.txt"] {
        std::fs::copy(r.join(f), d.join(f)).unwrap();
    }
}

/// derive: a FIFO or a device in place of profile.json or ops.txt was a
/// hang or a read until memory ran out; an unreadable ops.txt was taken as
/// no count; --ops 0 and a profile with no thread that ran were accepted.
#[test]
fn derive_reads_only_regular_files_and_refuses_what_derives_nothing() {
    let d = dir("derive");
    recording(&d);
    let p = d.join("profile.json");
    let saved = std::fs::read(&p).unwrap();
    mkfifo(&p);
    refused(&["derive", s(&d)], &["profile.json", "FIFO", "allowed"]);
    std::fs::remove_file(&p).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &p).unwrap();
    refused(&["derive", s(&d)], &["profile.json", "not a regular file"]);
    std::fs::remove_file(&p).unwrap();
    // Without the recording's own count, ops.txt is read.
    let mut v: serde_json::Value = serde_json::from_slice(&saved).unwrap();
    v["provenance"].as_object_mut().unwrap().remove("ops");
    std::fs::write(&p, v.to_string()).unwrap();
    let o = d.join("ops.txt");
    std::fs::remove_file(&o).unwrap();
    mkfifo(&o);
    refused(&["derive", s(&d)], &["ops.txt", "FIFO"]);
    std::fs::remove_file(&o).unwrap();
    std::fs::create_dir(&o).unwrap();
    refused(&["derive", s(&d)], &["ops.txt", "a directory"]);
    std::fs::remove_dir(&o).unwrap();
    std::fs::write(&o, b"program=x ops=5\xff\n").unwrap();
    refused(&["derive", s(&d)], &["ops.txt", "not UTF-8"]);
    std::fs::write(&o, "program=x unit=ops ops=0 seconds=1\n").unwrap();
    refused(&["derive", s(&d)], &["ops.txt", "ops=N", "N >= 1"]);
    std::fs::remove_file(&o).unwrap();
    let out = oversub(&["derive", s(&d), "--ops", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'0' for '--ops <OPS>'"));
    // No thread with CPU time: nothing to derive (the loader would refuse
    // the program of no task).
    for t in v["threads"].as_array_mut().unwrap() {
        t["cpu_ns"] = 0.into();
    }
    v["threads_folded"] = serde_json::json!([]);
    std::fs::write(&p, v.to_string()).unwrap();
    refused(&["derive", s(&d)], &["profile.json", "none with CPU time"]);
    assert!(!d.join("workload.json").exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// derive: numbers a recording cannot hold overflowed the derivation's
/// sums silently; each is refused naming its field.
#[test]
fn derive_bounds_every_number_of_a_profile() {
    let d = dir("derive-num");
    recording(&d);
    let p = d.join("profile.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    type Edit = fn(&mut serde_json::Value);
    let cases: [(&str, Edit, &str); 4] = [
        (
            "threads[0].cpu_ns",
            |v| v["threads"][0]["cpu_ns"] = u64::MAX.into(),
            "allowed a time 0 ..= 2^50 ns",
        ),
        (
            "threads[0].tgid",
            |v| v["threads"][0]["tgid"] = (1u64 << 40).into(),
            "allowed an id",
        ),
        (
            "threads[1].wakes[0].count",
            |v| v["threads"][1]["wakes"][0]["count"] = u64::MAX.into(),
            "allowed a count 0 ..= 2^36",
        ),
        (
            "threads[0].syscalls.sched_yield.count",
            |v| v["threads"][0]["syscalls"]["sched_yield"] = serde_json::json!({"count": u64::MAX}),
            "allowed a count",
        ),
    ];
    for (field, edit, allowed) in cases {
        let mut w = v.clone();
        edit(&mut w);
        std::fs::write(&p, w.to_string()).unwrap();
        refused(&["derive", s(&d)], &[field, allowed]);
    }
    assert!(!d.join("workload.json").exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// trace report: a FIFO hung, a device was read.
#[test]
fn trace_report_reads_only_regular_files() {
    let d = dir("trace-report");
    let f = d.join("t.json");
    mkfifo(&f);
    refused(&["trace", "report", s(&f)], &["t.json", "FIFO", "allowed"]);
    refused(
        &["trace", "report", "/dev/zero"],
        &["/dev/zero", "not a regular file"],
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `completions` to a full disk panicked (exit 101); `--help` and
/// `--version` to a full disk exited 0 with nothing written.
#[test]
fn help_version_and_completions_check_their_writes() {
    for args in [
        vec!["completions", "bash"],
        vec!["--help"],
        vec!["--version"],
        vec!["run", "--help"],
    ] {
        assert_full_disk_refused(&args);
    }
    let out = oversub(&["completions", "bash"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("_oversub()"));
    // The man pages: a device is not a directory (was "File exists").
    refused(&["__man", "/dev/full"], &["/dev/full", "not a directory"]);
}

fn manifest(d: &Path, name: &str, body: &str) -> PathBuf {
    let sweep = d.join("s.toml");
    std::fs::write(
        &sweep,
        format!(
            "base = \"{}\"\nseeds = [1]\n[[axis]]\nkey = \"host.hz\"\nvalues = [250, 1000]\n",
            s(&d.join("h.toml"))
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("h.toml"),
        "[host]\ncpus = 2\nduration = \"1ms\"\n[[task]]\nname = \"a\"\nkind = \"hog\"\n",
    )
    .unwrap();
    let published = Path::new(ROOT).join("data/published.toml");
    let f = d.join(name);
    std::fs::write(&f, format!("published = \"{}\"\n{body}", s(&published))).unwrap();
    f
}

const SECTION: &str = "[[section]]\nname = \"a\"\ntitle = \"t\"\nsweep = \"s.toml\"\nseeds = [1]\n\
                       duration = \"1ms\"\nquick_seeds = [1]\nquick_duration = \"1ms\"\n";

/// The reproduction's self-contained sections were checked only when they
/// ran, after every sweep; duplicate seeds there were accepted; the
/// manifest's seeds escaped the run cap; a section's duration out of range
/// was blamed on the scenario; history sweeps with one file name shared a
/// directory; a history sweep's own duration names no sweep or is out of
/// range (both modes are checked in either); an adaptive cap of the history
/// section out of range or naming no sweep. Each is now refused, naming the manifest, before any run
/// (the --out directory is not even created).
#[test]
fn a_manifest_is_checked_whole_before_the_first_run() {
    let d = dir("manifest");
    let eev = "[eevdf_latency]\nscenario = \"h.toml\"\nseeds = [1]\nduration = \"1ms\"\n\
               quick_seeds = [1]\nquick_duration = \"1ms\"\nreal_runs = 0\nreal_seconds = 1\n\
               quick_real_runs = 1\nquick_real_seconds = 1\n";
    let yt = "[yield_throttle]\nscenario = \"h.toml\"\nprogram = \"/dev/zero\"\nseeds = [1]\n\
              duration = \"1ms\"\nquick_seeds = [1, 1]\nquick_duration = \"1ms\"\n\
              real_seconds = 1\nquick_real_seconds = 1\n";
    let ytdev = yt.replace("[1, 1]", "[1]");
    std::fs::create_dir_all(d.join("x")).unwrap();
    std::fs::create_dir_all(d.join("y")).unwrap();
    let hist =
        "[history]\nsweeps = [\"x/c.toml\", \"y/c.toml\"]\nseeds = [1]\nduration = \"1ms\"\n\
                quick_seeds = [1]\nquick_duration = \"1ms\"\n";
    let seeds: Vec<String> = (1..=100_001).map(|i| i.to_string()).collect();
    let many = SECTION.replacen("seeds = [1]", &format!("seeds = [{}]", seeds.join(", ")), 1);
    let cases: Vec<(String, Vec<&str>, &[&str])> = vec![
        (
            format!("{SECTION}{eev}"),
            vec![],
            &["eevdf_latency.real_runs", "0", "allowed 1 ..= 20"],
        ),
        (
            format!("{SECTION}{yt}"),
            vec!["--quick"],
            &["yield_throttle.quick_seeds", "twice"],
        ),
        (
            format!("{SECTION}{ytdev}"),
            vec![],
            &["yield_throttle.program", "/dev/zero", "not a regular file"],
        ),
        (
            hist.to_string(),
            vec![],
            &["history.sweeps[1]", "y/c.toml", "each file name once"],
        ),
        (
            SECTION.replacen("name = \"a\"", "name = \"history\"", 1)
                + hist.replacen(", \"y/c.toml\"", "", 1).as_str(),
            vec![],
            &["section history", "[history]", "allowed another name"],
        ),
        (
            hist.replacen(", \"y/c.toml\"", "", 1) + "[history.sweep_durations]\nd = \"1s\"\n",
            vec![],
            &["history.sweep_durations.d", "not a [history] sweep", "(c)"],
        ),
        (
            hist.replacen(", \"y/c.toml\"", "", 1)
                + "[history.quick_sweep_durations]\nc = \"100000s\"\n",
            vec![],
            &["history.quick_sweep_durations.c", "100000s", "3600"],
        ),
        // The adaptive caps: at least the section's seeds and 2, at most
        // 100, a sweep's own naming one of the sweeps; checked in --quick
        // too (a manifest is right for both modes).
        (
            hist.replacen(", \"y/c.toml\"", "", 1) + "max_seeds = 1\n",
            vec!["--quick"],
            &["history.max_seeds", "1 is not allowed", "allowed 2 ..= 100"],
        ),
        (
            hist.replacen(", \"y/c.toml\"", "", 1) + "max_seeds = 101\n",
            vec![],
            &[
                "history.max_seeds",
                "101 is not allowed",
                "allowed 2 ..= 100",
            ],
        ),
        (
            hist.replacen(", \"y/c.toml\"", "", 1)
                + "max_seeds = 10\n[history.sweep_max_seeds]\nc = 0\n",
            vec![],
            &[
                "history.sweep_max_seeds.c",
                "0 is not allowed",
                "allowed 2 ..= 100",
            ],
        ),
        (
            hist.replacen(", \"y/c.toml\"", "", 1) + "[history.sweep_max_seeds]\nd = 5\n",
            vec![],
            &["history.sweep_max_seeds.d", "not a [history] sweep", "(c)"],
        ),
        (
            SECTION.replacen("duration = \"1ms\"", "duration = \"100000s\"", 1),
            vec![],
            &["section a: duration", "100000s", "3600"],
        ),
        (many, vec![], &["200002 runs", "allowed at most 100000"]),
    ];
    for (i, (body, extra, must)) in cases.into_iter().enumerate() {
        let f = manifest(&d, &format!("m{i}.toml"), &body);
        // The sweeps of x/ and y/ (written by manifest()) for [history].
        for sub in ["x", "y"] {
            std::fs::copy(d.join("s.toml"), d.join(sub).join("c.toml")).unwrap();
        }
        let out = d.join(format!("out{i}"));
        let mut args = vec!["reproduce", "--manifest", s(&f), "--out", s(&out)];
        args.extend(extra);
        let e = refused(&args, must);
        assert!(e.contains(&format!("m{i}.toml")), "names the manifest: {e}");
        assert!(!out.exists(), "case {i}: refused before --out was made");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `sweep --adaptive-metric` that no run has: refused before any run (it
/// was found after the sweep's first round).
#[test]
fn an_adaptive_metric_no_run_has_is_refused_before_the_first_run() {
    let d = dir("adaptive");
    std::fs::write(
        d.join("h.toml"),
        "[host]\ncpus = 2\nduration = \"1ms\"\n[[task]]\nname = \"a\"\nkind = \"hog\"\n",
    )
    .unwrap();
    let sw = d.join("s.toml");
    std::fs::write(
        &sw,
        "base = \"h.toml\"\nseeds = [1, 2]\n[[axis]]\nkey = \"host.hz\"\nvalues = [250, 1000]\n",
    )
    .unwrap();
    let out = d.join("out");
    refused(
        &["sweep", s(&sw), "--out", s(&out), "--adaptive", "3"],
        &["--adaptive-metric throughput", "no run of the sweep has it"],
    );
    assert!(!out.join(".oversub-runs.jsonl").exists());
    // A metric the host-only runs have is taken.
    let out = oversub(&[
        "sweep",
        s(&sw),
        "--out",
        s(&d.join("ok")),
        "--adaptive",
        "3",
        "--adaptive-metric",
        "task.a.cpu_pct",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A FIFO in place of a sweep's kept runs or of its owner mark hung the
/// sweep (ignoring SIGTERM, blocked in open).
#[test]
fn a_sweeps_own_files_are_read_through_the_regular_file_check() {
    let d = dir("sweep-own");
    std::fs::write(
        d.join("h.toml"),
        "[host]\ncpus = 2\nduration = \"1ms\"\n[[task]]\nname = \"a\"\nkind = \"hog\"\n",
    )
    .unwrap();
    let sw = d.join("s.toml");
    std::fs::write(&sw, "base = \"h.toml\"\nseeds = [1]\n").unwrap();
    let out = d.join("o1");
    std::fs::create_dir_all(&out).unwrap();
    mkfifo(&out.join(".oversub-sweep"));
    refused(
        &["sweep", s(&sw), "--out", s(&out)],
        &[".oversub-sweep", "FIFO"],
    );
    let out = d.join("o2");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join(".oversub-sweep"), format!("{}\n", s(&sw))).unwrap();
    mkfifo(&out.join(".oversub-runs.jsonl"));
    refused(
        &["sweep", s(&sw), "--out", s(&out), "--resume"],
        &[".oversub-runs.jsonl", "FIFO"],
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// record: a program that fails on its own is refused (it was recorded);
/// a program that writes without end is recorded in bounded memory with
/// the end of its output (it was all kept, in memory and in /tmp). Needs
/// tracefs as root; without it, says so and checks the refusal only.
#[test]
fn record_refuses_a_failed_program_and_bounds_its_output() {
    let d = dir("record");
    let out = d.join("r");
    let probe = oversub(&["record", "--out", s(&out), "--duration", "1s", "--", "true"]);
    if !probe.status.success() {
        let err = String::from_utf8_lossy(&probe.stderr);
        assert_eq!(probe.status.code(), Some(2), "{err}");
        eprintln!(
            "record: tracing unavailable here ({}); not recorded",
            err.trim()
        );
        return;
    }
    let _ = std::fs::remove_dir_all(&out);
    refused(
        &[
            "record",
            "--out",
            s(&out),
            "--duration",
            "2s",
            "--",
            "sh",
            "-c",
            "echo boom; exit 3",
        ],
        &["exit status 3", "boom", "nothing written"],
    );
    assert!(!out.join("profile.json").exists());
    let o = oversub(&["record", "--out", s(&out), "--duration", "1s", "--", "yes"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The kept end of the output (1 MiB) and the report, not all of it.
    assert!(
        o.stdout.len() < (2 << 20),
        "{} bytes echoed",
        o.stdout.len()
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("are not shown"),
        "{}",
        &text[..200.min(text.len())]
    );
    assert!(out.join("profile.json").exists() && out.join("workload.json").exists());
    // Again into the recording: refused before the run, the recording as
    // it was; with --force, replaced whole (the old directory's other
    // files go with it).
    let before = std::fs::read(out.join("profile.json")).unwrap();
    std::fs::write(out.join("notes"), "mine").unwrap();
    refused(
        &["record", "--out", s(&out), "--duration", "1s", "--", "true"],
        &[
            "exists and holds guest.json, notes, profile.json (and 1 more)",
            "--force",
        ],
    );
    assert_eq!(std::fs::read(out.join("profile.json")).unwrap(), before);
    let o = oversub(&[
        "record",
        "--out",
        s(&out),
        "--duration",
        "1s",
        "--force",
        "--",
        "true",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!out.join("notes").exists(), "replaced whole");
    assert!(out.join("profile.json").exists() && out.join("guest.json").exists());
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        1,
        "no staging directory left beside --out"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// record --out: a directory that holds anything is refused before the
/// program runs or tracing is touched (so without root too), naming what
/// it holds and --force; it is left as it was, with nothing beside it.
#[test]
fn record_refuses_an_out_directory_that_holds_files() {
    let d = dir("record-out");
    let out = d.join("rec");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("profile.json"), "old").unwrap();
    let mark = d.join("ran");
    let touch = format!("touch {}", s(&mark));
    refused(
        &["record", "--out", s(&out), "--", "sh", "-c", &touch],
        &[
            s(&out),
            "exists and holds profile.json",
            "allowed a new or empty directory, or --force",
        ],
    );
    assert!(!mark.exists(), "the program did not run");
    assert_eq!(
        std::fs::read_to_string(out.join("profile.json")).unwrap(),
        "old"
    );
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        1,
        "nothing beside --out"
    );
    // A file in its place is refused, --force or not.
    let f = d.join("f");
    std::fs::write(&f, "").unwrap();
    for force in [&[][..], &["--force"][..]] {
        let mut a = vec!["record", "--out", s(&f)];
        a.extend_from_slice(force);
        a.extend_from_slice(&["--", "true"]);
        refused(&a, &["exists and is not a directory"]);
    }
    let _ = std::fs::remove_dir_all(&d);
}
