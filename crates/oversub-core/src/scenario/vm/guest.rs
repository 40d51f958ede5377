//! The guest side of a program VM (`[[vm]] program`, `kernel`, `[vm.features]`
//! and `ops`): its guest kernel, its rt-app thread program and which threads
//! count as its ops.

use super::RawVm;
use crate::scenario::{Ctx, HostSpec, ScenarioError};

/// `[vm] kernel` and `[vm.features]`: the guest kernel of a program VM,
/// validated as `[host]`'s (the host's preset and features by default; an
/// explicit kernel starts from that preset's features).
pub(super) fn guest_kernel(
    cx: &Ctx,
    f: &str,
    v: &RawVm,
    host: &HostSpec,
) -> Result<
    (
        crate::sched::features::KernelPreset,
        crate::sched::SchedFeatures,
    ),
    ScenarioError,
> {
    use crate::sched::features::KernelPreset;
    if v.program.is_none() && (v.kernel.is_some() || v.features.is_some()) {
        let k = if v.kernel.is_some() {
            "kernel"
        } else {
            "features"
        };
        return Err(cx.err(
            format!("{f}.{k}"),
            "the guest kernel applies to program VMs only: allowed with program = \"FILE.json\"",
        ));
    }
    let (kernel, mut features) = match &v.kernel {
        None => (host.kernel, host.features),
        Some(k) => {
            let p = KernelPreset::parse(k).ok_or_else(|| {
                cx.err(
                    format!("{f}.kernel"),
                    format!(
                        "unknown kernel preset \"{k}\": allowed {}",
                        KernelPreset::names()
                    ),
                )
            })?;
            (p, p.features())
        }
    };
    let prefix = format!("{f}.features");
    crate::scenario::host::set_features(
        cx,
        &prefix,
        kernel,
        &mut features,
        v.features.iter().flatten(),
    )?;
    Ok((kernel, features))
}

/// `[[vm]] ops`: the indices of the program threads whose task is `o` (or
/// starts with `o` minus its trailing `*`).
pub(super) fn ops_threads(
    cx: &Ctx,
    field: &str,
    o: &str,
    p: &crate::workload::ir::Program,
) -> Result<Vec<usize>, ScenarioError> {
    let hit = |task: &str| match o.strip_suffix('*') {
        Some(prefix) => task.starts_with(prefix),
        None => task == o,
    };
    let v: Vec<usize> = (0..p.threads.len())
        .filter(|&i| hit(&p.threads[i].task))
        .collect();
    if v.is_empty() {
        let mut tasks: Vec<&str> = p.threads.iter().map(|t| t.task.as_str()).collect();
        tasks.dedup();
        return Err(cx.err(
            field,
            format!(
                "\"{o}\" names no task of the program: allowed a task name or a prefix ending in *: {}",
                tasks.join(", ")
            ),
        ));
    }
    Ok(v)
}

/// Reads `[[vm]] program`: an rt-app file, its path relative to the
/// scenario's directory; thread affinities name vCPUs.
pub(super) fn guest_program(
    cx: &Ctx,
    field: &str,
    path: &str,
    vcpus: u32,
) -> Result<crate::workload::ir::Program, ScenarioError> {
    let base = std::path::Path::new(cx.file)
        .parent()
        .unwrap_or(std::path::Path::new(""));
    let full = base.join(path);
    let src = crate::limits::read_text(&full, "an rt-app JSON program")
        .map_err(|m| cx.err(field, format!("{}: {m}", full.display())))?;
    let r = cx.programs.get_or_parse(&src, crate::workload::rtapp::parse).map_err(|e| {
        if e.field.is_empty() && !src.trim_start().starts_with('{') {
            return cx.err(
                field,
                format!(
                    "{}: not JSON ({}): allowed an rt-app JSON program (a TOML scenario is not a program)",
                    full.display(),
                    e.message
                ),
            );
        }
        cx.err(field, format!("{}: {e}", full.display()))
    })?;
    if r.oversub.is_some() {
        return Err(cx.err(
            field,
            format!(
                "{}: the \"oversub\" host object applies to host-only runs: allowed none in a guest program",
                full.display()
            ),
        ));
    }
    let prog = r.program;
    for t in &prog.threads {
        if let Some(c) = t
            .cpus
            .as_ref()
            .and_then(|l| l.iter().find(|&&c| c >= vcpus))
        {
            return Err(cx.err(
                field,
                format!(
                    "{}: thread {} cpus names CPU {c}: allowed vCPUs 0..{}",
                    full.display(),
                    t.name,
                    vcpus - 1
                ),
            ));
        }
    }
    Ok(prog)
}
