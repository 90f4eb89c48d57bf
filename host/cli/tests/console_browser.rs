//! The console in a real browser: headless Chromium driven through chromedriver (both
//! Debian packages, installed by scripts/install-peers.sh), against `serve --http` and
//! the test issuer on loopback.
//!
//! A reviewer signs in (PKCE, through the issuer's sign-in form), sees a tool whose
//! definition changed, with its diff and a hostile description shown as text (no script
//! runs, no element is made of it), approves it (served without a restart), approves one
//! call another caller waits on and denies a second; a form posted without its CSRF token
//! is refused; an admin filters the audit log; a caller who is no reviewer is refused.
//!
//! The screenshots it takes are the ones docs/CONSOLE.md shows: with
//! `WASMGATE_SCREENSHOTS=DIR` they are written there (`scripts/screenshots.sh`), else to a
//! temporary directory, so a test run never rewrites tracked files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead as _, BufReader};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::console::{HOSTILE, console_setup, create};
use common::{serve_http, stderr, wasmgate};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use wasmgate_client::{ClientConfig, HttpConfig, HttpTransport, McpClient};
use wasmgate_oauth::SecretSource;
use wasmgate_testing::{Issuer, Killed};

/// How long the browser waits for what a page should show.
const WAIT: Duration = Duration::from_secs(30);

/// chromedriver, on a port it chose, in a process group of its own with the browsers it
/// starts: the whole group is killed when it is dropped, so a failed test leaves no
/// browser behind.
struct Driver {
    child: Killed,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(group) = rustix::process::Pid::from_raw(self.child.0.id() as i32) {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
}

fn installed(name: &str) -> PathBuf {
    ["/usr/bin", "/usr/local/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|path| path.exists())
        .unwrap_or_else(|| {
            panic!("{name} is not installed: run scripts/install-peers.sh (Debian's chromium and chromium-driver)")
        })
}

fn chromedriver() -> Driver {
    let mut child = Command::new(installed("chromedriver"))
        .arg("--port=0")
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.split("started successfully on port ").nth(1).map(|p| p.trim_end_matches('.').to_owned()))
        .expect("chromedriver says its port");
    std::thread::spawn(move || lines.for_each(drop));
    Driver { child: Killed(child), url: format!("http://127.0.0.1:{port}") }
}

/// A headless Chromium with a profile of its own in `profile`.
async fn browser(driver: &Driver, profile: &Path) -> Client {
    let mut args = vec![
        "--headless=new".to_owned(),
        "--disable-gpu".into(),
        "--disable-dev-shm-usage".into(),
        "--no-proxy-server".into(),
        "--window-size=1280,1000".into(),
        format!("--user-data-dir={}", profile.display()),
    ];
    // Chromium's own sandbox needs user namespaces it cannot have as root.
    if rustix::process::geteuid().is_root() {
        args.push("--no-sandbox".into());
    }
    let options = json!({"binary": installed("chromium").display().to_string(), "args": args});
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("goog:chromeOptions".into(), options);
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector).capabilities(capabilities).connect(&driver.url).await.unwrap()
}

/// Where screenshots go.
fn shots() -> (PathBuf, Option<tempfile::TempDir>) {
    match std::env::var_os("WASMGATE_SCREENSHOTS") {
        Some(dir) => {
            std::fs::create_dir_all(&dir).unwrap();
            (PathBuf::from(dir), None)
        }
        None => {
            let dir = tempfile::tempdir().unwrap();
            (dir.path().to_owned(), Some(dir))
        }
    }
}

async fn shoot(browser: &Client, dir: &Path, name: &str) {
    let png = browser.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"), "{name} is a PNG");
    std::fs::write(dir.join(name), png).unwrap();
}

/// Signs `user` in through the issuer's form, from the console's front page.
async fn sign_in(browser: &Client, base: &str, user: &str) {
    browser.goto(&format!("{base}/console")).await.unwrap();
    let field = browser.wait().at_most(WAIT).for_element(Locator::Id("user")).await.unwrap();
    field.send_keys(user).await.unwrap();
    browser.find(Locator::Id("sign-in")).await.unwrap().click().await.unwrap();
}

/// The text of the element `css` once the page has it. A find or read that fails is
/// tried again until [`WAIT`] has passed, then fails the test with its error: a navigation
/// under way interrupts one (a sign-in lands on a page that refreshes to the console).
async fn text_of(browser: &Client, css: &str) -> String {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let read = async { browser.wait().at_most(left).for_element(Locator::Css(css)).await?.text().await }.await;
        match read {
            Ok(text) => return text,
            Err(e) if std::time::Instant::now() >= deadline => panic!("{css}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Loads `url` until the page has `css` (at most 60 s).
async fn until(browser: &Client, url: &str, css: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        browser.goto(url).await.unwrap();
        if browser.find(Locator::Css(css)).await.is_ok() {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{url} never showed {css}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What no script on the page could have hidden: whether any hostile script ran, and how
/// many `script` and `img` elements the page has.
async fn untouched(browser: &Client) {
    let ran = browser.execute("return typeof window.__pwned;", vec![]).await.unwrap();
    assert_eq!(ran, json!("undefined"), "a provider's script ran");
    let made = browser
        .execute("return document.querySelectorAll('script, img, a[href^=\"javascript\"]').length;", vec![])
        .await
        .unwrap();
    assert_eq!(made, json!(0), "a provider's text became elements");
}

#[tokio::test]
async fn a_reviewer_and_an_admin_use_the_console_in_chromium() {
    let issuer = Issuer::start().await;
    // The echo tool is reviewed with a plain description; the gateway then starts with a
    // hostile one, so the console shows a changed definition and its diff.
    let dir = console_setup(&issuer, "Echoes the text.");
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    let config = dir.path().join("wasmgate.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let changed = text.replacen("\"Echoes the text.\"", &format!("{HOSTILE:?}"), 1);
    assert_ne!(changed, text);
    std::fs::write(&config, changed).unwrap();
    let (_served, url) = serve_http(dir.path(), &[]);
    let base = url.trim_end_matches("/mcp").to_owned();
    let bob = {
        let token = issuer.token("bob", &["staff"]);
        let http = HttpConfig { bearer: Some(SecretSource::Value(token)), ..HttpConfig::new("wasmgate", &url) };
        Arc::new(
            McpClient::connect("wasmgate", HttpTransport::new(&http).unwrap(), ClientConfig::default()).await.unwrap(),
        )
    };
    let served = |tools: Vec<wasmgate_protocol::ToolDefinition>| tools.into_iter().any(|t| t.name == "echo__echo");
    assert!(!served(bob.list_tools().await.unwrap()), "changed since review: withheld");

    let driver = chromedriver();
    let profile = tempfile::tempdir().unwrap();
    let browser = browser(&driver, profile.path()).await;
    let (shots, _kept) = shots();

    // alice, a reviewer, signs in and sees the providers and tools.
    sign_in(&browser, &base, "alice").await;
    assert_eq!(text_of(&browser, "#who").await, "alice (reviewer)");
    assert!(text_of(&browser, "#tools").await.contains("echo__echo"));
    shoot(&browser, &shots, "overview.png").await;

    // The changed definition, with its diff; the hostile description is text.
    browser.goto(&format!("{base}/console/reviews")).await.unwrap();
    let card = "#review-echo-echo";
    assert!(text_of(&browser, &format!("{card} h2")).await.contains("changed since review"));
    let diff = text_of(&browser, &format!("{card} pre.diff")).await;
    assert!(diff.contains("<script>window.__pwned = 1</script>"), "{diff}");
    untouched(&browser).await;
    shoot(&browser, &shots, "reviews.png").await;
    browser.find(Locator::Css(&format!("{card} button.approve"))).await.unwrap().click().await.unwrap();
    assert_eq!(text_of(&browser, "#flash").await, "approved: echo__echo");
    assert!(served(bob.list_tools().await.unwrap()), "approved: served without a restart");

    // bob's calls wait for a reviewer: alice approves the first.
    let approvals = format!("{base}/console/approvals");
    let first = create(&bob, "planning");
    until(&browser, &approvals, ".ask").await;
    assert!(text_of(&browser, ".ask h2").await.contains("asked by bob"));
    assert!(text_of(&browser, ".ask pre.arguments").await.contains("\"title\": \"planning\""));
    shoot(&browser, &shots, "approvals.png").await;
    browser.find(Locator::Css(".ask button.approve")).await.unwrap().click().await.unwrap();
    assert!(text_of(&browser, "#flash").await.starts_with("approved: "));
    let (is_error, text) = first.await.unwrap();
    assert!(!is_error, "{text}");

    // The second: a deny posted without the form's CSRF token is refused; with it, the
    // call fails as denied.
    let second = create(&bob, "offsite");
    until(&browser, &approvals, ".ask").await;
    browser
        .execute("document.querySelectorAll('.ask input[name=csrf]').forEach(e => e.remove());", vec![])
        .await
        .unwrap();
    browser.find(Locator::Css(".ask button.refuse")).await.unwrap().click().await.unwrap();
    assert_eq!(text_of(&browser, "#heading").await, "Forbidden");
    assert!(text_of(&browser, "#message").await.contains("CSRF"));
    until(&browser, &approvals, ".ask").await;
    browser.find(Locator::Css(".ask button.refuse")).await.unwrap().click().await.unwrap();
    assert!(text_of(&browser, "#flash").await.starts_with("denied: "));
    let (is_error, text) = second.await.unwrap();
    assert!(is_error && text.contains("denied"), "{text}");

    // Signing out ends the session.
    browser.goto(&format!("{base}/console")).await.unwrap();
    browser.wait().at_most(WAIT).for_element(Locator::Id("sign-out")).await.unwrap().click().await.unwrap();
    assert_eq!(text_of(&browser, "#heading").await, "Signed out");

    // dave, an admin, filters the audit log.
    sign_in(&browser, &base, "dave").await;
    assert_eq!(text_of(&browser, "#who").await, "dave (admin)");
    browser.goto(&format!("{base}/console/audit")).await.unwrap();
    assert!(text_of(&browser, "#verified").await.starts_with("Chain intact"));
    browser.find(Locator::Css("input[name=caller]")).await.unwrap().send_keys("bob").await.unwrap();
    browser.find(Locator::Css("input[name=event]")).await.unwrap().send_keys("approval").await.unwrap();
    browser.find(Locator::Id("filter")).await.unwrap().click().await.unwrap();
    browser
        .wait()
        .at_most(WAIT)
        .for_url(
            &url::Url::parse(&format!(
                "{base}/console/audit?caller=bob&provider=&tool=&event=approval&verdict=&since=&until="
            ))
            .unwrap(),
        )
        .await
        .unwrap();
    let rows = browser.find_all(Locator::Css("#records tr")).await.unwrap();
    assert_eq!(rows.len(), 3, "a header and bob's two answered asks");
    let table = text_of(&browser, "#records").await;
    assert!(table.contains("alice (console)") && table.contains("approved") && table.contains("refused"), "{table}");
    shoot(&browser, &shots, "audit.png").await;
    browser.find(Locator::Id("sign-out")).await.unwrap().click().await.unwrap();
    // The next page is asked for only once this one has answered: a navigation started
    // while the sign-out's POST is under way cancels it, and the session lives on.
    assert_eq!(text_of(&browser, "#heading").await, "Signed out");

    // mallory is no reviewer: refused at sign-in, with no session.
    sign_in(&browser, &base, "mallory").await;
    assert_eq!(text_of(&browser, "#heading").await, "Forbidden");
    assert!(text_of(&browser, "#message").await.contains("neither a reviewer nor an admin"));
    shoot(&browser, &shots, "refused.png").await;
    browser.goto(&format!("{base}/console/approvals")).await.unwrap();
    browser.wait().at_most(WAIT).for_element(Locator::Id("user")).await.unwrap();

    browser.close().await.unwrap();
    bob.close().await;
}
