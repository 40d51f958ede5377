//! Reading a scenario: the file (TOML, or rt-app JSON run host-only), its
//! `--set` overrides, and the validation of the whole scenario from its raw
//! TOML shape (sections in order, cross-references between them).

use super::error::{humanize_serde, toml_error, toml_location};
use super::{
    expanded_names, host_tasks_of, kvm, overrides, parent_path, pv, rtapp, validate_cgroup_path,
    vm, CgroupSpec, Ctx, Layout, ProgramCache, RawScenario, Scenario, ScenarioError, TaskKind,
    VmSpec, MAX_GROUP_RQS, MAX_TASKS,
};
use std::collections::BTreeMap;
use std::path::Path;

impl Scenario {
    /// Reads and validates a scenario file: TOML, or an rt-app JSON file
    /// (`.json`) run host-only.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        Scenario::load_with(path, &[])
    }

    /// Reads a scenario file, applies `--set` overrides in order and validates
    /// the result.
    pub fn load_with(path: &Path, sets: &[overrides::Override]) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let err = |message: String| ScenarioError {
            file: file.clone(),
            field: String::new(),
            message,
        };
        // The extension picks the format, in any case (`.JSON` too).
        let is_json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let what = if is_json {
            "an rt-app JSON file"
        } else {
            "a TOML scenario (or rt-app JSON named *.json)"
        };
        let src = crate::limits::read_text(path, what).map_err(err)?;
        if is_json {
            if let Some(o) = sets.first() {
                return Err(ScenarioError {
                    file,
                    field: format!("--set {}", o.arg),
                    message: "overrides apply to TOML scenarios, not rt-app JSON".into(),
                });
            }
            return rtapp::scenario(&file, &src);
        }
        Scenario::parse_with(&file, &src, sets).map_err(|mut e| {
            // JSON under another name: say the rule instead of a TOML error.
            if src.trim_start().starts_with('{') && e.field.starts_with("line") {
                e.field = String::new();
                e.message = "looks like JSON, read as TOML: allowed rt-app JSON in a file named *.json (the extension picks the format), else TOML".into();
            }
            e
        })
    }

    /// Parses and validates scenario text; `file` names it in errors.
    pub fn parse(file: &str, src: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse_with(file, src, &[])
    }

    /// Parses scenario text, applies `--set` overrides and validates. The
    /// file is checked first (errors carry its line numbers); then each
    /// override in turn, an error naming the `--set` argument that caused it.
    pub fn parse_with(
        file: &str,
        src: &str,
        sets: &[overrides::Override],
    ) -> Result<Scenario, ScenarioError> {
        let programs = ProgramCache::default();
        let cx = Ctx {
            file,
            programs: &programs,
        };
        let raw: RawScenario = serde_path_to_error::deserialize(toml::Deserializer::new(src))
            .map_err(|e| toml_error(&cx, src, e))?;
        let mut table: toml::Table = toml::from_str(src).map_err(|e| {
            let msg = e.message().replace('\n', " ");
            cx.err(toml_location(src, &e), msg.trim().to_string())
        })?;
        if sets.is_empty() {
            let mut sc = Self::from_raw(&cx, raw)?;
            sc.effective = table;
            return Ok(sc);
        }
        let mut raw = raw;
        for o in sets {
            let field = format!("--set {}", o.arg);
            let mut t = table.clone();
            overrides::apply(&mut t, o).map_err(|m| cx.err(&field, m))?;
            let mut r = serde_path_to_error::deserialize(toml::Value::Table(t.clone()));
            if r.is_err() && !o.value.is_str() {
                // An unquoted 6.12 or 0 where a string is wanted: retry as text.
                let s = o.as_string();
                let mut t2 = table.clone();
                overrides::apply(&mut t2, &s).map_err(|m| cx.err(&field, m))?;
                if let Ok(ok) = serde_path_to_error::deserialize(toml::Value::Table(t2.clone())) {
                    t = t2;
                    r = Ok(ok);
                }
            }
            raw = r.map_err(|e: serde_path_to_error::Error<toml::de::Error>| {
                let path = e.path().to_string();
                let msg = e.into_inner().message().replace('\n', " ");
                let msg = humanize_serde(msg.trim()).unwrap_or_else(|| msg.trim().to_string());
                cx.err(&field, format!("{path}: {msg}"))
            })?;
            table = t;
        }
        let mut sc = Self::from_raw(&cx, raw)?;
        sc.effective = table;
        Ok(sc)
    }

    pub(super) fn from_raw(cx: &Ctx, raw: RawScenario) -> Result<Scenario, ScenarioError> {
        let cx = *cx;
        let host = Self::host(&cx, raw.host.unwrap_or_default())?;
        let mut cgroups = Vec::new();
        // Path -> position in `cgroups`: lookups stay O(log n) (1000 VMs).
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        for (i, c) in raw.cgroup.iter().enumerate() {
            let f = format!("cgroup[{i}]");
            let path = validate_cgroup_path(&c.path).map_err(|m| cx.err(format!("{f}.path"), m))?;
            if path == "/" {
                return Err(cx.err(
                    format!("{f}.path"),
                    "the root cgroup \"/\" is implicit and cannot be declared",
                ));
            }
            if index.contains_key(&path) {
                return Err(cx.err(format!("{f}.path"), format!("\"{path}\" is declared twice")));
            }
            let weight = cx.int(&format!("{f}.weight"), c.weight.unwrap_or(100), 1, 10000)? as u32;
            index.insert(path.clone(), cgroups.len());
            cgroups.push(CgroupSpec { path, weight });
        }
        // Every declared cgroup's parent must be declared too (or be "/").
        for (i, c) in cgroups.iter().enumerate() {
            let parent = parent_path(&c.path);
            if parent != "/" && !index.contains_key(&parent) {
                return Err(cx.err(
                    format!("cgroup[{i}].path"),
                    format!("parent \"{parent}\" of \"{}\" is not declared", c.path),
                ));
            }
        }
        let mut tasks = Vec::new();
        let mut nr_tasks: u64 = 0;
        for (i, t) in raw.task.iter().enumerate() {
            let spec = Self::task(&cx, i, t, &host, &index)?;
            nr_tasks += host_tasks_of(&spec);
            if nr_tasks > MAX_TASKS {
                return Err(cx.err(
                    format!("task[{i}].count"),
                    format!(
                        "the scenario reaches {nr_tasks} host tasks here: allowed at most {MAX_TASKS} tasks + vCPUs"
                    ),
                ));
            }
            tasks.push(spec);
        }
        let pv = pv::pv(raw.guest);
        let kvm = kvm::kvm(&cx, raw.kvm.unwrap_or_default(), &pv)?;
        let mut vms = Vec::new();
        for (i, v) in raw.vm.iter().enumerate() {
            let spec = vm::vm(&cx, i, v, &host, &mut cgroups, &mut index)?;
            nr_tasks += u64::from(spec.vcpus);
            if nr_tasks > MAX_TASKS {
                return Err(cx.err(
                    format!("vm[{i}].vcpus"),
                    format!(
                        "the scenario reaches {nr_tasks} host tasks here: allowed at most {MAX_TASKS} tasks + vCPUs"
                    ),
                ));
            }
            // Guest program threads count too: one cap however tasks are spelled.
            nr_tasks += spec.program.as_ref().map_or(0, |p| p.threads.len() as u64);
            if nr_tasks > MAX_TASKS {
                return Err(cx.err(
                    format!("vm[{i}].program"),
                    format!(
                        "the scenario reaches {nr_tasks} tasks, vCPUs and guest threads here: allowed at most {MAX_TASKS}"
                    ),
                ));
            }
            if vms.iter().any(|o: &VmSpec| o.name == spec.name) {
                return Err(cx.err(
                    format!("vm[{i}].name"),
                    format!("VM name \"{}\" is used twice", spec.name),
                ));
            }
            // A libvirt layout makes a cgroup per vCPU under the VM's: two
            // VMs in one cgroup would share them silently.
            if spec.layout == Layout::Libvirt {
                if let Some((j, o)) = vms.iter().enumerate().find(|(_, o): &(usize, &VmSpec)| {
                    o.vcpu_cgroups.iter().any(|c| spec.vcpu_cgroups.contains(c))
                }) {
                    let shared = spec
                        .vcpu_cgroups
                        .iter()
                        .find(|c| o.vcpu_cgroups.contains(c))
                        .cloned()
                        .unwrap_or_default();
                    return Err(cx.err(
                        format!("vm[{i}].cgroup"),
                        format!(
                            "\"{}\" puts vCPU cgroup \"{shared}\" in use by vm[{j}] ({}) too: allowed a cgroup of its own per VM, or layout = \"flat\"",
                            spec.cgroup, o.name
                        ),
                    ));
                }
            }
            vms.push(spec);
        }
        if pv.cpuidle_haltpoll && vms.iter().all(|v| v.program.is_none()) {
            return Err(cx.err(
                "guest.cpuidle_haltpoll",
                "true, but no VM runs a program (the guest idle loop is modelled for program VMs only): allowed false, or true with a [[vm]] program",
            ));
        }
        let rqs = (cgroups.len() as u64 + 1) * u64::from(host.cpus);
        if rqs > MAX_GROUP_RQS {
            return Err(cx.err(
                "cgroup",
                format!(
                    "{} cgroups on {} CPUs make {rqs} group runqueues: allowed at most {MAX_GROUP_RQS} ((cgroups + 1) x cpus)",
                    cgroups.len() + 1,
                    host.cpus
                ),
            ));
        }
        // Names (after replica expansion) must be unique; yield_to targets exist.
        let mut names = std::collections::BTreeSet::new();
        let mut vcpu_names = std::collections::BTreeSet::new();
        for v in &vms {
            for k in 0..v.vcpus {
                names.insert(format!("{}.vcpu{k}", v.name));
                vcpu_names.insert(format!("{}.vcpu{k}", v.name));
            }
        }
        for (i, t) in tasks.iter().enumerate() {
            for n in expanded_names(t) {
                if !names.insert(n.clone()) {
                    return Err(cx.err(
                        format!("task[{i}].name"),
                        format!("task name \"{n}\" is used twice"),
                    ));
                }
            }
        }
        for (i, t) in tasks.iter().enumerate() {
            if let TaskKind::YieldLoop {
                target: Some(tg), ..
            } = &t.kind
            {
                if vcpu_names.contains(tg) {
                    return Err(cx.err(
                        format!("task[{i}].target"),
                        format!(
                            "\"{tg}\" is a vCPU: allowed targets are [[task]] tasks (vCPUs yield through KVM)"
                        ),
                    ));
                }
                if !names.contains(tg) {
                    return Err(cx.err(
                        format!("task[{i}].target"),
                        format!(
                            "no task is named \"{tg}\" (replicas are named NAME.0, NAME.1, ...)"
                        ),
                    ));
                }
                if expanded_names(t).contains(tg) {
                    return Err(cx.err(
                        format!("task[{i}].target"),
                        format!(
                            "\"{tg}\" is this entry's own task: allowed another task (yield_to() of oneself fails)"
                        ),
                    ));
                }
            }
        }
        if tasks.is_empty() && vms.is_empty() {
            return Err(cx.err("task", "a scenario needs at least one [[task]]"));
        }
        Ok(Scenario {
            file: cx.file.to_string(),
            host,
            cgroups,
            tasks,
            vms,
            kvm,
            pv,
            program: None,
            until_done: false,
            effective: toml::Table::new(),
        })
    }
}
