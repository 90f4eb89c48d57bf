//! One provider's validated policy: [`ProviderPolicy`] and the settings it carries for other
//! layers (limits for the sandbox, formatter selection, confinement of stdio servers).

use crate::constraint::Constraint;
use crate::glob::Glob;
use crate::verdict::Verdict;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What to do with a result the injection detector flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InjectionAction {
    /// Deliver the framed result with a warning to the model (the default).
    #[default]
    Flag,
    /// Replace the result with a "result withheld" marker.
    Withhold,
    /// Ask the approver whether to deliver it; withhold when nobody can answer.
    Ask,
}

/// Whether a stdio server whose command fetches its code at start (`npx -y`, `uvx`,
/// `pipx run`) may start: that code is not pinned by the lock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FetchedCode {
    /// Start it; review marks it as unpinnable (the default).
    #[default]
    Allow,
    /// Refuse to start it: the provider is withheld.
    Deny,
}

/// How a provider's images, audio and embedded resources reach an MCP client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaMode {
    /// Only the text the formatter renders (the default): nothing of the provider's
    /// reaches a client unrendered.
    #[default]
    Text,
    /// The rendered text, and beside it every image, audio and embedded binary block
    /// that passes the media check in the sandbox (valid base64, at most
    /// `media_max_bytes`, bytes of the declared type, the type in `media_types`), and
    /// every embedded text resource, screened and framed like the text.
    Pass,
}

/// The types passed by default with `media = "pass"`.
pub const DEFAULT_MEDIA_TYPES: [&str; 8] =
    ["image/png", "image/jpeg", "image/gif", "image/webp", "audio/wav", "audio/mpeg", "audio/ogg", "audio/flac"];

/// The most bytes one passed block may hold by default (decoded).
pub const DEFAULT_MEDIA_MAX_BYTES: u32 = 2 << 20;

/// The most tokens of a completion a provider may ask the client's model for, by default.
pub const DEFAULT_SAMPLING_MAX_TOKENS: u32 = 1024;

/// Whether a stdio server may start when the kernel cannot confine it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfinementLevel {
    /// Refuse to start the provider unless full confinement is in force (the default).
    #[default]
    Required,
    /// Start it with whatever confinement the kernel offers, and record a warning.
    BestEffort,
}

/// Sandbox limit overrides for this provider's formatter calls; `None` keeps the host default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitOverrides {
    /// Wall-clock deadline per formatter call, in milliseconds.
    pub deadline_ms: Option<u64>,
    /// Linear memory cap per formatter instance, in bytes.
    pub memory_bytes: Option<u64>,
    /// Cap on the formatter's output, in bytes.
    pub output_bytes: Option<u64>,
}

/// Which formatter renders which tools' results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatterRule {
    /// Tool names (the provider's own, unprefixed) this rule covers.
    pub tools: Glob,
    /// The formatter component. [`crate::Policy::load`] resolves a relative path against the policy
    /// file's directory; [`crate::Policy::from_toml`] keeps it as written.
    pub wasm: PathBuf,
}

/// The rule for one listed tool.
#[derive(Debug, Clone)]
pub struct ToolRule {
    /// Allow, ask or deny.
    pub verdict: Verdict,
    /// Checked in order for `allow` and `ask`; the first that fails denies the call.
    pub constraints: Vec<Constraint>,
    /// The verdict for particular callers, in place of `verdict`: the first rule for the
    /// caller decides.
    pub callers: Vec<crate::callers::CallerRule>,
    /// The reviewer's note (the trust checklist item), for humans only.
    pub note: Option<String>,
    /// Its data-flow rules (`flagged`, `other_provider`, `untrusted`): they decide for
    /// this tool over the provider's and the policy's.
    pub flow: crate::flow::FlowRules,
    /// Its arguments' data-flow rules, which decide over the tool's.
    pub flow_arguments: Vec<crate::flow::ArgumentFlow>,
}

/// Everything the policy says about one provider.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProviderPolicy {
    /// Caps on the verdict of every tool of the provider, by caller: the first rule for
    /// the caller gives the most it may get (`deny`: none of its tools; `ask`: approval
    /// for each call; `allow`: no cap).
    pub callers: Vec<crate::callers::CallerRule>,
    /// The verdict for tools not listed under `tools` (deny unless set).
    pub unlisted: Verdict,
    /// What to do with a flagged result.
    pub injection: InjectionAction,
    /// What to do with a call whose arguments carry what looks like a credential.
    pub secrets: crate::secrets::SecretsAction,
    /// Sandbox limit overrides.
    pub limits: LimitOverrides,
    /// Formatter selection, first match wins.
    pub formatters: Vec<FormatterRule>,
    /// Screen components run beside the built-in detector on the provider's texts. The
    /// policy file's relative paths are resolved against its directory.
    pub screens: Vec<PathBuf>,
    /// Confinement requirement for a stdio server.
    pub confinement: ConfinementLevel,
    /// Whether a command that fetches its code at start may run.
    pub fetched_code: FetchedCode,
    /// Extra absolute paths a stdio server may read.
    pub read_paths: Vec<PathBuf>,
    /// Extra absolute paths a stdio server may read and write.
    pub write_paths: Vec<PathBuf>,
    /// TCP ports a stdio server may connect to (none: no network).
    pub network_ports: Vec<u16>,
    /// Hosts (`host:port`) a stdio server may reach through the gateway's egress proxy,
    /// from a network namespace of its own; exclusive with `network_ports`.
    pub network_hosts: Vec<wasmgate_egress::HostGrant>,
    /// Whether a stdio server may open Unix sockets with `socket()` (default: the seccomp
    /// filter refuses them; `socketpair()` is always allowed).
    pub unix_sockets: bool,
    /// The reviewer's note for the provider.
    pub note: Option<String>,
    /// How its images, audio and embedded resources reach an MCP client.
    pub media: MediaMode,
    /// The types that may pass with `media = "pass"`, lower case.
    pub media_types: Vec<String>,
    /// The most bytes one passed block may hold, decoded.
    pub media_max_bytes: u32,
    /// Whether the provider may ask the client's model for a completion
    /// (`sampling/createMessage`): `deny` (the default), `ask` the approver each time, or
    /// `allow`.
    pub sampling: Verdict,
    /// The most tokens a completion it asks for may have (its `maxTokens` is cut to it).
    pub sampling_max_tokens: u32,
    /// The roots (`file://` URIs) the provider is told when it asks (`roots/list`); none
    /// by default, and never the client's own.
    pub roots: Vec<String>,
    pub(crate) tools: BTreeMap<String, ToolRule>,
    /// Globs over resource URIs (and resource templates read as text) that may be
    /// listed and read; none: no resources.
    pub(crate) resources: Vec<Glob>,
    /// Globs over the provider's own prompt names that may be listed and fetched; none:
    /// no prompts.
    pub(crate) prompts: Vec<Glob>,
    /// Globs over the provider's own tool names that are sinks (they send, write, pay,
    /// share or fetch a URL).
    pub(crate) sinks: Vec<Glob>,
    /// Globs over the provider's own tool names whose `ask` goes to the gateway's
    /// reviewers (out of band) instead of the caller's client.
    pub(crate) ask_reviewers: Vec<Glob>,
    /// Globs over its tools that fetch the URL they are given and send nothing else
    /// (sinks too): following a link a result wrote is `sink_link`'s to decide.
    pub(crate) fetches: Vec<Glob>,
    /// The provider's data-flow rules, over the policy's.
    pub(crate) flow: crate::flow::FlowRules,
    /// Globs over its tools whose every result starts the sequence rule, as a flagged
    /// result does.
    pub(crate) flow_after: Vec<Glob>,
}

impl ProviderPolicy {
    /// The settings read when the provider starts (its sandbox limits, formatters,
    /// screens, confinement, reach and media check), by name, where they differ between
    /// `self` and `other`: a running gateway takes them only when it starts again.
    #[must_use]
    pub fn start_settings_changed(&self, other: &ProviderPolicy) -> Vec<&'static str> {
        let mut changed = Vec::new();
        let mut check = |name, differs: bool| {
            if differs {
                changed.push(name);
            }
        };
        check("limits", self.limits != other.limits);
        check("formatters", self.formatters != other.formatters);
        check("screens", self.screens != other.screens);
        check("confinement", self.confinement != other.confinement);
        check("fetched_code", self.fetched_code != other.fetched_code);
        check("read_paths", self.read_paths != other.read_paths);
        check("write_paths", self.write_paths != other.write_paths);
        check("network_ports", self.network_ports != other.network_ports);
        check("network_hosts", self.network_hosts != other.network_hosts);
        check("unix_sockets", self.unix_sockets != other.unix_sockets);
        check("media", self.media != other.media);
        check("media_types", self.media_types != other.media_types);
        check("media_max_bytes", self.media_max_bytes != other.media_max_bytes);
        changed
    }

    /// The rule for a listed tool.
    pub fn tool(&self, name: &str) -> Option<&ToolRule> {
        self.tools.get(name)
    }

    /// Listed tools, by name.
    pub fn tools(&self) -> impl Iterator<Item = (&str, &ToolRule)> {
        self.tools.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Whether any resource may be listed or read (a `resources` glob is set).
    pub fn offers_resources(&self) -> bool {
        !self.resources.is_empty()
    }

    /// Whether any prompt may be listed or fetched (a `prompts` glob is set).
    pub fn offers_prompts(&self) -> bool {
        !self.prompts.is_empty()
    }

    /// Whether the resource at `uri` (or the template `uri` as written) may be listed and
    /// read. Deny unless a `resources` glob matches, and always for a URI that
    /// [`climbs`]: a glob matches the text of a URI, not the place it names.
    pub fn allows_resource(&self, uri: &str) -> bool {
        !climbs(uri) && self.resources.iter().any(|g| g.matches(uri))
    }

    /// Whether the prompt `name` (the provider's own) may be listed and fetched. Deny
    /// unless a `prompts` glob matches.
    pub fn allows_prompt(&self, name: &str) -> bool {
        self.prompts.iter().any(|g| g.matches(name))
    }

    /// Whether the policy names `tool` a sink (`sinks`, or `fetches`).
    pub fn names_sink(&self, tool: &str) -> bool {
        self.names_fetch(tool) || self.sinks.iter().any(|g| g.matches(tool))
    }

    /// Whether the policy names `tool` a fetch (`fetches`).
    pub fn names_fetch(&self, tool: &str) -> bool {
        self.fetches.iter().any(|g| g.matches(tool))
    }

    /// Whether an `ask` of `tool` goes to the gateway's reviewers (`ask_reviewers`).
    pub fn asks_reviewers(&self, tool: &str) -> bool {
        self.ask_reviewers.iter().any(|g| g.matches(tool))
    }

    /// The `sinks` globs as written.
    pub fn sinks(&self) -> impl Iterator<Item = &str> {
        self.sinks.iter().map(Glob::as_str)
    }

    /// The formatter selected for `tool`, if any rule matches (first match in file order).
    pub fn formatter_for(&self, tool: &str) -> Option<&Path> {
        self.formatters.iter().find(|f| f.tools.matches(tool)).map(|f| f.wasm.as_path())
    }
}

/// Whether `uri`'s path has a `..` segment, as written or percent-encoded (`%2e%2e`,
/// `..%2f`, also encoded twice), with `/` or `\` between segments. `file:///srv/docs/*`
/// would otherwise admit `file:///srv/docs/../../home/u/.ssh/id_rsa`, and what that
/// names is up to the provider that resolves it.
pub fn climbs(uri: &str) -> bool {
    let path = uri.split(['?', '#']).next().unwrap_or(uri);
    let mut bytes = path.as_bytes().to_vec();
    // Decoding until nothing changes catches `%252e` too; each round only shrinks.
    for _ in 0..4 {
        let decoded = percent_decode(&bytes);
        if decoded == bytes {
            break;
        }
        bytes = decoded;
    }
    bytes.split(|b| *b == b'/' || *b == b'\\').any(|segment| segment == b"..")
}

fn percent_decode(bytes: &[u8]) -> Vec<u8> {
    let hex = |b: u8| char::from(b).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let escaped = bytes.get(i + 1..i + 3).and_then(|pair| Some(hex(pair[0])? * 16 + hex(pair[1])?));
        match escaped {
            Some(value) if b == b'%' => {
                out.push(u8::try_from(value).unwrap_or(b'%'));
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}
