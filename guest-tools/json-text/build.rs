//! Sizes the component's initial linear memory.
//!
//! The allocator (src/heap.rs) first uses the memory an instance starts with
//! and grows it only when a call needs more. Past the 1 MiB stack and the
//! static data, 2 MiB in all leaves about 900 KiB of heap: enough for results
//! of a few hundred KB, so most calls never run `memory.grow` (which the host
//! pays for twice, growing and then re-protecting at the next instance).
//! Untouched pages cost nothing: the host maps them zeroed on demand.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|arch| arch == "wasm32") {
        println!("cargo:rustc-link-arg-cdylib=--initial-memory={}", 2 << 20);
    }
}
