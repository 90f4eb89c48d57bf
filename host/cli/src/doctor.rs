//! `wasmgate doctor`: what this machine can enforce on a confined stdio server, mechanism
//! by mechanism, and how to enable what is missing.
//!
//! Measured, not guessed: `true` is started twice under the default confinement, once
//! best effort (what the kernel applied) and once required (whether a provider under
//! `confinement = "required"` starts here). The system settings that decide the answer
//! (user namespaces, cgroups) are shown beside it. Then egress by host: a server granted
//! hosts is started once more (the proxy's listener, the route and a listener for
//! direct connects), and each grant of the configuration's providers, if there is one,
//! is shown with the way it is reached.

use wasmgate_confine::{Confinement, ConfinementError, ConfinementReport, Mechanism, Network, ProcessBound};
use wasmgate_egress::{Granted, HostGrant};
use wasmgate_gateway::ProviderKind;

/// Arguments of `wasmgate doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    config: crate::open::ConfigArgs,
}

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
pub fn run(args: &DoctorArgs) -> anyhow::Result<bool> {
    let dir = tempfile::Builder::new().prefix("wasmgate-doctor-").tempdir()?;
    let workdir = dir.path().join("probe");
    let measured = wasmgate_confine::probe(&Confinement::default().best_effort(), &workdir)?;
    let required = wasmgate_confine::probe(&Confinement::default(), &workdir);
    print!("{}", answer(&measured, required.as_ref().err(), &system()));
    // A server granted hosts: the proxy's listener, the route, a listener on port 443.
    let network = Network::Proxied { port: wasmgate_egress::PROXY_PORT, transparent: vec![443], dns: true };
    let granted = wasmgate_confine::probe(&Confinement { network, ..Confinement::default().best_effort() }, &workdir);
    let grants = match args.config.load() {
        Ok(config) => match wasmgate_policy::Policy::load(&config.policy) {
            Ok(policy) => Ok(config
                .providers
                .iter()
                .filter_map(|(name, provider)| {
                    let hosts = &policy.provider(name)?.network_hosts;
                    (!hosts.is_empty()).then(|| (name.clone(), provider.kind(), hosts.clone()))
                })
                .collect()),
            Err(e) => Err(format!("the policy cannot be read: {e}")),
        },
        Err(e) => Err(e.to_string()),
    };
    print!("{}", egress(granted.as_ref().err(), wasmgate_confine::connects_answered(), &grants));
    Ok(required.is_ok())
}

/// A provider's grants: its name, its kind, its `network_hosts`.
type Grants = Vec<(String, ProviderKind, Vec<HostGrant>)>;

/// Egress by host on this machine (whether the gateway `answers` each connect), and the
/// way each grant is reached.
fn egress(refused: Option<&ConfinementError>, answers: bool, grants: &Result<Grants, String>) -> String {
    let mut out = String::from("\nEgress by host (a stdio server granted `network_hosts`):\n");
    match refused {
        None => out.push_str(
            "  in force  the egress proxy, and plain connects to addresses (measured by starting `true` granted hosts)\n",
        ),
        Some(e) => out.push_str(&format!("  MISSING   a stdio server granted hosts does not start here: {e}\n")),
    }
    match (refused, answers) {
        (Some(_), _) => {}
        (None, true) => out.push_str(
            "  in force  every connect answered by the gateway: one to a port no grant names is refused and audited\n",
        ),
        (None, false) => out.push_str(
            "  partly    a connect to a port no grant names is refused by the kernel, unaudited (the gateway answers \
             connects on Linux 5.6 and later, x86-64 and aarch64)\n",
        ),
    }
    match grants {
        Ok(grants) if grants.is_empty() => out.push_str("  (no provider of the configuration is granted hosts)\n"),
        Ok(grants) => {
            for (name, kind, hosts) in grants {
                for grant in hosts {
                    out.push_str(&format!("  {name}: {grant}: {}\n", way(kind, grant)));
                }
            }
        }
        Err(why) => out.push_str(&format!("  (the grants of a configuration are shown with one: {why})\n")),
    }
    out
}

/// How a provider of `kind` reaches what `grant` names.
fn way(kind: &ProviderKind, grant: &HostGrant) -> &'static str {
    let direct = grant.port != wasmgate_egress::PROXY_PORT;
    match (kind, grant.granted()) {
        // The server's namespace has IPv6 where the kernel does.
        (ProviderKind::Stdio, Granted::Address(std::net::IpAddr::V6(_)))
            if !std::path::Path::new("/proc/net/if_inet6").exists() =>
        {
            "through the proxy only (HTTPS_PROXY, CONNECT): this kernel has no IPv6 for a plain connect"
        }
        (ProviderKind::Stdio, _) if !direct => {
            "through the proxy only (HTTPS_PROXY, CONNECT): its port is the proxy's own in the namespace"
        }
        (ProviderKind::Stdio, Granted::Address(_)) => "a plain connect to the address, or the proxy",
        (ProviderKind::Stdio, Granted::Any) => "a plain connect to any public address on the port, or the proxy",
        (ProviderKind::Stdio, Granted::Name(_) | Granted::Under(_)) => {
            "a plain connect to the addresses the gateway's name service answers for it, or the proxy"
        }
        (ProviderKind::Component, Granted::Under(_)) => {
            "nothing: a component's connection is judged by its address, which does not say the name"
        }
        (ProviderKind::Component, _) => "wasi:sockets, each connection checked by its address",
        (ProviderKind::Http, _) => "the gateway's own requests to the server (OAuth discovery among them)",
    }
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

    #[test]
    fn each_grant_is_shown_with_the_way_it_is_reached() {
        let hosts: Vec<HostGrant> = ["127.0.0.1:5432", "*:443", "db.example.com:5432", "*.example.org:443", "[::1]:80"]
            .iter()
            .map(|h| HostGrant::parse(h).unwrap())
            .collect();
        let grants = Ok(vec![
            ("db".to_owned(), ProviderKind::Stdio, hosts.clone()),
            ("web".into(), ProviderKind::Component, hosts),
        ]);
        let text = egress(None, true, &grants);
        assert!(text.contains("in force  the egress proxy, and plain connects to addresses"), "{text}");
        assert!(text.contains("db: 127.0.0.1:5432: a plain connect to the address, or the proxy"), "{text}");
        assert!(text.contains("db: *:443: a plain connect to any public address on the port, or the proxy"), "{text}");
        assert!(text.contains("db: db.example.com:5432: a plain connect to the addresses the gateway's name service"));
        assert!(text.contains("web: *.example.org:443: nothing: a component's connection is judged by its address"));
        let v6 = if std::path::Path::new("/proc/net/if_inet6").exists() {
            "db: [::1]:80: a plain connect to the address, or the proxy"
        } else {
            "db: [::1]:80: through the proxy only"
        };
        assert!(text.contains(v6), "{text}");
        assert!(text.contains("in force  every connect answered by the gateway"), "{text}");
        let text = egress(None, false, &grants);
        assert!(text.contains("partly    a connect to a port no grant names is refused by the kernel, unaudited"));
        let refused = ConfinementError::Unavailable { mechanism: Mechanism::NetworkNamespace, detail: "none".into() };
        let text = egress(Some(&refused), true, &Err("no configuration at wasmgate.toml".into()));
        assert!(text.contains("MISSING   a stdio server granted hosts does not start here"), "{text}");
        assert!(text.contains("(the grants of a configuration are shown with one: no configuration at"), "{text}");
    }
}
