//! A WASM tool granted one host by the policy (`network_hosts`), end to end through the
//! gateway: the sample `http-get` component reaches that host and nothing else.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::{Ipv4Addr, TcpListener};

use common::{stderr, stdout, wasmgate};

#[test]
fn a_component_reaches_the_host_its_policy_grants_and_no_other() {
    let granted = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = granted.local_addr().unwrap().port();
    let other = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    other.set_nonblocking(true).unwrap();
    let other_port = other.local_addr().unwrap().port();
    let server = wasmgate_testing::answer_once(granted, b"HTTP/1.0 200 OK\r\n\r\nLunch with Sam at noon.");

    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let config = format!(
        "state_dir = \"state\"\npolicy = \"policy.toml\"\n\n[providers.web]\ncomponent = {:?}\n",
        wasmgate_guests::HTTP_GET_PATH
    );
    std::fs::write(dir.join("wasmgate.toml"), config).unwrap();
    let policy =
        format!("[providers.web]\nnetwork_hosts = [\"127.0.0.1:{port}\"]\n\n[providers.web.tools]\nget = \"allow\"\n");
    std::fs::write(dir.join("policy.toml"), policy).unwrap();
    let review = wasmgate(dir, &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));

    let get =
        |url: String| wasmgate(dir, &["call", "--unattended", "web__get", "--args", &format!(r#"{{"url": "{url}"}}"#)]);
    let fetched = get(format!("http://127.0.0.1:{port}/agenda"));
    assert!(fetched.status.success(), "{}{}", stdout(&fetched), stderr(&fetched));
    assert!(stdout(&fetched).contains("Lunch with Sam at noon."), "{}", stdout(&fetched));
    assert!(server.join().unwrap().starts_with("GET /agenda HTTP/1.0"));

    // Another port of the same address, and the granted address by a name (no lookups
    // without a name granted): both refused by the sandbox, as error results.
    for url in [format!("http://127.0.0.1:{other_port}/"), format!("http://localhost:{port}/")] {
        let refused = get(url.clone());
        assert_eq!(refused.status.code(), Some(2), "{url}: {}", stdout(&refused));
        assert!(stdout(&refused).contains("connecting to"), "{url}: {}", stdout(&refused));
    }
    assert_eq!(other.accept().map(|_| ()).unwrap_err().kind(), std::io::ErrorKind::WouldBlock, "nothing else");
}
