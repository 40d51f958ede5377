//! Reading a crate's imports from its sources, shared by the layout tests
//! of the workspace's crates (the core's `integration/architecture.rs`,
//! oversub-record's `tests/layout.rs`): which modules each file names
//! through `crate::` and `super::` (comments and string literals stripped,
//! `use crate::{a, b}` groups read whole), the module graph they make, and
//! a circle in it.

#![allow(dead_code)] // each crate's layout test uses its own subset

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The module path of a source file under `src/` (`sched/fair.rs` ->
/// [sched, fair]; `sched/mod.rs` -> [sched]; `lib.rs` -> []).
pub fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// Source text without comments (line, doc and block comments) and string
/// literals, so paths in prose or messages are not read as arrows.
pub fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            i += 2;
            while i < b.len() && !b[i..].starts_with(b"*/") {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A char literal ('"', '\n'); lifetimes ('a) are kept.
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

pub fn ident_at(s: &str) -> Option<&str> {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// The first path segments of a `{a, b::c, self}` group starting at `s`
/// (just after the `{`).
pub fn group_heads(s: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut at_item = true;
    for (k, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_item = true,
            c if c.is_whitespace() => {}
            _ if at_item && depth == 0 => {
                at_item = false;
                if let Some(id) = ident_at(&s[k..]) {
                    heads.push(id.to_string());
                }
            }
            _ => {}
        }
    }
    heads
}

/// The top-level modules that `src`, the text of the file whose module
/// path is `module`, names through `crate::` or `super::`.
pub fn arrows(module: &[String], src: &str) -> BTreeSet<String> {
    paths(module, src)
        .into_iter()
        .filter_map(|p| p.first().cloned())
        .collect()
}

/// The paths (their first two segments, `[top, next]`) that `src`, the
/// text of the file whose module path is `module`, names through
/// `crate::` or `super::`.
pub fn paths(module: &[String], src: &str) -> BTreeSet<Vec<String>> {
    let text = strip(src);
    let mut tops = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < text.len() {
        let word_start = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let (base, rest): (Vec<String>, &str) = if word_start && text[i..].starts_with("crate::") {
            (Vec::new(), &text[i + "crate::".len()..])
        } else if word_start && text[i..].starts_with("super::") {
            let mut rest = &text[i..];
            let mut up = 0;
            while let Some(r) = rest.strip_prefix("super::") {
                up += 1;
                rest = r;
            }
            // The chain is read whole: skip its inner `super::`s.
            i += "super::".len() * (up - 1);
            let keep = module.len().saturating_sub(up);
            (module[..keep].to_vec(), rest)
        } else {
            i += 1;
            continue;
        };
        let heads = match rest.strip_prefix('{') {
            Some(g) => group_heads(g),
            None => ident_at(rest)
                .map(|s| vec![s.to_string()])
                .unwrap_or_default(),
        };
        // `crate::sim::level`: the segment after a lone head, for a path
        // that reaches only one level deep from the root.
        let next: Vec<String> = match (heads.as_slice(), rest.strip_prefix('{')) {
            ([h], None) if base.is_empty() => match rest[h.len()..].strip_prefix("::") {
                Some(r) => match r.strip_prefix('{') {
                    Some(g) => group_heads(g),
                    None => ident_at(r).map(|s| vec![s.to_string()]).unwrap_or_default(),
                },
                None => Vec::new(),
            },
            _ => Vec::new(),
        };
        for h in heads {
            let mut path = base.clone();
            if h != "self" {
                path.push(h);
            }
            if next.is_empty() {
                let mut p = path.clone();
                p.truncate(2);
                if !p.is_empty() {
                    tops.insert(p);
                }
            }
            for n in &next {
                let mut p = path.clone();
                if n != "self" {
                    p.push(n.clone());
                }
                p.truncate(2);
                tops.insert(p);
            }
        }
        i += 1;
    }
    tops
}

pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The module graph of the crate whose sources are under `src`: each
/// top-level module (`sched` for `sched/fair.rs`, `profile` for
/// `profile/to_json.rs`) and the other top-level modules its files name.
/// The crate root (`lib.rs`, `main.rs`) is left out: it declares the
/// modules, and names them only to re-export.
pub fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let module = |f: &PathBuf| module_of(f.strip_prefix(src).expect("under src"));
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|f| module(f).first().cloned())
        .collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let m = module(f);
        let Some(from) = m.first() else { continue };
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let to = arrows(&m, &text)
            .into_iter()
            .filter(|t| t != from && modules.contains(t));
        g.entry(from.clone()).or_default().extend(to);
    }
    g
}

/// A circle through `from` in `g`, if there is one, as the modules along
/// it (`[from, .., from]`).
pub fn circle(g: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    fn walk(
        g: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        at: &str,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        for next in g.get(at).into_iter().flatten() {
            if next == start {
                let mut c = path.clone();
                c.push(start.to_string());
                return Some(c);
            }
            if !path.contains(next) {
                path.push(next.clone());
                if let Some(c) = walk(g, start, next, path) {
                    return Some(c);
                }
                path.pop();
            }
        }
        None
    }
    walk(g, from, from, &mut vec![from.to_string()])
}
