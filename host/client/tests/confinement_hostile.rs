//! A hostile stdio server, confined by default, tries to read secrets, write outside its
//! directory, reach the network, fork without bound and allocate 4 GiB. Every attempt is
//! denied or contained, its ordinary tool still answers, and the client keeps working.
//! The attacks are tools of tests/fixtures/hostile_server.py (standard library Python).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod confined;

use std::io::ErrorKind;
use std::net::{Ipv4Addr, TcpListener, UdpSocket};

use confined::{Hostile, gone, hostile};
use serde_json::json;
use wasmgate_confine::{Mechanism, Network, ResourceLimits};

#[tokio::test]
async fn reading_shadow_a_home_key_or_another_providers_directory_is_denied() {
    let server = hostile(|c| c).await;
    let targets = [
        "/etc/shadow".into(),
        server.home_key().display().to_string(),
        server.other().join("secret.txt").display().to_string(),
        server.state.path().display().to_string(),
    ];
    for path in targets {
        let (ok, detail, _) = server.attack("read", json!({"path": path})).await;
        assert!(!ok, "read {path}: {detail}");
        assert!(detail == "EACCES" || detail == "EISDIR" || detail == "ENOENT", "read {path}: {detail}");
        server.assert_still_serving().await;
    }
    // TLS trust anchors are granted; the private keys beside them are not.
    if std::path::Path::new("/etc/ssl/certs").is_dir() {
        assert!(server.attack("list", json!({"path": "/etc/ssl/certs"})).await.0, "the trust anchors are readable");
    }
    if std::path::Path::new("/etc/ssl/private").is_dir() {
        let (ok, detail, _) = server.attack("list", json!({"path": "/etc/ssl/private"})).await;
        assert!(!ok && detail == "EACCES", "/etc/ssl/private: {detail}");
    }
    let own = server.workdir().join("mine.txt").display().to_string();
    assert_eq!(server.attack("read", json!({"path": own})).await.1, "my own data", "its own directory is readable");
    server.client.close().await;
}

#[tokio::test]
async fn writing_outside_the_working_directory_is_denied() {
    let server = hostile(|c| c).await;
    let outside =
        [server.state.path().join("escape.txt"), server.other().join("planted.txt"), "/tmp/escape.txt".into()];
    for path in &outside {
        let (ok, detail, _) = server.attack("write", json!({"path": path})).await;
        assert!(!ok, "write {}: {detail}", path.display());
        assert_eq!(detail, "EACCES", "write {}", path.display());
        assert!(!path.exists() || path == std::path::Path::new("/tmp/escape.txt"));
        server.assert_still_serving().await;
    }
    let inside = server.workdir().join("note.txt");
    assert!(server.attack("write", json!({"path": inside})).await.0, "its own directory is writable");
    assert!(inside.exists());
    server.client.close().await;
}

#[tokio::test]
async fn no_tcp_udp_or_icmp_reaches_a_listener_on_the_host() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    udp.set_nonblocking(true).unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let server = hostile(|c| c).await;
    let report = server.report.as_ref().unwrap();
    // A namespace where the system allows one; the seccomp filter always.
    assert!(report.seccomp, "{report:?}");
    assert!(!report.missing().contains(&Mechanism::NetworkNamespace), "{report:?}");
    let (ok, detail, _) = server.attack("connect", json!({"port": port})).await;
    assert!(!ok, "connect: {detail}");
    assert_eq!(listener.accept().map(|_| ()).unwrap_err().kind(), ErrorKind::WouldBlock, "nothing arrived");
    let (ok, detail, _) = server.attack("udp_send", json!({"port": udp_port})).await;
    assert!(!ok, "udp: {detail}");
    let mut buffer = [0u8; 64];
    assert_eq!(udp.recv(&mut buffer).unwrap_err().kind(), ErrorKind::WouldBlock, "no datagram arrived");
    let (ok, detail, _) = server.attack("icmp_echo", json!({})).await;
    assert!(!ok, "icmp: {detail}");
    // Each refused at the socket, by the filter: the namespace alone would let them be made.
    for attack in ["udp_send", "icmp_echo"] {
        assert_eq!(server.attack(attack, json!({"port": udp_port})).await.1, "EPERM", "{attack}");
    }
    server.assert_still_serving().await;
    server.client.close().await;
}

#[tokio::test]
async fn the_kernel_surface_no_server_needs_is_refused() {
    for server in &granted_and_isolated().await {
        let (ok, detail, _) = server.attack("kernel_surface", json!({})).await;
        assert!(!ok, "allowed: {detail}");
        server.assert_still_serving().await;
        server.client.close().await;
    }
}

#[tokio::test]
async fn a_granted_tcp_port_is_reachable_and_no_other() {
    let granted = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let refused = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    refused.set_nonblocking(true).unwrap();
    let port = granted.local_addr().unwrap().port();
    let server = hostile(|c| c.network(Network::Tcp { connect: vec![port], bind: vec![] })).await;
    assert!(!server.report.as_ref().unwrap().network_namespace, "a grant needs the host's interfaces");
    assert!(server.attack("connect", json!({"port": port})).await.0, "the granted port");
    granted.set_nonblocking(true).unwrap();
    assert!(granted.accept().is_ok(), "the connection arrived");
    let other = refused.local_addr().unwrap().port();
    let (ok, detail, _) = server.attack("connect", json!({"port": other})).await;
    assert!(!ok && detail == "EACCES", "another port: {detail}");
    assert_eq!(refused.accept().map(|_| ()).unwrap_err().kind(), ErrorKind::WouldBlock);
    server.client.close().await;
}

/// The hostile server twice: with a TCP grant, which keeps the host's network (a user
/// namespace of its own, but no network namespace), and isolated in user and network
/// namespaces of its own.
async fn granted_and_isolated() -> [Hostile; 2] {
    let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap().local_addr().unwrap().port();
    let granted = hostile(|c| c.network(Network::Tcp { connect: vec![port], bind: vec![] })).await;
    [granted, hostile(|c| c).await]
}

#[tokio::test]
async fn making_a_device_node_in_its_own_directory_is_denied() {
    // Run by root without a user namespace, the server would hold CAP_MKNOD, and a device
    // node for the disk would open everything. Landlock refuses the node before the
    // capability is even asked for.
    let servers = granted_and_isolated().await;
    for server in &servers {
        let node = server.workdir().join("disk");
        let (ok, detail, _) = server.attack("mknod", json!({"path": node})).await;
        assert!(!ok, "made a device node: {detail}");
        assert_eq!(detail, "EACCES", "refused by Landlock, whoever runs the server");
        assert!(!node.exists());
        assert!(server.attack("write", json!({"path": server.workdir().join("file")})).await.0, "files still may be");
        server.assert_still_serving().await;
        server.client.close().await;
    }
}

#[tokio::test]
async fn a_server_holds_no_capability_even_when_started_by_root() {
    // Without a user namespace, a root gateway's server would hold all of root's
    // capabilities; CAP_NET_RAW alone opens raw sockets, which Landlock's TCP rules do
    // not cover.
    for server in &granted_and_isolated().await {
        assert!(server.report.as_ref().unwrap().capabilities_dropped, "{:?}", server.report);
        let (ok, detail, _) = server.attack("raw_socket", json!({})).await;
        assert!(!ok && detail == "EPERM", "raw socket: {detail}");
        server.assert_still_serving().await;
        server.client.close().await;
    }
}

#[tokio::test]
async fn another_programs_unix_socket_is_out_of_reach() {
    // A socket in /dev/shm, one of the directories where other programs' sockets live
    // (the session bus, an SSH agent and the Docker socket live in the others), made in
    // a directory of its own there, and one beside the server's own directory, which
    // stays visible. Removed whatever happens.
    let shm = tempfile::Builder::new()
        .prefix("wasmgate-test-")
        .tempdir_in("/dev/shm")
        .expect("a writable /dev/shm: the test puts another program's socket there");
    let servers = granted_and_isolated().await;
    let mut listeners = Vec::new();
    for path in [shm.path().join("agent.sock"), servers[1].state.path().join("agent.sock")] {
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        listeners.push((path, listener));
    }
    for server in &servers {
        let report = server.report.as_ref().unwrap();
        assert!(report.unix_sockets_refused, "no grant of Unix sockets: {report:?}");
        for (path, _) in &listeners {
            let (ok, detail, _) = server.attack("unix_connect", json!({"path": path})).await;
            assert!(!ok && detail == "EPERM", "{}: {detail}", path.display());
        }
        server.assert_still_serving().await;
        server.client.close().await;
    }
    for (path, listener) in &listeners {
        assert!(listener.accept().is_err(), "{} was reached", path.display());
    }
}

#[tokio::test]
async fn an_unbounded_fork_stops_at_the_process_limit_and_its_children_die_with_the_server() {
    let limits = ResourceLimits { processes: Some(16), ..ResourceLimits::default() };
    let server = hostile(|c| c.limits(limits)).await;
    // The fixture stops at 200 forks on its own, so a broken limit fails the test
    // instead of the machine.
    let (ok, detail, pids) = server.attack("fork_bomb", json!({"cap": 200})).await;
    assert!(!ok, "fork was not bounded: {detail}");
    assert!(detail.starts_with("EAGAIN") && pids.len() < 16, "{detail}");
    server.assert_still_serving().await;
    server.client.close().await;
    // The children left the process group (setsid); the cgroup (or user namespace) end
    // finds them anyway.
    for pid in pids {
        assert!(gone(pid).await, "forked child {pid} survived the server");
    }
}

#[tokio::test]
async fn allocating_4_gib_fails_inside_the_server_and_it_keeps_serving() {
    let server = hostile(|c| c).await;
    let (ok, detail, _) = server.attack("allocate", json!({"bytes": 4u64 << 30})).await;
    assert!(!ok, "allocated 4 GiB: {detail}");
    assert_eq!(detail, "MemoryError");
    server.assert_still_serving().await;
    server.client.close().await;
}

#[tokio::test]
async fn required_confinement_does_not_start_a_server_that_nothing_would_bound() {
    confined::refuse_user_namespaces_if_asked();
    // Without a user namespace, as a user, with no cgroup to write, nothing would bound
    // the server's forks: under "required" it does not start, and the error says what to
    // change. Everywhere else a bound exists and it starts.
    let nothing_bounds = confined::mode().as_deref() == Some("user-no-userns-no-cgroup");
    let state = tempfile::tempdir().unwrap();
    let workdir = wasmgate_confine::provider_workdir(state.path(), "bounded").unwrap();
    let python = confined::python();
    let policy = confined::for_python(&python, &confined::fixtures());
    let config = |confinement| {
        wasmgate_client::StdioConfig::new("bounded", &python, &workdir)
            .arg(confined::fixtures().join("hostile_server.py"))
            .confinement(Some(confinement))
    };
    match wasmgate_client::StdioTransport::spawn(&config(policy.clone())) {
        Err(e) => {
            let message = e.to_string();
            assert!(nothing_bounds, "refused where a bound exists: {message}");
            assert!(message.contains("a process count limit required but unavailable"), "{message}");
            assert!(message.contains("Delegate=yes"), "names the fix: {message}");
        }
        Ok(transport) => {
            assert!(!nothing_bounds, "started with nothing bounding it: {:?}", transport.confinement());
            let report = transport.confinement().unwrap();
            assert_ne!(report.processes, wasmgate_confine::ProcessBound::None, "{report:?}");
        }
    }
    // Best effort starts it either way, and says what is missing.
    let started = wasmgate_client::StdioTransport::spawn(&config(policy.best_effort())).expect("best effort starts");
    let missing = started.confinement().unwrap().missing();
    assert_eq!(missing.contains(&Mechanism::ProcessCount), nothing_bounds, "{missing:?}");
}

/// This suite again, the way users run wasmgate: as an unprivileged user, and on a system
/// without user namespaces (simulated by a filter on the suite's own process), as root
/// and as a user with and without a cgroup delegated to it. Each run must pass whole: the
/// same attacks fail the same way. Run by root (as CI is), it drops to `nobody`; run by a
/// user, only the run without user namespaces is added.
#[test]
fn the_suite_holds_as_a_user_and_without_user_namespaces() {
    if confined::mode().is_some() {
        return;
    }
    let stage = Stage::new();
    let root = rustix::process::getuid().is_root();
    stage.run("no-userns", None, None);
    if root {
        stage.run("user", Some(NOBODY), None);
        let delegated = DelegatedCgroup::create(NOBODY);
        stage.run("user-no-userns", Some(NOBODY), delegated.as_ref());
        stage.run("user-no-userns-no-cgroup", Some(NOBODY), None);
    }
}

/// The unprivileged user of the re-runs.
const NOBODY: u32 = 65534;

/// A copy of this test binary and its fixtures that any user may read, and a Python
/// outside root's home.
struct Stage {
    dir: tempfile::TempDir,
    python: std::path::PathBuf,
}

impl Stage {
    fn new() -> Self {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::Builder::new().prefix("wasmgate-suite-").tempdir().unwrap();
        let open = |path: &std::path::Path, mode| std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
        open(dir.path(), 0o755).unwrap();
        std::fs::copy(std::env::current_exe().unwrap(), dir.path().join("suite")).unwrap();
        open(&dir.path().join("suite"), 0o755).unwrap();
        let fixtures = dir.path().join("fixtures");
        std::fs::create_dir(&fixtures).unwrap();
        open(&fixtures, 0o755).unwrap();
        std::fs::copy(confined::fixtures().join("hostile_server.py"), fixtures.join("hostile_server.py")).unwrap();
        open(&fixtures.join("hostile_server.py"), 0o644).unwrap();
        // The interpreter must be one an unprivileged user can run: a system one.
        let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
            .into_iter()
            .map(std::path::PathBuf::from)
            .find(|p| p.is_file())
            .expect("a system python3 (/usr/bin or /usr/local/bin) for the unprivileged runs");
        Self { dir, python }
    }

    /// Runs the whole suite in `mode`, as `user` if given, in `cgroup` if given.
    fn run(&self, mode: &str, user: Option<u32>, cgroup: Option<&DelegatedCgroup>) {
        let suite = self.dir.path().join("suite");
        let mut line = vec![suite.display().to_string(), "--test-threads=2".to_owned()];
        if mode == "user-no-userns-no-cgroup" {
            // Nothing bounds forks there; only the test of that refusal applies.
            line.extend([
                "--exact".to_owned(),
                "required_confinement_does_not_start_a_server_that_nothing_would_bound".to_owned(),
            ]);
        }
        if let Some(uid) = user {
            let ids = [format!("--reuid={uid}"), format!("--regid={uid}"), "--clear-groups".to_owned()];
            line.splice(0..0, ["setpriv".to_owned()].into_iter().chain(ids));
        }
        if let Some(cgroup) = cgroup {
            // Joins the delegated group first, then becomes the user.
            let joined = format!("echo $$ > {} && exec \"$@\"", cgroup.dir.join("cgroup.procs").display());
            line.splice(0..0, ["sh".to_owned(), "-c".to_owned(), joined, "sh".to_owned()]);
        }
        let output = std::process::Command::new(&line[0])
            .args(&line[1..])
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("WASMGATE_TEST_MODE", mode)
            .env("WASMGATE_TEST_PYTHON", &self.python)
            .env("WASMGATE_TEST_FIXTURES", self.dir.path().join("fixtures"))
            .current_dir(self.dir.path())
            .output()
            .unwrap();
        let shown = format!("{}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(output.status.success(), "the suite failed in mode {mode}:\n{shown}");
        assert!(shown.contains("test result: ok") && !shown.contains(" 0 passed"), "{mode}: {shown}");
        let summary = shown.lines().find(|line| line.starts_with("test result")).unwrap_or_default();
        eprintln!("mode {mode}: {summary}");
    }
}

/// A v1 `pids` group of its own for `uid`, as an administrator (or systemd's
/// `Delegate=yes`) delegates one; removed when dropped. `None` where there is no v1
/// `pids` hierarchy.
struct DelegatedCgroup {
    dir: std::path::PathBuf,
}

impl DelegatedCgroup {
    fn create(uid: u32) -> Option<Self> {
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        let mount = mounts.lines().find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.get(2) == Some(&"cgroup") && fields.get(3)?.split(',').any(|o| o == "pids")).then(|| fields[1])
        })?;
        let dir = std::path::Path::new(mount).join(format!("wasmgate-test-{}", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        let owner = Some(rustix::process::Uid::from_raw(uid));
        let group = Some(rustix::process::Gid::from_raw(uid));
        for entry in [dir.clone(), dir.join("cgroup.procs"), dir.join("tasks"), dir.join("pids.max")] {
            rustix::fs::chown(&entry, owner, group).unwrap();
        }
        Some(Self { dir })
    }
}

impl Drop for DelegatedCgroup {
    fn drop(&mut self) {
        // Its members have exited with the suite; the kernel frees an emptied group a
        // moment later, so a few tries. A group left behind is harmless and empty.
        for _ in 0..50 {
            if let Ok(entries) = std::fs::read_dir(&self.dir) {
                for entry in entries.flatten().filter(|e| e.path().is_dir()) {
                    let _ = std::fs::remove_dir(entry.path());
                }
            }
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

/// The hostile server granted `hosts`, and the records of its connections and lookups;
/// `None` in the mode without user namespaces, where a server granted hosts must not
/// start (it is checked here).
async fn granted(
    hosts: &[String],
) -> Option<(confined::Hostile, std::sync::mpsc::Receiver<wasmgate_egress::EgressRecord>)> {
    use wasmgate_egress::{EgressGrant, EgressObserver, HostGrant};
    let (sender, records) = std::sync::mpsc::channel();
    let observer: EgressObserver = std::sync::Arc::new(move |record| {
        let _ = sender.send(record);
    });
    let hosts = hosts.iter().map(|h| HostGrant::parse(h).unwrap()).collect();
    let started = confined::hostile_with(|c| c, Some(EgressGrant { hosts, observer: Some(observer) })).await;
    if confined::mode().is_some_and(|mode| mode.starts_with("user-no-userns")) {
        assert!(started.is_err(), "no namespace, no start");
        return None;
    }
    Some((started.unwrap(), records))
}

/// A server granted an address reaches it by a plain connect, without the proxy (a
/// database client, Node's `fetch` without the proxy variables): in its namespace every
/// address routes to listeners the gateway holds, one per port granted by address. The
/// gateway connects to what it admits; anything else is reset or refused at once.
#[tokio::test]
async fn a_server_granted_an_address_reaches_it_by_a_plain_connect_and_nothing_else() {
    use wasmgate_egress::EgressKind;
    // "pong!" to each "ping!", at `address`; its port.
    let pong = async |address: std::net::IpAddr| {
        let listening = tokio::net::TcpListener::bind((address, 0)).await.unwrap();
        let port = listening.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listening.accept().await {
                let mut ping = [0u8; 5];
                if tokio::io::AsyncReadExt::read_exact(&mut stream, &mut ping).await.is_ok() {
                    let _ = tokio::io::AsyncWriteExt::write_all(&mut stream, b"pong!").await;
                }
            }
        });
        port
    };
    let port = pong(Ipv4Addr::LOCALHOST.into()).await;
    let v6_port = pong(std::net::Ipv6Addr::LOCALHOST.into()).await;
    let wild = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    wild.set_nonblocking(true).unwrap();
    let wild_port = wild.local_addr().unwrap().port();
    let closed_port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap().local_addr().unwrap().port();
    let hosts = [format!("127.0.0.1:{port}"), format!("*:{wild_port}"), format!("[::1]:{v6_port}")];
    let Some((server, records)) = granted(&hosts).await else {
        return;
    };
    let exchange = |host: &str, port: u16| server.attack("tcp_exchange", json!({"host": host, "port": port}));
    for (host, port) in [("127.0.0.1", port), ("::1", v6_port)] {
        let (ok, answer, _) = exchange(host, port).await;
        assert!(ok && answer == "pong!", "the granted address {host}, by a plain connect: {answer}");
        let record = confined::next_record(&records, 30_000).await.unwrap();
        assert_eq!((record.kind, record.port, record.bytes_up, record.bytes_down), (EgressKind::Direct, port, 5, 5));
        assert_eq!(record.address.map(|a| a.ip().to_string()).as_deref(), Some(host), "{record:?}");
        assert!(record.refused.is_none(), "{record:?}");
    }
    // The same port at another address, and a wildcard's port at a loopback address:
    // accepted in the namespace, then reset by the gateway.
    for (host, port, why) in [
        ("10.0.0.1", port, format!("10.0.0.1:{port} is not a granted address")),
        ("127.0.0.1", wild_port, "127.0.0.1 is not a public address".to_owned()),
        ("2001:db8::1", port, format!("[2001:db8::1]:{port} is not a granted address")),
        ("::1", port, format!("[::1]:{port} is not a granted address")),
    ] {
        let (ok, detail, _) = exchange(host, port).await;
        assert!(!ok && (detail == "ECONNRESET" || detail == "EPIPE"), "{host}:{port}: {detail}");
        let record = confined::next_record(&records, 30_000).await.unwrap();
        assert!(record.refused.as_deref().is_some_and(|r| r.contains(&why)), "{host}:{port}: {record:?}");
    }
    // A port no grant names, by IPv4 or IPv6, and from a thread that is not the
    // server's main one: refused at once in the namespace by the gateway's answer to the
    // connect, before a packet is sent, and reported.
    for (host, port, thread) in
        [("127.0.0.1", closed_port, false), ("::1", closed_port, false), ("127.0.0.1", closed_port, true)]
    {
        let why = format!("no grant names port {closed_port}");
        let args = json!({"host": host, "port": port, "thread": thread});
        let (ok, detail, _) = server.attack("tcp_exchange", args).await;
        assert!(!ok && detail == "ECONNREFUSED", "{host}:{port}: {detail}");
        let record = confined::next_record(&records, 30_000).await.unwrap();
        assert_eq!((record.kind, record.address.map(|a| a.port())), (EgressKind::Direct, Some(port)), "{record:?}");
        assert!(record.refused.as_deref().is_some_and(|r| r.contains(&why)), "{host}:{port}: {record:?}");
    }
    assert_eq!(wild.accept().map(|_| ()).unwrap_err().kind(), ErrorKind::WouldBlock, "nothing reached it");
    server.assert_still_serving().await;
    server.client.close().await;
}

/// A server granted a name asks the gateway's name service, whatever name server it is
/// configured with: a name no grant names is refused at once, a granted one that does
/// not resolve to a public address too (`localhost.`, which the server's hosts file does
/// not hold with its dot, and the gateway resolves from its own: no outside resolver is
/// asked), and each query is audited.
#[tokio::test]
async fn a_server_resolves_only_granted_names_through_the_gateway() {
    use wasmgate_egress::EgressKind;
    let Some((server, records)) = granted(&["localhost:5432".to_owned()]).await else { return };
    for (name, why) in [
        ("exfil.attacker.invalid", "exfil.attacker.invalid is not a granted name"),
        ("localhost.", "localhost resolves to no public IPv4 address"),
    ] {
        let (ok, detail, _) = server.attack("resolve", json!({"name": name})).await;
        assert!(!ok && detail.starts_with("gaierror"), "{name}: {detail}");
        let record = confined::next_record(&records, 30_000).await.unwrap();
        assert_eq!((record.kind, record.host.as_str()), (EgressKind::Lookup, name.trim_end_matches('.')), "{record:?}");
        assert!(record.refused.as_deref().is_some_and(|r| r.contains(why)), "{name}: {record:?}");
        // The resolver may ask again: those are refused alike.
        while let Some(again) = confined::next_record(&records, 200).await {
            assert!(again.host == name.trim_end_matches('.') && again.refused.is_some(), "{again:?}");
        }
    }
    // A name the server's own hosts file has never reaches the gateway.
    let (ok, detail, _) = server.attack("resolve", json!({"name": "localhost"})).await;
    assert!(ok && detail == "127.0.0.1", "{detail}");
    assert!(confined::next_record(&records, 500).await.is_none(), "no query for it");
    server.assert_still_serving().await;
    server.client.close().await;
}

/// A wildcard grant reaches public addresses only: a server granted any address on a
/// port (`*:PORT`) and the names under `localhost` reaches none of this host's loopback
/// or a private address through the proxy, by name or literally.
#[tokio::test]
async fn a_server_granted_any_public_address_reaches_no_loopback_or_private_one() {
    let listening = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    listening.set_nonblocking(true).unwrap();
    let port = listening.local_addr().unwrap().port();
    let Some((server, records)) = granted(&[format!("*:{port}"), format!("*.localhost:{port}")]).await else {
        return;
    };
    let targets = [
        (format!("127.0.0.1:{port}"), "127.0.0.1 is not a public address"),
        (format!("localhost:{port}"), "not public"),
        (format!("10.0.0.1:{port}"), "10.0.0.1 is not a public address"),
        (format!("[::1]:{port}"), "::1 is not a public address"),
    ];
    for (target, why) in &targets {
        let (ok, detail, _) = server.attack("proxy_connect", json!({"target": target})).await;
        assert!(!ok && detail.contains("403"), "{target}: {detail}");
        let record = confined::next_record(&records, 30_000).await.unwrap();
        assert!(record.refused.as_deref().is_some_and(|r| r.contains(why)), "{target}: {record:?}");
    }
    assert_eq!(listening.accept().map(|_| ()).unwrap_err().kind(), ErrorKind::WouldBlock, "nothing reached it");
    server.assert_still_serving().await;
    server.client.close().await;
}

#[tokio::test]
async fn a_server_granted_one_host_reaches_it_through_the_proxy_and_nothing_else() {
    use wasmgate_egress::{EgressGrant, EgressObserver, HostGrant};
    let granted = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = granted.local_addr().unwrap().port();
    let other = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    other.set_nonblocking(true).unwrap();
    let other_port = other.local_addr().unwrap().port();
    // The granted host answers one plain HTTP request.
    let responder = wasmgate_testing::answer_once(granted, b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello");
    let (sender, records) = std::sync::mpsc::channel();
    let observer: EgressObserver = std::sync::Arc::new(move |record| {
        let _ = sender.send(record);
    });
    let grant =
        EgressGrant { hosts: vec![HostGrant::parse(&format!("127.0.0.1:{port}")).unwrap()], observer: Some(observer) };
    let started = confined::hostile_with(|c| c, Some(grant)).await;
    if confined::mode().is_some_and(|mode| mode.starts_with("user-no-userns")) {
        // No network namespace can be made: the proxy's listener would be on the host's
        // loopback, so a server granted hosts does not start.
        let message = started.err().expect("no namespace, no start").to_string();
        assert!(message.contains("network namespace") && message.contains("proxy"), "{message}");
        return;
    }
    let server = started.unwrap();
    assert!(server.report.as_ref().unwrap().network_namespace);
    let names = json!({"names": ["HTTPS_PROXY", "NODE_USE_ENV_PROXY", "NO_PROXY"]});
    let (_, environment, _) = server.attack("environment", names).await;
    assert_eq!(environment, "HTTPS_PROXY=http://127.0.0.1:3128 NODE_USE_ENV_PROXY=1 NO_PROXY=", "Node's fetch too");
    let (ok, detail, _) = server.attack("http_get", json!({"url": format!("http://127.0.0.1:{port}/calendar")})).await;
    assert!(ok && detail == "hello", "the granted host: {detail}");
    let head = responder.join().unwrap();
    assert!(head.starts_with("GET /calendar HTTP/1.1\r\n"), "the origin gets origin form: {head}");
    assert!(head.contains("Connection: close\r\n"), "one request per connection: {head}");
    for target in [format!("127.0.0.1:{other_port}"), format!("localhost:{port}"), "example.com:443".to_owned()] {
        let (ok, detail, _) = server.attack("proxy_connect", json!({"target": target})).await;
        assert!(!ok && detail.contains("403"), "{target}: {detail}");
    }
    // Around the proxy: the host's loopback is not there, and a port no grant names is
    // refused in the namespace (a plain connect to the granted address is the gateway's:
    // `a_server_granted_an_address_reaches_it_by_a_plain_connect_and_nothing_else`).
    let (ok, detail, _) = server.attack("connect", json!({"port": other_port})).await;
    assert!(!ok, "a direct connection to {other_port}: {detail}");
    // A datagram goes nowhere: the namespace's loopback is its own.
    let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    udp.set_nonblocking(true).unwrap();
    server.attack("udp_send", json!({"port": udp.local_addr().unwrap().port()})).await;
    assert_eq!(udp.recv(&mut [0u8; 64]).unwrap_err().kind(), ErrorKind::WouldBlock, "no datagram arrived");
    assert_eq!(other.accept().map(|_| ()).unwrap_err().kind(), ErrorKind::WouldBlock, "nothing reached the other");
    server.assert_still_serving().await;
    server.client.close().await;
    // One record per connection, each sent when its connection has ended.
    let wait = std::time::Duration::from_secs(30);
    let mut collected = Vec::new();
    while collected.len() < 5
        && let Some(record) = confined::next_record(&records, wait.as_millis() as u64).await
    {
        collected.push(record);
    }
    let records = collected;
    let allowed: Vec<_> = records.iter().filter(|r| r.refused.is_none()).collect();
    assert_eq!(allowed.len(), 1, "{records:?}");
    assert_eq!(allowed[0].address, Some(std::net::SocketAddr::from((Ipv4Addr::LOCALHOST, port))));
    assert!(allowed[0].bytes_up > 0 && allowed[0].bytes_down > 0, "{:?}", allowed[0]);
    // The three the proxy refused, and the direct connect to the other port.
    assert_eq!(records.iter().filter(|r| r.refused.is_some()).count(), 4, "{records:?}");
    let other = format!("no grant names port {other_port}");
    assert!(records.iter().any(|r| r.refused.as_deref().is_some_and(|why| why.starts_with(&other))), "{records:?}");
}
