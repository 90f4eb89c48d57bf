//! The console's two cookies: the session, and the sign-in under way.
//!
//! Behind https they are `Secure` and named with the `__Host-` prefix, which a browser
//! accepts only from this very host, over https, for `Path=/` and without `Domain`. So no
//! sibling subdomain and no plain-http page of the same name can plant one, and with it
//! a session or a sign-in of theirs in a reviewer's browser (session fixation, sign-in
//! CSRF). Over http (a console on loopback) no prefix is possible: the plain names, each
//! scoped to the paths that read it.

use axum::http::HeaderValue;

/// The session cookie's name over http.
pub(crate) const SESSION: &str = "wasmgate_console";

/// The sign-in cookie's name over http.
pub(crate) const LOGIN: &str = "wasmgate_login";

/// Which cookie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cookie {
    /// The session: a random id, `SameSite=Strict`.
    Session,
    /// The sign-in under way: sealed, `SameSite=Lax` (it comes back with the redirect
    /// from the authorization server, a navigation from another site).
    Login,
}

/// The cookies of a console reached over https (`secure`) or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cookies {
    pub secure: bool,
}

impl Cookies {
    /// The name `cookie` is set and read under.
    pub(crate) fn name(self, cookie: Cookie) -> &'static str {
        match (cookie, self.secure) {
            (Cookie::Session, true) => "__Host-wasmgate_console",
            (Cookie::Session, false) => SESSION,
            (Cookie::Login, true) => "__Host-wasmgate_login",
            (Cookie::Login, false) => LOGIN,
        }
    }

    fn path(self, cookie: Cookie) -> &'static str {
        match (cookie, self.secure) {
            // What `__Host-` asks for.
            (_, true) => "/",
            (Cookie::Session, false) => "/console",
            (Cookie::Login, false) => "/console/callback",
        }
    }

    /// A `Set-Cookie` value giving `cookie` the value `value`, `HttpOnly`, for `max_age`
    /// seconds (0: removed).
    pub(crate) fn set(self, cookie: Cookie, value: &str, max_age: u64) -> Option<HeaderValue> {
        let same_site = match cookie {
            Cookie::Session => "Strict",
            Cookie::Login => "Lax",
        };
        let secure = if self.secure { "; Secure" } else { "" };
        let (name, path) = (self.name(cookie), self.path(cookie));
        HeaderValue::from_str(&format!(
            "{name}={value}; Path={path}; HttpOnly; SameSite={same_site}; Max-Age={max_age}{secure}"
        ))
        .ok()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn behind_https_each_cookie_is_the_hosts_alone_and_over_http_scoped_to_its_paths() {
        let set = |secure, cookie| Cookies { secure }.set(cookie, "v", 60).unwrap().to_str().unwrap().to_owned();
        for (secure, cookie, expected) in [
            (true, Cookie::Session, "__Host-wasmgate_console=v; Path=/; HttpOnly; SameSite=Strict; Max-Age=60; Secure"),
            (true, Cookie::Login, "__Host-wasmgate_login=v; Path=/; HttpOnly; SameSite=Lax; Max-Age=60; Secure"),
            (false, Cookie::Session, "wasmgate_console=v; Path=/console; HttpOnly; SameSite=Strict; Max-Age=60"),
            (false, Cookie::Login, "wasmgate_login=v; Path=/console/callback; HttpOnly; SameSite=Lax; Max-Age=60"),
        ] {
            assert_eq!(set(secure, cookie), expected);
        }
        for secure in [true, false] {
            for cookie in [Cookie::Session, Cookie::Login] {
                let header = set(secure, cookie);
                assert!(header.starts_with(&format!("{}=", Cookies { secure }.name(cookie))), "{header}");
                // What a browser asks of a `__Host-` cookie: Secure, Path=/, no Domain.
                let prefixed = header.starts_with("__Host-");
                assert_eq!(prefixed, secure, "{header}");
                assert!(!prefixed || (header.contains("; Secure") && header.contains("Path=/;")), "{header}");
                assert!(!header.contains("Domain"), "{header}");
            }
        }
        // A value that cannot be a header is no cookie.
        assert!(Cookies { secure: false }.set(Cookie::Session, "a\nb", 1).is_none());
    }
}
