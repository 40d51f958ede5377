//! The crate's layers (docs/architecture.md, "oversub-record"): every
//! module sits in one layer and never names a module of a layer above it,
//! the module graph has no circle, lib.rs only declares and re-exports, and
//! no file is over 800 lines. The imports are read from the sources by the
//! scanner the core's architecture test uses, so a new arrow up or a new
//! circle fails here, naming it.

#[path = "../../oversub-core/tests/common/imports.rs"]
mod imports;

use imports::{arrows, circle, graph, module_of, rust_files, strip};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, from the bottom up; a module may name modules of its own
/// layer or below, never above.
const LAYERS: &[&[&str]] = &[
    // The trace lines, the machine's tracing and output directory, the
    // command's options, output and failure, and the bounds the layers
    // share: they know no profile.
    &[
        "bounds", "parse", "tracefs", "outdir", "options", "output", "failure",
    ],
    // Bounded histograms of durations.
    &["hist"],
    // The profile: trace events folded per thread; profile.json written
    // and read back.
    &["profile"],
    // The derivation of a thread program from a profile, and its
    // steady-state form.
    &["steady", "derive"],
    // The commands: writing the derived files, `oversub derive`,
    // `oversub record`.
    &["write", "rederive", "record"],
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn layer_of(m: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&m))
}

/// The arrows of `g` that point to a higher layer, as "from -> to".
fn arrows_up(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut up = Vec::new();
    for (from, tos) in g {
        for to in tos {
            if let (Some(a), Some(b)) = (layer_of(from), layer_of(to)) {
                if b > a {
                    up.push(format!("{from} -> {to}"));
                }
            }
        }
    }
    up
}

/// Every circle of `g`, each as "a -> b -> a".
fn circles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    g.keys()
        .filter_map(|m| circle(g, m))
        .map(|c| c.join(" -> "))
        .collect()
}

#[test]
fn every_module_has_a_layer() {
    let g = graph(&src());
    assert!(g.len() >= 10, "read only {} modules: {g:?}", g.len());
    let unplaced: Vec<&String> = g.keys().filter(|m| layer_of(m).is_none()).collect();
    assert!(
        unplaced.is_empty(),
        "modules in no layer of tests/layout.rs (place them, and in docs/architecture.md): {unplaced:?}"
    );
}

#[test]
fn no_module_names_a_layer_above_it() {
    let g = graph(&src());
    // The scanner sees the known arrows.
    assert!(
        g["derive"].contains("profile") && g["profile"].contains("hist"),
        "{g:?}"
    );
    let up = arrows_up(&g);
    assert!(
        up.is_empty(),
        "arrows up (docs/architecture.md):\n{}",
        up.join("\n")
    );
}

#[test]
fn no_module_imports_itself_back() {
    let g = graph(&src());
    let c = circles(&g);
    assert!(c.is_empty(), "import circles:\n{}", c.join("\n"));
}

/// The mutants: a histogram that names the profile (the arrow that once
/// closed hist -> profile -> hist) is an arrow up and a circle, seen
/// however the file names it; two modules of one layer naming each other
/// are a circle.
#[test]
fn an_arrow_up_and_a_circle_are_reported() {
    let mut g = graph(&src());
    let hist = module_of(Path::new("hist.rs"));
    for src in [
        "fn f() -> u64 { crate::profile::MAX_PROFILE_COUNT }",
        "use crate::{bounds::X, profile::Y};",
    ] {
        assert!(arrows(&hist, src).contains("profile"), "{src}");
    }
    g.get_mut("hist").unwrap().insert("profile".into());
    assert_eq!(arrows_up(&g), ["hist -> profile"]);
    assert!(
        circles(&g).iter().any(|c| c == "hist -> profile -> hist"),
        "{:?}",
        circles(&g)
    );
    let mut g = graph(&src());
    g.get_mut("steady").unwrap().insert("derive".into());
    assert!(arrows_up(&g).is_empty());
    assert!(!circles(&g).is_empty());
    // A path in prose is no arrow.
    assert!(arrows(&hist, "//! see crate::profile\n").is_empty());
}

/// lib.rs is the crate's API: module declarations and re-exports only.
#[test]
fn lib_rs_only_declares_and_re_exports() {
    let text = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    let code: String = strip(&text)
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    for item in code.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        assert!(
            item.starts_with("pub mod ")
                || item.starts_with("mod ")
                || item.starts_with("pub use ")
                || item.starts_with("#!["),
            "lib.rs: {item:?}: allowed mod and pub use lines (put the code in a module of its own)"
        );
    }
}

#[test]
fn no_file_over_800_lines() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    for f in files {
        let n = std::fs::read_to_string(&f)
            .expect("a source file")
            .lines()
            .count();
        assert!(n <= 800, "{}: {n} lines: allowed 800", f.display());
    }
}
