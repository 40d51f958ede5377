//! The arrows that must never exist (docs/architecture.md, "Forbidden
//! arrows"): reads every source file of the core, resolves each `crate::` and
//! `super::` path to the top-level module it names, and fails when a module
//! reaches one it must not. Also checks that the core depends on no
//! front-end crate and the Python bindings not on the CLI.

#[path = "../common/imports.rs"]
mod imports;

use imports::{arrows, module_of, paths, rust_files, strip};
use std::collections::BTreeSet;
use std::path::Path;

const CORE: &str = env!("CARGO_MANIFEST_DIR");

/// (from, to): `from` must never name `to`. `*` as `to` means any other
/// module of the crate.
const FORBIDDEN: &[(&str, &str)] = &[
    // The engine knows no model.
    ("engine", "*"),
    // The scheduler is one model instantiated per level: it knows nothing
    // of who drives it.
    ("sched", "sim"),
    ("sched", "kvm"),
    ("sched", "guest"),
    ("sched", "workload"),
    ("sched", "trace"),
    ("sched", "task"),
    ("sched", "scenario"),
    ("sched", "report"),
    // KVM, guest-kernel primitives and task behaviours are decisions the
    // loop calls, never the loop.
    ("kvm", "sim"),
    ("guest", "sim"),
    ("task", "sim"),
    // The record of a run never reads the simulator.
    ("report", "sim"),
    ("stats", "sim"),
    ("trace", "sim"),
    // The loop never calls the entry point that drives it (the error type
    // both share sits below them, in error.rs).
    ("sim", "run"),
    ("error", "sim"),
    ("error", "run"),
    // Workload programs are data: no model state.
    ("workload", "sim"),
    ("workload", "sched"),
    ("workload", "kvm"),
    ("workload", "guest"),
    ("workload", "task"),
];

/// Inside `sim/`: (from, to) between its parts (`level`, `vm`, `build`,
/// ...; `*` = any other part of `sim`). The kernel level and the host
/// sleep timers sit below the loop: they know neither the loop nor the
/// VMs; the VM runtime never reaches the builder that creates it.
const FORBIDDEN_IN_SIM: &[(&str, &str)] = &[("level", "*"), ("hrtimer", "*"), ("vm", "build")];

/// External crates the core must not use (they belong to the leaves).
const FORBIDDEN_CRATES: &[&str] = &["clap", "pyo3", "rustix", "signal_hook", "indicatif"];

/// Every forbidden arrow found in the core's sources, as "file: from -> to".
fn violations() -> Vec<String> {
    let src = Path::new(CORE).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(
        files.len() > 50,
        "read only {} files of {}",
        files.len(),
        src.display()
    );
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|f| module_of(f.strip_prefix(&src).ok()?).first().cloned())
        .collect();
    let mut bad = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).expect("under src");
        let module = module_of(rel);
        let Some(from) = module.first() else { continue };
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for to in arrows(&module, &text) {
            if &to == from || !modules.contains(&to) {
                continue;
            }
            if FORBIDDEN
                .iter()
                .any(|&(a, b)| a == from && (b == to || b == "*"))
            {
                bad.push(format!("{}: {from} -> {to}", rel.display()));
            }
        }
        bad.extend(sim_violations(&module, &text).map(|v| format!("{}: {v}", rel.display())));
        let code = strip(&text);
        for c in FORBIDDEN_CRATES {
            if code.contains(&format!("{c}::")) {
                bad.push(format!("{}: uses the {c} crate", rel.display()));
            }
        }
    }
    bad
}

/// The forbidden arrows between parts of `sim/` that a file of module
/// `module` with text `src` has, as "sim::from -> sim::to".
fn sim_violations(module: &[String], src: &str) -> impl Iterator<Item = String> {
    let from = match module {
        [top, part, ..] if top == "sim" => part.clone(),
        _ => String::new(),
    };
    paths(module, src)
        .into_iter()
        .filter_map(move |p| match &p[..] {
            [top, to] if top == "sim" && !from.is_empty() && *to != from => FORBIDDEN_IN_SIM
                .iter()
                .any(|&(a, b)| a == from && (b == to || b == "*"))
                .then(|| format!("sim::{from} -> sim::{to}")),
            _ => None,
        })
}

/// Where a scheduler may choose by kernel preset: `sched/class.rs` (the
/// fair class's hook set, chosen once at construction) and the classes
/// themselves (`sched/cfs/`, `sched/flat/`).
const PRESET_DISPATCH: &[&str] = &["sched/class.rs", "sched/cfs/", "sched/flat/"];

/// What choosing by preset looks like in code: naming a class, or taking
/// the CFS or sched/flat view of a scheduler.
const PRESET_CHOICE: &[&str] = &["FairClass::", ".cfs()", ".flat_fair()"];

/// The preset choices in `src` (the text of the file `rel` under `src/`)
/// outside [`PRESET_DISPATCH`], as "file: what".
fn preset_choices(rel: &str, src: &str) -> Vec<String> {
    if PRESET_DISPATCH.iter().any(|d| rel.starts_with(d)) {
        return Vec::new();
    }
    let code = strip(src);
    PRESET_CHOICE
        .iter()
        .filter(|c| code.contains(*c))
        .map(|c| format!("{rel}: {c}"))
        .collect()
}

/// Preset dispatch in one place: no file outside `sched/class.rs` and the
/// classes picks a fair class (docs/architecture.md, "Forbidden arrows").
#[test]
fn the_fair_class_is_chosen_only_in_sched_class() {
    let src = Path::new(CORE).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut bad = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).expect("under src");
        let rel = rel.to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        bad.extend(preset_choices(&rel, &text));
    }
    assert!(
        bad.is_empty(),
        "a fair class chosen outside sched/class.rs:\n{}",
        bad.join("\n")
    );
}

/// The mutants: an EEVDF entry point that takes the CFS view itself, and a
/// loop that matches on the class, are reported; the same in
/// `sched/class.rs`, and prose, are not.
#[test]
fn a_preset_choice_outside_sched_class_is_reported() {
    let src = "fn f(&mut self) { if x { return self.cfs().update_curr(c); } }";
    assert_eq!(
        preset_choices("sched/fair/curr.rs", src),
        ["sched/fair/curr.rs: .cfs()"]
    );
    let src = "match s.fair_class() { FairClass::Flat => {} _ => {} }";
    assert_eq!(
        preset_choices("sim/mod.rs", src),
        ["sim/mod.rs: FairClass::"]
    );
    assert!(preset_choices("sched/class.rs", src).is_empty());
    assert!(preset_choices("sched/fair/pick.rs", "// self.cfs() dispatches\n").is_empty());
}

#[test]
fn no_forbidden_arrow_in_the_core() {
    let bad = violations();
    assert!(
        bad.is_empty(),
        "forbidden arrows (docs/architecture.md):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_core_and_the_bindings_depend_on_no_front_end() {
    let deps = |toml: &str| -> Vec<String> {
        let v: toml::Value = toml::from_str(toml).expect("a Cargo.toml");
        ["dependencies", "build-dependencies"]
            .iter()
            .filter_map(|k| v.get(k)?.as_table())
            .flat_map(|t| t.keys().cloned())
            .collect()
    };
    let core = std::fs::read_to_string(Path::new(CORE).join("Cargo.toml")).expect("core manifest");
    for d in deps(&core) {
        let name = d.replace('-', "_");
        assert!(
            !FORBIDDEN_CRATES.contains(&name.as_str()) && !d.starts_with("oversub-"),
            "oversub-core depends on {d}"
        );
    }
    let py = Path::new(CORE).join("../oversub-python/Cargo.toml");
    let py = std::fs::read_to_string(py).expect("bindings manifest");
    assert!(
        !deps(&py).iter().any(|d| d == "oversub-cli"),
        "the Python bindings depend on the CLI"
    );
}

// The scanner itself: each way of naming a module is seen, and prose is not.

fn m(path: &str) -> Vec<String> {
    module_of(Path::new(path))
}

#[test]
fn the_scanner_sees_every_way_of_naming_a_module() {
    let a = arrows(&m("sched/fair.rs"), "use crate::sim::Simulator;\n");
    assert!(a.contains("sim"), "{a:?}");
    let a = arrows(&m("sched/fair.rs"), "use crate::{engine::Time, kvm::VmId};");
    assert!(a.contains("kvm") && a.contains("engine"), "{a:?}");
    let a = arrows(
        &m("sched/fair.rs"),
        "fn f() { let x = crate::trace::Ev::X; }",
    );
    assert!(a.contains("trace"), "{a:?}");
    // Three supers from sched/yield_to/borrow.rs reach the crate root.
    let a = arrows(
        &m("sched/yield_to/borrow.rs"),
        "use super::super::super::guest::X;",
    );
    assert!(a.contains("guest"), "{a:?}");
    // super:: from a file stays in its own top-level module.
    let a = arrows(&m("sched/yield_to/borrow.rs"), "use super::Foo;");
    assert_eq!(a.into_iter().collect::<Vec<_>>(), vec!["sched".to_string()]);
    // super from lib-level module files (sched/mod.rs) is the root.
    let a = arrows(&m("sched/mod.rs"), "use super::sim::X;");
    assert!(a.contains("sim"), "{a:?}");
}

#[test]
fn the_scanner_ignores_prose_and_messages() {
    let src = "//! see crate::sim for the loop\n/* crate::kvm */ fn f() { \
               let s = \"crate::guest\"; let c = '\"'; } // crate::trace\n";
    assert!(arrows(&m("sched/fair.rs"), src).is_empty());
}

/// The mutants inside `sim/`: the kernel level naming the VM runtime (by
/// `super::` or `crate::`) or the loop is reported; the loop naming the
/// level, and the level's own tests, are not.
#[test]
fn a_forbidden_arrow_inside_sim_is_reported() {
    let level = m("sim/level.rs");
    let hits = |src: &str| sim_violations(&level, src).collect::<Vec<_>>();
    assert_eq!(hits("use super::vm::VmRt;"), ["sim::level -> sim::vm"]);
    assert_eq!(
        hits("use crate::sim::Simulator;"),
        ["sim::level -> sim::Simulator"]
    );
    assert!(hits("mod tests { use super::*; }").is_empty());
    let guest = m("sim/vm/guest.rs");
    assert_eq!(
        sim_violations(&guest, "use super::super::build::SimBuilder;").collect::<Vec<_>>(),
        ["sim::vm -> sim::build"]
    );
    let lp = m("sim/mod.rs");
    assert_eq!(
        sim_violations(
            &lp,
            "use level::KernelLevel; use self::level::X; use super::sim::level::Y;"
        )
        .count(),
        0
    );
}

/// The mutant the test must kill: a forbidden import written into a
/// scheduler file is reported.
#[test]
fn a_forbidden_arrow_is_reported() {
    let module = m("sched/fair.rs");
    let to = arrows(&module, "use crate::sim::Simulator;");
    let hit = to.iter().any(|t| {
        FORBIDDEN
            .iter()
            .any(|&(a, b)| a == module[0] && (b == t || b == "*"))
    });
    assert!(hit, "{to:?}");
}

#[test]
fn the_core_s_module_graph_has_no_circle() {
    let g = imports::graph(&Path::new(CORE).join("src"));
    // The scanner sees the core's known arrows.
    assert!(
        g["sim"].contains("sched") && g["kvm"].contains("sched"),
        "{g:?}"
    );
    let circles: Vec<String> = g
        .keys()
        .filter_map(|m| imports::circle(&g, m))
        .map(|c| c.join(" -> "))
        .collect();
    assert!(
        circles.is_empty(),
        "import circles between the core's modules (docs/architecture.md):\n{}",
        circles.join("\n")
    );
}
