//! The `WWW-Authenticate: Bearer ...` challenge of a protected resource (RFC 6750 §3,
//! RFC 9728 §5.1): which error, which scope, where the resource's metadata is.

/// What a 401 or 403 said about the token it wanted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `invalid_token`, `insufficient_scope`, ...
    pub error: Option<String>,
    /// The scope the resource asks for, space-separated.
    pub scope: Option<String>,
    /// The URL of the resource's protected resource metadata (RFC 9728).
    pub resource_metadata: Option<String>,
}

/// At most this many parameters are read from one header: a hostile server cannot make
/// the parser loop over a megabyte of commas.
const MAX_PARAMS: usize = 32;

impl Challenge {
    /// The Bearer challenge among `headers` (the values of every `WWW-Authenticate`
    /// header), or `None` when no value names the Bearer scheme.
    #[must_use]
    pub fn parse<'a>(headers: impl IntoIterator<Item = &'a str>) -> Option<Self> {
        headers.into_iter().find_map(parse_one)
    }

    /// The Bearer challenge among a response's `WWW-Authenticate` headers.
    #[must_use]
    pub fn from_headers(headers: &reqwest::header::HeaderMap) -> Option<Self> {
        let values = headers.get_all(reqwest::header::WWW_AUTHENTICATE);
        Self::parse(values.iter().filter_map(|v| v.to_str().ok()))
    }

    /// Whether the resource said the token lacks scope (step-up is due).
    #[must_use]
    pub fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// One header value: `Bearer k=v, k="v"`, possibly after other schemes' challenges.
fn parse_one(value: &str) -> Option<Challenge> {
    let start = find_scheme(value, "bearer")?;
    let mut rest = &value[start + "bearer".len()..];
    let mut challenge = Challenge::default();
    for _ in 0..MAX_PARAMS {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        let Some(eq) = rest.find('=') else { break };
        let name = rest[..eq].trim();
        if name.is_empty() || name.contains([' ', '\t', ',', '"']) {
            // The next token is another scheme's name: this challenge has ended.
            break;
        }
        rest = rest[eq + 1..].trim_start();
        let (param, after) = if let Some(quoted) = rest.strip_prefix('"') {
            read_quoted(quoted)?
        } else {
            let end = rest.find([',', ' ', '\t']).unwrap_or(rest.len());
            (rest[..end].to_owned(), &rest[end..])
        };
        rest = after;
        let slot = match name.to_ascii_lowercase().as_str() {
            "error" => &mut challenge.error,
            "scope" => &mut challenge.scope,
            "resource_metadata" => &mut challenge.resource_metadata,
            _ => continue,
        };
        slot.get_or_insert(param);
    }
    Some(challenge)
}

/// The byte offset of `scheme` as a whole word at the start of a challenge.
fn find_scheme(value: &str, scheme: &str) -> Option<usize> {
    let lower = value.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find(scheme) {
        let at = from + at;
        let before_ok = at == 0 || lower.as_bytes()[at - 1].is_ascii_whitespace() || lower.as_bytes()[at - 1] == b',';
        let after = lower.as_bytes().get(at + scheme.len());
        let after_ok = after.is_none_or(|b| b.is_ascii_whitespace());
        if before_ok && after_ok {
            return Some(at);
        }
        from = at + scheme.len();
    }
    None
}

/// A quoted-string's content (after its opening quote) and what follows its closing
/// quote; `None` when it never closes.
fn read_quoted(text: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &text[i + 1..])),
            '\\' => out.push(chars.next()?.1),
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::Challenge;

    #[test]
    fn the_parameters_of_a_bearer_challenge_are_read() {
        let c = Challenge::parse([
            r#"Bearer resource_metadata="https://r/.well-known/oauth-protected-resource", scope="a b""#,
        ])
        .unwrap();
        assert_eq!(c.resource_metadata.as_deref(), Some("https://r/.well-known/oauth-protected-resource"));
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert!(!c.insufficient_scope());
        let c = Challenge::parse([r#"Basic realm="x", Bearer error=insufficient_scope, scope="w\"x""#]).unwrap();
        assert!(c.insufficient_scope());
        assert_eq!(c.scope.as_deref(), Some("w\"x"));
    }

    #[test]
    fn no_bearer_scheme_no_challenge_and_hostile_values_end() {
        assert_eq!(Challenge::parse(["Basic realm=\"x\""]), None);
        assert_eq!(Challenge::parse(["Bearerish x=y"]), None);
        assert_eq!(Challenge::parse(["Bearer"]), Some(Challenge::default()));
        // An unterminated quote ends the parse without a value.
        assert_eq!(Challenge::parse(["Bearer scope=\"a"]), None);
        // A megabyte of parameters is read only up to the cap.
        let many = format!("Bearer {}scope=late", "x=1, ".repeat(200_000));
        assert_eq!(Challenge::parse([many.as_str()]).unwrap().scope, None);
    }
}
