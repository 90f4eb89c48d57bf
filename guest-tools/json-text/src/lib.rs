//! wasmgate's default formatter: renders any MCP tool result as clean,
//! bounded plain text.
//!
//! Layout:
//! - [`render`]: the result-level rules (content blocks in order, placeholders
//!   for media, structured content rendered once);
//! - `json`: JSON text rendered as indented `key: value` lines and bullets,
//!   straight from the parser, without building a tree;
//! - `out`: the bounded, line-oriented output buffer;
//! - [`sanitize`]: removal of control, escape, invisible and bidi characters;
//! - [`heap`]: the component's allocator;
//! - `component` (wasm32 only): the `formatter` world's export, a thin shell
//!   over [`render::render`], with the allocator, panic handler and
//!   `cabi_realloc` that a component without the standard library needs.
//!
//! The logic is plain Rust so that it is unit-tested natively and benchmarked
//! natively against the same code running in the sandbox.
//!
//! For wasm32 the crate is `no_std` (with `alloc`) so that the component imports nothing
//! at all: no WASI, hence no WASI adapter module and none of its extra core
//! instances. A fresh instance per call is then one core module and one core
//! instance, which roughly halves the sandbox's per-call cost for a small
//! result (docs/PERFORMANCE.md).

// Natively it keeps std: cargo also builds the cdylib there, which needs std's
// allocator and panic handler, and the unit tests use std.
#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

pub mod heap;
mod json;
mod out;
pub mod render;
pub mod sanitize;

#[cfg(target_arch = "wasm32")]
// The bindings wit-bindgen generates export the component's functions by name, which is
// unsafe code by the compiler's definition; nothing else here is.
#[allow(unsafe_code)]
mod component {
    wit_bindgen::generate!({ world: "formatter", path: "../../wit" });

    use alloc::string::String;

    use crate::heap::WasmHeap;
    use crate::render::{Input, RenderError, render};
    use exports::wasmgate::sandbox::format::{FormatError, Guest, ToolResult};

    /// Every call runs in a fresh instance that is thrown away afterwards, so
    /// a bump allocator over the instance's own memory is enough: see
    /// [`crate::heap`].
    #[global_allocator]
    static HEAP: WasmHeap = WasmHeap::new();

    /// A panic (a bug, or an allocation the memory cap refused) ends the call
    /// as a trap, which the host reports as such. There is no stderr to print
    /// a message to: the component imports nothing.
    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
        core::arch::wasm32::unreachable()
    }

    /// The canonical ABI's allocation entry point, through which the host
    /// copies the arguments in. wit-bindgen leaves it to the standard library
    /// on wasip2; without it, the component provides its own.
    ///
    /// # Safety
    ///
    /// Called only by the component model's lifting and lowering code, with
    /// `old_ptr`/`old_len` from an earlier call and a power-of-two `align`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cabi_realloc(old_ptr: *mut u8, old_len: usize, align: usize, new_len: usize) -> *mut u8 {
        // SAFETY: the caller's contract is the one `heap::cabi_realloc` documents.
        unsafe { crate::heap::cabi_realloc(old_ptr, old_len, align, new_len) }
    }

    /// `memcmp`, which the standard library would take from wasi-libc; here
    /// nothing provides it (`memcpy` and `memset` are bulk-memory
    /// instructions). It backs string comparison. Eight bytes per step while
    /// they are equal, since in the sandbox every loop iteration also pays for
    /// a deadline check.
    ///
    /// # Safety
    ///
    /// `a` and `b` must be readable for `n` bytes.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: `i + 8 <= n`, and both are readable for `n` bytes.
            let (x, y) = unsafe { (a.add(i).cast::<u64>().read_unaligned(), b.add(i).cast::<u64>().read_unaligned()) };
            if x != y {
                break;
            }
            i += 8;
        }
        while i < n {
            // SAFETY: `i < n`.
            let (x, y) = unsafe { (*a.add(i), *b.add(i)) };
            if x != y {
                return i32::from(x) - i32::from(y);
            }
            i += 1;
        }
        0
    }

    struct JsonText;

    impl Guest for JsonText {
        fn format(result: ToolResult) -> Result<String, FormatError> {
            let input = Input {
                content: &result.content,
                structured: result.structured_content.as_deref(),
                is_error: result.is_error,
                max_output_bytes: result.max_output_bytes as usize,
            };
            render(input).map_err(|RenderError::InvalidInput(why)| FormatError::InvalidInput(why))
        }
    }

    export!(JsonText);
}
