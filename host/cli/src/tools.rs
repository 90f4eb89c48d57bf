//! `wasmgate tools`: every provider, how it is confined, and each tool's state.

use std::sync::Arc;

use text_safety::escape_for_display;
use url::Url;
use wasmgate_gateway::{Config, ToolState, authorizer};
use wasmgate_guard::Unattended;
use wasmgate_oauth::LoginStatus;

use crate::open::ConfigArgs;

pub async fn run(args: ConfigArgs) -> anyhow::Result<()> {
    let config = args.load()?;
    let gateway = args.start(Arc::new(Unattended)).await?;
    let statuses = gateway.tool_statuses().await;
    for provider in &gateway.providers() {
        let kind = format!("{:?}", provider.kind).to_lowercase();
        println!("{} ({kind})", provider.name);
        if let Some(confinement) = &provider.confinement {
            println!("  confinement: {confinement}");
        }
        if let Some(auth) = auth_state(&config, &provider.name).await {
            println!("  auth: {auth}");
        }
        if let Some(why) = gateway.provider_trouble(&provider.name) {
            // A provider's own words may be in it (a server's error message).
            println!("  withheld: {}", escape_for_display(&why));
        }
        for status in statuses.iter().filter(|s| s.provider == provider.name) {
            println!("  {:<48} {}", status.exposed, status.state);
            if let Some(why) = &status.sink {
                println!("      sink: {}", escape_for_display(why));
            }
            match &status.state {
                ToolState::Changed(diff) => {
                    // The diff escapes the provider's text itself (`Diff`'s Display).
                    for line in diff.lines() {
                        println!("      {line}");
                    }
                }
                ToolState::Unusable(why) => println!("      {}", escape_for_display(why)),
                _ => {}
            }
        }
    }
    gateway.close().await;
    Ok(())
}

/// How an OAuth provider's login stands, and what to run when it needs one.
async fn auth_state(config: &Config, name: &str) -> Option<String> {
    let url = config.providers.get(name)?.url.as_deref()?;
    // A policy that cannot be read grants nothing: the strictest reach.
    let policy = wasmgate_policy::Policy::load(&config.policy).ok();
    let authorizer = match authorizer(config, name, policy.as_ref().and_then(|p| p.provider(name)), None) {
        Ok(authorizer) => authorizer?,
        Err(e) => return Some(format!("OAuth 2.1, unusable: {e}")),
    };
    let endpoint = Url::parse(url).ok()?;
    let login = format!("run `wasmgate login {name}`");
    Some(match authorizer.status(&endpoint).await {
        Ok(LoginStatus::LoggedIn { expires_at: Some(at) }) => {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            format!(
                "OAuth 2.1, logged in (the token expires in {} min; refreshed when due)",
                at.saturating_sub(now) / 60
            )
        }
        Ok(LoginStatus::LoggedIn { expires_at: None }) => "OAuth 2.1, logged in".into(),
        Ok(LoginStatus::Refreshable) => "OAuth 2.1, the token has expired and is refreshed at the next call".into(),
        Ok(LoginStatus::LoggedOut) if is_machine(config, name) => {
            "OAuth 2.1 client credentials, a token is requested at the next call".into()
        }
        Ok(LoginStatus::LoggedOut) => format!("OAuth 2.1, not logged in: {login}"),
        Err(e) => format!("OAuth 2.1, {e}; {login}"),
    })
}

fn is_machine(config: &Config, name: &str) -> bool {
    config.providers.get(name).and_then(|p| p.oauth.as_ref()).and_then(|o| o.grant.as_deref())
        == Some("client_credentials")
}
