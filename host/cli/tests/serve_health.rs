//! `/healthz` and `/readyz` of `wasmgate serve --http`: it lives while it runs, and is
//! ready only while every `required` provider is up.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{serve_http, setup, stderr, wasmgate};
use wasmgate_testing::children;

/// A wrapper of the echo fixture server that will not start while `down` exists beside it.
const WRAPPER: &str = r#"
import os, runpy, sys
here = os.path.dirname(os.path.abspath(__file__))
if os.path.exists(os.path.join(here, "down")):
    sys.exit(3)
runpy.run_path(sys.argv[1], run_name="__main__")
"#;

async fn status(url: &str, path: &str) -> u16 {
    let url = url.replace("/mcp", path);
    reqwest::Client::new().get(url).send().await.unwrap().status().as_u16()
}

/// Makes echo a required provider started through [`WRAPPER`] in `dir/wrapper`.
fn required_echo(dir: &Path) -> std::path::PathBuf {
    let wrapper = dir.join("wrapper");
    std::fs::create_dir(&wrapper).unwrap();
    std::fs::write(wrapper.join("wrapper.py"), WRAPPER).unwrap();
    let config = dir.join("wasmgate.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let (head, args) = text.split_once("args = [").unwrap();
    let text = format!("{head}required = true\nargs = [{:?}, {args}", wrapper.join("wrapper.py").display().to_string());
    std::fs::write(&config, text).unwrap();
    let policy = dir.join("policy.toml");
    let rules = std::fs::read_to_string(&policy).unwrap();
    let rules = rules.replace("read_paths = [", &format!("read_paths = [{:?}, ", wrapper.display().to_string()));
    std::fs::write(&policy, rules).unwrap();
    wrapper
}

#[tokio::test]
async fn readyz_is_503_while_a_required_provider_is_down_and_healthz_stays_200() {
    let dir = setup();
    let wrapper = required_echo(dir.path());
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    let (served, url) = serve_http(dir.path(), &[]);
    assert_eq!(status(&url, "/healthz").await, 200);
    assert_eq!(status(&url, "/readyz").await, 200);

    // The echo server dies and cannot start again.
    std::fs::write(wrapper.join("down"), "").unwrap();
    for child in children(served.0.id()) {
        let _ = std::process::Command::new("kill").args(["-KILL", &child.to_string()]).status();
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while status(&url, "/readyz").await != 503 {
        assert!(Instant::now() < deadline, "/readyz never said the required provider is down");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status(&url, "/healthz").await, 200, "it still lives");
}
