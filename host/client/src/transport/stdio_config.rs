//! [`StdioConfig`]: what stdio server to run, confined how, and bounded by what
//! ([`StdioLimits`]); the process module spawns it, the stdio module speaks to it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use wasmgate_confine::Confinement;

/// What to run and how to bound it.
#[derive(Debug, Clone)]
pub struct StdioConfig {
    /// The server's name, for logs.
    pub name: String,
    /// The program: a path, or a bare name looked up in `PATH` (the configured one if
    /// `env` has it, else the gateway's own).
    pub command: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The complete environment of the server: nothing else is inherited.
    pub env: BTreeMap<OsString, OsString>,
    /// The working directory. Confined, it is the server's private directory and the
    /// only place it may write: created (mode 0700) if missing, and never `/`, `$HOME` or
    /// another broad directory (see `wasmgate_confine::provider_workdir`).
    pub cwd: PathBuf,
    /// Bounds and grace periods.
    pub limits: StdioLimits,
    /// The kernel confinement of the process (default: [`Confinement::default`]).
    /// `None` starts it unconfined, with a warning.
    pub confinement: Option<Confinement>,
    /// The hosts it may reach through the gateway's egress proxy (`wasmgate-egress`).
    /// With a grant, the confinement's network is `wasmgate_confine::Network::Proxied`
    /// whatever it says, and `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` (and their lowercase
    /// forms) point at the proxy, with `NODE_USE_ENV_PROXY=1` so that Node's own `fetch`
    /// uses it where the Node version can. `None`: no proxy.
    pub egress: Option<wasmgate_egress::EgressGrant>,
    /// The program, opened and checked by the caller: the file that runs is this open
    /// file, whatever is at the path by then (`execve` of `/proc/self/fd/N`, the
    /// descriptor closed on exec; `argv[0]` stays the path). A native program only: the
    /// interpreter of a script (`#!`) would open the script again by its path.
    pub program_file: Option<std::sync::Arc<std::fs::File>>,
}

impl StdioConfig {
    /// A server with no arguments and an empty environment.
    #[must_use]
    pub fn new(name: impl Into<String>, command: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            name: name.into(),
            command: command.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: cwd.into(),
            limits: StdioLimits::default(),
            confinement: Some(Confinement::default()),
            egress: None,
            program_file: None,
        }
    }

    /// Grants the server hosts through the gateway's egress proxy.
    #[must_use]
    pub fn egress(mut self, grant: wasmgate_egress::EgressGrant) -> Self {
        self.egress = Some(grant);
        self
    }

    /// Runs `file`, the program opened and checked by the caller (see
    /// [`StdioConfig::program_file`](Self#structfield.program_file)).
    #[must_use]
    pub fn program_file(mut self, file: std::sync::Arc<std::fs::File>) -> Self {
        self.program_file = Some(file);
        self
    }

    /// Sets the confinement policy (`None`: unconfined).
    #[must_use]
    pub fn confinement(mut self, confinement: Option<Confinement>) -> Self {
        self.confinement = confinement;
        self
    }

    /// Adds an argument.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Sets one environment variable of the server.
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }
}

/// Bounds of a stdio server.
#[derive(Debug, Clone, Copy)]
pub struct StdioLimits {
    /// Longest stdout line accepted (default: the protocol's 4 MiB message limit).
    pub max_line_bytes: usize,
    /// stderr lines are logged cut to this length (default 2 KiB).
    pub stderr_line_bytes: usize,
    /// At most this many stderr lines are logged per second (default 50).
    pub stderr_lines_per_second: u32,
    /// At most this much stderr is logged over the server's life (default 1 MiB).
    pub stderr_total_bytes: usize,
    /// On close: how long the server may take to exit after stdin closes (default 2 s).
    pub shutdown_grace: Duration,
    /// On close: how long after `SIGTERM` before `SIGKILL` (default 2 s).
    pub term_grace: Duration,
    /// When stdout closes or the process exits, how long to wait for the other (default 1 s).
    pub exit_grace: Duration,
}

impl Default for StdioLimits {
    fn default() -> Self {
        Self {
            max_line_bytes: wasmgate_protocol::MessageLimits::DEFAULT.max_message_bytes,
            stderr_line_bytes: 2048,
            stderr_lines_per_second: 50,
            stderr_total_bytes: 1024 * 1024,
            shutdown_grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(2),
            exit_grace: Duration::from_secs(1),
        }
    }
}
