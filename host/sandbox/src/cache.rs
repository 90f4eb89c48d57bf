//! The on-disk cache of compiled components.
//!
//! Compiling a component takes about 100 ms; loading it precompiled takes
//! well under a millisecond. But a precompiled artifact is native code that
//! wasmtime maps and runs without re-validating it, so the cache is part of
//! the trust boundary:
//!
//! - the key is the BLAKE3 hash of the component's bytes plus the engine's
//!   compatibility hash (wasmtime version, target, fuel and epoch settings),
//!   so an artifact is only ever loaded by an engine it was made for. The hash
//!   is cryptographic because components come from strangers: one must not be
//!   able to craft a component whose key names another's artifact;
//! - each file carries a 128-bit XXH3 checksum of its payload: a truncated or
//!   corrupted file is detected, removed and rebuilt, never loaded. Damage is
//!   all a checksum can catch (whoever can write the directory could also
//!   write a matching one, which is why the directory's ownership is checked),
//!   so it is a fast non-cryptographic one: it runs on every warm load, where
//!   BLAKE3 over a 400 KB artifact was about half the load time;
//! - a verified file is mapped, not copied: wasmtime maps the very file that was
//!   read and checked (the same open file, through `/proc/self/fd`, so a rename in
//!   between cannot swap it), which halves the time of a warm load. The file stays
//!   open while the component lives. The cache never writes a file in place (see
//!   below), so nothing of ours changes a mapped file; a process of this user that
//!   truncated one in place could crash the gateway, as it could kill it;
//! - files are written to a temporary name and renamed, so a reader never
//!   sees half a file;
//! - the directory must belong to this user and be writable by no one else,
//!   or it is not used at all (someone who can write it could plant code).
//!   All access goes through a `cap_std::fs::Dir`, so nothing outside it is
//!   touched.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{self, Read, Seek as _, Write as _};
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use wasmtime::Engine;
use wasmtime::component::Component;
use xxhash_rust::xxh3::{Xxh3, xxh3_128};

/// Version 4: the artifact first, so wasmtime can map the file as it is, then its
/// XXH3-128 checksum (little-endian) and this magic. A file with any other magic is
/// rebuilt.
const MAGIC: &[u8; 8] = b"WGCWASM4";
const CHECKSUM: usize = 16;
const TRAILER: usize = CHECKSUM + MAGIC.len();

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
        let file = match self.dir.open(key) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(cache = %self.path.display(), key, error = %e, "cannot open cached component");
                return None;
            }
        };
        let mut file = file.into_std();
        let verified = file.metadata().ok().and_then(|meta| verify(&mut file, meta.len()).ok().flatten());
        let Some(payload_len) = verified else {
            tracing::warn!(cache = %self.path.display(), key, "cached component is damaged; rebuilding it");
            let _ = self.dir.remove_file(key);
            return None;
        };
        // SAFETY: both deserializations trust their input to be an artifact that this wasmtime
        // produced. It was written by `store` below into a directory only this user can
        // write, and its checksum matches the one recorded with it, so it is exactly
        // what an engine with the same compatibility hash (part of the key) serialized.
        // The mapped file is the one just verified: `/proc/self/fd/N` reopens the open
        // file `file`, not whatever the name now points to. wasmtime ignores the trailer
        // after the artifact. Files are replaced by rename, never rewritten in place,
        // so the mapping stays valid while the component lives.
        #[allow(unsafe_code)]
        let mapped = unsafe { Component::deserialize_file(engine, format!("/proc/self/fd/{}", file.as_raw_fd())) };
        let loaded = mapped.or_else(|mapping| {
            // Without /proc, the verified bytes themselves (read again, copied).
            let mut payload = vec![0; usize::try_from(payload_len).map_err(|_| mapping)?];
            file.seek(io::SeekFrom::Start(0)).and_then(|_| file.read_exact(&mut payload))?;
            // SAFETY: as above; these are the bytes just verified.
            #[allow(unsafe_code)]
            unsafe {
                Component::deserialize(engine, payload)
            }
        });
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
            file.write_all(artifact)?;
            file.write_all(&checksum(artifact))?;
            file.write_all(MAGIC)?;
            file.sync_all()
        });
        let renamed = written.and_then(|()| self.dir.rename(&tmp, &self.dir, key));
        if let Err(e) = renamed {
            let _ = self.dir.remove_file(&tmp);
            tracing::warn!(cache = %self.path.display(), key, error = %e, "cannot write the component cache");
        }
    }
}

/// The checksum recorded after an artifact.
fn checksum(artifact: &[u8]) -> [u8; CHECKSUM] {
    xxh3_128(artifact).to_le_bytes()
}

/// The payload length of a cache file of `len` bytes whose trailer and checksum are
/// intact, read from its start. Streams through a small buffer: a warm load reads a
/// file of hundreds of kilobytes, and hashing it as it is read is cheaper than
/// allocating (and faulting in) a copy of it first.
fn verify(file: &mut impl Read, len: u64) -> io::Result<Option<u64>> {
    let Some(payload_len) = len.checked_sub(TRAILER as u64) else { return Ok(None) };
    let mut hasher = Xxh3::new();
    let mut buf = vec![0; 64 * 1024];
    let mut left = payload_len;
    while left > 0 {
        let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        file.read_exact(&mut buf[..n])?;
        hasher.update(&buf[..n]);
        left -= n as u64;
    }
    let mut trailer = [0; TRAILER];
    file.read_exact(&mut trailer)?;
    let at_end = file.read(&mut [0])? == 0;
    let (recorded, magic) = trailer.split_at(CHECKSUM);
    Ok((at_end && magic == MAGIC && hasher.digest128().to_le_bytes() == recorded).then_some(payload_len))
}

#[cfg(test)]
mod tests {
    use super::{checksum, verify};

    #[test]
    fn verify_rejects_short_wrong_and_tampered_files() {
        let check = |bytes: &[u8]| verify(&mut &bytes[..], bytes.len() as u64).ok().flatten();
        // Longer than the read buffer, so the payload takes several reads.
        let payload: Vec<u8> = (0..200_000u32).map(|i| i.to_le_bytes()[0] ^ (i >> 8) as u8).collect();
        let mut good = payload.clone();
        good.extend_from_slice(&checksum(&payload));
        good.extend_from_slice(super::MAGIC);
        assert_eq!(check(&good), Some(payload.len() as u64));
        assert_eq!(check(&good[..good.len() - 1]), None);
        assert_eq!(check(&good[1..]), None);
        assert_eq!(check(&good[..10]), None);
        assert_eq!(check(&good[good.len() - super::TRAILER..]), None);
        assert_eq!(check(b""), None);
        let mut flipped = good.clone();
        flipped[150_000] ^= 1;
        assert_eq!(check(&flipped), None);
        let mut wrong_magic = good.clone();
        let last = wrong_magic.len() - 1;
        wrong_magic[last] = b'X';
        assert_eq!(check(&wrong_magic), None);
        // A file that grew past the length it had when it was measured.
        let mut longer = good.clone();
        longer.push(0);
        assert_eq!(verify(&mut &longer[..], good.len() as u64).ok().flatten(), None);
        // A file shorter than it was measured: a read error, not a panic.
        assert!(verify(&mut &good[..100], good.len() as u64).is_err());
    }
}
