//! Every input bounded (issue 28): the reproducers of the issue, by class,
//! against the release binary. Each ends with exit 2 and one line naming
//! the file and the field (or the documented success), in bounded memory;
//! none hangs, panics or succeeds silently.

use crate::common::{assert_full_disk_refused, assert_refused, s};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn oversub(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_oversub"))
        .args(args)
        .output()
        .expect("run oversub")
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("oversub-bounds-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `dir()/name` by rename, so that a test rewriting a shared file
/// (sweep_file's base.toml) never shows another one a truncated file.
fn file(name: &str, src: &str) -> PathBuf {
    let f = dir().join(name);
    let tmp = dir().join(format!(".{name}.{:?}", std::thread::current().id()));
    std::fs::write(&tmp, src).unwrap();
    std::fs::rename(&tmp, &f).unwrap();
    f
}

/// Exit 2, one line, holding every `must`.
fn refused(args: &[&str], must: &[&str]) -> String {
    assert_refused(args, &oversub(args), must)
}

const WHY: &str = "without advancing simulated time";

#[test]
fn loops_that_cannot_advance_simulated_time_are_refused_at_load() {
    for (tag, task) in [
        ("run0", r#"{"run": 0}"#),
        ("sleep0", r#"{"sleep": 0}"#),
        ("runtime0", r#"{"runtime": 0}"#),
        ("lock", r#"{"lock": "m", "unlock": "m"}"#),
        ("timer0", r#"{"timer": {"ref": "t", "period": 0}}"#),
        ("yield", r#"{"yield": 1}"#),
        ("barrier2", r#"{"instance": 2, "barrier": "b"}"#),
        ("signal", r#"{"lock": "m", "signal": "c", "unlock": "m"}"#),
    ] {
        let f = file(
            &format!("{tag}.json"),
            &format!(r#"{{"global": {{"duration": 1}}, "tasks": {{"a": {task}}}}}"#),
        );
        for cmd in ["check", "run"] {
            refused(&[cmd, s(&f)], &[s(&f), "thread a", "phase a", WHY]);
        }
    }
    // Two threads that only wake each other at one instant.
    let f = file(
        "sync.json",
        r#"{"global": {"duration": 1}, "tasks": {"a": {"instance": 2,
            "lock": "m", "sync": {"ref": "c", "mutex": "m"}, "unlock": "m"}}}"#,
    );
    refused(&["check", s(&f)], &[WHY]);
    // A finite loop of a billion zero-time steps is as bad.
    let f = file(
        "finite.json",
        r#"{"global": {"duration": 1}, "tasks": {"a": {"loop": 1, "phases": {
            "p": {"loop": 1000000000, "lock": "m", "unlock": "m"}}}}}"#,
    );
    refused(&["check", s(&f)], &["thread a phase p", "at one instant"]);
    // Inside a VM: the guest program's loops are held to the same rule.
    for (tag, task) in [
        ("vyield", r#"{"yield": 1}"#),
        ("vlock", r#"{"lock": "m", "unlock": "m"}"#),
    ] {
        file(
            &format!("{tag}.json"),
            &format!(r#"{{"global": {{"duration": 1}}, "tasks": {{"a": {task}}}}}"#),
        );
        let sc = file(
            &format!("{tag}.toml"),
            &format!("[host]\nduration = \"10ms\"\n[[vm]]\nname = \"v\"\nvcpus = 2\nprogram = \"{tag}.json\"\n"),
        );
        refused(&["run", s(&sc)], &["vm[0].program", "thread a", WHY]);
    }
    // A producer and a consumer that only move items at one instant.
    let f = file(
        "queue0.json",
        r#"{"global": {"duration": 1}, "tasks": {
            "p": {"put": {"queue": "q", "items": 1, "capacity": 4}},
            "c": {"get": {"queue": "q", "items": 1}}}}"#,
    );
    refused(&["check", s(&f)], &[WHY]);
    // What does advance time is accepted: a barrier whose users run, a
    // waiter woken by a thread that sleeps, a consumer fed by a producer
    // that runs.
    let f = file(
        "queue1.json",
        r#"{"global": {"duration": 1}, "tasks": {
            "p": {"run": 10, "put": {"queue": "q", "items": 1, "capacity": 4}},
            "c": {"get": {"queue": "q", "items": 1}}}}"#,
    );
    let out = oversub(&["run", s(&f), "--duration", "5ms"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f = file(
        "ok.json",
        r#"{"global": {"duration": 1}, "tasks": {
            "w": {"lock": "m", "wait": {"ref": "c", "mutex": "m"}, "unlock": "m"},
            "s": {"sleep": 100, "lock": "m", "signal": "c", "unlock": "m"},
            "b": {"instance": 2, "barrier": "b", "run": 10}}}"#,
    );
    let out = oversub(&["check", s(&f)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_file_read_is_capped_and_regular() {
    let d = dir();
    let zero = "/dev/zero";
    refused(&["run", zero], &[zero, "not a regular file", "allowed"]);
    refused(
        &["sweep", zero, "--out", s(&d.join("z"))],
        &[zero, "not a regular file"],
    );
    refused(
        &["reproduce", "--manifest", zero, "--out", s(&d.join("z"))],
        &[zero, "not a regular file"],
    );
    let sc = file(
        "vmzero.toml",
        "[[vm]]\nname = \"v\"\nvcpus = 2\nprogram = \"/dev/zero\"\n",
    );
    refused(
        &["check", s(&sc)],
        &["vm[0].program", zero, "not a regular file"],
    );
    let m = file(
        "pub.toml",
        "published = \"/dev/zero\"\n[[section]]\nname = \"a\"\ntitle = \"t\"\nsweep = \"x.toml\"\n\
         seeds = [1]\nduration = \"1ms\"\nquick_seeds = [1]\nquick_duration = \"1ms\"\n",
    );
    refused(
        &["reproduce", "--manifest", s(&m), "--out", s(&d.join("z"))],
        &[zero],
    );
    refused(&["check", s(&d)], &["a directory", "allowed"]);
    // A FIFO is refused before it is opened (opening it for reading waits
    // for a writer). A regression would hang: the child is killed after a
    // minute, a guard against a hang, not a measured time.
    let fifo = d.join("fifo.toml");
    let _ = std::fs::remove_file(&fifo);
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let vm_fifo = file(
        "vmfifo.toml",
        &format!(
            "[[vm]]\nname = \"v\"\nvcpus = 2\nprogram = {:?}\n",
            s(&fifo)
        ),
    );
    let z = d.join("zf");
    for args in [
        vec!["run", s(&fifo)],
        vec!["sweep", s(&fifo), "--out", s(&z)],
        vec!["reproduce", "--manifest", s(&fifo), "--out", s(&z)],
        vec!["check", s(&vm_fifo)],
    ] {
        let mut child = crate::common::oversub_cmd()
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut waited = 0;
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if waited > 600 {
                let _ = child.kill();
                panic!("{args:?}: hangs on a FIFO");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
            waited += 1;
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("not a regular file"), "{args:?}: {err}");
    }
    let big = dir().join("big.toml");
    std::fs::write(&big, vec![b'#'; (4 << 20) + 1]).unwrap();
    refused(&["check", s(&big)], &["too large", "4 MiB"]);
}

#[test]
fn rtapp_instances_count_against_the_one_task_cap() {
    let tasks: Vec<String> = (0..40)
        .map(|i| format!(r#""t{i}": {{"instance": 100000, "run": 10}}"#))
        .collect();
    let f = file(
        "inst.json",
        &format!(
            r#"{{"global": {{"duration": 1}}, "tasks": {{{}}}}}"#,
            tasks.join(",")
        ),
    );
    refused(
        &["check", s(&f)],
        &["tasks.t0.instance", "allowed at most 50000"],
    );
    let tasks: Vec<String> = (0..3)
        .map(|i| format!(r#""t{i}": {{"instance": 20000, "run": 10}}"#))
        .collect();
    let f = file(
        "inst2.json",
        &format!(
            r#"{{"global": {{"duration": 1}}, "tasks": {{{}}}}}"#,
            tasks.join(",")
        ),
    );
    refused(&["check", s(&f)], &["tasks.t2.instance", "60000"]);
}

fn sweep_file(name: &str, body: &str) -> PathBuf {
    let sc = file(
        "base.toml",
        "[host]\ncpus = 2\n[[task]]\nname = \"h\"\nkind = \"hog\"\ncount = 3\n",
    );
    file(
        name,
        &format!(
            "base = \"{}\"\nseeds = [1, 2]\nduration = \"2ms\"\n{body}",
            s(&sc)
        ),
    )
}

#[test]
fn sweeps_are_counted_before_they_are_built_and_conflicts_refused() {
    let out = dir().join("sw-out");
    let axes: String = (0..9)
        .map(|i| {
            let v: Vec<String> = (0..10)
                .map(|j| format!("{{ label = \"l{j}\", set = [] }}"))
                .collect();
            format!("[[axis]]\nname = \"a{i}\"\nvalues = [{}]\n", v.join(", "))
        })
        .collect();
    let f = sweep_file("nine.toml", &axes);
    refused(
        &["sweep", s(&f), "--out", s(&out)],
        &["2000000000 runs", "allowed at most 100000"],
    );
    for (tag, body, must) in [
        (
            "seedaxis",
            "[[axis]]\nkey = \"host.seed\"\nvalues = [1, 2]\n",
            "seeds",
        ),
        (
            "duraxis",
            "[[axis]]\nkey = \"host.duration\"\nvalues = [\"1ms\", \"2ms\"]\n",
            "duration",
        ),
        ("seedset", "set = [\"host.seed=3\"]\n", "seeds"),
        (
            "seedcol",
            "[[axis]]\nname = \"seed\"\nvalues = [{ label = \"a\", set = [] }]\n",
            "column",
        ),
        (
            "tputcol",
            "[[axis]]\nname = \"throughput\"\nvalues = [{ label = \"a\", set = [] }]\n",
            "column",
        ),
    ] {
        let f = sweep_file(&format!("{tag}.toml"), body);
        refused(&["sweep", s(&f), "--out", s(&out)], &[s(&f), must]);
    }
    let f = file("dupseed.toml", "base = \"base.toml\"\nseeds = [1, 1]\n");
    refused(
        &["sweep", s(&f), "--out", s(&out)],
        &["seeds", "listed twice"],
    );
}

#[test]
fn output_paths_are_checked_before_the_first_run() {
    let f = sweep_file(
        "outchk.toml",
        "[[axis]]\nkey = \"host.hz\"\nvalues = [250, 1000]\n",
    );
    refused(
        &["sweep", s(&f), "--out", "/dev/null"],
        &["/dev/null", "not a directory"],
    );
    let plain = file("plain", "x");
    refused(&["sweep", s(&f), "--out", s(&plain)], &["not a directory"]);
    // A second, different sweep into a directory the first wrote.
    let out = dir().join("two");
    let ok = oversub(&["sweep", s(&f), "--out", s(&out)]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let g = sweep_file(
        "other.toml",
        "[[axis]]\nkey = \"host.hz\"\nvalues = [100, 300]\n",
    );
    refused(
        &["sweep", s(&g), "--out", s(&out)],
        &["holds the results of"],
    );
    // The same sweep again is allowed (it rewrites its own files).
    assert!(oversub(&["sweep", s(&f), "--out", s(&out)])
        .status
        .success());
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.contains(".tmp-")),
        "no temporary left: {names:?}"
    );
    let sc = file(
        "tr.toml",
        "[host]\nduration = \"1ms\"\n[[task]]\nname = \"h\"\nkind = \"hog\"\n",
    );
    refused(
        &["run", s(&sc), "--trace", s(&dir().join("x.pftrace"))],
        &["unsupported trace format", ".json"],
    );
    refused(
        &["run", s(&sc), "--trace", "/nonexistent-dir/x.json"],
        &["/nonexistent-dir/x.json", "cannot write"],
    );
}

#[test]
fn manifest_section_names_are_safe_unique_and_present() {
    let sw = sweep_file("msw.toml", "");
    let pubf = file("published.toml", "[v1]\nsource = \"s\"\npolicy = \"p\"\nbaseline = \"b\"\nmetric = \"m\"\nrow = []\n[s390]\n");
    let sec = |name: &str, seeds: &str| {
        format!(
            "[[section]]\nname = \"{name}\"\ntitle = \"t\"\nsweep = \"{}\"\nseeds = {seeds}\nduration = \"1ms\"\nquick_seeds = {seeds}\nquick_duration = \"1ms\"\n",
            s(&sw)
        )
    };
    let out = dir().join("m-out");
    for (tag, body, must) in [
        ("up", sec("../../x", "[1]"), "section[0].name"),
        ("abs", sec("/tmp/x", "[1]"), "section[0].name"),
        ("empty", sec("", "[1]"), "section[0].name"),
        ("dup", sec("a", "[1]") + &sec("a", "[1]"), "used twice"),
        ("dupseed", sec("a", "[1, 1]"), "listed twice"),
        ("none", "section = []\n".to_string(), "section"),
    ] {
        let m = file(
            &format!("man-{tag}.toml"),
            &format!("published = \"{}\"\n{body}", s(&pubf)),
        );
        refused(
            &[
                "reproduce",
                "--manifest",
                s(&m),
                "--out",
                s(&out),
                "--quick",
            ],
            &[must],
        );
    }
    assert!(!Path::new("/tmp/x").join("results.csv").exists());
}

#[test]
fn a_full_disk_is_an_error_and_a_closed_pipe_a_quiet_141() {
    let sc = file(
        "full.toml",
        "[host]\nduration = \"1ms\"\n[[task]]\nname = \"h\"\nkind = \"hog\"\n",
    );
    for args in [
        vec!["run", s(&sc)],
        vec!["run", s(&sc), "--json"],
        vec!["check", s(&sc)],
    ] {
        assert_full_disk_refused(&args);
    }
    // A reader that has gone: the command ends quietly with 141 (as SIGPIPE
    // would), never a panic. The read end is closed before the command
    // starts, so its first write fails whatever the timing (dropping a
    // piped stdout after spawning raced the command's write into the pipe
    // buffer).
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_oversub"))
        .args(["run", s(&sc), "--json"])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{err}");
    assert!(!err.contains("panic"), "{err}");
}

#[test]
fn unclear_messages_are_clear() {
    let f = file("bigint.toml", "[host]\ncpus = 99999999999999999999\n");
    refused(&["check", s(&f)], &["host.cpus", "too large", "allowed"]);
    let f = file(
        "bigint.json",
        r#"{"global": {"duration": 1}, "tasks": {"a": {"run": 99999999999999999999}}}"#,
    );
    refused(
        &["check", s(&f)],
        &["tasks.a.run", "out of range", "allowed"],
    );
    let f = dir().join("u16.toml");
    std::fs::write(&f, [0xff, 0xfe, b'[', 0, b'h', 0]).unwrap();
    refused(&["check", s(&f)], &["UTF-16", "UTF-8"]);
    let json = r#"{"global": {"duration": 1}, "tasks": {"a": {"run": 10}}}"#;
    let f = file("rt.txt", json);
    refused(&["check", s(&f)], &["looks like JSON", "*.json"]);
    // The extension rule is case-blind.
    let f = file("rt.JSON", json);
    assert!(oversub(&["check", s(&f)]).status.success());
    file("prog.toml", "[host]\ncpus = 2\n");
    let f = file(
        "progtoml.toml",
        "[[vm]]\nname = \"v\"\nvcpus = 2\nprogram = \"prog.toml\"\n",
    );
    let e = refused(
        &["check", s(&f)],
        &["vm[0].program", "not JSON", "rt-app JSON"],
    );
    assert!(!e.contains(": : "), "{e}");
    let f = file(
        "hugekey.toml",
        &format!("[host]\n{} = 1\n", "k".repeat(1 << 20)),
    );
    let e = refused(&["check", s(&f)], &["bytes)"]);
    assert!(e.len() < 2000, "cut: {} bytes", e.len());
}

#[test]
fn vms_in_one_cgroup_do_not_share_vcpu_cgroups_silently() {
    let f = file(
        "sharedcg.toml",
        "[[vm]]\nname = \"a\"\ncgroup = \"/x\"\nworkload = \"phase:idle\"\n\
         [[vm]]\nname = \"b\"\ncgroup = \"/x\"\nworkload = \"phase:idle\"\n",
    );
    refused(&["check", s(&f)], &["vm[1].cgroup", "/x/vcpu0", "allowed"]);
    let f = file(
        "flatcg.toml",
        "[[vm]]\nname = \"a\"\ncgroup = \"/x\"\nlayout = \"flat\"\nworkload = \"phase:idle\"\n\
         [[vm]]\nname = \"b\"\ncgroup = \"/x\"\nlayout = \"flat\"\nworkload = \"phase:idle\"\n",
    );
    assert!(oversub(&["check", s(&f)]).status.success());
}

#[test]
fn a_trace_is_streamed_whole_and_valid() {
    let sc = file("trace.toml", "[host]\ncpus = 2\nduration = \"20ms\"\n[[task]]\nname = \"h\"\nkind = \"hog\"\ncount = 3\n");
    let t = dir().join("t.json");
    let out = oversub(&["run", s(&sc), "--trace", s(&t)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&t).unwrap()).unwrap();
    let evs = v["traceEvents"].as_array().unwrap();
    assert!(evs.iter().any(|e| e["name"] == "sched_switch"));
    assert!(evs.iter().any(|e| e["ph"] == "X"));
}

/// Flags the audit of every subcommand found loose: each bad value is exit
/// 2 with its field and what is allowed (clap's own errors add a usage
/// line).
#[test]
fn every_flag_names_what_is_allowed() {
    let root = std::path::Path::new(crate::common::ROOT);
    let sc = root.join("scenarios/yield/cg-pair.toml");
    let sc = s(&sc);
    let kvm = root.join("scenarios/kvm-lock-holder-preemption.toml");
    refused(
        &["record", "--duration", "-1s", "--", "true"],
        &["--duration", "-1s", "allowed 1ms ..= 600s"],
    );
    refused(
        &["check", s(&kvm), "--set", "vm.9.vcpus=2"],
        &["vm.9.vcpus=2", "index 9 is out of range", "allowed 0 ..= 0"],
    );
    refused(
        &["check", sc, "--set", "vm.0.vcpus=2"],
        &[
            "\"vm\" has 0 entries",
            "allowed an index of an entry the file has",
        ],
    );
    let out = oversub(&["conform", "--runs", "0", sc]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'0' for '--runs <RUNS>'") && err.contains("1..=1000"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

/// `oversub derive DIR`: a directory without a readable profile, a file
/// that is not one, and a profile with a broken field are each exit 2 with
/// one line naming the file and field; nothing is written.
#[test]
fn derive_refuses_what_is_not_a_profile() {
    let dir = std::env::temp_dir().join(format!("oversub-derive-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    refused(&["derive", d], &["profile.json", "cannot read"]);
    std::fs::write(dir.join("profile.json"), "{\"schema\": \"x\"}").unwrap();
    refused(
        &["derive", d],
        &["profile.json", "schema", "oversub-profile/1"],
    );
    std::fs::write(
        dir.join("profile.json"),
        r#"{"schema": "oversub-profile/1", "threads": [{"tid": 1, "tgid": 1, "comm": "a",
            "first_ns": 0, "last_ns": 5, "cpu_ns": "x"}]}"#,
    )
    .unwrap();
    refused(
        &["derive", d],
        &["threads[0].cpu_ns", "\"x\"", "allowed a time"],
    );
    assert!(!dir.join("workload.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Paths a command writes that are not a file it may replace: a directory
/// where a file goes, a FIFO (another program's reader), a socket or a
/// device. Each is refused before the first run (no run kept in the
/// sweep's store, nothing on stdout), never replaced in silence (a FIFO
/// was, exit 0) nor found only after the work (a directory was).
#[test]
fn output_files_that_are_not_files_are_refused_before_the_first_run() {
    let sc = file(
        "tgt.toml",
        "[host]\nduration = \"1ms\"\n[[task]]\nname = \"h\"\nkind = \"hog\"\n",
    );
    let f = sweep_file(
        "tgt-sweep.toml",
        "[[axis]]\nkey = \"host.hz\"\nvalues = [250, 1000]\n",
    );
    let mkfifo = |p: &Path| {
        let _ = std::fs::remove_file(p);
        assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
    };
    // --trace: a directory, a FIFO.
    let d = dir().join("tgt-dir.json");
    std::fs::create_dir_all(&d).unwrap();
    refused(
        &["run", s(&sc), "--trace", s(&d)],
        &[s(&d), "exists and is a directory", "allowed a new file"],
    );
    let fifo = dir().join("tgt-fifo.json");
    mkfifo(&fifo);
    refused(
        &["run", s(&sc), "--trace", s(&fifo)],
        &[s(&fifo), "not a regular file (a FIFO, socket or device)"],
    );
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    // A sweep's files: results.csv a directory, summary.md a FIFO.
    for (tag, leaf, must) in [
        ("d", "results.csv", "exists and is a directory"),
        ("f", "summary.md", "not a regular file"),
    ] {
        let out = dir().join(format!("tgt-out-{tag}"));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        if tag == "d" {
            std::fs::create_dir(out.join(leaf)).unwrap();
        } else {
            mkfifo(&out.join(leaf));
        }
        refused(&["sweep", s(&f), "--out", s(&out)], &[leaf, must]);
        assert!(!out.join(".oversub-runs.jsonl").exists(), "no run made");
        assert!(!out.join("results.jsonl").exists());
    }
    // A reproduction's section directory holding a FIFO.
    let sw = sweep_file("tgt-msw.toml", "");
    let pubf = file("tgt-published.toml", "[v1]\nsource = \"s\"\npolicy = \"p\"\nbaseline = \"b\"\nmetric = \"m\"\nrow = []\n[s390]\n");
    let m = file(
        "tgt-manifest.toml",
        &format!(
            "published = \"{}\"\n[[section]]\nname = \"a\"\ntitle = \"t\"\nsweep = \"{}\"\nseeds = [1]\nduration = \"1ms\"\nquick_seeds = [1]\nquick_duration = \"1ms\"\n",
            s(&pubf),
            s(&sw)
        ),
    );
    let out = dir().join("tgt-repro");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(out.join("a")).unwrap();
    mkfifo(&out.join("a").join("results.jsonl"));
    refused(
        &[
            "reproduce",
            "--quick",
            "--manifest",
            s(&m),
            "--out",
            s(&out),
        ],
        &["a/results.jsonl", "not a regular file"],
    );
}

/// The environment the tool honours is checked before any work, like a
/// flag: `RAYON_NUM_THREADS` (a huge value made the thread pool's start
/// wait, then panic; a malformed one was taken as unset) and
/// `SOURCE_DATE_EPOCH` (a malformed one was replaced by the clock, a huge
/// one gave a year beyond 9999). Empty is unset.
#[test]
fn environment_variables_are_checked_like_flags() {
    let sc = file(
        "env.toml",
        "[host]\nduration = \"1ms\"\n[[task]]\nname = \"h\"\nkind = \"hog\"\n",
    );
    let f = sweep_file("env-sweep.toml", "");
    let out = dir().join("env-out");
    let _ = std::fs::remove_dir_all(&out);
    let with = |var: &str, val: &str, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_oversub"))
            .args(args)
            .env(var, val)
            .output()
            .unwrap()
    };
    let sweep = ["sweep", s(&f), "--out", s(&out)];
    let run = ["run", s(&sc)];
    for (var, val, allowed) in [
        ("RAYON_NUM_THREADS", "100000", "0 ..= 1024"),
        ("RAYON_NUM_THREADS", "four", "0 ..= 1024"),
        ("RAYON_NUM_THREADS", " 4", "0 ..= 1024"),
        ("RAYON_NUM_THREADS", "-1", "0 ..= 1024"),
        (
            "SOURCE_DATE_EPOCH",
            "9223372036854775807",
            "0 ..= 253402300799",
        ),
        ("SOURCE_DATE_EPOCH", "1e9", "0 ..= 253402300799"),
        ("SOURCE_DATE_EPOCH", "-1", "0 ..= 253402300799"),
    ] {
        for args in [&sweep[..], &run[..]] {
            let o = with(var, val, args);
            assert_refused(
                args,
                &o,
                &[&format!("environment variable {var}={val:?}"), allowed],
            );
        }
        assert!(!out.exists(), "nothing made");
    }
    for (var, val) in [
        ("RAYON_NUM_THREADS", ""),
        ("RAYON_NUM_THREADS", "1"),
        ("SOURCE_DATE_EPOCH", ""),
    ] {
        let o = with(var, val, &sweep);
        assert!(
            o.status.success(),
            "{var}={val:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = with("SOURCE_DATE_EPOCH", "253402300799", &sweep);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let meta = std::fs::read_to_string(out.join("results.csv.meta.json")).unwrap();
    assert!(
        meta.contains("\"date\": \"9999-12-31T23:59:59Z\""),
        "{meta}"
    );
}

/// One command per output directory: two sweeps into one `--out` at the
/// same time both passed the check of its mark, shared the runs store and
/// overwrote each other's files (one exit 0 over the other's results). A
/// lock held by a live process (this test's) is refused; one whose process
/// is gone is taken over and removed at the end. Deterministic: no race is
/// staged, the lock file is.
#[test]
fn one_command_writes_an_output_directory_at_a_time() {
    let f = sweep_file("lock-sweep.toml", "");
    let out = dir().join("lock-out");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let lock = out.join(".oversub-lock");
    std::fs::write(&lock, format!("{}\n", std::process::id())).unwrap();
    refused(
        &["sweep", s(&f), "--out", s(&out)],
        &[
            &format!("process {} is writing it", std::process::id()),
            "allowed one command per directory at a time",
        ],
    );
    assert!(lock.exists(), "another's lock is left alone");
    assert!(!out.join(".oversub-sweep").exists() && !out.join("results.csv").exists());
    // A lock whose process is gone (no such pid) is taken over.
    std::fs::write(&lock, "4294967295\n").unwrap();
    let ok = oversub(&["sweep", s(&f), "--out", s(&out)]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(out.join("results.csv").exists() && !lock.exists());
}
