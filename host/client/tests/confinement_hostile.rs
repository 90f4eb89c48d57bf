//! A hostile stdio server, confined by default, tries to read secrets, write outside its
//! directory, reach the network, fork without bound and allocate 4 GiB. Every attempt is
//! denied or contained, its ordinary tool still answers, and the client keeps working.
//! The attacks are tools of tests/fixtures/hostile_server.py (standard library Python).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod confined;

use std::io::ErrorKind;
use std::net::{Ipv4Addr, TcpListener};

use confined::{Hostile, gone, hostile};
use serde_json::json;
use wasmgate_client::confine::Mechanism;
use wasmgate_client::{Network, ResourceLimits};

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
async fn connecting_to_a_loopback_listener_is_denied() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = hostile(|c| c).await;
    assert!(server.report.as_ref().unwrap().network_namespace, "this kernel allows a network namespace");
    let (ok, detail, _) = server.attack("connect", json!({"port": port})).await;
    assert!(!ok, "connect: {detail}");
    assert_eq!(listener.accept().map(|_| ()).unwrap_err().kind(), ErrorKind::WouldBlock, "nothing arrived");
    server.assert_still_serving().await;
    server.client.close().await;
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

/// The hostile server twice: with a TCP grant, which keeps the host's network and so
/// gets no user namespace (a root gateway's server stays in the initial one), and
/// isolated in user and network namespaces of its own.
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
    // (the session bus, an SSH agent and the Docker socket live in the others). Made in
    // a directory of its own there, removed whatever happens.
    let shm = tempfile::Builder::new()
        .prefix("wasmgate-test-")
        .tempdir_in("/dev/shm")
        .expect("a writable /dev/shm: the test puts another program's socket there");
    let path = shm.path().join("agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let servers = granted_and_isolated().await;
    let [granted, isolated] = &servers;
    assert!(isolated.report.as_ref().unwrap().socket_dirs_hidden, "with a user namespace a server always can");
    for server in &servers {
        let report = server.report.as_ref().unwrap();
        let (ok, detail, _) = server.attack("unix_connect", json!({"path": path})).await;
        if report.socket_dirs_hidden {
            // An empty tmpfs of mode 0 is there instead: no way in, no socket.
            assert!(!ok && (detail == "EACCES" || detail == "ENOENT"), "a hidden directory's socket: {detail}");
        } else {
            // A server granted the network, started by a gateway that is not root, gets
            // no mount namespace; nothing requires one there (CONFINEMENT.md).
            assert!(!report.network_namespace, "{report:?}");
            assert!(!report.missing().contains(&Mechanism::UnixSocketPaths), "{report:?}");
        }
        server.assert_still_serving().await;
        server.client.close().await;
    }
    let reached = listener.accept().is_ok();
    let granted_hidden = granted.report.as_ref().unwrap().socket_dirs_hidden;
    assert_eq!(reached, !granted_hidden, "only a server that could not hide them reached it");
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
