#![allow(clippy::expect_used)] // a build script fails by panicking, with the message as its report

//! Names the commit the binary is built from, for `wasmgate --version`: the
//! `WASMGATE_COMMIT` environment variable of the build: as the builder set it (a
//! packager building from a source archive), else `git rev-parse --short=12 HEAD` of the
//! checkout, else `unknown`. It runs again when the checkout's `HEAD` moves.

use std::path::Path;
use std::process::Command;

fn main() {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).current_dir(&manifest).output().ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
    };
    // A packager building from a source archive can name the commit itself.
    let commit = std::env::var("WASMGATE_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=WASMGATE_COMMIT={commit}");
    println!("cargo:rerun-if-env-changed=WASMGATE_COMMIT");
    // HEAD itself (a detached checkout moves it), the branch it names, and the packed
    // refs a branch can live in.
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--path-format=absolute", "--git-path", &name])
            && Path::new(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    // Without a checkout, nothing above is watched: the script would run on every build.
    println!("cargo:rerun-if-changed=build.rs");
}
