//! A provider's code: the files it runs from, pinned in the lock file by role like its
//! tools' definitions, so code that changes under a reviewed lock is noticed before it
//! runs.
//!
//! | role | what | pinned |
//! |---|---|---|
//! | `command` | a stdio server's program, as it will be found | unless it is in a system directory (`/usr`, `/bin`, `/sbin`, `/lib*`: the distribution's, updated by its package manager) or an argument names a file (then the program is an interpreter, and the file is the server) |
//! | `arg:N` | a file an argument names by its absolute path (a script, a configuration) | always |
//! | `component` | a WASM tool component | always |
//! | `formatter:GLOB` | each formatter the policy selects for the provider | always |
//! | `screen:N` | each screen component the policy runs on its texts | always |
//!
//! A command that fetches its code when it starts (`npx -y`, `uvx`, `pipx run`, ...)
//! cannot be pinned: [`Code::fetches`] says so, review shows it, and the policy can refuse
//! it (`fetched_code = "deny"`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmgate_policy::{CodePin, CodeState, Lock, LockError, Policy, ProviderPolicy};

use crate::config::{Config, ProviderConfig, ProviderKind};
use crate::error::StartError;

/// The largest file hashed.
pub const MAX_CODE_BYTES: u64 = 1 << 30;

/// The most entries (files, directories, links) an installed tree may hold to be pinned.
pub const MAX_TREE_ENTRIES: usize = 200_000;

/// Directories whose programs belong to the system, not to a provider.
const SYSTEM_DIRS: [&str; 6] = ["/usr/", "/bin/", "/sbin/", "/lib/", "/lib32/", "/lib64/"];

/// A provider's code, by role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Code {
    /// Each pinned file.
    pub pins: BTreeMap<String, CodePin>,
    /// Set when the command fetches code at start, which no pin covers: what it runs and
    /// what to do instead.
    pub fetches: Option<String>,
}

/// Why a provider's code cannot be pinned.
#[derive(Debug, thiserror::Error)]
pub enum CodeError {
    /// Its program cannot be resolved (the error names the program and why).
    #[error(transparent)]
    Program(wasmgate_client::TransportError),
    /// A file of it cannot be read.
    #[error("cannot read {} to pin it", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A path of it is not a regular file.
    #[error("{} is not a regular file", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// A file of it is larger than any code pinned.
    #[error("{} is larger than {MAX_CODE_BYTES} bytes", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// An installed tree holds more entries than any pinned.
    #[error("{} holds more than {MAX_TREE_ENTRIES} files and folders", path.display())]
    TooManyEntries {
        /// The tree.
        path: PathBuf,
    },
}

/// One provider's code, and whether it is the reviewed code.
#[derive(Debug)]
pub struct Review {
    /// The provider.
    pub provider: String,
    /// Its code now, or why it cannot be read.
    pub code: Result<Code, CodeError>,
    /// Against the lock file (`New` when the code cannot be read).
    pub state: CodeState,
    /// What its policy grants the code beyond its own directory, one line each (`may
    /// read /srv/notes`, `may reach api.example.com:443`).
    pub grants: Vec<String>,
}

/// Every provider's code against the lock file, for `wasmgate review`.
///
/// # Errors
///
/// The policy or the lock file cannot be read.
pub fn review_code(config: &Config) -> Result<Vec<Review>, StartError> {
    let policy = Policy::load(&config.policy)?;
    let lock = Lock::load(&config.lock)?;
    let base = config.lock.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok(config
        .providers
        .iter()
        .map(|(name, provider)| {
            let code = of(name, provider, &policy, &installs(config)).map(|code| relative_to(code, &base));
            let state = code.as_ref().map_or(CodeState::New, |code| lock.code_status(name, &code.pins));
            Review { provider: name.clone(), code, state, grants: grants(policy.provider(name)) }
        })
        .collect())
}

/// What `rules` grant a provider's code, for review.
fn grants(rules: Option<&ProviderPolicy>) -> Vec<String> {
    let Some(rules) = rules else { return Vec::new() };
    let paths = |what: &'static str, paths: &[std::path::PathBuf]| -> Vec<String> {
        paths.iter().map(|p| format!("may {what} {}", p.display())).collect()
    };
    paths("read", &rules.read_paths)
        .into_iter()
        .chain(paths("read and write", &rules.write_paths))
        .chain(rules.network_hosts.iter().map(|h| format!("may reach {}:{}", h.host, h.port)))
        .chain(rules.network_ports.iter().map(|p| format!("may connect to port {p} of any address")))
        .collect()
}

/// Pins `code` as `provider`'s reviewed code in the lock file.
///
/// # Errors
///
/// The lock file cannot be read or written.
pub fn approve_code(config: &Config, provider: &str, code: &Code) -> Result<(), LockError> {
    let mut lock = Lock::load(&config.lock)?;
    lock.approve_code(provider, code.pins.clone())?;
    lock.save(&config.lock)
}

/// `code` with each pin's path shown relative to `base` (the lock file's directory) when
/// both are absolute, so a committed lock file names no machine's directories.
fn relative_to(mut code: Code, base: &Path) -> Code {
    let base = std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf());
    for pin in code.pins.values_mut() {
        let path = Path::new(&pin.path);
        if let Some(relative) = relative(path, &base) {
            pin.path = relative;
        }
    }
    code
}

/// `path` relative to `base`, both absolute: up to their common part, then down.
fn relative(path: &Path, base: &Path) -> Option<String> {
    if !path.is_absolute() || !base.is_absolute() {
        return None;
    }
    let (from, to) = (lexical(base), lexical(path));
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let ups = from.len() - common;
    // Only a path near the base is easier to read relative than absolute.
    if common <= 1 || ups > 3 {
        return None;
    }
    let mut parts: Vec<String> = vec!["..".to_owned(); ups];
    parts.extend(to[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned()));
    Some(parts.join("/"))
}

/// The components of `path` with each `..` taking away the one before it (as written:
/// no link is followed; for showing a path, not for opening it).
fn lexical(path: &Path) -> Vec<std::path::Component<'_>> {
    let mut parts = Vec::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir if matches!(parts.last(), Some(std::path::Component::Normal(_))) => {
                parts.pop();
            }
            std::path::Component::CurDir => {}
            other => parts.push(other),
        }
    }
    parts
}

/// Where `init --install` puts each provider's installed package: `<state_dir>/packages`.
pub(crate) fn installs(config: &Config) -> PathBuf {
    config.state_dir.join("packages")
}

/// The code of provider `name`, configured as `provider`, under `policy`; `installs` is
/// where its installed package would be ([`installs`]).
///
/// # Errors
///
/// A [`CodeError`]: a file that cannot be found or read, naming it.
pub(crate) fn of(name: &str, provider: &ProviderConfig, policy: &Policy, installs: &Path) -> Result<Code, CodeError> {
    let mut code = Code::default();
    match provider.kind() {
        ProviderKind::Stdio => {
            let command = provider.command.clone().unwrap_or_default();
            let env: BTreeMap<OsString, OsString> =
                provider.env.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))).collect();
            let program = wasmgate_client::resolve_program(&command, &env).map_err(CodeError::Program)?;
            let mut names_a_file = false;
            for (i, arg) in provider.args.iter().enumerate() {
                let path = Path::new(arg);
                if path.is_absolute() && path.is_file() {
                    code.pins.insert(format!("arg:{i}"), pin(path)?);
                    names_a_file = true;
                }
            }
            let system = SYSTEM_DIRS.iter().any(|dir| program.starts_with(dir));
            if !system && !names_a_file {
                code.pins.insert("command".into(), pin(&program)?);
            }
            // What the interpreter loads besides: the package `init --install` installed,
            // when the code is in it.
            let folder = installs.join(name);
            if code.pins.values().any(|pin| Path::new(&pin.path).starts_with(&folder)) {
                code.pins.insert("tree".into(), tree_pin(&folder)?);
            }
            code.fetches = fetcher(&program, &provider.args);
        }
        ProviderKind::Component => {
            let component = provider.component.clone().unwrap_or_default();
            code.pins.insert("component".into(), pin(&component)?);
        }
        ProviderKind::Http => {}
    }
    for rule in policy.provider(name).map(|p| p.formatters.as_slice()).unwrap_or_default() {
        code.pins.insert(format!("formatter:{}", rule.tools.as_str()), pin(&rule.wasm)?);
    }
    for (i, screen) in policy.provider(name).map(|p| p.screens.as_slice()).unwrap_or_default().iter().enumerate() {
        code.pins.insert(format!("screen:{i}"), pin(screen)?);
    }
    Ok(code)
}

/// Whether every file `pins` names is still the file pinned (the same SHA-256 and size):
/// what every start, and every supervised restart, checks before it runs the code. `Ok`
/// holds the native program (the `command` pin) as the open file that was hashed, for
/// the start to run that file and not whatever is at its path by then; `Err` names the
/// first file that is not the one pinned, and what to do.
pub(crate) fn unchanged(pins: &BTreeMap<String, CodePin>) -> Result<Option<std::fs::File>, String> {
    let mut program = None;
    for (role, pinned) in pins {
        let path = Path::new(&pinned.path);
        if role == "tree" {
            match tree_pin(path) {
                Ok(now) if now.sha256 == pinned.sha256 && now.size == pinned.size => continue,
                Ok(_) => {
                    return Err(format!(
                        "its installed tree ({}) changed since the gateway checked it (a file added, removed or \
                         changed); it does not run until `wasmgate review` approves it and the gateway reloads",
                        path.display()
                    ));
                }
                Err(e) => return Err(format!("its tree cannot be checked again: {}", wasmgate_core::report(&e))),
            }
        }
        match open_pinned(path) {
            Ok((now, file)) if now.sha256 == pinned.sha256 && now.size == pinned.size => {
                if role == "command" && !is_script(&file) {
                    program = Some(file);
                }
            }
            Ok(_) => {
                return Err(format!(
                    "its {role} ({}) changed since the gateway checked it; it does not run until `wasmgate review` \
                     approves it and the gateway reloads",
                    path.display()
                ));
            }
            Err(e) => return Err(format!("its {role} cannot be checked again: {}", wasmgate_core::report(&e))),
        }
    }
    Ok(program)
}

/// Whether `file` starts with `#!`: its interpreter opens it again by path.
fn is_script(file: &std::fs::File) -> bool {
    let mut start = [0u8; 2];
    std::os::unix::fs::FileExt::read_exact_at(file, &mut start, 0).is_ok_and(|()| &start == b"#!")
}

/// One digest of every file, folder and link under `root`: their paths (sorted), kinds,
/// whether executable, link targets and contents; `size` is the bytes of the files.
/// Links are not followed.
fn tree_pin(root: &Path) -> Result<CodePin, CodeError> {
    use std::os::unix::ffi::OsStrExt as _;
    use std::os::unix::fs::PermissionsExt as _;
    let failed = |path: &Path| {
        let path = path.to_owned();
        move |source| CodeError::Read { path, source }
    };
    let mut hasher = Sha256::new();
    let (mut size, mut entries) = (0u64, 0usize);
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let dir = root.join(&relative);
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .map_err(failed(&dir))?
            .map(|entry| entry.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .map_err(failed(&dir))?;
        names.sort();
        // Folders are walked after the files beside them, in order: pushed in reverse.
        let mut folders = Vec::new();
        for name in names {
            entries += 1;
            if entries > MAX_TREE_ENTRIES {
                return Err(CodeError::TooManyEntries { path: root.to_owned() });
            }
            let path = relative.join(&name);
            let full = root.join(&path);
            let meta = std::fs::symlink_metadata(&full).map_err(failed(&full))?;
            hasher.update(path.as_os_str().as_bytes());
            if meta.file_type().is_symlink() {
                hasher.update(b"\0link\0");
                hasher.update(std::fs::read_link(&full).map_err(failed(&full))?.as_os_str().as_bytes());
            } else if meta.is_dir() {
                hasher.update(b"\0dir\0");
                folders.push(path);
            } else if meta.is_file() {
                hasher.update(if meta.permissions().mode() & 0o111 != 0 { b"\0exec\0" } else { b"\0file\0" });
                let file = std::fs::File::open(&full).map_err(failed(&full))?;
                let left = (MAX_CODE_BYTES + 1).saturating_sub(size);
                let read = std::io::copy(&mut file.take(left), &mut hasher).map_err(failed(&full))?;
                size += read;
                if size > MAX_CODE_BYTES {
                    return Err(CodeError::TooLarge { path: root.to_owned() });
                }
                hasher.update(size.to_le_bytes());
            } else {
                hasher.update(b"\0other\0");
            }
            hasher.update(b"\n");
        }
        pending.extend(folders.into_iter().rev());
    }
    Ok(CodePin { path: root.display().to_string(), sha256: hex::encode(hasher.finalize()), size })
}

/// The SHA-256 and size of the file at `path`.
fn pin(path: &Path) -> Result<CodePin, CodeError> {
    open_pinned(path).map(|(pin, _)| pin)
}

/// The SHA-256 and size of the file at `path`, and the file, open.
fn open_pinned(path: &Path) -> Result<(CodePin, std::fs::File), CodeError> {
    let failed = |source| CodeError::Read { path: path.to_owned(), source };
    let file = std::fs::File::open(path).map_err(failed)?;
    let meta = file.metadata().map_err(failed)?;
    if !meta.is_file() {
        return Err(CodeError::NotAFile { path: path.to_owned() });
    }
    let mut hasher = Sha256::new();
    let read = std::io::copy(&mut (&file).take(MAX_CODE_BYTES + 1), &mut hasher).map_err(failed)?;
    if read > MAX_CODE_BYTES {
        return Err(CodeError::TooLarge { path: path.to_owned() });
    }
    Ok((CodePin { path: path.display().to_string(), sha256: hex::encode(hasher.finalize()), size: read }, file))
}

/// What a command that fetches its code at start runs, or `None`.
fn fetcher(program: &Path, args: &[String]) -> Option<String> {
    let name = program.file_name()?.to_str()?;
    let first = args.iter().find(|a| !a.starts_with('-')).map(String::as_str).unwrap_or_default();
    let fetches = match name {
        "npx" | "bunx" | "pnpx" | "uvx" => true,
        "pipx" | "uv" => matches!(first, "run" | "tool"),
        "npm" | "pnpm" | "yarn" | "bun" => matches!(first, "exec" | "dlx" | "x"),
        _ => false,
    };
    fetches.then(|| {
        format!(
            "`{name} {}` fetches its code each time it starts, so no pin covers it: install the package once \
             into a folder of its own (at an exact version) and run it from there",
            args.join(" ")
        )
    })
}

/// Whether the policy refuses a provider whose command fetches its code at start.
#[must_use]
pub(crate) fn refuses_fetching(rules: Option<&ProviderPolicy>) -> bool {
    rules.is_some_and(|r| r.fetched_code == wasmgate_policy::FetchedCode::Deny)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn stdio(command: &str, args: &[&str]) -> ProviderConfig {
        let text = format!("command = {command:?}\nargs = {args:?}\n");
        toml::from_str(&text).unwrap()
    }

    #[test]
    fn pinned_code_is_unchanged_until_a_byte_of_it_changes_or_it_goes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("server.js");
        std::fs::write(&file, "reviewed").unwrap();
        let pins = BTreeMap::from([("arg:0".to_owned(), pin(&file).unwrap())]);
        assert!(unchanged(&pins).unwrap().is_none(), "a script is run by its interpreter, by path");
        std::fs::write(&file, "reviewEd").unwrap();
        assert!(unchanged(&pins).unwrap_err().contains("changed since the gateway checked it"));
        std::fs::remove_file(&file).unwrap();
        assert!(unchanged(&pins).unwrap_err().contains("cannot be checked again"));
    }

    #[test]
    fn a_native_program_is_handed_on_as_the_open_file_that_was_hashed_and_a_script_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("server");
        std::fs::copy("/bin/true", &program).unwrap();
        let pins = BTreeMap::from([("command".to_owned(), pin(&program).unwrap())]);
        let file = unchanged(&pins).unwrap().expect("the checked file");
        // Whatever is at the path afterwards, the open file is the one hashed.
        std::fs::remove_file(&program).unwrap();
        std::fs::write(&program, "#!/bin/sh\necho swapped\n").unwrap();
        let mut again = Sha256::new();
        std::io::Seek::rewind(&mut &file).unwrap();
        std::io::copy(&mut std::io::Read::take(&file, MAX_CODE_BYTES), &mut again).unwrap();
        assert_eq!(hex::encode(again.finalize()), pins["command"].sha256);

        let script = dir.path().join("script");
        std::fs::write(&script, "#!/bin/sh\nexec true\n").unwrap();
        let pins = BTreeMap::from([("command".to_owned(), pin(&script).unwrap())]);
        assert!(unchanged(&pins).unwrap().is_none(), "a script's interpreter opens it by path");
    }

    #[test]
    fn a_script_is_pinned_and_its_interpreter_is_not_and_a_program_of_its_own_is() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("server.py");
        std::fs::write(&script, "print('hi')\n").unwrap();
        let policy = Policy::from_toml("", "p").unwrap();
        let code =
            of("p", &stdio("/usr/bin/env", &["python3", script.to_str().unwrap()]), &policy, dir.path()).unwrap();
        assert_eq!(code.pins.keys().collect::<Vec<_>>(), ["arg:1"]);
        assert_eq!(code.pins["arg:1"].size, 12);
        assert_eq!(code.pins["arg:1"].sha256, hex::encode(Sha256::digest(b"print('hi')\n")));

        let program = dir.path().join("server");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        let code = of("p", &stdio(program.to_str().unwrap(), &["--port", "1"]), &policy, dir.path()).unwrap();
        assert_eq!(code.pins.keys().collect::<Vec<_>>(), ["command"]);
        assert!(of("p", &stdio("/usr/bin/env", &[]), &policy, dir.path()).unwrap().pins.is_empty(), "a system program");
    }

    #[test]
    fn an_installed_tree_is_pinned_whole_and_any_change_in_it_is_a_change() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let installs = dir.path().join("packages");
        let folder = installs.join("fs");
        let package = folder.join("node_modules/server");
        std::fs::create_dir_all(package.join("dist")).unwrap();
        std::fs::create_dir_all(folder.join("node_modules/dep")).unwrap();
        std::fs::write(package.join("dist/index.js"), "require('dep')\n").unwrap();
        std::fs::write(folder.join("node_modules/dep/index.js"), "module.exports = 1\n").unwrap();
        std::fs::write(folder.join("package-lock.json"), "{}").unwrap();
        let script = package.join("dist/index.js");
        let policy = Policy::from_toml("", "p").unwrap();
        let node = stdio("/usr/bin/node", &[script.to_str().unwrap()]);
        let code = of("fs", &node, &policy, &installs).unwrap();
        assert_eq!(code.pins.keys().collect::<Vec<_>>(), ["arg:0", "tree"]);
        assert_eq!(Path::new(&code.pins["tree"].path), folder, "the provider's installed package");
        assert!(unchanged(&code.pins).is_ok());
        let elsewhere = of("fs", &node, &policy, &dir.path().join("other")).unwrap();
        assert_eq!(elsewhere.pins.keys().collect::<Vec<_>>(), ["arg:0"], "a tree installed by other means");

        let dep = folder.join("node_modules/dep/index.js");
        type Step<'a> = Box<dyn Fn() + 'a>;
        let changes: [(&str, Step, Step); 4] = [
            (
                "a module changed",
                Box::new(|| std::fs::write(&dep, "module.exports = 2\n").unwrap()),
                Box::new(|| std::fs::write(&dep, "module.exports = 1\n").unwrap()),
            ),
            (
                "a module added",
                Box::new(|| std::fs::write(folder.join("node_modules/dep/evil.js"), "").unwrap()),
                Box::new(|| std::fs::remove_file(folder.join("node_modules/dep/evil.js")).unwrap()),
            ),
            (
                "made executable",
                Box::new(|| std::fs::set_permissions(&dep, std::fs::Permissions::from_mode(0o755)).unwrap()),
                Box::new(|| std::fs::set_permissions(&dep, std::fs::Permissions::from_mode(0o644)).unwrap()),
            ),
            (
                "a link added",
                Box::new(|| std::os::unix::fs::symlink("/etc", folder.join("node_modules/etc")).unwrap()),
                Box::new(|| std::fs::remove_file(folder.join("node_modules/etc")).unwrap()),
            ),
        ];
        for (what, change, undo) in changes {
            change();
            let refused = unchanged(&code.pins).unwrap_err();
            assert!(refused.contains("its installed tree") && refused.contains("changed"), "{what}: {refused}");
            undo();
            assert!(unchanged(&code.pins).is_ok(), "{what}, undone");
        }
    }

    #[test]
    fn formatters_and_components_are_pinned_and_a_missing_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let wasm = dir.path().join("f.wasm");
        std::fs::write(&wasm, b"\0asm").unwrap();
        let policy =
            Policy::from_toml(&format!("[[providers.p.formatters]]\ntools = \"*\"\nwasm = {wasm:?}\n"), "p").unwrap();
        let component: ProviderConfig = toml::from_str(&format!("component = {wasm:?}\n")).unwrap();
        let code = of("p", &component, &policy, dir.path()).unwrap();
        assert_eq!(code.pins.keys().collect::<Vec<_>>(), ["component", "formatter:*"]);
        let missing: ProviderConfig = toml::from_str("component = \"/nonexistent/x.wasm\"\n").unwrap();
        assert!(
            of("p", &missing, &policy, dir.path()).unwrap_err().to_string().contains("cannot read /nonexistent/x.wasm")
        );
    }

    #[test]
    fn a_path_near_the_lock_is_shown_relative_to_it() {
        let rel = |p: &str, b: &str| relative(Path::new(p), Path::new(b));
        assert_eq!(rel("/w/ex/cal/server.py", "/w/ex/cal").as_deref(), Some("server.py"));
        assert_eq!(rel("/w/target/g/c.wasm", "/w/ex/cal").as_deref(), Some("../../target/g/c.wasm"));
        assert_eq!(rel("/w/host/guests/../../target/c.wasm", "/w/ex/cal").as_deref(), Some("../../target/c.wasm"));
        assert_eq!(rel("/usr/bin/python3", "/w/ex/cal"), None, "nothing in common but the root");
        assert_eq!(rel("server.py", "/w"), None);
    }

    #[test]
    fn commands_that_fetch_their_code_are_told_apart() {
        let fetched = |program: &str, args: &[&str]| {
            let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
            fetcher(Path::new(program), &args).is_some()
        };
        assert!(fetched("/usr/bin/npx", &["-y", "@modelcontextprotocol/server-everything"]));
        assert!(fetched("/root/.local/bin/uvx", &["mcp-server-time"]));
        assert!(fetched("/usr/bin/pipx", &["run", "mcp-server-fetch"]));
        assert!(fetched("/usr/bin/npm", &["exec", "pkg"]));
        assert!(!fetched("/usr/bin/node", &["server.js"]));
        assert!(!fetched("/usr/bin/npm", &["start"]));
        assert!(!fetched("/usr/bin/python3", &["-m", "server"]));
    }
}
