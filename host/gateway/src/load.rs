//! Reading `wasmgate.toml` into a [`Config`]: every path made absolute against the
//! file's directory, every mistake a [`PolicyError`] that names the line, the key and
//! the fix, and a desktop client's `mcpServers` imported when the file names one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;
use wasmgate_audit::Durability;
use wasmgate_policy::{PolicyError, Source, validate_provider};

use crate::config::{
    AuditConfig, ClusterConfig, Config, LimitsConfig, ProviderConfig, SandboxSettings, ServeConfig,
    file_relative_command, misplaced_key, read_bounded,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    policy: Option<PathBuf>,
    lock: Option<PathBuf>,
    state_dir: Option<PathBuf>,
    mcp_servers: Option<PathBuf>,
    #[serde(default)]
    audit: RawAudit,
    #[serde(default)]
    limits: LimitsConfig,
    #[serde(default)]
    sandbox: SandboxSettings,
    #[serde(default)]
    providers: BTreeMap<String, Spanned<ProviderConfig>>,
    #[serde(default)]
    serve: ServeConfig,
    cluster: Option<Spanned<ClusterConfig>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAudit {
    path: Option<PathBuf>,
    durability: Option<Spanned<String>>,
    batch_ms: Option<u64>,
    #[serde(default)]
    redact: Vec<String>,
    key_file: Option<PathBuf>,
    rotate_mb: Option<Spanned<u64>>,
}

/// The size an audit log file is rotated at unless `[audit] rotate_mb` says otherwise.
const DEFAULT_ROTATE_MB: u64 = 64;

impl Config {
    /// Reads and checks `path`.
    ///
    /// # Errors
    ///
    /// A [`PolicyError`] naming the file, the line, the key and the fix.
    pub fn load(path: &Path) -> Result<Config, PolicyError> {
        let text = read_bounded(path).map_err(|source| PolicyError::Read { path: path.to_owned(), source })?;
        // `wasmgate.toml` has the parent "", which is not a directory: use ".".
        let base = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let base = std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf());
        let origin = path.display().to_string();
        Self::parse(&text, &origin, path, &base)
    }

    pub(crate) fn parse(text: &str, origin: &str, path: &Path, base: &Path) -> Result<Config, PolicyError> {
        let src = Source { text, origin };
        let raw: RawConfig = toml::from_str(text).map_err(|e| src.toml_error(&e))?;
        let at = |p: PathBuf| if p.is_absolute() { p } else { base.join(p) };
        // Without a usable default, beside the config file: never wherever the gateway
        // happens to be started.
        let state_dir =
            raw.state_dir.map(at).unwrap_or_else(|| default_state_dir().unwrap_or_else(|| at("state".into())));
        let durability = match raw.audit.durability {
            None => Durability::EveryCall,
            Some(d) => match d.get_ref().as_str() {
                "every-call" => Durability::EveryCall,
                "batched" => Durability::Batched { max_delay_ms: raw.audit.batch_ms.unwrap_or(5) },
                "off" => Durability::Off,
                other => {
                    return Err(src.error(
                        d.span(),
                        "audit.durability",
                        format!("unknown durability {other:?}"),
                        "use \"every-call\" (the default), \"batched\" or \"off\" (see docs/AUDIT.md)",
                    ));
                }
            },
        };
        let rotate_bytes = match raw.audit.rotate_mb {
            None => Some(DEFAULT_ROTATE_MB << 20),
            Some(mb) if *mb.get_ref() == 0 => None,
            Some(mb) => Some(mb.get_ref().checked_mul(1 << 20).filter(|b| *b <= i64::MAX as u64).ok_or_else(|| {
                src.error(
                    mb.span(),
                    "audit.rotate_mb",
                    "the size is too large",
                    "give the size in MiB a file is rotated at (default 64), or 0 to never rotate",
                )
            })?),
        };
        let mut providers = BTreeMap::new();
        for (name, spanned) in raw.providers {
            let span = spanned.span();
            let key = format!("providers.{name}");
            let mut provider = spanned.into_inner();
            validate_provider(&name).map_err(|e| {
                src.error(span.clone(), &key, e.to_string(), "rename the table, e.g. [providers.my-calendar]")
            })?;
            let kinds = [provider.command.is_some(), provider.url.is_some(), provider.component.is_some()];
            if kinds.iter().filter(|k| **k).count() != 1 {
                return Err(src.error(
                    span,
                    &key,
                    "a provider needs exactly one of `command`, `url` or `component`",
                    "give a stdio server's `command`, an HTTP server's `url`, or a WASM tool `component`",
                ));
            }
            if let Some(unused) = misplaced_key(&provider) {
                return Err(src.error(
                    span,
                    &format!("{key}.{unused}"),
                    format!(
                        "`{unused}` does nothing for a {} provider, so it would be silently ignored",
                        provider.kind_name()
                    ),
                    "remove it, or give the provider the kind it is for",
                ));
            }
            if let Some((problem, fix)) = match provider.call_timeout_ms {
                Some(0) => {
                    Some(("`call_timeout_ms = 0` would fail every call", "give a time in milliseconds, e.g. 30000"))
                }
                Some(_) if provider.component.is_some() => Some((
                    "`call_timeout_ms` is for stdio and HTTP servers; a component's calls end at its `deadline_ms`",
                    "remove it, and set `deadline_ms` under [limits] or in the policy",
                )),
                _ => None,
            } {
                return Err(src.error(span, &key, problem, fix));
            }
            if provider.oauth.is_some() && provider.token_env.is_some() {
                return Err(src.error(
                    span,
                    &format!("{key}.oauth"),
                    "both `token_env` and `oauth` would set the Authorization header",
                    "keep one: `oauth` gets and refreshes tokens itself; `token_env` sends a fixed one",
                ));
            }
            if let Some((sub, problem, fix)) =
                provider.oauth.as_ref().and_then(crate::oauth_settings::OAuthSettings::problem)
            {
                return Err(src.error(span, &format!("{key}.oauth.{sub}"), problem, fix));
            }
            if let Some(oauth) = &mut provider.oauth {
                oauth.rebase(base);
            }
            // A bare name is looked up in PATH when the server starts; a path with a
            // separator is the config file's, like every other path in it.
            provider.command = provider.command.map(|c| file_relative_command(base, c));
            provider.component = provider.component.map(at);
            provider.read_exec = provider.read_exec.into_iter().map(at).collect();
            for dir in &mut provider.dirs {
                dir.host = at(std::mem::take(&mut dir.host));
            }
            providers.insert(name, provider);
        }
        let cluster = match raw.cluster {
            Some(cluster) => {
                let span = cluster.span();
                Some(cluster_checked(
                    cluster.into_inner(),
                    &|key, problem, fix| src.error(span.clone(), &format!("cluster.{key}"), problem, fix),
                    &at,
                )?)
            }
            None => None,
        };
        let mut config = Config {
            path: path.to_owned(),
            policy: at(raw.policy.unwrap_or_else(|| "policy.toml".into())),
            lock: at(raw.lock.unwrap_or_else(|| "wasmgate.lock".into())),
            audit: AuditConfig {
                path: raw.audit.path.map(at).unwrap_or_else(|| state_dir.join("audit.jsonl")),
                durability,
                redact: raw.audit.redact,
                key_file: raw.audit.key_file.map(at),
                rotate_bytes,
            },
            state_dir,
            limits: raw.limits,
            sandbox: SandboxSettings { cache_dir: raw.sandbox.cache_dir.map(at), ..raw.sandbox },
            providers,
            serve: raw.serve,
            cluster,
        };
        if let Some(file) = raw.mcp_servers {
            crate::mcp_servers::import(&at(file), &mut config.providers)?;
        }
        Ok(config)
    }
}

/// `[cluster]` as written, checked, its key file made absolute with `at`.
fn cluster_checked(
    mut cluster: ClusterConfig,
    problem: &dyn Fn(&str, String, &str) -> PolicyError,
    at: &dyn Fn(PathBuf) -> PathBuf,
) -> Result<ClusterConfig, PolicyError> {
    if !wasmgate_server::valid_replica(&cluster.replica) {
        return Err(problem(
            "replica",
            format!("{:?} cannot name a replica", cluster.replica),
            "use 1 to 32 letters, digits, - and _, different on every replica (e.g. \"gw-1\")",
        ));
    }
    if cluster.store.is_some() == cluster.store_env.is_some() {
        return Err(problem(
            "store",
            "a cluster needs its store: exactly one of `store` and `store_env`".into(),
            "give `store = \"redis://HOST:6379/0\"`, or `store_env` naming a variable that holds the URL with its password",
        ));
    }
    if cluster.anchor_interval_ms < 100 {
        return Err(problem("anchor_interval_ms", "an anchor more than 10 times a second".into(), "use at least 100"));
    }
    if cluster.store_timeout_ms < 10 {
        return Err(problem("store_timeout_ms", "a timeout under 10 ms".into(), "use at least 10 (default 1000)"));
    }
    cluster.approval_key_file = at(std::mem::take(&mut cluster.approval_key_file));
    Ok(cluster)
}

/// `$XDG_STATE_HOME/wasmgate`, or `$HOME/.local/state/wasmgate`. A relative value is
/// ignored, as the XDG base directory specification says: it would name a different
/// directory from each place the gateway is started.
fn default_state_dir() -> Option<PathBuf> {
    let absolute = |var: &str| std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
    let base = absolute("XDG_STATE_HOME").or_else(|| absolute("HOME").map(|home| home.join(".local").join("state")));
    base.map(|base| base.join("wasmgate"))
}

#[cfg(test)]
mod tests;
