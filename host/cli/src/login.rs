//! `wasmgate login PROVIDER` and `wasmgate logout PROVIDER`: OAuth 2.1 for an HTTP
//! provider. Login runs discovery and the provider's grant now: for the authorization
//! code grant it prints the URL to open and waits for the browser's redirect on a
//! loopback port; the tokens are kept private to the user under the state directory,
//! where the gateway finds and refreshes them.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;
use wasmgate_gateway::{authorizer, token_store};
use wasmgate_oauth::{LoopbackBrowser, UserAgent};

use crate::open::ConfigArgs;

#[derive(Debug, Args)]
pub struct LoginArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The HTTP provider to log in to (its `[providers.NAME.oauth]` table).
    provider: String,
    /// How long to wait for the browser, in seconds.
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    timeout: u64,
}

#[derive(Debug, Args)]
pub struct LogoutArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The provider whose tokens are forgotten.
    provider: String,
}

pub async fn login(args: LoginArgs) -> anyhow::Result<()> {
    let config = args.config.load()?;
    let Some(provider) = config.providers.get(&args.provider) else {
        bail!("no provider {:?} in {}", args.provider, config.path.display());
    };
    let (Some(url), Some(settings)) = (&provider.url, &provider.oauth) else {
        bail!(
            "provider {:?} does not use OAuth: add a [providers.{}.oauth] table to {} (docs/CONFIG.md)",
            args.provider,
            args.provider,
            config.path.display()
        );
    };
    let endpoint = url::Url::parse(url).with_context(|| format!("the URL of {}", args.provider))?;
    let port = settings.redirect_port.unwrap_or(0);
    let browser = LoopbackBrowser::bind(port, Duration::from_secs(args.timeout)).await?;
    let agent: Arc<dyn UserAgent> = Arc::new(browser);
    let policy = wasmgate_policy::Policy::load(&config.policy)
        .with_context(|| format!("the policy {}, whose network_hosts the login may reach", config.policy.display()))?;
    let Some(auth) = authorizer(&config, &args.provider, policy.provider(&args.provider), Some(agent))? else {
        bail!("provider {:?} does not use OAuth", args.provider);
    };
    auth.login(&endpoint).await?;
    eprintln!(
        "wasmgate: logged in to {}; the tokens are kept in {} (readable by you alone)",
        args.provider,
        token_store(&config).path(&args.provider).display()
    );
    Ok(())
}

pub fn logout(args: &LogoutArgs) -> anyhow::Result<()> {
    let config = args.config.load()?;
    if token_store(&config).remove(&args.provider)? {
        eprintln!("wasmgate: forgot the tokens of {}", args.provider);
    } else {
        eprintln!("wasmgate: no tokens were kept for {}", args.provider);
    }
    Ok(())
}
