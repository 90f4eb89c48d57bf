//! A fresh state directory holding the bundled configuration, written for this machine.
//!
//! `wasmgate.toml` and `policy.toml` in this example are templates: a few values differ
//! per machine (the Python interpreter and the directories it runs from, this example's
//! directory, where cargo put the built components), so they are written as `"@NAME@"`
//! strings and filled in here. Everything else, the policy's verdicts included, is used
//! exactly as committed. The reviewed definitions stay in the committed
//! `wasmgate.lock`, which the written configuration points at.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

/// This example's directory: the templates, `server.py`, the lock and the seed data.
pub const EXAMPLE_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// The file that marks a directory as the demo's own, so a fresh run may empty it.
const MARKER: &str = ".calendar-demo";

/// What to write into the state directory.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Where the demo keeps everything; emptied first.
    pub state_dir: PathBuf,
    /// The calendar server the `calendar` provider runs (`server.py` of this example).
    pub server: PathBuf,
    /// The reviewed definitions (this example's committed `wasmgate.lock`).
    pub lock: PathBuf,
}

impl Setup {
    /// The bundled scenario in `state_dir`.
    #[must_use]
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        let example = Path::new(EXAMPLE_DIR);
        Self { state_dir: state_dir.into(), server: example.join("server.py"), lock: example.join("wasmgate.lock") }
    }

    /// `target/calendar-demo` of this workspace (or of `$CARGO_TARGET_DIR`).
    #[must_use]
    pub fn default_state_dir() -> PathBuf {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| Path::new(EXAMPLE_DIR).join("../../target"), PathBuf::from);
        target.join("calendar-demo")
    }

    /// Empties the state directory, writes `wasmgate.toml` and `policy.toml` into it and
    /// seeds the WASM calendar's data; returns the path of the written `wasmgate.toml`.
    ///
    /// # Errors
    ///
    /// When Python cannot be found, a directory that is not the demo's own is in the way,
    /// or a file cannot be written.
    pub fn write(&self) -> anyhow::Result<PathBuf> {
        fresh_dir(&self.state_dir)?;
        let example = canonical(Path::new(EXAMPLE_DIR))?;
        let server = canonical(&self.server)?;
        let server_dir = server.parent().map_or_else(|| example.clone(), Path::to_path_buf);
        let python = Python::find()?;
        let one = |path: &Path| vec![path.display().to_string()];
        let values = [
            ("PYTHON", one(&python.executable)),
            ("PYTHON_DIRS", python.dirs.iter().map(|d| d.display().to_string()).collect()),
            ("LOCK", one(&std::path::absolute(&self.lock)?)),
            ("SERVER", one(&server)),
            ("SERVER_DIR", one(&server_dir)),
            ("CALENDAR_WASM", vec![wasmgate_guests::CALENDAR_PATH.to_owned()]),
            ("CALENDAR_TEXT_WASM", vec![wasmgate_guests::CALENDAR_TEXT_PATH.to_owned()]),
        ];
        for name in ["wasmgate.toml", "policy.toml"] {
            let template = std::fs::read_to_string(example.join(name)).with_context(|| format!("reading {name}"))?;
            let filled = fill(&template, &values).with_context(|| format!("filling in {name}"))?;
            std::fs::write(self.state_dir.join(name), filled).with_context(|| format!("writing {name}"))?;
        }
        let data = self.state_dir.join("diary-data");
        std::fs::create_dir_all(&data)?;
        std::fs::copy(example.join("diary-events.json"), data.join("events.json")).context("seeding the diary")?;
        Ok(self.state_dir.join("wasmgate.toml"))
    }
}

/// The interpreter that runs `server.py`, and the directories outside the system paths
/// it needs to read (a pyenv or venv Python lives elsewhere).
#[derive(Debug, Clone)]
pub struct Python {
    /// `sys.executable`.
    pub executable: PathBuf,
    /// `sys.prefix` and `sys.base_prefix`, without repeats.
    pub dirs: Vec<PathBuf>,
}

impl Python {
    /// Asks `python3` where it is.
    ///
    /// # Errors
    ///
    /// When there is no `python3`, or its answer is not three paths.
    pub fn find() -> anyhow::Result<Python> {
        let script = "import sys; print(sys.executable); print(sys.prefix); print(sys.base_prefix)";
        let out = Command::new("python3").args(["-c", script]).output().context(
            "python3 is needed to run the untrusted calendar server (examples/calendar/server.py): install it",
        )?;
        let text = String::from_utf8(out.stdout).context("python3 printed something that is not UTF-8")?;
        let mut lines = text.lines().map(PathBuf::from);
        let (Some(executable), true) = (lines.next(), out.status.success()) else {
            bail!("python3 did not say where it is");
        };
        let mut dirs: Vec<PathBuf> = Vec::new();
        for dir in lines {
            let dir = canonical(&dir)?;
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        if dirs.is_empty() {
            bail!("python3 did not name its prefix directories");
        }
        Ok(Python { executable, dirs })
    }
}

/// `template` with every `"@NAME@"` string replaced by the TOML strings of its values
/// (several values fill a place in an array).
///
/// # Errors
///
/// When a `"@...@"` place is left without a value.
pub fn fill(template: &str, values: &[(&str, Vec<String>)]) -> anyhow::Result<String> {
    let mut text = template.to_owned();
    for (name, list) in values {
        // A JSON string is a TOML basic string: the same escapes, none TOML lacks.
        let quoted: Vec<String> = list.iter().map(|v| serde_json::Value::from(v.as_str()).to_string()).collect();
        text = text.replace(&format!("\"@{name}@\""), &quoted.join(", "));
    }
    if let Some(start) = text.find("\"@") {
        let rest = &text[start..];
        let place = rest.get(..rest[1..].find('"').map_or(rest.len(), |end| end + 2)).unwrap_or(rest);
        bail!("no value for {place}");
    }
    Ok(text)
}

fn canonical(path: &Path) -> anyhow::Result<PathBuf> {
    path.canonicalize().with_context(|| format!("{} is missing", path.display()))
}

/// Empties `dir` if it is the demo's own (or creates it), and marks it as the demo's.
fn fresh_dir(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() {
        let empty = std::fs::read_dir(dir)?.next().is_none();
        if !empty && !dir.join(MARKER).exists() {
            bail!("{} is not empty and is not a calendar-demo state directory: choose another", dir.display());
        }
        std::fs::remove_dir_all(dir).with_context(|| format!("emptying {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(dir.join(MARKER), "state of the wasmgate calendar demo; emptied on each run\n")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::{MARKER, fill, fresh_dir};

    #[test]
    fn fill_puts_toml_strings_in_every_place_and_lists_in_arrays() {
        let template = "a = \"@ONE@\"\nb = [\"x\", \"@MANY@\"]\n";
        let values = [("ONE", vec!["C:\\dir \"q\"".to_owned()]), ("MANY", vec!["/p".to_owned(), "/q".to_owned()])];
        let filled = fill(template, &values).unwrap();
        assert_eq!(filled, "a = \"C:\\\\dir \\\"q\\\"\"\nb = [\"x\", \"/p\", \"/q\"]\n");
    }

    #[test]
    fn fill_names_a_place_left_without_a_value() {
        let err = fill("a = \"@ONE@\"\nb = \"@TWO@\"\n", &[("ONE", vec!["1".to_owned()])]).unwrap_err();
        assert_eq!(err.to_string(), "no value for \"@TWO@\"");
    }

    #[test]
    fn a_directory_that_is_not_the_demos_own_is_never_emptied() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("precious.txt"), "keep me").unwrap();
        let err = fresh_dir(dir.path()).unwrap_err();
        assert!(err.to_string().contains("is not a calendar-demo state directory"), "{err}");
        assert!(dir.path().join("precious.txt").exists());

        let state = dir.path().join("state");
        fresh_dir(&state).unwrap();
        std::fs::write(state.join("old.txt"), "from the last run").unwrap();
        fresh_dir(&state).unwrap();
        assert!(state.join(MARKER).exists() && !state.join("old.txt").exists());
    }
}
