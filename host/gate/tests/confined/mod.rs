//! Running test servers confined: what a Python interpreter needs granted beyond the
//! default system paths. A pyenv interpreter lives under `$HOME` and a virtual
//! environment anywhere, so the tests grant the interpreter's `sys.prefix` and
//! `sys.base_prefix` explicitly (both are `/usr` for a distribution's Python, which the
//! defaults already cover). Nothing is derived from the command path by the gateway.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use wasmgate_gate::Confinement;

/// The real interpreter behind `python3` (a shim such as pyenv's needs variables the
/// server is not given).
pub fn python() -> PathBuf {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 is needed for the stdio transport tests");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// `sys.prefix` and `sys.base_prefix` of `python`, canonical.
pub fn python_dirs(python: &Path) -> Vec<PathBuf> {
    let out = std::process::Command::new(python)
        .args(["-c", "import sys; print(sys.prefix); print(sys.base_prefix)"])
        .output()
        .expect("run the interpreter");
    String::from_utf8(out.stdout).unwrap().lines().map(|line| Path::new(line).canonicalize().unwrap()).collect()
}

/// The default confinement, plus read and execute on `python`'s installation and
/// read on `scripts` (the directory of the server's script).
pub fn for_python(python: &Path, scripts: &Path) -> Confinement {
    python_dirs(python).into_iter().fold(Confinement::default(), Confinement::read_exec).read_only(scripts)
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}
