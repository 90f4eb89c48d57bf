//! The default path lists: what an ordinary program needs to start and run, and no more.
//!
//! The lists are deliberately narrow. `/etc` is not granted as a whole (it holds
//! `/etc/shadow`, credentials of system services and often the gateway's own
//! configuration), only the files the C library's loader, name service, TLS and time
//! zone code read. `/proc`, `/sys`, `/tmp`, `/run`, `/home`, `/root` and `/var` are not
//! granted at all. Paths that do not exist on this machine are left out of the defaults
//! (a missing path granted explicitly is an error instead).
//!
//! Programs installed outside these paths (a pyenv interpreter under `$HOME`, a Python
//! virtual environment, a `node_modules` tree, a static binary) need their directories
//! granted per provider with [`Confinement::read_exec`](crate::Confinement::read_exec)
//! or [`Confinement::read_only`](crate::Confinement::read_only). The one thing granted
//! without asking is the program file itself, since the configuration names it to be run.

use std::path::{Path, PathBuf};

/// Read and execute: where programs and their shared libraries live.
pub const READ_EXEC: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// Read only: configuration the C library, name resolution, TLS and time zones read.
pub const READ_ONLY: &[&str] = &[
    // the dynamic loader
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    // time zones and locales
    "/etc/localtime",
    "/etc/timezone",
    "/etc/locale.alias",
    // name service and resolution (no secrets: user names, not password hashes)
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/mime.types",
    // TLS trust anchors and settings, and not the private keys kept beside them
    // (/etc/ssl/private, /etc/pki/tls/private)
    "/etc/ssl/certs",
    "/etc/ssl/cert.pem",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/pki/ca-trust",
    "/etc/pki/tls/certs",
    "/etc/pki/tls/cert.pem",
    "/etc/pki/tls/openssl.cnf",
    "/etc/crypto-policies",
];

/// Read and write: the harmless character devices many runtimes open.
pub const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

/// Where the sockets of other programs live: the D-Bus buses, the user's runtime
/// directory (`/run/user/<uid>`: agents, the session bus, systemd), the Docker socket,
/// X11 and SSH agent sockets in `/tmp`. Landlock restricts connecting to a socket by
/// its path only from ABI 9, and a network namespace not at all: so a server gets an
/// empty tmpfs over each of these in a mount namespace of its own.
pub const SOCKET_DIRS: &[&str] = &["/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm"];

/// The directories of [`SOCKET_DIRS`] that can be hidden from a server granted
/// `granted`: real directories here (not symbolic links, `/var/run` usually is one),
/// holding none of the granted paths as written or resolved. A grant under one (a
/// working directory in `/tmp`, `/etc/resolv.conf` pointing into `/run`) keeps it
/// visible, because hiding it would hide the grant. A server without `network` needs
/// no name resolution, so [`NAME_RESOLUTION`] keeps nothing visible for it.
#[must_use]
pub fn hideable<'a>(granted: impl IntoIterator<Item = &'a Path>, network: bool) -> Vec<PathBuf> {
    let granted: Vec<&Path> =
        granted.into_iter().filter(|path| network || !NAME_RESOLUTION.iter().any(|n| *path == Path::new(n))).collect();
    let resolved: Vec<PathBuf> = granted.iter().filter_map(|path| path.canonicalize().ok()).collect();
    SOCKET_DIRS
        .iter()
        .map(PathBuf::from)
        .filter(|dir| dir.symlink_metadata().is_ok_and(|m| m.is_dir()))
        .filter(|dir| !granted.iter().copied().chain(resolved.iter().map(PathBuf::as_path)).any(|p| p.starts_with(dir)))
        .collect()
}

/// Grants only name resolution uses, which on systemd-resolved and resolvconf systems
/// point into `/run`.
pub const NAME_RESOLUTION: &[&str] = &["/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf"];

/// The paths of `list` that exist here.
#[must_use]
pub fn existing(list: &[&str]) -> Vec<PathBuf> {
    list.iter().map(PathBuf::from).filter(|path| path.exists()).collect()
}

/// Whether `path` is `/` or one of the broad directories a working directory must never
/// be, because granting it read-write would grant everything below it.
#[must_use]
pub fn too_broad_for_a_workdir(path: &Path) -> bool {
    const BROAD: &[&str] = &["/", "/home", "/root", "/tmp", "/var", "/etc", "/usr", "/run", "/dev", "/proc", "/sys"];
    BROAD.iter().any(|broad| path == Path::new(broad))
        || std::env::var_os("HOME").is_some_and(|home| !home.is_empty() && path == Path::new(&home))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_socket_directory_holding_a_grant_is_not_hidden() {
        let work = tempfile::tempdir_in("/tmp").unwrap();
        let hidden = hideable([Path::new("/usr"), work.path()], true);
        assert!(!hidden.contains(&PathBuf::from("/tmp")), "{hidden:?}");
        assert!(hidden.iter().all(|dir| SOCKET_DIRS.contains(&dir.to_str().unwrap_or_default())));
        if Path::new("/run").is_dir() && !Path::new("/run").is_symlink() {
            assert!(hidden.contains(&PathBuf::from("/run")), "{hidden:?}");
        }
        // A symbolic link into one keeps it too, as does a link that is the directory.
        let link = work.path().join("link");
        std::os::unix::fs::symlink("/run", &link).unwrap();
        assert!(!hideable([link.as_path()], true).contains(&PathBuf::from("/run")));
        assert!(!hideable([], true).iter().any(|dir| dir.is_symlink()));
        // Name resolution is no reason to keep a directory for a server without a network.
        assert_eq!(hideable([Path::new(NAME_RESOLUTION[0])], false), hideable([], false));
    }

    #[test]
    fn no_default_grant_reaches_a_private_key_directory() {
        for private in ["/etc/ssl/private", "/etc/pki/tls/private", "/etc/shadow", "/etc/gshadow"] {
            for granted in READ_EXEC.iter().chain(READ_ONLY).chain(DEVICES) {
                let path = Path::new(private);
                assert!(!path.starts_with(granted), "{granted} grants {private}");
            }
        }
    }
}
