//! Sizes the component's shadow stack and initial linear memory.
//!
//! Every call runs in a fresh instance, and when it ends the host finds the
//! pages it wrote by walking the page table of the whole linear memory (the
//! pooling allocator's `PAGEMAP_SCAN`), so a smaller memory is a cheaper call:
//! 512 KiB against 2 MiB takes about 0.45 µs off each small call
//! (docs/PERFORMANCE.md).
//!
//! - The stack comes first in memory (the Rust default for wasm), so an
//!   overflow runs below address 0 and traps instead of overwriting data.
//!   The deepest JSON the parser accepts (128 levels) needs between 32 and
//!   64 KiB; 256 KiB leaves four times that
//!   (`the_deepest_nesting_the_parser_accepts_renders_within_the_guest_stack`).
//! - The allocator (src/heap.rs) first uses the memory an instance starts with
//!   and grows it only when a call needs more. Past the stack and the static
//!   data, 512 KiB in all leaves about 220 KiB of heap: enough for results of
//!   tens of KB, so most calls never run `memory.grow` (which the host pays
//!   for twice, growing and then re-protecting at the next instance).
//!   Untouched pages cost nothing: the host maps them zeroed on demand.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|arch| arch == "wasm32") {
        println!("cargo:rustc-link-arg-cdylib=-zstack-size={}", 256 << 10);
        println!("cargo:rustc-link-arg-cdylib=--initial-memory={}", 512 << 10);
    }
}
