//! The installs of `init --install`, confined as a server is.
//!
//! npm or pip runs under the confinement of a stdio server (`wasmgate-confine`): its
//! working directory is the package folder, the only place it may write (its cache and
//! home are in it); it reads the system, its interpreter and the user's npm or pip
//! configuration; and it reaches the network only through the gateway's egress proxy, to
//! the registries npm or pip is configured to use. Those are granted by name at whatever
//! address the name has, which a policy's grant by name does not do: registries are
//! often mirrors at private or reserved addresses.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use wasmgate_client::{CloseReason, Inbound, StdioConfig, StdioTransport, Transport as _};
use wasmgate_confine::Confinement;
use wasmgate_egress::{EgressGrant, HostGrant};

/// One install to run.
#[derive(Debug)]
pub(crate) struct Install {
    /// npm, or the virtual environment's python.
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// The package folder: its working directory, and all it may write.
    pub folder: PathBuf,
    /// What it runs from besides the system: the interpreter, npm's own files.
    pub read_exec: Vec<PathBuf>,
    /// What it reads besides: the user's configuration, a CA file, a local wheel folder.
    pub read_only: Vec<PathBuf>,
    /// Its whole environment.
    pub env: Vec<(OsString, OsString)>,
    /// The registries it may reach.
    pub registries: Vec<HostGrant>,
}

impl Install {
    /// Runs it confined and waits for it; `what` names it in errors.
    pub(crate) fn run(self, what: &str) -> anyhow::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("no async runtime")?;
        runtime.block_on(self.confined(what))
    }

    async fn confined(self, what: &str) -> anyhow::Result<()> {
        let mut confinement = self.read_exec.iter().fold(Confinement::default(), |c, p| c.read_exec(p));
        confinement = self.read_only.iter().fold(confinement, |c, p| c.read_only(p));
        let mut config = StdioConfig::new(what, &self.program, &self.folder).confinement(Some(confinement));
        config.args = self.args;
        config.env = self.env.into_iter().collect();
        config.limits.stderr_total_bytes = 1 << 20;
        if !self.registries.is_empty() {
            config = config.egress(EgressGrant { hosts: self.registries, observer: None });
        }
        let mut transport = StdioTransport::spawn(&config).with_context(|| format!("{what}, confined"))?;
        let tail = transport.stderr_tail();
        let Some(mut inbound) = transport.take_inbound() else { bail!("{what}: no output to wait on") };
        let ended = loop {
            match inbound.recv().await {
                Some(Inbound::Closed(reason)) => break reason,
                Some(_) => {}
                None => break CloseReason::StreamEnded,
            }
        };
        match ended {
            CloseReason::Exited { code: Some(0), .. } => Ok(()),
            reason => {
                let said = tail.lines(std::time::Duration::from_secs(2)).await.join("\n");
                bail!("{what} failed ({reason}); its last words:\n{said}")
            }
        }
    }
}

/// The `host:port` of `url` (http or https), for a grant.
pub(crate) fn registry(url: &str) -> Option<HostGrant> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    let port = parsed.port_or_known_default()?;
    let host = parsed.host_str()?.trim_start_matches('[').trim_end_matches(']');
    HostGrant::parse(&format!("{}:{port}", if host.contains(':') { format!("[{host}]") } else { host.to_owned() }))
        .ok()
        .map(HostGrant::at_any_address)
}

/// The `key=value` lines `program args` prints (a value in single quotes unquoted);
/// nothing when it fails.
pub(crate) fn settings(program: &Path, args: &[&str]) -> BTreeMap<String, String> {
    let Ok(out) = Command::new(program).args(args).output() else { return BTreeMap::new() };
    if !out.status.success() {
        return BTreeMap::new();
    }
    parse_settings(&String::from_utf8_lossy(&out.stdout))
}

fn parse_settings(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| {
            let value = value.trim();
            let value = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')).unwrap_or(value);
            (key.trim().to_owned(), value.to_owned())
        })
        .collect()
}

/// Copies the folder `from` to `to` (files and folders; links are skipped), for a cache
/// the install may write.
pub(crate) fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut pending = vec![(from.to_owned(), to.to_owned())];
    while let Some((from, to)) = pending.pop() {
        std::fs::create_dir_all(&to)?;
        for entry in std::fs::read_dir(&from)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let target = to.join(entry.file_name());
            if kind.is_dir() {
                pending.push((entry.path(), target));
            } else if kind.is_file() {
                std::fs::copy(entry.path(), target)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_registry_url_is_granted_by_its_host_and_port_at_any_address() {
        let grant = |url: &str| registry(url).map(|g| (g.to_string(), g.any_address));
        assert_eq!(grant("https://registry.npmjs.org/"), Some(("registry.npmjs.org:443".into(), true)));
        assert_eq!(grant(" http://10.0.0.5:4873/npm/ \n"), Some(("10.0.0.5:4873".into(), true)));
        assert_eq!(grant("https://[fd00::1]:8443/simple"), Some(("[fd00::1]:8443".into(), true)));
        assert_eq!(grant("/opt/wheels"), None, "a local folder is read, not reached");
        assert_eq!(grant("not a url"), None);
    }

    #[test]
    fn npm_and_pip_settings_are_read_as_keys_and_values() {
        let npm = parse_settings("registry=https://r.example/\ncache=/home/u/.npm\n");
        assert_eq!(npm["registry"], "https://r.example/");
        let pip = parse_settings(":env:.find-links='/opt/wheels'\nglobal.cert='/etc/ssl/ca.crt'\nnoise\n");
        assert_eq!((pip["global.cert"].as_str(), pip.len()), ("/etc/ssl/ca.crt", 2));
    }

    #[test]
    fn a_cache_is_copied_whole_and_links_are_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("from");
        std::fs::create_dir_all(from.join("a/b")).unwrap();
        std::fs::write(from.join("a/b/c"), "content").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", from.join("link")).unwrap();
        copy_tree(&from, &dir.path().join("to")).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("to/a/b/c")).unwrap(), "content");
        assert!(!dir.path().join("to/link").exists());
    }
}
