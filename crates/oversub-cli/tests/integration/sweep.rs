//! `oversub sweep` and `oversub reproduce`: CSV columns, determinism of a
//! sweep over a fixed seed list (also across thread counts), the summary's
//! paired deltas, the reproduce outputs, bad input.

use crate::common::{oversub_cmd, s, ROOT};
use oversub::sweep::spec::SweepSpec;
use std::path::Path;

fn tiny() -> SweepSpec {
    SweepSpec::load(&Path::new(ROOT).join("crates/oversub-cli/tests/data/tiny-sweep.toml"))
        .expect("tiny sweep parses")
}

fn outputs(spec: &SweepSpec) -> (String, String) {
    let (_, rows) = oversub::sweep::run(spec, &|| {}).expect("sweep runs");
    let axes: Vec<String> = spec.axes.iter().map(|a| a.name.clone()).collect();
    (
        oversub::sweep::to_csv(&axes, &rows),
        oversub::sweep::to_jsonl(&rows),
    )
}

#[test]
fn csv_has_axes_seed_and_metric_columns() {
    let (csv, jsonl) = outputs(&tiny());
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        &head[..5],
        &["file", "workload", "vms", "host.yield.yield_to", "seed"]
    );
    for col in [
        "yields",
        "bystander_lost_pct",
        "cg./cg0.cpu_pct",
        "cg./cg0.entitled_pct",
        "task.A.cpu_pct",
        "task.C.entitled_pct",
    ] {
        assert!(head.contains(&col), "missing column {col}: {head:?}");
    }
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 4, "2 policies x 2 seeds");
    assert!(rows.iter().all(|r| r.len() == head.len()));
    // Axis-major, seeds inner.
    let pol_seed: Vec<(&str, &str)> = rows.iter().map(|r| (r[3], r[4])).collect();
    assert_eq!(
        pol_seed,
        [
            ("upstream", "1"),
            ("upstream", "2"),
            ("deboost-v1", "1"),
            ("deboost-v1", "2")
        ]
    );
    // One JSON object per run with the effective scenario.
    let objs: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objs.len(), 4);
    assert_eq!(
        objs[2]["scenario"]["host"]["yield"]["yield_to"],
        "deboost-v1"
    );
    assert_eq!(objs[3]["scenario"]["host"]["seed"], 2);
    assert_eq!(objs[0]["axes"]["host.yield.yield_to"], "upstream");
}

#[test]
fn entitled_share_is_weighted_max_min() {
    // cg-bystander: root -> /cg0 {A, C}, /cg1 {B} on one CPU: each cgroup is
    // entitled to half, A and C to a quarter each.
    let (csv, _) = outputs(&tiny());
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let get = |c: &str| -> f64 {
        row[head.iter().position(|h| *h == c).unwrap()]
            .parse()
            .unwrap()
    };
    assert_eq!(get("cg./cg0.entitled_pct"), 50.0);
    assert_eq!(get("cg./cg1.entitled_pct"), 50.0);
    assert_eq!(get("task.A.entitled_pct"), 25.0);
    assert_eq!(get("task.C.entitled_pct"), 25.0);
    assert_eq!(get("task.B.entitled_pct"), 50.0);
}

#[test]
fn sweep_is_deterministic_across_thread_counts() {
    let spec = tiny();
    let a = outputs(&spec);
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let b = one.install(|| outputs(&spec));
    assert_eq!(a, b);
}

/// `reproduce` runs its sections as one batch, longest runs first: each
/// sweep still gets exactly the rows it gets alone, in its expansion order.
#[test]
fn a_batch_of_sweeps_gives_each_sweep_its_own_rows() {
    let short = tiny();
    let mut long = tiny();
    // Longer runs and other seeds: the batch starts them first.
    long.duration = Some(oversub::engine::Nanos::from_ms(300));
    long.seeds = vec![3, 4, 5];
    let axes: Vec<String> = short.axes.iter().map(|a| a.name.clone()).collect();
    let text = |rows: &[oversub::sweep::Row]| {
        (
            oversub::sweep::to_csv(&axes, rows),
            oversub::sweep::to_jsonl(rows),
        )
    };
    let batch = oversub::sweep::run_many(&[&short, &long], &|| {}).expect("batch runs");
    assert_eq!(batch.len(), 2);
    assert_eq!(batch[0].1.len(), 4, "2 policies x 2 seeds");
    assert_eq!(batch[1].1.len(), 6, "2 policies x 3 seeds");
    assert_eq!(text(&batch[0].1), outputs(&short));
    assert_eq!(text(&batch[1].1), outputs(&long));
    assert_ne!(text(&batch[0].1), text(&batch[1].1));
}

#[test]
fn summary_pairs_by_seed_against_the_baseline() {
    let spec = tiny();
    let (pts, rows) = oversub::sweep::run(&spec, &|| {}).unwrap();
    let s = oversub::sweep::summary::summarise(&spec, &pts, &rows);
    assert_eq!(s.len(), 2);
    assert!(s[0].baseline.is_none(), "upstream is the baseline");
    assert_eq!(s[1].baseline, Some(0));
    // The delta of C's CPU is the per-seed difference of the rows.
    let col = |pol: &str, seed: u64| -> f64 {
        rows.iter()
            .find(|r| r.seed == seed && r.labels[0].1 == pol)
            .and_then(|r| r.metrics.iter().find(|(k, _)| k == "task.C.cpu_pct"))
            .unwrap()
            .1
    };
    let d: Vec<f64> = [1, 2]
        .iter()
        .map(|&sd| col("deboost-v1", sd) - col("upstream", sd))
        .collect();
    let cell = s[1]
        .cells
        .iter()
        .find(|c| c.metric == "task.C.cpu_pct")
        .unwrap();
    let delta = cell.delta.unwrap();
    assert!((delta.abs.mean - (d[0] + d[1]) / 2.0).abs() < 1e-9);
    assert_eq!(delta.abs.n, 2);
}

#[test]
fn sweep_cli_writes_files_and_rejects_bad_values() {
    let dir = std::env::temp_dir().join(format!("oversub-sweep-{}", std::process::id()));
    let out = oversub_cmd()
        .args([
            "sweep",
            "crates/oversub-cli/tests/data/tiny-sweep.toml",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in ["results.csv", "results.jsonl", "summary.csv", "summary.md"] {
        assert!(dir.join(f).exists(), "{f}");
    }
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("Host tasks"), "{md}");
    // An axis value the scenario rejects fails before any run, exit 2.
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "base = \"../x.toml\"\nseeds = [1]\n[[axis]]\nkey = \"host.yield.yield_to\"\nvalues = [\"nope\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("../x.toml"),
        std::fs::read_to_string(Path::new(ROOT).join("scenarios/yield/cg-pair.toml")).unwrap(),
    )
    .unwrap();
    let out = oversub_cmd()
        .args(["sweep"])
        .arg(&bad)
        .arg("--out")
        .arg(dir.join("bad"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("unknown policy \"nope\""), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two runs of the same sweep write the same bytes, except exactly the
/// provenance (date, machine, command): the sidecars, the first line of
/// `results.jsonl` and the `Provenance:` line of `summary.md`.
#[test]
fn sweep_outputs_are_identical_but_for_the_provenance() {
    let base = std::env::temp_dir().join(format!("oversub-det-{}", std::process::id()));
    let run = |d: &str| {
        let out = oversub_cmd()
            .current_dir(ROOT)
            .args([
                "sweep",
                "crates/oversub-cli/tests/data/tiny-sweep.toml",
                "--out",
            ])
            .arg(base.join(d))
            .env("SOURCE_DATE_EPOCH", if d == "a" { "0" } else { "86400" })
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .replace(&base.join(d).display().to_string(), "DIR")
    };
    let (ta, tb) = (run("a"), run("b"));
    let read = |d: &str, f: &str| std::fs::read_to_string(base.join(d).join(f)).unwrap();
    for f in ["results.csv", "summary.csv"] {
        assert_eq!(read("a", f), read("b", f), "{f}");
    }
    let skip_first = |s: String| s.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_ne!(
        read("a", "results.jsonl"),
        read("b", "results.jsonl"),
        "dates differ"
    );
    assert_eq!(
        skip_first(read("a", "results.jsonl")),
        skip_first(read("b", "results.jsonl"))
    );
    let no_prov = |s: String| {
        s.lines()
            .filter(|l| !l.starts_with("Provenance: "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        no_prov(read("a", "summary.md")),
        no_prov(read("b", "summary.md"))
    );
    assert!(read("a", "summary.csv.meta.json").contains("1970-01-01T00:00:00Z"));
    assert!(read("b", "results.csv.meta.json").contains("1970-01-02T00:00:00Z"));
    // The terminal gets a compact summary; the full tables are in files.
    assert_eq!(ta, tb);
    assert!(ta.lines().count() < 12, "{ta}");
    assert!(ta.contains("summary.md") && ta.contains("Holm"), "{ta}");
    let csv = read("a", "summary.csv");
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with(",modes,delta,delta_ci95,delta_pct,delta_pct_ci95,delta_pct_min,delta_pct_max,delta_pct_modes,p,p_holm,resolved"),
        "{csv}"
    );
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn version_names_the_commit() {
    let out = oversub_cmd().arg("--version").output().unwrap();
    let v = String::from_utf8_lossy(&out.stdout);
    assert!(v.starts_with("oversub 0.") && v.contains("(commit "), "{v}");
}

#[test]
fn reproduce_writes_csv_summary_and_report() {
    let dir = std::env::temp_dir().join(format!("oversub-repro-{}", std::process::id()));
    let out = oversub_cmd()
        .args([
            "reproduce",
            "--quick",
            "--manifest",
            "crates/oversub-cli/tests/data/tiny-reproduce.toml",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // The verdict comes first, in words, computed from the runs.
    assert!(
        text.starts_with("Verdict:\n* Simulation and publication"),
        "{text}"
    );
    assert!(text.contains("Holm"), "{text}");
    assert!(text.contains("dbench     2      14.4"), "{text}");
    assert!(text.contains("report.html"), "{text}");
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    for c in ["workload", "vms", "policy", "seed", "throughput"] {
        assert!(head.contains(&c), "{c} in {head:?}");
    }
    assert_eq!(csv.lines().count(), 1 + 4, "2 policies x 2 seeds");
    // The file axis's label beside the path, every column once, here and
    // in the section's own results.csv.
    assert_eq!(
        &head[..6],
        ["section", "file", "workload", "vms", "scenario", "policy"]
    );
    assert!(csv
        .lines()
        .nth(1)
        .unwrap()
        .contains("/vips-2x16.toml,vips,2,vips-2x16,upstream,"));
    unique_header(&csv);
    unique_header(&std::fs::read_to_string(dir.join("seeds/results.csv")).unwrap());
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("published v1"));
    // Phone width: the viewport is declared and plots scale down.
    assert!(html.contains("name=viewport") && html.contains("svg{max-width:100%"));
    // The verdict and the provenance precede every table and plot.
    let v = html.find("<h2>Verdict</h2>").expect("a verdict");
    let prov = html.find("class=prov>Made by oversub").expect("provenance");
    assert!(
        v < prov
            && prov < html.find("<table").unwrap()
            && prov < html.find("<svg width=\"").unwrap()
    );
    // A forest plot per policy of the table.
    assert!(html.contains("Gains at a glance") && html.contains("vs published (x)"));
    // Every output says how it was made.
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.lines()
            .nth(2)
            .unwrap()
            .starts_with("Provenance: oversub "),
        "{md}"
    );
    assert!(md.contains("## Verdict"));
    for f in [
        "results.csv.meta.json",
        "seeds/results.csv.meta.json",
        "seeds/summary.csv.meta.json",
    ] {
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap();
        let p = &m["provenance"];
        assert!(
            p["commit"].as_str().is_some_and(|c| !c.is_empty()),
            "{f}: {m}"
        );
        assert!(
            p["command"].as_str().unwrap().contains("reproduce --quick"),
            "{f}: {m}"
        );
        assert_eq!(p["kernel_presets"], serde_json::json!(["6.12.117"]), "{f}");
        assert!(p["machine"]["cores"].as_u64().unwrap() >= 1);
    }
    let first = std::fs::read_to_string(dir.join("seeds/results.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    assert!(first["provenance"]["date"].as_str().unwrap().ends_with('Z'));
    assert!(!html.contains("<script") && !html.contains("<link") && !html.contains("src="));
    assert!(dir.join("summary.md").exists());
    // Per-op latency: percentiles per run, the distribution in the JSONL,
    // its tail plotted per policy.
    for c in ["op_p50_us", "op_p99_us"] {
        assert!(head.contains(&c), "{c} in {head:?}");
    }
    assert!(html.contains("Per-op latency") && html.contains("fraction of ops slower"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The loops of a VM's program threads (`t*`, not their guards): what the
/// per-op histogram counts one sample for.
fn program_thread_loops(v: &oversub::report::VmReport) -> u64 {
    v.threads
        .iter()
        .filter(|t| t.name.starts_with('t'))
        .map(|t| t.phase_loops)
        .sum()
}

/// Every op of a VM is timed once, and a vCPU's ops never overlap: the
/// per-op histogram counts one sample per loop of the `ops` threads (each
/// loop weighs its thread's `ops_per_loop` in `ops`), and their sum fits
/// in vCPUs x duration; every program loop is timed once.
#[test]
fn per_op_latency_is_recorded_once_per_op() {
    let sc = oversub::scenario::Scenario::load_with(
        &Path::new(ROOT).join("scenarios/overcommit/pingpong-2x16.toml"),
        &[],
    )
    .unwrap();
    let r = oversub::run_scenario(&sc, None, Some(oversub::engine::Nanos(50_000_000)))
        .expect("the run finishes");
    for v in &r.vms {
        let h = &v.op_latency_ns;
        assert!(v.ops > 100, "{}: {} ops", v.name, v.ops);
        // pingpong (derived from recordings/pingpong) counts its 2
        // threads' loops, each weighted by its ops_per_loop (turns per
        // loop, ~1.7): the histogram counts one sample per loop of the
        // `ops` threads (t*, not their guards).
        let loops = program_thread_loops(v);
        assert_eq!(h.count(), loops, "{}", v.name);
        // A thread's loops never overlap, and 2 threads on 16 vCPUs, so
        // the sum fits in vCPUs x duration.
        let sum = h.mean() as f64 * h.count() as f64;
        assert!(
            sum <= f64::from(v.vcpus) * r.duration_ns as f64,
            "{}: {sum} ns of ops",
            v.name
        );
        assert!(h.quantile(0.5).unwrap() <= h.quantile(0.99).unwrap());
    }
    // With ops_per_loop (dedup: only t_reorder's loops weigh), ops are
    // weighted and the histogram still counts one sample per loop of the
    // `ops` threads.
    let sc = oversub::scenario::Scenario::load_with(
        &Path::new(ROOT).join("scenarios/overcommit/dedup-2x16.toml"),
        &[],
    )
    .unwrap();
    let r = oversub::run_scenario(&sc, None, Some(oversub::engine::Nanos(100_000_000)))
        .expect("the run finishes");
    for v in &r.vms {
        assert!(v.ops > 0, "{}: no ops", v.name);
        let loops = program_thread_loops(v);
        assert_eq!(v.op_latency_ns.count(), loops, "{}", v.name);
        assert_ne!(loops, v.ops, "{}", v.name);
    }
    let sc = oversub::scenario::Scenario::load_with(
        &Path::new(ROOT).join("scenarios/nested/2x2-mutex.toml"),
        &[],
    )
    .unwrap();
    let r = oversub::run_scenario(&sc, None, Some(oversub::engine::Nanos(200_000_000)))
        .expect("the run finishes");
    let threads: Vec<_> = r.vms.iter().flat_map(|v| v.threads.iter()).collect();
    assert!(threads.iter().any(|t| t.phase_loops > 0));
    for t in threads {
        assert_eq!(t.loop_ns.count(), t.phase_loops, "{}", t.name);
    }
    let m = oversub::sweep::metrics::op_latency(&r);
    assert!(m.count() > 0);
}

/// `oversub sweep` with `RAYON_NUM_THREADS=1` (one run at a time, so that
/// the hidden `--stop-after-runs N` keeps exactly N runs): (exit, stderr).
fn sweep_in(dir: &Path, spec: &Path, extra: &[&str]) -> (i32, String) {
    let out = oversub_cmd()
        .args(["sweep"])
        .arg(spec)
        .arg("--out")
        .arg(dir)
        .args(extra)
        .env("RAYON_NUM_THREADS", "1")
        .env("SOURCE_DATE_EPOCH", "0")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The kept runs' file: its lines.
fn kept(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join(".oversub-runs.jsonl"))
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

/// An interrupted sweep keeps the runs that finished; `--resume` runs only
/// the others and writes the same bytes an uninterrupted sweep writes (but
/// for the provenance: the command line differs), even after a kill cut the
/// last kept line short. The interruption is the hidden
/// `--stop-after-runs N`, which sets the same stop flag as Ctrl-C: no race.
#[test]
fn an_interrupted_sweep_keeps_its_runs_and_resume_finishes_it() {
    let base = crate::common::scratch("resume");
    let spec = Path::new(ROOT).join("crates/oversub-cli/tests/data/tiny-sweep.toml");
    let (a, b) = (base.join("a"), base.join("b"));
    assert_eq!(sweep_in(&a, &spec, &[]).0, 0);
    // Stopped after 1 of 4 runs: exit 130, one line, the run kept, no
    // results file.
    let (code, err) = sweep_in(&b, &spec, &["--stop-after-runs", "1"]);
    assert_eq!(code, 130, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("interrupted: 1 of 4 runs kept in") && err.contains("--resume"),
        "{err}"
    );
    assert_eq!(kept(&b).len(), 1 + 1, "the header and one run");
    assert!(!b.join("results.csv").exists());
    // The same sweep again without --resume would lose them: refused.
    let (code, err) = sweep_in(&b, &spec, &[]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("holds 1 of 4 finished runs") && err.contains("allowed --resume"),
        "{err}"
    );
    // Resumed and stopped again: the kept run is not run again (one more
    // finishes, two are kept).
    let (code, err) = sweep_in(&b, &spec, &["--resume", "--stop-after-runs", "1"]);
    assert_eq!(code, 130, "{err}");
    assert!(err.contains("2 of 4 runs kept"), "{err}");
    let lines = kept(&b);
    assert_eq!(lines.len(), 1 + 2);
    // A kill while a line was written leaves it cut short: it is dropped.
    let mut text = lines.join("\n") + "\n";
    text.push_str(&lines[2][..lines[2].len() / 2]);
    std::fs::write(b.join(".oversub-runs.jsonl"), text).unwrap();
    let (code, err) = sweep_in(&b, &spec, &["--resume"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !b.join(".oversub-runs.jsonl").exists(),
        "removed once whole"
    );
    let read = |d: &Path, f: &str| std::fs::read_to_string(d.join(f)).unwrap();
    for f in ["results.csv", "summary.csv"] {
        assert_eq!(read(&a, f), read(&b, f), "{f}");
    }
    let no_prov = |s: String| {
        s.lines()
            .filter(|l| !l.starts_with("Provenance: ") && !l.starts_with("{\"provenance\""))
            .collect::<Vec<_>>()
            .join("\n")
    };
    for f in ["results.jsonl", "summary.md"] {
        assert_eq!(no_prov(read(&a, f)), no_prov(read(&b, f)), "{f}");
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// Kept runs are reused only for the sweep, scenarios and binary that made
/// them: a changed scenario is refused in one line, exit 2.
#[test]
fn resume_refuses_runs_of_another_sweep() {
    let base = crate::common::scratch("resume-fp");
    let sc = base.join("sc.toml");
    std::fs::write(
        &sc,
        std::fs::read_to_string(Path::new(ROOT).join("scenarios/yield/cg-bystander.toml")).unwrap(),
    )
    .unwrap();
    let spec = base.join("sweep.toml");
    std::fs::write(
        &spec,
        "base = \"sc.toml\"\nseeds = [1, 2]\nduration = \"50ms\"\n\
         [[axis]]\nkey = \"host.yield.yield_to\"\nvalues = [\"upstream\", \"deboost-v1\"]\n",
    )
    .unwrap();
    let d = base.join("out");
    assert_eq!(sweep_in(&d, &spec, &["--stop-after-runs", "1"]).0, 130);
    // The scenario changed since: its kept run is not this sweep's.
    let text = std::fs::read_to_string(&sc).unwrap();
    std::fs::write(&sc, text.replace("cpus = 1", "cpus = 2")).unwrap();
    assert_ne!(std::fs::read_to_string(&sc).unwrap(), text, "the edit took");
    let (code, err) = sweep_in(&d, &spec, &["--resume"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(".oversub-runs.jsonl: fingerprint")
            && err.contains("allowed --resume with the binary, sweep file and scenarios"),
        "{err}"
    );
    assert_eq!(kept(&d).len(), 2, "nothing lost");
    // Back as it was, the run is reused.
    std::fs::write(&sc, text).unwrap();
    let (code, err) = sweep_in(&d, &spec, &["--resume"]);
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn reproduce_history_section_sets_published_beside_simulated() {
    let dir = std::env::temp_dir().join(format!("oversub-hist-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = oversub_cmd()
        .args([
            "reproduce",
            "--quick",
            "--manifest",
            "crates/oversub-cli/tests/data/tiny-history.toml",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(dir.join("history/summary.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    for c in [
        "commit",
        "change",
        "workload",
        "vms",
        "published_pct",
        "simulated_pct",
        "ci95",
    ] {
        assert!(head.contains(&c), "{c} in {head:?}");
    }
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 12, "{csv}");
    for r in &rows {
        let commit = r.split(',').next().unwrap();
        assert!(
            commit.is_empty()
                || (commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit())),
            "{r}"
        );
    }
    assert!(
        rows.iter()
            .any(|r| r.starts_with("858a43aae236,") && r.contains(",2,78.00,")),
        "{csv}"
    );
    // The small s390 case runs enough at 5 ms to have a simulated delta.
    let s390 = rows.iter().find(|r| r.contains("s390-pingpong")).unwrap();
    assert!(
        s390.contains(",901.50,") && !s390.contains(",901.50,,"),
        "{s390}"
    );
    // kernbench's rows (elapsed time of a build, from the VMs' useful vCPU
    // time) have a simulated delta and a baseline even where no object is
    // complete (the slots' first objects take seconds) ...
    for (vms, published) in [("1x64", ",28.00,"), ("2x64", ",7.00,")] {
        let kb = rows
            .iter()
            .find(|r| r.contains(&format!(",ple-2012-kernbench-{vms},")))
            .unwrap();
        assert!(kb.contains(",elapsed_time,"), "{kb}");
        let after = kb.split(published).nth(1).unwrap();
        assert!(!after.starts_with(','), "a simulated value: {kb}");
        assert!(!kb.ends_with("not simulated") && !kb.contains(",,"), "{kb}");
    }
    // ... run for their sweep's own duration (quick_sweep_durations), the
    // others for the section's.
    let durations = |sweep: &str| -> Vec<String> {
        let j =
            std::fs::read_to_string(dir.join("history").join(sweep).join("results.jsonl")).unwrap();
        let mut d: Vec<String> = j
            .split("\"duration\":\"")
            .skip(1)
            .map(|x| x.split('"').next().unwrap().to_string())
            .collect();
        d.dedup();
        d
    };
    assert_eq!(durations("ple-rework-2012-kernbench"), ["20000000ns"]);
    assert_eq!(durations("ple-rework-2012"), ["5000000ns"]);
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("# Section history") && md.contains("266e85a5ec91"));
    assert!(md.contains("(ple-rework-2012-kernbench 20ms)"), "{md}");
    // Each change's sweep outputs are kept.
    assert!(dir.join("history/pv-tlb-flush/summary.csv").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--adaptive MAX`: a bad cap or metric exits 2 with one line naming it;
/// a good one adds seeds after the sweep's own (the sweep's count per
/// round) to the unresolved point only, up to the cap, marks what is still
/// unresolved, and gives the same files twice.
#[test]
fn adaptive_seeds_are_bounded_marked_and_deterministic() {
    let spec = "crates/oversub-cli/tests/data/tiny-adaptive.toml";
    let base = crate::common::scratch("adaptive");
    for (bad, want) in [
        (
            vec!["--adaptive", "1"],
            "--adaptive 1: 1 is not allowed: allowed 2 ..= 100",
        ),
        (
            vec!["--adaptive", "101"],
            "--adaptive 101: 101 is not allowed: allowed 2 ..= 100",
        ),
        (
            vec!["--adaptive", "x"],
            "--adaptive \"x\": not an integer: allowed 2 ..= 100",
        ),
        (
            vec!["--adaptive", "4", "--adaptive-metric", "nope"],
            "--adaptive-metric \"nope\": unknown metric: allowed a metric of the results",
        ),
    ] {
        let out = oversub_cmd()
            .args(["sweep", spec, "--out"])
            .arg(base.join("bad"))
            .args(&bad)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with(want), "{bad:?}: {err}");
        assert!(!base.join("bad").join("results.csv").exists());
    }
    let run = |d: &str| {
        let out = oversub_cmd()
            .args(["sweep", spec, "--adaptive", "5", "--out"])
            .arg(base.join(d))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run("a");
    run("b");
    let read = |d: &str, f: &str| std::fs::read_to_string(base.join(d).join(f)).unwrap();
    for f in ["results.csv", "summary.csv"] {
        assert_eq!(read("a", f), read("b", f), "{f}");
    }
    // Seeds per point from results.csv (columns file, workload, vms,
    // policy, seed).
    let rows = read("a", "results.csv");
    let seeds = |pol: &str| -> Vec<u64> {
        rows.lines()
            .skip(1)
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|c| c[3] == pol)
            .map(|c| c[4].parse().unwrap())
            .collect()
    };
    let summary = read("a", "summary.csv");
    let resolved = |pol: &str| {
        summary
            .lines()
            .find(|l| l.starts_with(&format!("vips,2,{pol},throughput,")))
            .unwrap()
            .rsplit(',')
            .next()
            .unwrap()
            .to_string()
    };
    // seed-v1 gives the same throughput as upstream at every seed in 10 ms
    // (the policies have not acted yet): its paired delta is resolved at
    // once. upstream has no baseline: its own 95% CI, relative to its mean,
    // stays above 1% and it takes seeds 3, 4 (round 1) and 5 (the cap).
    assert_eq!(seeds("seed-v1"), vec![1, 2]);
    assert_eq!(resolved("seed-v1"), "yes");
    assert_eq!(seeds("upstream"), vec![1, 2, 3, 4, 5]);
    assert_eq!(resolved("upstream"), "unresolved");
    assert!(
        text.contains("2 to 5 seeds each (adaptive") && text.contains("1 unresolved"),
        "{text}"
    );
    assert!(read("a", "summary.md").contains("n=5 **unresolved**"));
    let _ = std::fs::remove_dir_all(&base);
}

/// `oversub reproduce` in full mode with a section's `max_seeds`: the
/// headline cells take adaptive seeds and the table says how many are still
/// unresolved.
#[test]
fn reproduce_marks_unresolved_headline_cells() {
    let dir = crate::common::scratch("repro-adaptive");
    let out = oversub_cmd()
        .args([
            "reproduce",
            "--manifest",
            "crates/oversub-cli/tests/data/tiny-reproduce.toml",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("seeds [1, 2] and more, up to 4 per cell (adaptive)"),
        "{text}"
    );
    assert!(
        text.contains("? = unresolved: 95% CI half-width above 1 point (adaptive seeds, 2 to 4 per cell (most used: 4)); 1 of 2 headline cells"),
        "{text}"
    );
    let rows = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert_eq!(rows.lines().count(), 1 + 4 + 2, "{rows}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reproduce_sets_a_flat_host_beside_the_6_12_117_host() {
    let dir = std::env::temp_dir().join(format!("oversub-repro-flat-{}", std::process::id()));
    let out = oversub_cmd()
        .args([
            "reproduce",
            "--quick",
            "--manifest",
            "crates/oversub-cli/tests/data/tiny-reproduce-flat.toml",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Flat host (sched/flat) beside the 6.12.117 host"),
        "{text}"
    );
    let row = |host: &str| {
        text.lines()
            .find(|l| l.starts_with("vips       2 ") && l.split_whitespace().nth(2) == Some(host))
            .unwrap_or_else(|| panic!("no {host} row in {text}"))
            .to_string()
    };
    // Both hosts measured: an upstream throughput and seed-v1's gain each;
    // the flat row also compares the two upstreams, paired by seed.
    let (h, f) = (row("6.12.117"), row("flat"));
    assert!(
        h.split_whitespace().nth(3).unwrap().parse::<f64>().unwrap() > 0.0,
        "{h}"
    );
    assert!(
        f.split_whitespace().nth(3).unwrap().parse::<f64>().unwrap() > 0.0,
        "{f}"
    );
    assert!(
        f.split_whitespace()
            .nth(4)
            .unwrap()
            .ends_with(|c: char| c.is_ascii_digit()),
        "{f}"
    );
    assert!(!text.lines().any(|l| l != l.trim_end()), "trailing blanks");
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("## On a flat host (sched/flat)"));
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.csv.meta.json")).unwrap())
            .unwrap();
    let presets = m["provenance"]["kernel_presets"].to_string();
    assert!(
        presets.contains("flat") && presets.contains("6.12.117"),
        "{presets}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reproduce_sets_the_regimes_side_by_side_beside_the_published_gains() {
    let dir = std::env::temp_dir().join(format!("oversub-repro-regimes-{}", std::process::id()));
    let out = oversub_cmd()
        .args([
            "reproduce",
            "--quick",
            "--manifest",
            "crates/oversub-cli/tests/data/tiny-reproduce-regimes.toml",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // A manifest without the seeds' evaluation says why it has no headline.
    assert!(
        text.contains("No headline table: the manifest has no section named \"seeds\""),
        "{text}"
    );
    let head = text
        .lines()
        .find(|l| l.starts_with("workload vms published policy"))
        .unwrap_or_else(|| panic!("no regimes header in {text}"));
    assert_eq!(
        head.split_whitespace().skip(4).collect::<Vec<_>>(),
        ["pv-on", "pv-off", "apicv", "avic", "ipiv"],
        "{head}"
    );
    // dbench 2 VMs: the published v1 gain and a simulated cell per regime.
    let row = text
        .lines()
        .find(|l| l.starts_with("dbench     2 ") && l.contains("seed-v1"))
        .unwrap_or_else(|| panic!("no dbench row in {text}"));
    // A cell is "+1.2±0.8" or "+0.0 det" (the same at every seed).
    let joined = row.replace(" det", "det");
    let f: Vec<&str> = joined.split_whitespace().collect();
    assert_eq!(f.len(), 4 + 5, "{row}");
    assert_eq!(f[2], "14.4", "{row}");
    assert!(f[4..].iter().all(|c| c.starts_with(['+', '-'])), "{row}");
    for what in ["in CI", "direction", "|gap| pp"] {
        assert!(
            text.lines()
                .any(|l| l.starts_with("seed-v1") && l.contains(what)),
            "{what}: {text}"
        );
    }
    // The verdict names a regime or says none fits: computed, never absent.
    let v = text
        .lines()
        .find(|l| l.starts_with("* Regimes (PV, APICv, AVIC, IPIv"))
        .unwrap_or_else(|| panic!("no regimes verdict in {text}"));
    assert!(
        v.contains("Per regime: pv-on 0/1 in CI") || v.contains("Per regime: pv-on 1/1 in CI"),
        "{v}"
    );
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("## Per virtualization regime (PV, APICv, AVIC, IPIv)"));
    assert!(md.contains("* Regimes (PV, APICv, AVIC, IPIv"));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("Per virtualization regime")
            && html.contains("Regimes (PV, APICv, AVIC, IPIv")
    );
    let csv = std::fs::read_to_string(dir.join("regimes/regimes.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("workload,vms,regime,policy,published_pct,simulated_pct,ci95,gap_pp,in_ci,direction")
    );
    let ipiv = csv
        .lines()
        .find(|l| l.starts_with("dbench,2,ipiv,seed-v1,14.400,"))
        .unwrap_or_else(|| panic!("{csv}"));
    assert_eq!(ipiv.split(',').count(), 10, "{ipiv}");
    // The regime column in the rows: 2 policies x 5 regimes x 2 seeds.
    let rows = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert!(rows.lines().next().unwrap().contains(",regime,"), "{rows}");
    assert_eq!(rows.lines().count(), 1 + 20);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_regime_axis_refuses_its_keys_set_elsewhere() {
    let dir = std::env::temp_dir().join(format!("oversub-regime-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        format!(
            "base = \"{ROOT}/scenarios/overcommit/dbench-2x16.toml\"\nseeds = [1]\nset = [\"kvm.ipiv=true\"]\n[[axis]]\nkey = \"regime\"\nvalues = [\"apicv\"]\n"
        ),
    )
    .unwrap();
    let out = oversub_cmd()
        .args(["sweep"])
        .arg(&bad)
        .arg("--out")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("set: kvm.ipiv=true: axis[0] \"regime\" sets kvm.ipiv for every run: allowed the regime or this key, not both"),
        "{err}"
    );
    assert!(!dir.join("out").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The names of a CSV header, each asserted to appear once.
fn unique_header(csv: &str) -> Vec<String> {
    let head: Vec<String> = csv
        .lines()
        .next()
        .unwrap()
        .split(',')
        .map(String::from)
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    for h in &head {
        assert!(seen.insert(h), "column {h:?} twice in {head:?}");
    }
    head
}

/// A `key = "file"` axis: every output keeps the scenario's path (the
/// `file` column) and the axis's label (the file's stem, column
/// `scenario`) under their own names, so that no name is a column twice
/// (it was: `file` the path, then `file` the label, and pandas read the
/// second as `file.1`); the label is what summary.csv, summary.md and the
/// baseline name. An axis named `file` is refused, and a baseline on `file`
/// says what the axis is called.
#[test]
fn a_file_axis_keeps_the_path_and_the_label_under_their_own_names() {
    let dir = crate::common::scratch("file-axis");
    let f = |n: u32| format!("{ROOT}/scenarios/overcommit/pingpong-{n}x16.toml");
    let spec = dir.join("s.toml");
    let axis = format!(
        "[[axis]]\nkey = \"file\"\nvalues = [\"{}\", \"{}\"]\n",
        f(1),
        f(2)
    );
    std::fs::write(
        &spec,
        format!("seeds = [1]\nduration = \"5ms\"\nbaseline = {{ scenario = \"pingpong-1x16\" }}\n{axis}"),
    )
    .unwrap();
    let out = dir.join("out");
    let (code, err) = sweep_in(&out, &spec, &[]);
    assert_eq!(code, 0, "{err}");
    let read = |n: &str| std::fs::read_to_string(out.join(n)).unwrap();
    let csv = read("results.csv");
    let head = unique_header(&csv);
    assert_eq!(&head[..5], ["file", "workload", "vms", "scenario", "seed"]);
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let cols: Vec<(&str, &str, &str)> = rows.iter().map(|r| (r[0], r[2], r[3])).collect();
    let (p1, p2) = (f(1), f(2));
    let want = [
        (p1.as_str(), "1", "pingpong-1x16"),
        (p2.as_str(), "2", "pingpong-2x16"),
    ];
    // The paths are cleaned lexically (`ROOT/../..` -> the workspace).
    let clean = |p: &str| {
        oversub::sweep::spec::clean(Path::new(p))
            .display()
            .to_string()
    };
    for ((file, vms, label), (wf, wv, wl)) in cols.iter().zip(want) {
        assert_eq!((*file, *vms, *label), (clean(wf).as_str(), wv, wl));
    }
    let sum = read("summary.csv");
    let shead = unique_header(&sum);
    assert_eq!(&shead[..4], ["workload", "vms", "scenario", "metric"]);
    assert!(
        sum.lines()
            .any(|l| l.starts_with("pingpong,2,pingpong-2x16,throughput,1,")),
        "{sum}"
    );
    let j: serde_json::Value =
        serde_json::from_str(read("results.jsonl").lines().nth(1).unwrap()).unwrap();
    assert_eq!(
        j["axes"],
        serde_json::json!({ "scenario": "pingpong-1x16" })
    );
    assert_eq!(j["file"].as_str().unwrap(), clean(&p1));
    assert!(read("summary.md").contains("| scenario=pingpong-2x16 |"));
    // An axis named like the path's column, by name or as the key's name.
    for (tag, src, must) in [
        (
            "named",
            format!("seeds = [1]\n{}", axis.replace("key = \"file\"", "key = \"file\"\nname = \"file\"")),
            "axis[0].name: \"file\" is a column of the results already",
        ),
        (
            "baseline",
            format!("seeds = [1]\nbaseline = {{ file = \"pingpong-1x16\" }}\n{axis}"),
            "baseline: \"file\" is not an axis: allowed scenario (the key = \"file\" axis is named \"scenario\")",
        ),
    ] {
        let bad = dir.join(format!("{tag}.toml"));
        std::fs::write(&bad, src).unwrap();
        let o = dir.join(format!("out-{tag}"));
        let args = ["sweep", s(&bad), "--out", s(&o)];
        crate::common::assert_refused(&args, &crate::common::oversub(&args), &[must]);
        assert!(!o.join("results.csv").exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
