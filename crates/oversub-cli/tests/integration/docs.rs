//! Docs that run: the examples of `README.md` and `docs/*.md` are executed
//! and compared with what the docs show.
//!
//! The conventions (also in `docs/usage.md`, "Docs that run"):
//!
//! * Every fenced block has a language in its info string. A command shown
//!   with its output is a `console` block: lines starting with `$ ` are
//!   commands (a trailing `\` continues one), the lines after one are its
//!   output (stdout and stderr together).
//! * A `console` block is run: each command with `bash -o pipefail -c` in
//!   the workspace root, with the built `oversub` and `oversub-bench` first
//!   on `PATH`, and its output must match. `status=N` in the info string
//!   expects exit status N (else 0). In the shown output a line `...`
//!   matches any number of lines and `[..]` any text within a line;
//!   volatile fields (wall time, its rate) are normalised on both sides.
//! * A `console` block too slow for every `make test` is marked `slow`
//!   (```` ```console slow ````): it runs only with `OVERSUB_DOCS_SLOW=1`
//!   (`make test-docs-slow`). One that cannot run here at all says why:
//!   ```` ```console norun: REASON ```` (needs root and the real kernel,
//!   measures the machine). The test counts and prints both.
//! * A path in backticks under one of the workspace's top directories
//!   (`crates/`, `scripts/`, `docs/`, ...) must exist.

use crate::common::{OVERSUB, ROOT};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One fenced block.
struct Block {
    file: String,
    line: usize,
    info: String,
    body: Vec<String>,
}

/// The documentation files: README.md and docs/*.md, sorted.
fn doc_files() -> Vec<PathBuf> {
    let mut v = vec![Path::new(ROOT).join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    v.extend(docs);
    v
}

fn rel(p: &Path) -> String {
    p.strip_prefix(ROOT).unwrap_or(p).display().to_string()
}

fn blocks(path: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    let mut open: Option<(String, Block)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let fence: String = t.chars().take_while(|&c| c == '`').collect();
        match open.take() {
            None if fence.len() >= 3 => {
                open = Some((
                    fence.clone(),
                    Block {
                        file: rel(path),
                        line: i + 1,
                        info: t[fence.len()..].trim().to_string(),
                        body: Vec::new(),
                    },
                ))
            }
            None => {}
            Some((f, b)) if fence == f && t.trim() == f => out.push(b),
            Some((f, mut b)) => {
                b.body.push(line.to_string());
                open = Some((f, b));
            }
        }
    }
    out
}

/// Text between `start` and the next `end` on a line, replaced by `[..]`,
/// on both sides of a comparison: fields that differ from run to run.
const VOLATILE: &[(&str, &str)] = &[
    // `oversub run`'s header: "wall 0.012s (7.6 Mevents/s)".
    ("wall ", " Mevents/s)"),
    // `oversub sweep` / `reproduce`: "708 runs in 13.4 s wall".
    (" runs in ", " s wall"),
];

fn normalise(line: &str) -> String {
    let mut s = line.to_string();
    for (a, b) in VOLATILE {
        if let Some(i) = s.find(a) {
            let from = i + a.len();
            if let Some(j) = s[from..].find(b) {
                s.replace_range(from..from + j, "[..]");
            }
        }
    }
    s.trim_end().to_string()
}

/// Does `got` match the shown line `want` (`[..]`: any text)?
fn line_matches(want: &str, got: &str) -> bool {
    let parts: Vec<&str> = want.split("[..]").collect();
    if parts.len() == 1 {
        return want == got;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !got.starts_with(first) || got.len() < first.len() + last.len() || !got.ends_with(last) {
        return false;
    }
    let mut rest = &got[first.len()..got.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(k) => rest = &rest[k + p.len()..],
            None => return false,
        }
    }
    true
}

/// Does the output `got` match the shown lines `want` (`...`: any lines)?
fn lines_match(want: &[String], got: &[String]) -> bool {
    match want.split_first() {
        None => got.is_empty(),
        Some((w, rest)) if w.trim() == "..." => {
            (0..=got.len()).any(|k| lines_match(rest, &got[k..]))
        }
        Some((w, rest)) => {
            !got.is_empty() && line_matches(w, &got[0]) && lines_match(rest, &got[1..])
        }
    }
}

/// The commands of a console block and the output shown after each.
fn commands(b: &Block) -> Vec<(String, Vec<String>)> {
    let mut v: Vec<(String, Vec<String>)> = Vec::new();
    let mut cont = false;
    for l in &b.body {
        if cont {
            let c = &mut v.last_mut().unwrap().0;
            cont = l.ends_with('\\');
            c.push('\n');
            c.push_str(l);
        } else if let Some(cmd) = l.strip_prefix("$ ") {
            cont = cmd.ends_with('\\');
            v.push((cmd.to_string(), Vec::new()));
        } else if let Some(last) = v.last_mut() {
            last.1.push(normalise(l));
        }
    }
    v
}

fn status_of(info: &str) -> i32 {
    info.split_whitespace()
        .find_map(|w| w.strip_prefix("status="))
        .map_or(0, |s| s.parse().expect("status=N"))
}

fn run(cmd: &str) -> (i32, Vec<String>) {
    let bin = Path::new(OVERSUB).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("bash")
        .args(["-o", "pipefail", "-c", &format!("exec 2>&1\n{cmd}")])
        .current_dir(ROOT)
        .env("PATH", path)
        .output()
        .expect("run bash");
    let text = String::from_utf8_lossy(&o.stdout);
    let lines = text.lines().map(normalise).collect();
    (o.status.code().unwrap_or(-1), lines)
}

#[test]
fn console_blocks_show_what_their_commands_print() {
    let mut failures = Vec::new();
    let (mut ran, mut skipped) = (0, Vec::new());
    for f in doc_files() {
        for b in blocks(&f) {
            let lang = b.info.split_whitespace().next().unwrap_or("");
            if lang.is_empty() {
                failures.push(format!(
                    "{}:{}: a fenced block without a language (`console` for a command and its output, else sh, toml, text, ...)",
                    b.file, b.line
                ));
                continue;
            }
            if lang != "console" {
                continue;
            }
            if let Some(why) = b.info.split_once("norun:").map(|x| x.1.trim()) {
                skipped.push(format!("{}:{}: {why}", b.file, b.line));
                continue;
            }
            let slow = b.info.split_whitespace().any(|w| w == "slow");
            if slow && std::env::var_os("OVERSUB_DOCS_SLOW").is_none() {
                skipped.push(format!(
                    "{}:{}: slow (OVERSUB_DOCS_SLOW=1 runs it)",
                    b.file, b.line
                ));
                continue;
            }
            let cmds = commands(&b);
            if cmds.is_empty() {
                failures.push(format!(
                    "{}:{}: a console block without a `$ ` command (mark it `norun: REASON` or make it text)",
                    b.file, b.line
                ));
            }
            for (cmd, want) in cmds {
                ran += 1;
                let (code, got) = run(&cmd);
                if code != status_of(&b.info) || !lines_match(&want, &got) {
                    failures.push(format!(
                        "{}:{}: `{cmd}` exited {code} (expected {}) and printed:\n{}\n--- the docs show:\n{}",
                        b.file,
                        b.line,
                        status_of(&b.info),
                        got.join("\n"),
                        want.join("\n")
                    ));
                }
            }
        }
    }
    eprintln!(
        "docs: {ran} commands run, {} console blocks not run:",
        skipped.len()
    );
    for s in &skipped {
        eprintln!("  {s}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(ran > 0, "no console block ran");
}

/// Top directories of the workspace whose paths the docs name.
const TOP: &[&str] = &[
    "bench/",
    "conform/",
    "crates/",
    "data/",
    "docs/",
    "kernel/",
    "python/",
    "scenarios/",
    "scripts/",
    "sweeps/",
    "vectors/",
    "workloads/",
];

/// Words that stand for a name in a path (`scenarios/overcommit/NAME-Nx16.toml`).
const PLACEHOLDERS: &[&str] = &["NAME", "FILE", "DIR", "OUT", "PATH", "PID", "TAG", "N"];

#[test]
fn paths_named_in_the_docs_exist() {
    let mut missing = Vec::new();
    for f in doc_files() {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            for (k, tok) in line.split('`').enumerate() {
                // Odd pieces are inside backticks.
                if k % 2 == 0 || !TOP.iter().any(|t| tok.starts_with(t)) {
                    continue;
                }
                // The Linux tree's paths (kernel/sched/fair.c), placeholders
                // and globs are not workspace files.
                let p = tok.split([':', ' ']).next().unwrap_or("");
                if p.starts_with("kernel/sched/")
                    || p.contains(['*', '<', '{', '['])
                    || p.contains("...")
                    || p.split(|c: char| !c.is_ascii_alphanumeric())
                        .any(|w| PLACEHOLDERS.contains(&w))
                {
                    continue;
                }
                if !Path::new(ROOT).join(p).exists() {
                    missing.push(format!("{}:{}: {p}", rel(&f), i + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths named in the docs that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_matcher_takes_wildcards_and_volatile_fields() {
    let s = |v: &[&str]| -> Vec<String> { v.iter().map(|x| x.to_string()).collect() };
    assert!(line_matches("a [..] c", "a b c"));
    assert!(!line_matches("a [..] c", "a b d"));
    assert!(!line_matches("abc", "abd"));
    assert!(lines_match(
        &s(&["x", "...", "z"]),
        &s(&["x", "y1", "y2", "z"])
    ));
    assert!(lines_match(&s(&["x", "...", "z"]), &s(&["x", "z"])));
    assert!(!lines_match(&s(&["x", "z"]), &s(&["x", "y", "z"])));
    assert_eq!(
        normalise("seed 1  events 2424  wall 0.000s (7.6 Mevents/s)"),
        "seed 1  events 2424  wall [..] Mevents/s)"
    );
    assert_eq!(
        normalise("708 runs in 13.4 s wall. Report"),
        "708 runs in [..] s wall. Report"
    );
}
