//! `wasmgate init --from FILE`: the MCP servers a desktop client already uses, put behind
//! wasmgate.
//!
//! * Reads the client's JSON (`mcpServers` of Claude Desktop and Cursor, `servers` of VS
//!   Code's `mcp.json`, `mcp.servers` of its settings) with the same strict reading as
//!   `mcp_servers` in `wasmgate.toml` (CONFIG.md).
//! * Writes `wasmgate.toml` with one provider per server and `policy.toml` in which every
//!   tool of every server asks (`unlisted = "ask"`) and every stdio server is confined
//!   with no network (`confinement = "required"`, no `network_hosts`); never over an
//!   existing file without `--force`; both private to the user (0600), since a server's
//!   `env` may hold a credential.
//! * A server that fetches its code at each start (`npx -y pkg`, `uvx pkg`) could not
//!   start confined (no network to download itself), and code fetched at each start
//!   cannot be pinned: with the user's consent (asked on a terminal, or `--install`) it
//!   is installed once into `state/packages/<name>/` (npm or a Python virtual
//!   environment, the exact versions recorded there: `package-lock.json`,
//!   `requirements.lock`) and the command rewritten to run from there. The install runs
//!   confined (the `install` module) and no code of the package's: npm with
//!   `--ignore-scripts`, pip with `--only-binary :all:` (wheels only, no `setup.py`),
//!   unless `--allow-install-scripts` says otherwise. The lock pins the whole installed
//!   folder (`tree`), checked at every start.
//! * Paths a stdio server's arguments name (the directory a filesystem server serves,
//!   say) are granted to it in the policy, read-only (`read_paths`), or read and write
//!   (`write_paths`) when `--writable` names them: confined, it could reach nothing else.
//! * `--client-config` prints the JSON that points the client at `wasmgate serve`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use clap::Args;
use wasmgate_gateway::{HeaderConfig, ProviderConfig, read_mcp_servers};

use crate::install;

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The client's configuration: Claude Desktop's or Cursor's `mcpServers` JSON, VS
    /// Code's `mcp.json` (`servers`) or settings (`mcp.servers`).
    #[arg(long, value_name = "FILE", required_unless_present = "client_config")]
    from: Option<PathBuf>,
    /// Where `wasmgate.toml`, `policy.toml` and the state directory go.
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: PathBuf,
    /// Overwrite `wasmgate.toml` and `policy.toml` if they are there.
    #[arg(long)]
    force: bool,
    /// Install servers that download themselves at each start (`npx -y`, `uvx`) without
    /// asking.
    #[arg(long, conflicts_with = "no_install")]
    install: bool,
    /// Leave such servers as they are (confined, they cannot start).
    #[arg(long)]
    no_install: bool,
    /// Let the install run the packages' own code: npm's install scripts (`preinstall`,
    /// `postinstall`, ...) and pip's builds from source (`setup.py`). That code runs
    /// before any review, confined as the install is (it may write the package folder
    /// and reach the registry); without this flag a package that needs it fails to
    /// install, saying so.
    #[arg(long)]
    allow_install_scripts: bool,
    /// A path a server's arguments name that it may write too (repeatable); the others
    /// are granted read-only.
    #[arg(long, value_name = "PATH")]
    writable: Vec<PathBuf>,
    /// Print only the JSON that points a client at `wasmgate serve` with the
    /// configuration in DIR.
    #[arg(long, conflicts_with_all = ["from", "force", "install", "no_install", "allow_install_scripts", "writable"])]
    client_config: bool,
}

pub fn run(args: &InitArgs) -> anyhow::Result<()> {
    let dir = std::path::absolute(&args.dir).context("the directory")?;
    let (config, policy) = (dir.join("wasmgate.toml"), dir.join("policy.toml"));
    if args.client_config {
        if !config.exists() {
            bail!("no configuration at {}: run `wasmgate init --from FILE` first", config.display());
        }
        println!("{}", client_config(&config)?);
        return Ok(());
    }
    let Some(from) = &args.from else { bail!("--from FILE names the client's configuration") };
    for file in [&config, &policy] {
        if file.exists() && !args.force {
            bail!("{} is already there: pass --force to overwrite it", file.display());
        }
    }
    let mut servers = read_mcp_servers(from, &BTreeMap::new())?;
    if servers.is_empty() {
        bail!("{} lists no servers (or only disabled ones)", from.display());
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut notes = Vec::new();
    for (name, server) in &mut servers {
        let Some(fetch) = Fetch::of(server) else { continue };
        let what = fetch.describe();
        if !consent(args, name, &what)? {
            notes.push(format!(
                "{name}: left as `{what}`; confined, it cannot download itself, so it will not start \
                 (run init again with --install, or install it yourself and set its `command`)"
            ));
            continue;
        }
        let folder = dir.join("state/packages").join(name);
        let installed = fetch.install(&folder, args.allow_install_scripts);
        // The install's own home and cache are not part of what runs (nor of its pin).
        for scratch in [".home", ".npm-cache", ".pip-cache"] {
            let _ = std::fs::remove_dir_all(folder.join(scratch));
        }
        let installed = installed.with_context(|| format!("installing {name}'s server ({what})"))?;
        notes.push(format!(
            "{name}: installed {} into {} (versions in {})",
            installed.what,
            rel(&dir, &folder),
            installed.lock
        ));
        server.command = Some(installed.command);
        server.args = installed.args;
        server.read_exec = installed.read_exec;
    }
    let writable: Vec<PathBuf> =
        args.writable.iter().map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone())).collect();
    let grants: BTreeMap<String, Grants> =
        servers.iter().map(|(name, server)| (name.clone(), Grants::of(server, &dir, &writable))).collect();
    for (name, grants) in &grants {
        if let Some(shown) = grants.describe() {
            notes.push(format!("{name}: {shown}"));
        }
    }
    // Private to the user: the servers' `env` and headers may hold credentials, copied as
    // the client's file had them.
    write_private(&config, &wasmgate_toml(from, &servers))?;
    write_private(&policy, &policy_toml(from, &servers, &grants))?;
    println!(
        "wrote {} ({} servers) and {}: every tool asks, every stdio server is confined with no network",
        config.display(),
        servers.len(),
        policy.display()
    );
    for note in notes {
        println!("  {note}");
    }
    println!("next: wasmgate review --config {}   (read each server's tools and code, and pin them)", config.display());
    println!("then: wasmgate init --dir {} --client-config   (the JSON for your client)", dir.display());
    Ok(())
}

/// Writes `text` to `path`, readable and writable by the user alone (0600).
fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(text.as_bytes()).with_context(|| format!("writing {}", path.display()))
}

/// `path` relative to `dir` when under it, for messages.
fn rel(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir).unwrap_or(path).display().to_string()
}

/// Whether to install `name`'s server (`what`): the flags decide, else a person at a
/// terminal; without one, no.
fn consent(args: &InitArgs, name: &str, what: &str) -> anyhow::Result<bool> {
    if args.install || args.no_install {
        return Ok(args.install);
    }
    if !std::io::stdin().is_terminal() {
        return Ok(false);
    }
    eprint!(
        "{name} runs `{what}`, which downloads its code at each start: a confined server has no network for that, \
         and code that changes at each start cannot be pinned. Install it once, under state/packages/{name}/? [y/N] "
    );
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// The paths a stdio server's arguments name, granted to it: read-only, or read and
/// write when `--writable` names them (or a directory above them).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Grants {
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
}

impl Grants {
    /// The grants of `server`, configured in `dir`: every existing absolute path among its
    /// arguments, but for what it runs from (its installed package, its program).
    fn of(server: &ProviderConfig, dir: &Path, writable: &[PathBuf]) -> Self {
        let mut grants = Grants::default();
        if server.command.is_none() {
            return grants;
        }
        let packages = dir.join("state/packages");
        for arg in &server.args {
            let path = Path::new(arg);
            if !path.is_absolute() || !path.exists() || path.starts_with(&packages) {
                continue;
            }
            let path = path.to_path_buf();
            let list = if writable.iter().any(|w| path.starts_with(w)) { &mut grants.write } else { &mut grants.read };
            if !list.contains(&path) {
                list.push(path);
            }
        }
        grants
    }

    /// What a person is told, if anything is granted.
    fn describe(&self) -> Option<String> {
        let list = |paths: &[PathBuf]| paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
        match (self.read.is_empty(), self.write.is_empty()) {
            (true, true) => None,
            (false, true) => Some(format!(
                "may read {} (named in its arguments; `--writable PATH` lets it write there)",
                list(&self.read)
            )),
            (true, false) => Some(format!("may read and write {} (named in its arguments)", list(&self.write))),
            (false, false) => Some(format!(
                "may read {} and read and write {} (named in its arguments)",
                list(&self.read),
                list(&self.write)
            )),
        }
    }
}

/// A server command that downloads its code at each start.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fetch {
    /// `npx [-y] [-p PKG] PKG_OR_BIN args...`
    Npm { package: String, bin: Option<String>, args: Vec<String> },
    /// `uvx [--from SPEC] CMD args...`
    Python { package: String, command: String, args: Vec<String> },
}

/// What an install gave: how to run the server from its folder.
struct Installed {
    what: String,
    lock: &'static str,
    command: PathBuf,
    args: Vec<String>,
    read_exec: Vec<PathBuf>,
}

impl Fetch {
    /// The fetch `server` runs, if its command is one.
    fn of(server: &ProviderConfig) -> Option<Self> {
        let program = server.command.as_ref()?.file_name()?.to_str()?;
        match program {
            "npx" => npx(&server.args),
            "uvx" => uvx(&server.args),
            _ => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Fetch::Npm { package, .. } => format!("npx {package}"),
            Fetch::Python { package, .. } => format!("uvx {package}"),
        }
    }

    /// Installs the package into `folder`, confined (see the `install` module); its own
    /// install code runs only if `scripts`, and confined too.
    fn install(&self, folder: &Path, scripts: bool) -> anyhow::Result<Installed> {
        std::fs::create_dir_all(folder)?;
        let folder = folder.canonicalize()?;
        let home = folder.join(".home");
        std::fs::create_dir_all(&home)?;
        let refused = match scripts {
            true => "(the package's own install code ran confined: it may write the package folder only)",
            false => {
                "(the install ran none of the package's own code: if it needs its install scripts, \
                      --allow-install-scripts lets them run, confined)"
            }
        };
        let mut env = passed_on(&["npm_config_", "NPM_CONFIG_", "PIP_", "NODE_EXTRA_CA_CERTS", "SSL_CERT_", "LANG"]);
        env.push(("HOME".into(), home.clone().into()));
        match self {
            Fetch::Npm { package, bin, args } => {
                let node = which("node")?;
                let npm = which("npm")?;
                let node_home = node.parent().and_then(Path::parent).unwrap_or(Path::new("/")).to_owned();
                let npm_home = npm.canonicalize()?.ancestors().nth(2).unwrap_or(Path::new("/")).to_owned();
                let mut read_only = Vec::new();
                // A package given as a local tarball or folder is read from there.
                let local = Path::new(package.strip_prefix("file:").unwrap_or(package));
                if local.is_absolute() && local.exists() {
                    read_only.push(local.to_owned());
                }
                // npm's settings, asked once: `key=value` lines.
                let settings = install::settings(
                    &npm,
                    &["config", "get", "registry", "userconfig", "globalconfig", "cafile", "cache"],
                );
                let setting =
                    |key: &str| settings.get(key).filter(|v| !v.is_empty() && *v != "undefined" && *v != "null");
                let registry = setting("registry").map_or("https://registry.npmjs.org/", String::as_str);
                let registries: Vec<_> = install::registry(registry).into_iter().collect();
                for key in ["userconfig", "globalconfig", "cafile"] {
                    if let Some(path) = setting(key).map(PathBuf::from)
                        && path.is_file()
                    {
                        if key == "userconfig" {
                            env.push(("npm_config_userconfig".into(), path.clone().into()));
                        }
                        read_only.push(path);
                    }
                }
                // npm needs its cache writable, even offline: the install gets one of its own,
                // which starts as a copy of the user's when npm is to work offline from it.
                let cache = folder.join(".npm-cache");
                let offline = std::env::var("npm_config_offline").is_ok_and(|v| v == "true");
                let user = setting("cache").map(PathBuf::from);
                if let Some(user) = user.filter(|user| offline && user.join("_cacache").is_dir()) {
                    install::copy_tree(&user.join("_cacache"), &cache.join("_cacache"))
                        .with_context(|| format!("copying npm's cache {} for an offline install", user.display()))?;
                }
                env.push(("npm_config_cache".into(), cache.into()));
                env.push(("npm_config_update_notifier".into(), "false".into()));
                let path = std::env::join_paths([
                    node.parent().unwrap_or(Path::new("/usr/bin")),
                    Path::new("/usr/bin"),
                    Path::new("/bin"),
                ])?;
                env.push(("PATH".into(), path));
                let mut npm_args: Vec<OsString> =
                    ["install", "--no-audit", "--no-fund", "--save-exact"].iter().map(OsString::from).collect();
                if !scripts {
                    npm_args.push("--ignore-scripts".into());
                }
                npm_args.extend(["--prefix".into(), folder.clone().into_os_string(), package.into()]);
                let shown: Vec<String> = registries.iter().map(ToString::to_string).collect();
                eprintln!(
                    "installing {package} with npm, confined: it may write {} only and reach {} only (the registry npm is configured with, at whatever address it has)",
                    folder.display(),
                    shown.join(", ")
                );
                install::Install {
                    program: npm,
                    args: npm_args,
                    folder: folder.clone(),
                    read_exec: vec![node_home.clone(), npm_home],
                    read_only,
                    env,
                    registries,
                }
                .run("npm install")
                .context(refused)?;
                // The name npm recorded (a tarball or folder spec does not say it).
                let recorded: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(folder.join("package.json")).unwrap_or_default())
                        .unwrap_or_default();
                let name = match recorded["dependencies"].as_object() {
                    Some(deps) if deps.len() == 1 => deps.keys().next().map_or(npm_name(package), String::as_str),
                    _ => npm_name(package),
                };
                let root = folder.join("node_modules").join(name);
                let manifest: serde_json::Value = serde_json::from_str(
                    &std::fs::read_to_string(root.join("package.json")).context("the installed package.json")?,
                )?;
                let version = manifest["version"].as_str().unwrap_or("?").to_owned();
                let script = root.join(npm_bin(&manifest, name, bin.as_deref())?).canonicalize()?;
                let mut run = vec![script.display().to_string()];
                run.extend(args.iter().cloned());
                Ok(Installed {
                    what: format!("{name} {version} (npm)"),
                    lock: "package-lock.json",
                    command: node,
                    args: run,
                    read_exec: vec![folder, node_home],
                })
            }
            Fetch::Python { package, command, args } => {
                let venv = folder.join("venv");
                let python = which("python3")?;
                // The environment itself comes from the interpreter alone (its bundled pip).
                succeed(Command::new(&python).args(["-m", "venv"]).arg(&venv), "python3 -m venv")?;
                let pip = venv.join("bin/python");
                let base = Command::new(&python).args(["-c", "import sys; print(sys.base_prefix)"]).output()?;
                let base = PathBuf::from(String::from_utf8_lossy(&base.stdout).trim());
                let base = base.canonicalize().unwrap_or(base);
                // pip's settings, asked once: `section.key='value'` lines.
                let settings = install::settings(&pip, &["-m", "pip", "config", "list"]);
                let config = |key: &str| settings.get(key).cloned();
                let mut registries = Vec::new();
                let mut read_only = Vec::new();
                // A package given as a local wheel is read from there.
                if Path::new(package).is_absolute() && Path::new(package).exists() {
                    read_only.push(PathBuf::from(package));
                }
                match config("global.index-url").or_else(|| std::env::var("PIP_INDEX_URL").ok()) {
                    Some(index) => registries.extend(install::registry(&index)),
                    None => registries.extend(
                        ["https://pypi.org/simple", "https://files.pythonhosted.org"]
                            .iter()
                            .filter_map(|u| install::registry(u)),
                    ),
                }
                let extra = config("global.extra-index-url").or_else(|| std::env::var("PIP_EXTRA_INDEX_URL").ok());
                let links = config("global.find-links").or_else(|| std::env::var("PIP_FIND_LINKS").ok());
                for found in extra
                    .iter()
                    .chain(links.iter())
                    .flat_map(|v| v.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
                {
                    match install::registry(&found) {
                        Some(grant) => registries.push(grant),
                        None if Path::new(&found).exists() => read_only.push(PathBuf::from(found)),
                        None => {}
                    }
                }
                if let Some(cert) = config("global.cert").map(PathBuf::from).filter(|p| p.is_file()) {
                    read_only.push(cert);
                }
                // Its configuration, and what it names the system by in its user agent.
                for file in [
                    "/etc/pip.conf",
                    "/etc/xdg/pip/pip.conf",
                    "/etc/os-release",
                    "/etc/debian_version",
                    "/etc/lsb-release",
                ] {
                    if Path::new(file).is_file() {
                        read_only.push(file.into());
                    }
                }
                if let Some(user) = std::env::var_os("HOME")
                    .map(|h| PathBuf::from(h).join(".config/pip/pip.conf"))
                    .filter(|p| p.is_file())
                {
                    env.push(("PIP_CONFIG_FILE".into(), user.clone().into()));
                    read_only.push(user);
                }
                env.push(("PIP_CACHE_DIR".into(), folder.join(".pip-cache").into()));
                env.push(("PATH".into(), "/usr/bin:/bin".into()));
                let mut pip_args: Vec<OsString> = ["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
                    .iter()
                    .map(OsString::from)
                    .collect();
                if !scripts {
                    pip_args.extend(["--only-binary".into(), ":all:".into()]);
                }
                pip_args.push(package.into());
                let shown: Vec<String> = registries.iter().map(ToString::to_string).collect();
                eprintln!(
                    "installing {package} with pip, confined: it may write {} only and reach {} only (the index pip is configured with, at whatever address it has)",
                    folder.display(),
                    shown.join(", ")
                );
                install::Install {
                    program: pip.clone(),
                    args: pip_args,
                    folder: folder.clone(),
                    read_exec: vec![base.clone(), venv.clone()],
                    read_only,
                    env,
                    registries,
                }
                .run("pip install")
                .context(refused)?;
                let frozen = Command::new(&pip).args(["-m", "pip", "freeze"]).output()?;
                std::fs::write(folder.join("requirements.lock"), &frozen.stdout)?;
                let version = String::from_utf8_lossy(&frozen.stdout)
                    .lines()
                    .find(|l| l.to_lowercase().starts_with(&format!("{}==", pip_name(package).to_lowercase())))
                    .map_or_else(|| pip_name(package).to_owned(), str::to_owned);
                Ok(Installed {
                    what: format!("{version} (pip)"),
                    lock: "requirements.lock",
                    command: venv.join("bin").join(command),
                    args: args.clone(),
                    read_exec: vec![folder, base],
                })
            }
        }
    }
}

/// The variables of this process whose names start with one of `prefixes`, to pass on.
fn passed_on(prefixes: &[&str]) -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(name, _)| name.to_str().is_some_and(|n| prefixes.iter().any(|p| n.starts_with(p))))
        .collect()
}

/// `npx` arguments as a fetch: `-y`/`--yes` and `-q` skipped, `-p`/`--package` naming
/// the package (then the first word is its command), else the first word is the package.
fn npx(args: &[String]) -> Option<Fetch> {
    let mut package = None;
    let mut words = args.iter();
    let mut rest = Vec::new();
    while let Some(arg) = words.next() {
        match arg.as_str() {
            "-y" | "--yes" | "-q" | "--quiet" => {}
            "-p" | "--package" => package = Some(words.next()?.clone()),
            flag if flag.starts_with("--package=") => package = flag.strip_prefix("--package=").map(str::to_owned),
            flag if flag.starts_with('-') && rest.is_empty() => return None,
            word => {
                rest.push(word.to_owned());
                rest.extend(words.by_ref().cloned());
            }
        }
    }
    let mut rest = rest.into_iter();
    let first = rest.next()?;
    Some(match package {
        Some(package) => Fetch::Npm { package, bin: Some(first), args: rest.collect() },
        None => Fetch::Npm { package: first, bin: None, args: rest.collect() },
    })
}

/// `uvx` arguments as a fetch: `--from SPEC` naming the package, the first word the
/// command (and the package without `--from`; `pkg@1.2` pins it).
fn uvx(args: &[String]) -> Option<Fetch> {
    let mut from = None;
    let mut words = args.iter();
    let first = loop {
        let arg = words.next()?;
        match arg.as_str() {
            "--from" => from = Some(words.next()?.clone()),
            flag if flag.starts_with("--from=") => from = flag.strip_prefix("--from=").map(str::to_owned),
            flag if flag.starts_with('-') => return None,
            word => break word.to_owned(),
        }
    };
    let pin = |spec: &str| match spec.split_once('@') {
        Some((name, version)) if !name.is_empty() => format!("{name}=={version}"),
        _ => spec.to_owned(),
    };
    let command = first.split_once('@').map_or(first.as_str(), |(name, _)| name).to_owned();
    let package = pin(from.as_deref().unwrap_or(&first));
    Some(Fetch::Python { package, command, args: words.cloned().collect() })
}

/// The package name of an npm spec (`@scope/name@1.2.3` is `@scope/name`).
fn npm_name(spec: &str) -> &str {
    let at = if let Some(scoped) = spec.strip_prefix('@') { scoped.find('@').map(|i| i + 1) } else { spec.find('@') };
    at.map_or(spec, |i| &spec[..i])
}

/// The distribution name of a pip spec (`pkg==1.2`, `pkg>=1`, `pkg[extra]`).
fn pip_name(spec: &str) -> &str {
    let end = spec.find(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))).unwrap_or(spec.len());
    &spec[..end]
}

/// The file a package's `bin` runs: the one named `wanted`, or the package's own name,
/// or its only one.
fn npm_bin(manifest: &serde_json::Value, name: &str, wanted: Option<&str>) -> anyhow::Result<String> {
    let short = name.rsplit('/').next().unwrap_or(name);
    match &manifest["bin"] {
        serde_json::Value::String(path) if wanted.is_none_or(|w| w == short) => Ok(path.clone()),
        serde_json::Value::Object(bins) => {
            let pick = wanted.or_else(|| bins.contains_key(short).then_some(short));
            let path = match pick {
                Some(bin) => bins.get(bin),
                None if bins.len() == 1 => bins.values().next(),
                None => None,
            };
            match path.and_then(serde_json::Value::as_str) {
                Some(path) => Ok(path.to_owned()),
                None => {
                    let names: Vec<&String> = bins.keys().collect();
                    bail!("{name} has several commands ({names:?}): name one with `npx -p {name} COMMAND`")
                }
            }
        }
        _ => bail!("{name} has no command to run (no `bin` in its package.json)"),
    }
}

/// `program` on PATH, resolved.
fn which(program: &str) -> anyhow::Result<PathBuf> {
    let found = wasmgate_client::resolve_program(Path::new(program), &BTreeMap::new())
        .with_context(|| format!("{program} is not on PATH: install it first"))?;
    Ok(found.canonicalize().unwrap_or(found))
}

/// Runs `command`, its errors to the user; fails when it does.
fn succeed(command: &mut Command, what: &str) -> anyhow::Result<()> {
    let status = command.stdin(std::process::Stdio::null()).status().with_context(|| format!("cannot run {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// The `wasmgate.toml` of `servers`, imported from `from`.
fn wasmgate_toml(from: &Path, servers: &BTreeMap<String, ProviderConfig>) -> String {
    let mut providers = toml::Table::new();
    for (name, server) in servers {
        let mut table = toml::Table::new();
        if let Some(command) = &server.command {
            table.insert("command".into(), command.display().to_string().into());
            table.insert("args".into(), server.args.clone().into());
            if !server.env.is_empty() {
                let env: toml::Table = server.env.iter().map(|(k, v)| (k.clone(), v.clone().into())).collect();
                table.insert("env".into(), env.into());
            }
            if !server.read_exec.is_empty() {
                let dirs: Vec<String> = server.read_exec.iter().map(|d| d.display().to_string()).collect();
                table.insert("read_exec".into(), dirs.into());
            }
        }
        if let Some(url) = &server.url {
            table.insert("url".into(), url.clone().into());
            if !server.headers.is_empty() {
                let headers: toml::Table = server
                    .headers
                    .iter()
                    .map(|(k, v)| {
                        let value: toml::Value = match v {
                            HeaderConfig::Value(value) => value.clone().into(),
                            HeaderConfig::Env { env } => {
                                toml::Table::from_iter([("env".to_owned(), env.clone().into())]).into()
                            }
                        };
                        (k.clone(), value)
                    })
                    .collect();
                table.insert("headers".into(), headers.into());
            }
        }
        providers.insert(name.clone(), table.into());
    }
    let mut root = toml::Table::new();
    root.insert("policy".into(), "policy.toml".into());
    root.insert("lock".into(), "wasmgate.lock".into());
    root.insert("state_dir".into(), "state".into());
    root.insert("providers".into(), providers.into());
    format!(
        "# Written by `wasmgate init --from {}`: its servers, behind wasmgate (docs/CONFIG.md).\n\n{root}",
        from.display()
    )
}

/// The `policy.toml` of `servers`: every tool asks, every stdio server confined with no
/// network.
fn policy_toml(from: &Path, servers: &BTreeMap<String, ProviderConfig>, grants: &BTreeMap<String, Grants>) -> String {
    let mut providers = toml::Table::new();
    for (name, server) in servers {
        let mut table = toml::Table::new();
        let note = format!("imported from {}: every tool asks until you decide (docs/POLICY.md)", from.display());
        table.insert("note".into(), note.into());
        table.insert("unlisted".into(), "ask".into());
        if server.command.is_some() {
            table.insert("confinement".into(), "required".into());
        }
        if let Some(grants) = grants.get(name) {
            let paths = |paths: &[PathBuf]| -> toml::Value {
                paths.iter().map(|p| toml::Value::from(p.display().to_string())).collect::<Vec<_>>().into()
            };
            if !grants.read.is_empty() {
                table.insert("read_paths".into(), paths(&grants.read));
            }
            if !grants.write.is_empty() {
                table.insert("write_paths".into(), paths(&grants.write));
            }
        }
        providers.insert(name.clone(), table.into());
    }
    let mut root = toml::Table::new();
    root.insert("providers".into(), providers.into());
    format!(
        "# Written by `wasmgate init`: every tool asks, every stdio server runs confined with no network.\n\
         # Allow what you trust (`[providers.NAME.tools]`, `tool = \"allow\"`), grant hosts with\n\
         # `network_hosts`, and run `wasmgate review` after each change of a server.\n\n{root}"
    )
}

/// The client's JSON for `wasmgate serve` with the configuration `config`.
fn client_config(config: &Path) -> anyhow::Result<String> {
    let exe = std::env::current_exe().context("where this wasmgate is")?;
    let snippet = serde_json::json!({
        "mcpServers": {
            "wasmgate": {
                "command": exe.display().to_string(),
                "args": ["serve", "--config", config.display().to_string()],
            }
        }
    });
    Ok(serde_json::to_string_pretty(&snippet)?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn npx_and_uvx_commands_name_their_package() {
        assert_eq!(
            npx(&words("-y @modelcontextprotocol/server-everything@2026.8.31 stdio")),
            Some(Fetch::Npm {
                package: "@modelcontextprotocol/server-everything@2026.8.31".into(),
                bin: None,
                args: words("stdio")
            })
        );
        assert_eq!(
            npx(&words("--package @a/tools -y serve --port 1")),
            Some(Fetch::Npm { package: "@a/tools".into(), bin: Some("serve".into()), args: words("--port 1") })
        );
        assert_eq!(npx(&words("--node-options=x pkg")), None, "an option not understood leaves it alone");
        assert_eq!(npx(&[]), None);
        assert_eq!(
            uvx(&words("mcp-server-time@1.2.0 --local-timezone UTC")),
            Some(Fetch::Python {
                package: "mcp-server-time==1.2.0".into(),
                command: "mcp-server-time".into(),
                args: words("--local-timezone UTC")
            })
        );
        assert_eq!(
            uvx(&words("--from caldav-mcp==0.3 caldav")),
            Some(Fetch::Python { package: "caldav-mcp==0.3".into(), command: "caldav".into(), args: vec![] })
        );
    }

    #[test]
    fn spec_names_and_bins() {
        assert_eq!(npm_name("@scope/name@1.2.3"), "@scope/name");
        assert_eq!(npm_name("@scope/name"), "@scope/name");
        assert_eq!(npm_name("plain@latest"), "plain");
        assert_eq!(pip_name("pkg[extra]>=1"), "pkg");
        let one = serde_json::json!({"bin": "dist/index.js"});
        assert_eq!(npm_bin(&one, "@s/x", None).unwrap(), "dist/index.js");
        let many = serde_json::json!({"bin": {"x": "a.js", "y": "b.js"}});
        assert_eq!(npm_bin(&many, "@s/x", None).unwrap(), "a.js");
        assert_eq!(npm_bin(&many, "@s/z", Some("y")).unwrap(), "b.js");
        assert!(npm_bin(&many, "@s/z", None).unwrap_err().to_string().contains("several commands"));
        assert!(npm_bin(&serde_json::json!({}), "x", None).is_err());
    }
}
