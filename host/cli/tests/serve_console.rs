//! The web console of `serve --http`: a reviewer signs in through the issuer (PKCE),
//! approves a tool definition (served at once) and a call another caller waits on; an
//! admin reads the audit log with filters; anyone else gets 403 on every page and
//! action; a form without its CSRF token is refused; a provider's hostile text is shown
//! as text; every response carries the security headers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::console::{
    HOSTILE, console_setup, create, field, first_ask, form, http, location, page, post, session, set_cookie, sign_in,
};
use common::{serve_http, setup, stderr};
use wasmgate_client::{ClientConfig, HttpConfig, HttpTransport, McpClient};
use wasmgate_oauth::SecretSource;
use wasmgate_testing::Issuer;

async fn client(url: &str, token: &str) -> McpClient {
    let http = HttpConfig { bearer: Some(SecretSource::Value(token.to_owned())), ..HttpConfig::new("wasmgate", url) };
    McpClient::connect("wasmgate", HttpTransport::new(&http).unwrap(), ClientConfig::default()).await.unwrap()
}

#[tokio::test]
async fn reviewers_sign_in_decide_reviews_and_answer_asks_and_admins_read_the_audit_log() {
    let issuer = Issuer::start().await;
    let dir = console_setup(&issuer, HOSTILE);
    let (_served, url) = serve_http(dir.path(), &[]);
    let base = url.trim_end_matches("/mcp").to_owned();

    // Nobody signed in: a page sends the browser to sign in, an action is refused.
    let response = http().get(format!("{base}/console")).send().await.unwrap();
    assert_eq!((response.status().as_u16(), location(&response).as_str()), (303, "/console/login"));
    assert_eq!(post(&base, "/console/approvals/answer", "", &[("id", "x"), ("approve", "true")]).await.status(), 403);
    assert_eq!(page(&base, "/console/nosuch", "").await.0, 404);

    // An authorization server's refusal of this browser's sign-in is shown as text, and
    // short; the same text sent with no sign-in of the browser's is not shown at all.
    let long = format!("<b>{}</b>", "x".repeat(1000));
    let query = form(&[("error", "access_denied"), ("error_description", &long)]);
    let (status, said) = page(&base, &format!("/console/callback?{query}"), "").await;
    assert!(status == 400 && !said.contains("access_denied"), "{status} {said}");
    let login = http().get(format!("{base}/console/login")).send().await.unwrap();
    let (sealed, _) = set_cookie(&login, "wasmgate_login").unwrap();
    let authorize = url::Url::parse(&location(&login)).unwrap();
    let state = authorize.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned()).unwrap();
    let query = form(&[("error", "access_denied"), ("error_description", &long), ("state", &state)]);
    let (status, said) = page(&base, &format!("/console/callback?{query}"), &format!("wasmgate_login={sealed}")).await;
    assert_eq!(status, 403);
    assert!(said.contains("said access_denied: &#60;b&#62;xxx") && !said.contains(&"x".repeat(200)), "{said}");

    // A caller who is no reviewer: 403 at sign-in, and on every page and action with a token.
    let refused = sign_in(&base, "mallory").await;
    assert_eq!(refused.status(), 403);
    assert!(set_cookie(&refused, "wasmgate_console").is_none(), "no session for mallory");
    let mallory = issuer.token("mallory", &["staff"]);
    for path in ["/console", "/console/reviews", "/console/approvals", "/console/audit"] {
        let response = http().get(format!("{base}{path}")).bearer_auth(&mallory).send().await.unwrap();
        assert_eq!(response.status(), 403, "{path}");
    }
    for path in ["/console/reviews/decide", "/console/approvals/answer"] {
        let response = http()
            .post(format!("{base}{path}"))
            .bearer_auth(&mallory)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("approve=true")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "{path}");
    }

    // alice, a reviewer, signs in; the audit log is not hers to read.
    let signed = sign_in(&base, "alice").await;
    assert_eq!(signed.status(), 200);
    let alice = session(&signed);
    let body = signed.text().await.unwrap();
    assert!(body.contains("http-equiv=\"refresh\" content=\"0; url=/console\""), "{body}");
    let (status, overview) = page(&base, "/console", &alice).await;
    assert_eq!(status, 200, "{overview}");
    assert!(overview.contains("alice (reviewer)") && overview.contains("calendar__calendar_query"), "{overview}");
    assert!(overview.contains("unreviewed"), "{overview}");
    assert_eq!(page(&base, "/console/audit", &alice).await.0, 403, "the audit log is for admins");
    // A bearer token reads pages, but takes no action.
    let token = issuer.token("alice", &["security"]);
    let response = http().get(format!("{base}/console/reviews")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(response.status(), 200);

    // The reviews page shows the hostile description as text.
    let (_, reviews) = page(&base, "/console/reviews", &alice).await;
    assert!(reviews.contains("&#60;script&#62;window.__pwned = 1&#60;/script&#62;"), "{reviews}");
    assert!(!reviews.contains("<script") && !reviews.contains("<img") && !reviews.contains("<a href=\"javascript"));

    // A form body past 16 KiB is not read.
    let long = "x".repeat(17 * 1024);
    assert_eq!(post(&base, "/console/reviews/decide", &alice, &[("provider", long.as_str())]).await.status(), 413);

    // Approving calendar_create: refused without the form's CSRF token, or with another;
    // with it, the tool is served at once.
    let card = "id=\"review-calendar-calendar_create\"";
    let (hash, csrf) = (field(&reviews, card, "hash"), field(&reviews, card, "csrf"));
    let decision =
        [("provider", "calendar"), ("tool", "calendar_create"), ("hash", hash.as_str()), ("approve", "true")];
    assert_eq!(post(&base, "/console/reviews/decide", &alice, &decision).await.status(), 403);
    let forged = "A".repeat(43);
    fn with<'a>(decision: &[(&'a str, &'a str)], csrf: &'a str) -> Vec<(&'a str, &'a str)> {
        [decision, &[("csrf", csrf)]].concat()
    }
    assert_eq!(post(&base, "/console/reviews/decide", &alice, &with(&decision, &forged)).await.status(), 403);
    let response = post(&base, "/console/reviews/decide", &alice, &with(&decision, &csrf)).await;
    assert_eq!((response.status().as_u16(), location(&response).as_str()), (303, "/console/reviews"));
    let (_, after) = page(&base, "/console/reviews", &alice).await;
    assert!(after.contains("approved: calendar__calendar_create"), "{after}");
    assert!(!after.contains(card), "decided: no longer waiting");

    // bob's calls wait for a reviewer: alice approves one, then denies one.
    let bob = Arc::new(client(&url, &issuer.token("bob", &["staff"])).await);
    let approved = create(&bob, "approved");
    let (id, shown) = first_ask(&base, &alice).await;
    assert!(shown.contains("asked by bob") && shown.contains("&#34;title&#34;: &#34;approved&#34;"), "{shown}");
    let answer =
        |id: &str, approve: &'static str| [("id", id.to_owned()), ("approve", approve.into()), ("csrf", csrf.clone())];
    let pairs = answer(&id, "true");
    let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(post(&base, "/console/approvals/answer", &alice, &pairs).await.status(), 303);
    let (is_error, text) = approved.await.unwrap();
    assert!(!is_error, "{text}");
    let denied = create(&bob, "denied");
    let (id, _) = first_ask(&base, &alice).await;
    let pairs = answer(&id, "false");
    let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    post(&base, "/console/approvals/answer", &alice, &pairs).await;
    let (is_error, text) = denied.await.unwrap();
    assert!(is_error && text.contains("denied"), "{text}");

    // alice's own call is not hers to answer.
    let mine = Arc::new(client(&url, &token).await);
    let own = create(&mine, "own");
    let (id, shown) = first_ask(&base, &alice).await;
    assert!(shown.contains("This is your own call"), "{shown}");
    let pairs = answer(&id, "true");
    let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    post(&base, "/console/approvals/answer", &alice, &pairs).await;
    let (_, shown) = page(&base, "/console/approvals", &alice).await;
    assert!(shown.contains("nobody answers their own call"), "{shown}");
    own.abort();
    mine.close().await;

    // dave, an admin, filters the audit log.
    let dave = session(&sign_in(&base, "dave").await);
    let (status, audit) = page(&base, "/console/audit?caller=bob&event=approval", &dave).await;
    assert_eq!(status, 200, "{audit}");
    assert!(audit.contains("Chain intact"), "{audit}");
    assert_eq!(audit.matches("alice (console)").count(), 2, "{audit}");
    assert_eq!(audit.matches("<td>approval</td>").count(), 2, "{audit}");
    let (_, decisions) = page(&base, "/console/audit?event=review", &dave).await;
    assert!(decisions.contains("calendar_create") && decisions.contains("alice (console)"), "{decisions}");
    let (_, none) = page(&base, "/console/audit?caller=nobody-at-all", &dave).await;
    assert!(none.contains("No record matches."), "{none}");

    // Signing out needs the form's token, and ends the session.
    let (_, overview) = page(&base, "/console", &alice).await;
    let csrf = field(&overview, "action=\"/console/logout\"", "csrf");
    assert_eq!(post(&base, "/console/logout", &alice, &[]).await.status(), 403);
    let out = post(&base, "/console/logout", &alice, &[("csrf", &csrf)]).await;
    assert_eq!(out.status(), 200);
    assert!(set_cookie(&out, "wasmgate_console").unwrap().1.contains("Max-Age=0"));
    let response = http().get(format!("{base}/console")).header("cookie", &alice).send().await.unwrap();
    assert_eq!(response.status(), 303, "the session is over");
    bob.close().await;
}

#[tokio::test]
async fn behind_https_the_consoles_cookies_are_taken_from_its_own_host_alone() {
    let issuer = Issuer::start().await;
    let dir = console_setup(&issuer, HOSTILE);
    let config = dir.path().join("wasmgate.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.trim_end().ends_with(&issuer.serve_console("console").trim_end()[1..]), "[serve.console] is last");
    let callback = "https://gateway.example/console/callback";
    std::fs::write(&config, format!("{text}redirect_uri = {callback:?}\n")).unwrap();
    let (_served, url) = serve_http(dir.path(), &[]);
    let base = url.trim_end_matches("/mcp").to_owned();

    // The sign-in cookie: `__Host-`, Secure, for the whole host (what the prefix asks).
    let login = http().get(format!("{base}/console/login")).send().await.unwrap();
    let (sealed, header) = set_cookie(&login, "__Host-wasmgate_login").expect("a __Host- sign-in cookie");
    assert!(header.contains("; Path=/;") && header.ends_with("; Secure") && !header.contains("Domain"), "{header}");
    assert!(set_cookie(&login, "wasmgate_login").is_none(), "{header}");
    let authorize = url::Url::parse(&location(&login)).unwrap();
    let mut pairs: Vec<(String, String)> = authorize.query_pairs().into_owned().collect();
    assert!(pairs.contains(&("redirect_uri".into(), callback.into())), "{pairs:?}");
    pairs.push(("user".into(), "alice".into()));
    let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut endpoint = authorize.clone();
    endpoint.set_query(None);
    let signed = http().post(endpoint).header("content-type", "application/x-www-form-urlencoded").body(form(&pairs));
    let back = location(&signed.send().await.unwrap());
    // The browser comes back to the https callback; here, to the same gateway over http.
    let back = back.strip_prefix(callback).map(|query| format!("{base}/console/callback{query}")).unwrap();

    // The same sealed sign-in under the plain name, as a page of another host could
    // plant it: no sign-in.
    let planted = http().get(&back).header("cookie", format!("wasmgate_login={sealed}")).send().await.unwrap();
    assert_eq!(planted.status(), 400);
    let done = http().get(&back).header("cookie", format!("__Host-wasmgate_login={sealed}")).send().await.unwrap();
    assert_eq!(done.status(), 200);
    let (id, header) = set_cookie(&done, "__Host-wasmgate_console").expect("a __Host- session cookie");
    assert!(
        header.contains("; Path=/;") && header.contains("SameSite=Strict") && header.ends_with("; Secure"),
        "{header}"
    );
    assert!(set_cookie(&done, "__Host-wasmgate_login").unwrap().1.contains("Max-Age=0"), "the sign-in is spent");

    assert_eq!(page(&base, "/console", &format!("__Host-wasmgate_console={id}")).await.0, 200);
    // The session's id under the plain name is no session.
    let planted = http().get(format!("{base}/console")).header("cookie", format!("wasmgate_console={id}")).send();
    assert_eq!(planted.await.unwrap().status(), 303);
}

#[test]
fn a_console_without_oauth_or_with_an_insecure_endpoint_stops_start_up() {
    let dir = setup();
    let config = dir.path().join("wasmgate.toml");
    let base = std::fs::read_to_string(&config).unwrap();
    let oauth = "\n[serve.oauth]\nissuer = \"https://as.example\"\nresource = \"https://gw.example/mcp\"\njwks_uri = \"http://127.0.0.1:9/jwks\"\n";
    let console = |authorize: &str, extra: &str| {
        format!(
            "\n[serve.console]\nclient_id = \"c\"\nauthorization_endpoint = {authorize:?}\ntoken_endpoint = \"http://127.0.0.1:9/token\"\n{extra}"
        )
    };
    for (text, says) in [
        (console("http://127.0.0.1:9/authorize", ""), "needs [serve.oauth]"),
        (format!("{oauth}{}", console("http://as.example/authorize", "")), "authorization_endpoint"),
        (
            format!("{oauth}{}", console("http://127.0.0.1:9/a", "redirect_uri = \"http://127.0.0.1:9/elsewhere\"\n")),
            "redirect_uri",
        ),
        (format!("{oauth}{}", console("http://127.0.0.1:9/a", "session_minutes = 0\n")), "session_minutes"),
    ] {
        std::fs::write(&config, format!("{base}{text}")).unwrap();
        let out = common::command(dir.path()).args(["serve", "--http", "127.0.0.1:0"]).output().unwrap();
        assert!(!out.status.success() && stderr(&out).contains(says), "{text}: {}", stderr(&out));
    }
}
