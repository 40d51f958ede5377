//! The determinism contract and the CLI's input-error contract.

use crate::common::{json_without_wall, oversub, scratch, ROOT};
#[test]
fn same_scenario_and_seed_give_identical_json() {
    let args = [
        "run",
        "scenarios/default.toml",
        "--json",
        "--duration",
        "500ms",
        "--seed",
        "7",
    ];
    let a = oversub(&args);
    let b = oversub(&args);
    assert!(a.status.success() && b.status.success());
    let (ja, jb) = (json_without_wall(&a.stdout), json_without_wall(&b.stdout));
    assert_eq!(
        serde_json::to_string(&ja).unwrap(),
        serde_json::to_string(&jb).unwrap(),
        "byte-identical apart from wall_ns"
    );
    // The contract's fields are present.
    for k in ["duration_ns", "seed", "events", "tasks", "cgroups", "cpus"] {
        assert!(ja.get(k).is_some(), "missing {k}");
    }
    let t = &ja["tasks"][0];
    for k in [
        "name",
        "cgroup",
        "cpu_ns",
        "wait_ns",
        "nr_switches",
        "nr_yields",
        "wakeup_latency_ns",
    ] {
        assert!(t.get(k).is_some(), "task field {k}");
    }
    for k in ["p50", "p99", "max"] {
        assert!(t["wakeup_latency_ns"].get(k).is_some());
    }
    assert_eq!(ja["seed"], 7);
    assert_eq!(ja["duration_ns"], 500_000_000u64);
}

fn bad(src: &str) -> String {
    let dir = scratch("cli");
    let f = dir.join(format!("bad-{}.toml", src.len()));
    std::fs::write(&f, src).unwrap();
    let out = oversub(&["check", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "exit status 2 for {src:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(f.to_str().unwrap()), "names the file: {err}");
    err
}

#[test]
fn bad_input_exits_2_with_one_line_naming_file_and_field() {
    let e = bad("[host]\ncpus = 2\nbogus = 1\n[[task]]\nname=\"a\"\nkind=\"hog\"\n");
    assert!(e.contains("bogus"), "{e}");
    let e = bad("[host]\nduration = \"5 parsecs\"\n[[task]]\nname=\"a\"\nkind=\"hog\"\n");
    assert!(e.contains("host.duration") && e.contains("allowed"), "{e}");
    let e = bad("[host]\ncpus = 2\n[[task]]\nname=\"a\"\nkind=\"hog\"\ncpus=[0,5]\n");
    assert!(e.contains("task[0].cpus") && e.contains("CPU 5"), "{e}");
    let e = bad("[[cgroup]]\npath=\"/a\"\nweight=0\n[[task]]\nname=\"a\"\nkind=\"hog\"\n");
    assert!(
        e.contains("cgroup[0].weight") && e.contains("1 ..= 10000"),
        "{e}"
    );
    let e = bad("[[cgroup]]\npath=\"/a/../a\"\n[[task]]\nname=\"a\"\nkind=\"hog\"\n");
    assert!(e.contains("cgroup[0].path"), "{e}");
    let e = bad("[[cgroup]]\npath=\"/a/b\"\n[[task]]\nname=\"a\"\nkind=\"hog\"\n");
    assert!(e.contains("parent"), "{e}");
    let e = bad("[[task]]\nname=\"a\"\nkind=\"hog\"\nperiod=\"1ms\"\n");
    assert!(
        e.contains("task[0].period") && e.contains("not a parameter"),
        "{e}"
    );
    let e = bad("[[task]]\nname=\"a\"\nkind=\"teleport\"\n");
    assert!(e.contains("task[0].kind") && e.contains("hog"), "{e}");
    let e = bad("[host.features]\nNOT_A_FEATURE = true\n[[task]]\nname=\"a\"\nkind=\"hog\"\n");
    assert!(
        e.contains("NOT_A_FEATURE") && e.contains("RUN_TO_PARITY"),
        "{e}"
    );
    let e = bad("[host]\nkernel=\"5.4\"\n[[task]]\nname=\"a\"\nkind=\"hog\"\n");
    assert!(e.contains("host.kernel") && e.contains("6.12.117"), "{e}");
    let e = bad("this is not toml");
    assert!(e.contains("line 1"), "{e}");
}

#[test]
fn check_accepts_every_history_scenario() {
    let dir = std::path::Path::new(ROOT).join("scenarios/history");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            let out = oversub(&["check", p.to_str().unwrap()]);
            assert!(
                out.status.success(),
                "{}: {}",
                p.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            n += 1;
        }
    }
    assert_eq!(n, 11);
}

#[test]
fn check_accepts_every_shipped_scenario() {
    for entry in std::fs::read_dir(std::path::Path::new(ROOT).join("scenarios")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            let out = oversub(&["check", p.to_str().unwrap()]);
            assert!(
                out.status.success(),
                "{}: {}",
                p.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
