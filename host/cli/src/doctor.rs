//! `wasmgate doctor`: what this machine can enforce on a confined stdio server, mechanism
//! by mechanism, and how to enable what is missing.
//!
//! Measured, not guessed: `true` is started twice under the default confinement, once
//! best effort (what the kernel applied) and once required (whether a provider under
//! `confinement = "required"` starts here). The system settings that decide the answer
//! (user namespaces, cgroups) are shown beside it.

use wasmgate_confine::{Confinement, ConfinementError, ConfinementReport, Mechanism, ProcessBound};

/// Arguments of `wasmgate doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {}

/// One line of the answer.
struct Row {
    mechanism: Mechanism,
    in_force: bool,
    detail: String,
    /// What holds the line where this mechanism is missing.
    covered_by: Option<&'static str>,
}

/// Prints the answer; `Ok(false)` when a provider under `confinement = "required"` would
/// not start on this machine.
pub fn run(_args: &DoctorArgs) -> anyhow::Result<bool> {
    let dir = tempfile::Builder::new().prefix("wasmgate-doctor-").tempdir()?;
    let workdir = dir.path().join("probe");
    let measured = wasmgate_confine::probe(&Confinement::default().best_effort(), &workdir)?;
    let required = wasmgate_confine::probe(&Confinement::default(), &workdir);
    print!("{}", answer(&measured, required.as_ref().err(), &system()));
    Ok(required.is_ok())
}

fn rows(report: &ConfinementReport) -> Vec<Row> {
    let abi = report.landlock_abi;
    let landlock = |mechanism, needed: u8| Row {
        mechanism,
        in_force: abi >= needed,
        detail: format!("Landlock ABI {abi} enforced, {needed} needed"),
        covered_by: None,
    };
    let processes = match report.processes {
        ProcessBound::Cgroup => "a pids cgroup of the server's own",
        ProcessBound::Rlimit => "RLIMIT_NPROC in a user namespace of the server's own",
        ProcessBound::None => "nothing bounds the server's forks",
    };
    vec![
        landlock(Mechanism::LandlockFilesystem, 1),
        landlock(Mechanism::LandlockNetwork, 4),
        landlock(Mechanism::LandlockScopes, 6),
        Row {
            mechanism: Mechanism::Seccomp,
            in_force: report.seccomp,
            detail: "socket families as granted; ptrace, bpf, mount, namespaces, io_uring and the like refused".into(),
            covered_by: None,
        },
        Row {
            mechanism: Mechanism::NetworkNamespace,
            in_force: report.network_namespace,
            detail: if report.user_namespace { "with a user namespace" } else { "without a user namespace" }.into(),
            covered_by: report.seccomp.then_some("the seccomp filter refuses network sockets"),
        },
        Row {
            mechanism: Mechanism::UnixSocketPaths,
            in_force: report.socket_dirs_hidden || abi >= 9,
            detail: "other programs' sockets in /run, /tmp, /dev/shm".into(),
            covered_by: report.unix_sockets_refused.then_some("the seccomp filter refuses socket(AF_UNIX)"),
        },
        Row {
            mechanism: Mechanism::NoNewPrivs,
            in_force: report.no_new_privs,
            detail: String::new(),
            covered_by: None,
        },
        Row {
            mechanism: Mechanism::Capabilities,
            in_force: report.capabilities_dropped,
            detail: String::new(),
            covered_by: None,
        },
        Row {
            mechanism: Mechanism::ResourceLimits,
            in_force: report.resource_limits,
            detail: "memory, CPU, open files, file size".into(),
            covered_by: None,
        },
        Row {
            mechanism: Mechanism::ProcessCount,
            in_force: report.processes != ProcessBound::None,
            detail: processes.into(),
            covered_by: None,
        },
    ]
}

/// The whole answer, as printed.
fn answer(report: &ConfinementReport, refused: Option<&ConfinementError>, system: &[(String, String)]) -> String {
    let mut out = String::from(
        "What this machine enforces on a confined stdio server (measured by starting `true` under the default \
         policy):\n\n",
    );
    for row in rows(report) {
        let state = match (row.in_force, row.covered_by) {
            (true, _) => "in force",
            (false, Some(_)) => "covered",
            (false, None) => "MISSING",
        };
        let detail = if row.detail.is_empty() { String::new() } else { format!(" ({})", row.detail) };
        out.push_str(&format!("  {state:<9} {}{detail}\n", row.mechanism));
        if let Some(cover) = row.covered_by.filter(|_| !row.in_force) {
            out.push_str(&format!("            missing, but {cover}\n"));
        }
        if !row.in_force {
            out.push_str(&format!("            to enable: {}\n", row.mechanism.remedy()));
        }
    }
    out.push_str("\nThe system:\n");
    for (name, value) in system {
        out.push_str(&format!("  {name}: {value}\n"));
    }
    match refused {
        None => out.push_str("\nProviders under confinement = \"required\" start here.\n"),
        Some(e) => out.push_str(&format!(
            "\nProviders under confinement = \"required\" do NOT start here: {e}\n\
             (confinement = \"best-effort\" starts them with what is in force, and logs what is missing)\n"
        )),
    }
    out
}

/// The settings that decide what the kernel allows.
fn system() -> Vec<(String, String)> {
    let read = |path: &str| std::fs::read_to_string(path).ok().map(|s| s.trim().to_owned());
    let uid = rustix::process::getuid().as_raw();
    let mut facts = vec![("user".to_owned(), if uid == 0 { "root".to_owned() } else { format!("uid {uid}") })];
    for (name, path) in [
        ("user.max_user_namespaces", "/proc/sys/user/max_user_namespaces"),
        ("kernel.unprivileged_userns_clone", "/proc/sys/kernel/unprivileged_userns_clone"),
        ("kernel.apparmor_restrict_unprivileged_userns", "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
        ("Linux security modules", "/sys/kernel/security/lsm"),
    ] {
        if let Some(value) = read(path) {
            facts.push((name.to_owned(), value));
        }
    }
    // Found by the code that makes the servers' groups, so it shows what it will use.
    let (v1, v2) = wasmgate_confine::own_cgroups();
    let shown = |dir: Option<std::path::PathBuf>| dir.map_or_else(|| "none".to_owned(), |d| d.display().to_string());
    facts.push(("the gateway's group, cgroup v1 pids".to_owned(), shown(v1)));
    facts.push(("the gateway's group, cgroup v2".to_owned(), shown(v2)));
    facts
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_missing_mechanism_names_its_remedy_and_what_covers_it() {
        let dir = tempfile::tempdir().unwrap();
        let report = wasmgate_confine::probe(&Confinement::default().best_effort(), &dir.path().join("p")).unwrap();
        let mut without = report.clone();
        without.network_namespace = false;
        without.user_namespace = false;
        without.processes = ProcessBound::None;
        let refused = ConfinementError::Unavailable { mechanism: Mechanism::ProcessCount, detail: "no cgroup".into() };
        let text = answer(&without, Some(&refused), &[("user".into(), "uid 1000".into())]);
        assert!(text.contains("covered   a network namespace"), "{text}");
        assert!(text.contains("missing, but the seccomp filter refuses network sockets"), "{text}");
        assert!(text.contains("MISSING   a process count limit"), "{text}");
        assert!(text.contains(Mechanism::ProcessCount.remedy()), "{text}");
        assert!(text.contains("do NOT start here: a process count limit required but unavailable"), "{text}");
        assert!(text.contains("user: uid 1000"));
        let whole = answer(&report, None, &[]);
        assert!(whole.contains("in force  the seccomp filter"), "{whole}");
        assert!(whole.contains("start here."), "{whole}");
    }
}
