//! The crate's module graph: no module imports one that imports it back
//! (directly or through others), and no file is over 800 lines. Reads the
//! sources, so a new circle fails here, naming it.

// Only `circle` is used here: conform's own graph (below) leaves test code
// out, which the shared scanner does not.
#[path = "../../oversub-core/tests/common/imports.rs"]
mod imports;

use imports::circle;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module (file stem) and the crate modules its non-test code names
/// (`crate::NAME` or `crate::{NAME, ...}`).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut g = BTreeMap::new();
    for (p, name) in files.iter().zip(&names) {
        let text = std::fs::read_to_string(p).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let mut uses: Vec<String> = Vec::new();
        for piece in code.split("crate::").skip(1) {
            let head = piece.trim_start_matches('{');
            let group = if piece.starts_with('{') {
                head.split('}').next().unwrap_or("")
            } else {
                head.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("")
            };
            for w in group.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
                if names.iter().any(|n| n == w) && w != name && !uses.iter().any(|u| u == w) {
                    uses.push(w.to_string());
                }
            }
        }
        g.insert(name.clone(), uses.into_iter().collect());
    }
    g
}

#[test]
fn no_module_imports_itself_back() {
    let g = graph();
    // The known arrows exist (the parser sees them).
    assert!(g["runner"].contains("judge"), "{g:?}");
    assert!(g["worker"].contains("calibrate"), "{g:?}");
    for m in g.keys() {
        if let Some(c) = circle(&g, m) {
            panic!("import circle: {}", c.join(" -> "));
        }
    }
    // A circle is found when there is one.
    let mut bad = g.clone();
    bad.get_mut("calibrate").unwrap().insert("worker".into());
    assert!(circle(&bad, "worker").is_some());
}

#[test]
fn no_file_over_800_lines() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let n = std::fs::read_to_string(&p).unwrap().lines().count();
        assert!(n <= 800, "{}: {n} lines", p.display());
    }
}
