//! The on-disk cache of compiled components.
//!
//! Compiling a component takes about 100 ms; loading it precompiled takes
//! well under a millisecond. But a precompiled artifact is native code that
//! wasmtime maps and runs without re-validating it, so the cache is part of
//! the trust boundary:
//!
//! - the key is the BLAKE3 hash of the component's bytes plus the engine's
//!   compatibility hash (wasmtime version, target, fuel and epoch settings),
//!   so an artifact is only ever loaded by an engine it was made for;
//! - each file carries the BLAKE3 hash of its payload: a truncated or corrupted
//!   file is detected, removed and rebuilt, never loaded;
//! - files are written to a temporary name and renamed, so a reader never
//!   sees half a file;
//! - the directory must belong to this user and be writable by no one else,
//!   or it is not used at all (someone who can write it could plant code).
//!   All access goes through a `cap_std::fs::Dir`, so nothing outside it is
//!   touched.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use wasmtime::Engine;
use wasmtime::component::Component;

/// Version 2: BLAKE3 checksums (version 1 used SHA-256; such files are rebuilt).
const MAGIC: &[u8; 8] = b"WGCWASM2";
const HEADER: usize = MAGIC.len() + 32;

#[derive(Debug)]
pub(crate) struct Cache {
    dir: Dir,
    path: PathBuf,
}

impl Cache {
    /// Opens (creating with mode 0700) the cache directory, refusing one that
    /// another user owns or that others may write.
    pub fn open(path: &Path) -> io::Result<Self> {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path)?;
        let meta = std::fs::metadata(path)?;
        let me = rustix::process::geteuid().as_raw();
        if meta.uid() != me {
            return Err(io::Error::other(format!(
                "{} belongs to uid {}, not to this user (uid {me}); use a cache directory of your own",
                path.display(),
                meta.uid()
            )));
        }
        if meta.mode() & 0o022 != 0 {
            return Err(io::Error::other(format!(
                "{} is writable by group or others (mode {:o}); run `chmod 700 {}`",
                path.display(),
                meta.mode() & 0o777,
                path.display()
            )));
        }
        let dir = Dir::open_ambient_dir(path, ambient_authority())?;
        Ok(Cache { dir, path: path.to_owned() })
    }

    /// The file name for `component` compiled by `engine`.
    pub fn key(engine: &Engine, component: &[u8]) -> String {
        let mut compat = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut compat);
        format!("{}-{:016x}.cwasm", blake3::hash(component).to_hex(), compat.finish())
    }

    /// Loads a cached artifact, or `None` when there is none or it is damaged
    /// (in which case it is removed so it gets rebuilt).
    pub fn load(&self, engine: &Engine, key: &str) -> Option<Component> {
        let mut file = match self.dir.open(key) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(cache = %self.path.display(), key, error = %e, "cannot open cached component");
                return None;
            }
        };
        let mut bytes = Vec::new();
        let verified = file.read_to_end(&mut bytes).ok().and_then(|_| verify(&bytes));
        let Some(payload) = verified else {
            tracing::warn!(cache = %self.path.display(), key, "cached component is damaged; rebuilding it");
            let _ = self.dir.remove_file(key);
            return None;
        };
        // SAFETY: `deserialize` trusts its input to be an artifact that this
        // wasmtime produced. The payload was written by `store` below into a
        // directory only this user can write, and its SHA-256 matches the one
        // recorded with it, so it is exactly what an engine with the same
        // compatibility hash (part of the key) serialized.
        #[allow(unsafe_code)]
        let loaded = unsafe { Component::deserialize(engine, payload) };
        match loaded {
            Ok(component) => Some(component),
            Err(e) => {
                tracing::warn!(cache = %self.path.display(), key, error = %format!("{e:#}"), "cached component rejected; rebuilding it");
                let _ = self.dir.remove_file(key);
                None
            }
        }
    }

    /// Writes an artifact under `key`, atomically. Failure only costs a
    /// recompile next time, so it is logged, not returned.
    pub fn store(&self, key: &str, artifact: &[u8]) {
        // Unique per process and per store, so concurrent writers never share a file.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let tmp = format!("{key}.{}.{}.tmp", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let written = self.dir.create(&tmp).and_then(|mut file| {
            file.write_all(MAGIC)?;
            file.write_all(blake3::hash(artifact).as_bytes())?;
            file.write_all(artifact)?;
            file.sync_all()
        });
        let renamed = written.and_then(|()| self.dir.rename(&tmp, &self.dir, key));
        if let Err(e) = renamed {
            let _ = self.dir.remove_file(&tmp);
            tracing::warn!(cache = %self.path.display(), key, error = %e, "cannot write the component cache");
        }
    }
}

/// The payload of a cache file whose header and checksum are intact.
fn verify(bytes: &[u8]) -> Option<&[u8]> {
    if bytes.len() < HEADER || &bytes[..MAGIC.len()] != MAGIC {
        return None;
    }
    let (digest, payload) = bytes[MAGIC.len()..].split_at(32);
    (blake3::hash(payload).as_bytes().as_slice() == digest).then_some(payload)
}

#[cfg(test)]
mod tests {
    use super::verify;

    #[test]
    fn verify_rejects_short_wrong_and_tampered_files() {
        let payload = b"artifact";
        let mut good = super::MAGIC.to_vec();
        good.extend_from_slice(blake3::hash(payload).as_bytes());
        good.extend_from_slice(payload);
        assert_eq!(verify(&good), Some(&payload[..]));
        assert_eq!(verify(&good[..good.len() - 1]), None);
        assert_eq!(verify(&good[..10]), None);
        let mut flipped = good.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert_eq!(verify(&flipped), None);
        let mut wrong_magic = good;
        wrong_magic[0] = b'X';
        assert_eq!(verify(&wrong_magic), None);
    }
}
