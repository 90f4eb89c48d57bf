//! Why a stdio server that was started did not answer: the likely cause, from its last
//! lines of stderr and how it is set up, with the key or command that fixes it.
//!
//! The causes a confined server meets most, in the order they are looked for:
//!
//! * **No network.** A command that downloads its server at each start (`npx`, `uvx`,
//!   `pipx run`, `bunx`, `pnpm dlx`, `yarn dlx`) cannot, whatever it printed: the fix
//!   is to install it once and run the installed copy. Otherwise stderr naming a failed
//!   lookup or connection means the server has no network, or not to that host.
//! * **A path it may not read** (`Permission denied`, `EACCES`, `PermissionError`):
//!   the path, and where to grant it.
//! * **Something missing** (`ModuleNotFoundError`, `Cannot find module`, `ENOENT`,
//!   `No such file or directory`): not installed, or outside the paths it may read.
//! * **Silence**: a server that ran but never answered, with none of the above in its
//!   stderr, is named as such, with what to check: never a bare timeout.
//!
//! The stderr is the server's own text, so it only selects among these fixed sentences;
//! a path is quoted from it escaped, as the log shows it.

use std::path::Path;

/// What the diagnosis knows of a provider's set-up.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    /// The provider's name.
    pub(crate) provider: String,
    /// The command's file name (`npx`, `python3`).
    pub(crate) program: String,
    /// Its arguments.
    pub(crate) args: Vec<String>,
    /// Whether its policy grants it hosts (`network_hosts`) or ports.
    pub(crate) network: bool,
}

impl Setup {
    /// `command` with `args` for `provider`.
    pub(crate) fn new(provider: &str, command: &Path, args: &[String], network: bool) -> Self {
        let program = command.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Self { provider: provider.to_owned(), program, args: args.to_vec(), network }
    }

    /// The launcher that downloads the server at each start, if the command is one.
    fn fetcher(&self) -> Option<String> {
        let first = self.args.first().map(String::as_str);
        match (self.program.as_str(), first) {
            ("npx" | "uvx" | "bunx", _) => Some(self.program.clone()),
            ("pipx", Some("run")) | ("pnpm" | "yarn", Some("dlx")) | ("npm", Some("exec")) => {
                Some(format!("{} {}", self.program, first.unwrap_or_default()))
            }
            ("uv", Some("tool")) if self.args.get(1).is_some_and(|a| a == "run") => Some("uv tool run".into()),
            _ => None,
        }
    }
}

/// Text in stderr that means a lookup or a connection failed.
const NETWORK: [&str; 14] = [
    "enotfound",
    "eai_again",
    "getaddrinfo",
    "econnrefused",
    "enetunreach",
    "network is unreachable",
    "temporary failure in name resolution",
    "name or service not known",
    "could not resolve",
    "failed to establish a new connection",
    "npm error network",
    "npm err! network",
    "connection refused",
    "403 forbidden",
];

/// Text that means a path was refused.
const DENIED: [&str; 5] = ["permission denied", "eacces", "eperm", "permissionerror", "operation not permitted"];

/// Text that means something is missing.
const MISSING: [&str; 6] = [
    "modulenotfounderror",
    "no module named",
    "cannot find module",
    "enoent",
    "no such file or directory",
    "importerror",
];

/// The likely cause of a server's silence and its fix, if one is recognised;
/// `timed_out` says the server was still running but never answered.
pub(crate) fn likely_cause(setup: &Setup, stderr: &[String], timed_out: bool) -> Option<String> {
    let provider = &setup.provider;
    if let Some(fetcher) = setup.fetcher() {
        return Some(format!(
            "`{fetcher}` downloads the server each time it starts, and a confined server has no network to do it \
             with; install it once and set `command` to the installed copy (`wasmgate init --from FILE` does this \
             for a client's configuration)"
        ));
    }
    let lower: Vec<String> = stderr.iter().map(|line| line.to_lowercase()).collect();
    let find = |needles: &[&str]| lower.iter().position(|line| needles.iter().any(|n| word_at(line, n).is_some()));
    if find(&NETWORK).is_some() {
        return Some(if setup.network {
            format!(
                "a connection it tried was refused: it may reach only the hosts in `network_hosts` under \
                 [providers.{provider}] in policy.toml (each attempt is an `egress` record in the audit log)"
            )
        } else {
            format!(
                "it has no network: grant each host it needs with `network_hosts = [\"host:port\"]` under \
                 [providers.{provider}] in policy.toml"
            )
        });
    }
    if let Some(at) = find(&DENIED) {
        let path = denied_path(&stderr[at], &lower[at]).map_or_else(|| "a path".to_owned(), |p| format!("`{p}`"));
        return Some(format!(
            "it may not read {path}: grant its directory with `read_exec` under [providers.{provider}] in \
             wasmgate.toml (programs, libraries, modules) or `read_paths` in policy.toml (data)"
        ));
    }
    if find(&MISSING).is_some() {
        return Some(format!(
            "something it needs is missing, or outside the paths it may read: check that it is installed, and \
             grant its directory with `read_exec` under [providers.{provider}] in wasmgate.toml"
        ));
    }
    timed_out.then(|| {
        format!(
            "it ran but never answered: check that `command` and `args` under [providers.{provider}] in \
             wasmgate.toml start an MCP server on stdio, and that it is not waiting for something a confined \
             server cannot reach (a network, a terminal, a file outside its paths); `WASMGATE_LOG=info` shows \
             all it writes to stderr"
        )
    })
}

/// Where `needle` first stands in `line` as words of their own (no letter or digit
/// right before or after it: `ENOTFOUND`, not `ModuleNotFoundError`).
fn word_at(line: &str, needle: &str) -> Option<usize> {
    let bounded = |c: Option<char>| !c.is_some_and(char::is_alphanumeric);
    line.match_indices(needle)
        .map(|(at, _)| at)
        .find(|&at| bounded(line[..at].chars().next_back()) && bounded(line[at + needle.len()..].chars().next()))
}

/// The path a refusal in `line` (`lower`, the same lowercased) is about: the one right
/// after the words (Python's `Permission denied: '/x'`), else the last one before them
/// (a shell's `/x: Permission denied`).
fn denied_path<'a>(line: &'a str, lower: &str) -> Option<&'a str> {
    // The words the path goes with, most telling first (DENIED's order).
    let at = DENIED.iter().find_map(|needle| word_at(lower, needle).map(|i| (i, needle.len())))?;
    let paths = paths_in(line);
    let after = paths.iter().find(|(start, _)| *start >= at.0 + at.1 && *start <= at.0 + at.1 + 4);
    let before = paths.iter().rev().find(|(start, path)| start + path.len() <= at.0);
    after.or(before).map(|(_, path)| *path)
}

/// The absolute paths in `line` with where each starts, without quotes or trailing
/// punctuation.
fn paths_in(line: &str) -> Vec<(usize, &str)> {
    let mut paths = Vec::new();
    let mut start = 0;
    for word in line.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '(' | ')' | '[' | ']' | ',')) {
        let word_start = start;
        start += word.len() + 1;
        let word = word.trim_end_matches([':', ';', '.']);
        if word.starts_with('/') && word.len() > 1 {
            paths.push((word_start, word));
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn setup(command: &str, args: &[&str], network: bool) -> Setup {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        Setup::new("cal", Path::new(command), &args, network)
    }

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|l| (*l).to_owned()).collect()
    }

    #[test]
    fn a_server_downloaded_at_each_start_is_named_whatever_it_said() {
        for (command, args) in [
            ("/usr/bin/npx", vec!["-y", "@modelcontextprotocol/server-everything"]),
            ("uvx", vec!["mcp-server-time"]),
            ("/usr/local/bin/pipx", vec!["run", "x"]),
            ("pnpm", vec!["dlx", "x"]),
        ] {
            let cause = likely_cause(&setup(command, &args, false), &[], false).unwrap();
            assert!(cause.contains("downloads the server each time it starts"), "{command}: {cause}");
            assert!(cause.contains("wasmgate init --from"), "{cause}");
        }
    }

    #[test]
    fn a_failed_lookup_is_no_network_or_a_host_not_granted() {
        let said = lines(&["npm error network request failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org"]);
        let none = likely_cause(&setup("node", &["server.js"], false), &said, false).unwrap();
        assert!(none.contains("it has no network") && none.contains("[providers.cal]"), "{none}");
        let some = likely_cause(&setup("node", &["server.js"], true), &said, false).unwrap();
        assert!(some.contains("may reach only the hosts in `network_hosts`"), "{some}");
    }

    #[test]
    fn a_refused_path_is_quoted_and_a_missing_module_named() {
        let said = lines(&["Traceback:", "PermissionError: [Errno 13] Permission denied: '/home/me/.config/cal.toml'"]);
        let cause = likely_cause(&setup("python3", &["s.py"], false), &said, false).unwrap();
        assert!(cause.contains("may not read `/home/me/.config/cal.toml`"), "{cause}");
        let said = lines(&["/root/.pyenv/shims/python3: line 12: /root/.pyenv/libexec/pyenv: Permission denied"]);
        let cause = likely_cause(&setup("python3", &["s.py"], false), &said, false).unwrap();
        assert!(cause.contains("may not read `/root/.pyenv/libexec/pyenv`"), "the one refused: {cause}");
        let said = lines(&["ModuleNotFoundError: No module named 'caldav'"]);
        let cause = likely_cause(&setup("python3", &["s.py"], false), &said, false).unwrap();
        assert!(cause.contains("missing, or outside the paths it may read"), "not a lookup's ENOTFOUND: {cause}");
        assert_eq!(likely_cause(&setup("python3", &["s.py"], false), &lines(&["all is well"]), false), None);
        let silent = likely_cause(&setup("python3", &["s.py"], false), &[], true).unwrap();
        assert!(silent.contains("it ran but never answered") && silent.contains("[providers.cal]"), "{silent}");
    }
}
