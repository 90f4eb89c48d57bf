//! The web console's configuration, shared by its HTTP test and its browser test.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use wasmgate_client::McpClient;
use wasmgate_core::CancellationToken;
use wasmgate_testing::Issuer;

use super::{own_echo_server, setup};

/// A description no console may run.
pub const HOSTILE: &str = "Echoes. <script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\"> \
                           <a href=\"javascript:window.__pwned = 3\">docs</a>";

/// The console's configuration on a new tempdir: the issuer's tokens and its sign-in,
/// reviewers in group `security` (alice), admins in `ops` (dave), calendar_create's asks
/// routed to reviewers, and the echo server's tool echo described with `description`
/// (its environment's `ECHO_DESCRIPTION`, which a test may change).
pub fn console_setup(issuer: &Issuer, description: &str) -> tempfile::TempDir {
    let dir = setup();
    let script = own_echo_server(dir.path());
    let server = std::fs::read_to_string(&script).unwrap();
    let described = server.replacen(
        "{\"name\": name, \"inputSchema\": {\"type\": \"object\"}}",
        "{\"name\": name, \"description\": os.environ.get(\"ECHO_DESCRIPTION\", name) if name == \"echo\" else name, \"inputSchema\": {\"type\": \"object\"}}",
        1,
    );
    assert_ne!(described, server);
    std::fs::write(&script, described).unwrap();
    let config = dir.path().join("wasmgate.toml");
    let text = std::fs::read_to_string(&config).unwrap().replacen(
        "[providers.echo]\n",
        &format!("[providers.echo]\nenv = {{ ECHO_DESCRIPTION = {description:?} }}\n"),
        1,
    );
    std::fs::write(&config, text + &issuer.serve_oauth() + &issuer.serve_console("console")).unwrap();
    let policy = dir.path().join("policy.toml");
    let rules = std::fs::read_to_string(&policy).unwrap().replacen(
        "[providers.calendar]\n",
        "[providers.calendar]\nask_reviewers = [\"calendar_create\"]\n",
        1,
    );
    let console = "\n[approvals]\ndeadline_seconds = 600\n\n[console]\nreviewers = [{ groups = [\"security\"] }]\n\
                   admins = [{ groups = [\"ops\"] }]\n";
    std::fs::write(&policy, rules + console).unwrap();
    issuer.set_groups("alice", &["security"]);
    issuer.set_groups("dave", &["ops"]);
    issuer.set_groups("mallory", &["staff"]);
    dir
}

/// Starts `client`'s call of calendar_create; its outcome: error or not, and the text.
pub fn create(client: &Arc<McpClient>, title: &str) -> tokio::task::JoinHandle<(bool, String)> {
    let client = Arc::clone(client);
    let arguments = json!({"user": "bob", "title": title, "start": "2026-12-03T12:00", "end": "2026-12-03T13:00"});
    tokio::spawn(async move {
        let arguments = arguments.as_object().cloned().unwrap();
        let result = client.call_tool("calendar__calendar_create", arguments, CancellationToken::new()).await.unwrap();
        (result.is_error, result.content.iter().filter_map(|b| b.text()).collect())
    })
}

/// A browser without a cookie jar: the test carries the cookies.
pub fn http() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// The value of `name` among `response`'s `Set-Cookie` headers, and the whole header.
pub fn set_cookie(response: &reqwest::Response, name: &str) -> Option<(String, String)> {
    response.headers().get_all("set-cookie").iter().find_map(|v| {
        let text = v.to_str().unwrap();
        let value = text.strip_prefix(&format!("{name}="))?.split(';').next()?.to_owned();
        Some((value, text.to_owned()))
    })
}

pub fn location(response: &reqwest::Response) -> String {
    response.headers()["location"].to_str().unwrap().to_owned()
}

/// The value of the first `name="FIELD" value="..."` after `from` in `page`.
pub fn field(page: &str, from: &str, name: &str) -> String {
    let start = page.find(from).unwrap_or_else(|| panic!("{from} is not on the page: {page}"));
    let marker = format!("name=\"{name}\" value=\"");
    let at = start + page[start..].find(&marker).unwrap() + marker.len();
    page[at..at + page[at..].find('"').unwrap()].to_owned()
}

pub fn form(pairs: &[(&str, &str)]) -> String {
    let mut body = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        body.append_pair(k, v);
    }
    body.finish()
}

/// Signs `user` in to the console at `base` through `issuer`: the callback's response.
pub async fn sign_in(base: &str, user: &str) -> reqwest::Response {
    let http = http();
    let login = http.get(format!("{base}/console/login")).send().await.unwrap();
    assert_eq!(login.status(), 303);
    let (browser, cookie) = set_cookie(&login, "wasmgate_login").unwrap();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax") && cookie.contains("Path=/console/callback")
    );
    let authorize = url::Url::parse(&location(&login)).unwrap();
    let params: Vec<(String, String)> = authorize.query_pairs().into_owned().collect();
    let get = |name: &str| params.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_default();
    assert_eq!((get("response_type").as_str(), get("code_challenge_method").as_str()), ("code", "S256"));
    assert_eq!(get("resource"), wasmgate_testing::RESOURCE);
    let mut pairs: Vec<(&str, &str)> = params.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    pairs.push(("user", user));
    let mut endpoint = authorize.clone();
    endpoint.set_query(None);
    let signed = http
        .post(endpoint)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&pairs))
        .send()
        .await
        .unwrap();
    assert_eq!(signed.status(), 302);
    let back = location(&signed);
    assert!(back.starts_with(&format!("{base}/console/callback?")), "{back}");
    // Without the browser's sign-in cookie, the code is refused.
    let stolen = http.get(&back).send().await.unwrap();
    assert_eq!(stolen.status(), 400);
    // So start again, and come back with the cookie.
    let login = http.get(format!("{base}/console/login")).send().await.unwrap();
    let (browser_again, _) = set_cookie(&login, "wasmgate_login").unwrap();
    assert_ne!(browser, browser_again);
    // Others starting sign-ins meanwhile, more than any table of them would hold, push
    // nobody's out: the browser holds its own.
    for _ in 0..300 {
        assert_eq!(http.get(format!("{base}/console/login")).send().await.unwrap().status(), 303);
    }
    let authorize = url::Url::parse(&location(&login)).unwrap();
    let mut pairs: Vec<(String, String)> = authorize.query_pairs().into_owned().collect();
    pairs.push(("user".into(), user.into()));
    let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut endpoint = authorize.clone();
    endpoint.set_query(None);
    let signed = http.post(endpoint).header("content-type", "application/x-www-form-urlencoded").body(form(&pairs));
    let back = location(&signed.send().await.unwrap());
    http.get(&back).header("cookie", format!("wasmgate_login={browser_again}")).send().await.unwrap()
}

/// The session cookie of a sign-in that opened one.
pub fn session(response: &reqwest::Response) -> String {
    let (id, header) = set_cookie(response, "wasmgate_console").expect("a session cookie");
    assert!(
        header.contains("HttpOnly") && header.contains("SameSite=Strict") && header.contains("Max-Age="),
        "{header}"
    );
    // The test issuer's tokens last 600 s, less than the default session: the session
    // ends with the token.
    let max_age = header.split("Max-Age=").nth(1).and_then(|rest| rest.split(';').next()).unwrap_or_default();
    let max_age: u64 = max_age.trim().parse().expect("a number of seconds");
    assert!(max_age <= 600, "the session outlives its token: {header}");
    format!("wasmgate_console={id}")
}

pub async fn page(base: &str, path: &str, cookie: &str) -> (u16, String) {
    let response = http().get(format!("{base}{path}")).header("cookie", cookie).send().await.unwrap();
    let csp = response.headers().get("content-security-policy").map(|v| v.to_str().unwrap().to_owned());
    let csp = csp.unwrap_or_else(|| panic!("{path} has no CSP"));
    assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    (response.status().as_u16(), response.text().await.unwrap())
}

pub async fn post(base: &str, path: &str, cookie: &str, pairs: &[(&str, &str)]) -> reqwest::Response {
    http()
        .post(format!("{base}{path}"))
        .header("cookie", cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(pairs))
        .send()
        .await
        .unwrap()
}

/// The id of the first ask on the approvals page at `base`, once one waits (at most 60 s).
pub async fn first_ask(base: &str, cookie: &str) -> (String, String) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (_, shown) = page(base, "/console/approvals", cookie).await;
        if let Some(at) = shown.find("id=\"ask-") {
            let id = shown[at + 8..at + 8 + shown[at + 8..].find('"').unwrap()].to_owned();
            return (id, shown);
        }
        assert!(std::time::Instant::now() < deadline, "no ask came: {shown}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
