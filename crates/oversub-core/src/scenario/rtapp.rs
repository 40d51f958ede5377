//! An rt-app JSON file as a host-only scenario: every program thread is a
//! host task in the root cgroup; the host comes from the `oversub`
//! extension object (`cpus`, `hz`, `kernel`, `seed`, `features`; the same
//! defaults as `[host]`), the run length from `global.duration`.

use super::{Ctx, ProgramCache, RawHost, Scenario, ScenarioError, TaskKind, TaskSpec};
use crate::workload::json::Json;
use crate::workload::rtapp;

const HOST_KEYS: &str = "cpus, hz, kernel, seed, features";

fn host(cx: &Ctx, o: Option<&Json>) -> Result<RawHost, ScenarioError> {
    let mut raw = RawHost::default();
    let Some(o) = o else {
        return Ok(raw);
    };
    let Json::Object(kv) = o else {
        return Err(cx.err("oversub", format!("expected an object, found {}", o.kind())));
    };
    for (k, v) in kv {
        let f = format!("oversub.{k}");
        let int = || match v {
            Json::Int(i) => Ok(*i),
            o => Err(cx.err(&f, format!("expected an integer, found {}", o.kind()))),
        };
        match k.as_str() {
            "cpus" => raw.cpus = Some(int()?),
            "hz" => raw.hz = Some(int()?),
            "seed" => raw.seed = Some(int()?),
            "kernel" => match v {
                Json::Str(s) => raw.kernel = Some(s.clone()),
                o => return Err(cx.err(&f, format!("expected a string, found {}", o.kind()))),
            },
            "features" => {
                let Json::Object(fs) = v else {
                    return Err(cx.err(&f, format!("expected an object, found {}", v.kind())));
                };
                for (name, b) in fs {
                    let Json::Bool(b) = b else {
                        return Err(cx.err(
                            format!("{f}.{name}"),
                            format!("expected true or false, found {}", b.kind()),
                        ));
                    };
                    raw.features.insert(name.clone(), *b);
                }
            }
            _ => return Err(cx.err(&f, format!("unknown key: allowed {HOST_KEYS}"))),
        }
    }
    Ok(raw)
}

/// Parses an rt-app file into a host-only scenario.
pub fn scenario(file: &str, src: &str) -> Result<Scenario, ScenarioError> {
    let programs = ProgramCache::default();
    let cx = Ctx {
        file,
        programs: &programs,
    };
    let r = rtapp::parse(src).map_err(|e| cx.err(e.field, e.message))?;
    let mut raw = host(&cx, r.oversub.as_ref())?;
    let prog = r.program;
    // duration -1: run until every thread ends, capped at an hour.
    let until_done = prog.duration.is_none();
    raw.duration = Some(match prog.duration {
        Some(d) => format!("{}s", d.0 / 1_000_000_000),
        None => "3600s".into(),
    });
    // Host errors name the fields as this file spells them.
    let host = Scenario::host(&cx, raw).map_err(|mut e| {
        if let Some(rest) = e.field.strip_prefix("host.") {
            e.field = format!("oversub.{rest}");
        }
        e
    })?;
    if host.kernel == crate::sched::KernelPreset::Flat && prog.uses_fork() {
        return Err(cx.err(
            "oversub.kernel",
            "flat: the program forks child processes (fork events), which the flat scheduler (sched/flat) does not create after the start: allowed any kernel preset but flat",
        ));
    }
    let mut tasks = Vec::new();
    for (i, t) in prog.threads.iter().enumerate() {
        if let Some(c) = t
            .cpus
            .as_ref()
            .and_then(|v| v.iter().find(|&&c| c >= host.cpus))
        {
            return Err(cx.err(
                format!("tasks.{}.cpus", t.task),
                format!("CPU {c} does not exist: allowed 0 ..= {}", host.cpus - 1),
            ));
        }
        if t.phases
            .iter()
            .flat_map(|p| &p.events)
            .any(|e| e.is_kernel_extension())
        {
            return Err(cx.err(
                format!("tasks.{}", t.task),
                "syscall, munmap and smp_call model guest-kernel work: they run only as guest threads of a VM, not host-only",
            ));
        }
        tasks.push(TaskSpec {
            name: t.name.clone(),
            cgroup: "/".into(),
            nice: t.nice,
            cpus: t.cpus.clone(),
            count: 1,
            slice: None,
            // rt-app leaves the slack alone; the `oversub` task extension
            // sets it.
            timer_slack: t.timer_slack.unwrap_or(crate::task::DEFAULT_TIMER_SLACK),
            kind: TaskKind::Program { thread: i as u32 },
        });
    }
    Ok(Scenario {
        file: file.to_string(),
        host,
        cgroups: Vec::new(),
        tasks,
        vms: Vec::new(),
        kvm: super::kvm::kvm(&cx, Default::default(), &Default::default())?,
        pv: super::pv::pv(None),
        program: Some(prog),
        until_done,
        effective: toml::Table::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_from_the_extension_object() {
        let sc = scenario(
            "x.json",
            r#"{"oversub": {"cpus": 4, "hz": 1000, "seed": 9, "features": {"PLACE_LAG": false}},
                "global": {"duration": 3}, "tasks": {"t": {"instance": 2, "cpus": [3], "run": 5}}}"#,
        )
        .unwrap();
        assert_eq!(sc.host.cpus, 4);
        assert_eq!(sc.host.hz, 1000);
        assert_eq!(sc.host.seed, 9);
        assert_eq!(sc.host.duration.0, 3_000_000_000);
        assert!(!sc.until_done);
        assert_eq!(sc.tasks.len(), 2);
        assert_eq!(sc.tasks[1].name, "t.1");
        assert_eq!(sc.tasks[1].kind, TaskKind::Program { thread: 1 });
    }

    #[test]
    fn errors_name_file_and_field() {
        for (src, want) in [
            (
                r#"{"oversub": {"cpu": 2}, "global": {"duration": 1}, "tasks": {"t": {"run": 1}}}"#,
                "x.json: oversub.cpu: unknown key",
            ),
            (
                r#"{"oversub": {"cpus": 0}, "global": {"duration": 1}, "tasks": {"t": {"run": 1}}}"#,
                "x.json: oversub.cpus: 0 is out of range",
            ),
            (
                r#"{"global": {"duration": 1}, "tasks": {"t": {"cpus": [2], "run": 1}}}"#,
                "x.json: tasks.t.cpus: CPU 2 does not exist",
            ),
            (
                r#"{"global": {"duration": 1}, "tasks": {"t": {"syscall": {"lock": "l", "hold": 1}}}}"#,
                "x.json: tasks.t: syscall, munmap and smp_call",
            ),
            (
                r#"{"global": {"duration": 1}, "tasks": {"t": {"run": "1"}}}"#,
                "x.json: tasks.t.run: expected an integer",
            ),
        ] {
            let e = scenario("x.json", src).unwrap_err().to_string();
            assert!(e.starts_with(want), "{e}\n want {want}");
        }
    }
}
