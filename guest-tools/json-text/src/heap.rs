//! The component's allocator: a bump allocator over the instance's own
//! linear memory.
//!
//! The sandbox runs every call in a fresh instance and throws it away after
//! that one call, so memory never has to be given back to anything: a call's
//! allocations only have to fit in the memory cap. That makes the simplest
//! allocator the right one:
//! - it starts at `__heap_base` and first uses the memory the instance was
//!   created with (the build script sizes it), so a small call never runs
//!   `memory.grow`. A general-purpose allocator such as dlmalloc grows memory
//!   on its first allocation in every fresh instance, and the host then pays
//!   two `mprotect`s per call to re-protect the grown pages;
//! - it grows memory by the pages a request is short of, and only then;
//! - freeing or resizing the most recent block works in place, which is what
//!   the output `String` does as it grows: its doublings extend it where it is
//!   instead of copying it;
//! - any other free is a no-op: the instance is about to be dropped anyway.
//!
//! [`Bump`] is the bookkeeping alone, over plain addresses, so it is unit-tested
//! natively; [`WasmHeap`] (wasm32 only) puts it over the real memory.

// An allocator is unsafe code by nature: the global allocator and the canonical ABI's
// `cabi_realloc` hand out raw memory. Each unsafe block says why it holds.
#![allow(unsafe_code)]

use core::alloc::Layout;

/// Size of a WebAssembly page.
pub const PAGE: usize = 64 * 1024;

/// Bump allocation over the address range `[next, end)`, which a `grow`
/// callback can extend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bump {
    next: usize,
    end: usize,
}

impl Bump {
    /// Free space from `next` up to `end`.
    pub const fn new(next: usize, end: usize) -> Self {
        Bump { next, end }
    }

    /// The first free address.
    pub fn next(&self) -> usize {
        self.next
    }

    /// The end of the usable range.
    pub fn end(&self) -> usize {
        self.end
    }

    /// Reserves a block for `layout`. `grow` is asked for at least the given
    /// number of bytes more and returns the new end of the range, or `None`
    /// when it cannot grow; the allocation then fails.
    pub fn alloc(&mut self, layout: Layout, grow: impl FnOnce(usize) -> Option<usize>) -> Option<usize> {
        let mask = layout.align() - 1;
        let start = self.next.checked_add(mask)? & !mask;
        let next = start.checked_add(layout.size())?;
        self.reserve(next, grow)?;
        self.next = next;
        Some(start)
    }

    /// Frees the block at `ptr` of `size` bytes: it is reused only if it is
    /// the most recent one.
    pub fn dealloc(&mut self, ptr: usize, size: usize) {
        if ptr.checked_add(size) == Some(self.next) {
            self.next = ptr;
        }
    }

    /// Resizes the block at `ptr` from `old_size` to `new_size` bytes without
    /// moving it, if it can: the most recent block can always shrink and can
    /// grow as far as the range (grown if need be) allows; any other block can
    /// only shrink. Returns false when the caller must move the block.
    pub fn resize_in_place(
        &mut self,
        ptr: usize,
        old_size: usize,
        new_size: usize,
        grow: impl FnOnce(usize) -> Option<usize>,
    ) -> bool {
        if ptr.checked_add(old_size) != Some(self.next) {
            return new_size <= old_size;
        }
        let Some(next) = ptr.checked_add(new_size) else { return false };
        if self.reserve(next, grow).is_none() {
            return false;
        }
        self.next = next;
        true
    }

    fn reserve(&mut self, upto: usize, grow: impl FnOnce(usize) -> Option<usize>) -> Option<()> {
        if upto > self.end {
            self.end = grow(upto - self.end)?.max(self.end);
            if upto > self.end {
                return None;
            }
        }
        Some(())
    }
}

/// The canonical ABI's `cabi_realloc` over the global allocator: a new block
/// when `old_len` is 0, a resized one otherwise; a zero-length request gets a
/// dangling, aligned pointer. It never returns null: address 0 is valid in
/// linear memory, so the host would write there. When memory runs out (the
/// host refused to grow it) the call ends in `handle_alloc_error`, a trap.
///
/// # Safety
///
/// `align` must be a power of two; `old_ptr` and `old_len` must describe a
/// block from an earlier call with the same `align`, or `old_len` must be 0.
pub unsafe fn cabi_realloc(old_ptr: *mut u8, old_len: usize, align: usize, new_len: usize) -> *mut u8 {
    let (Ok(layout), Ok(new_layout)) =
        (Layout::from_size_align(old_len, align), Layout::from_size_align(new_len, align))
    else {
        panic!("cabi_realloc: invalid alignment {align} or size {new_len}");
    };
    if new_len == 0 {
        // A dangling but well-aligned pointer, as the ABI allows for no bytes.
        return core::ptr::without_provenance_mut(align);
    }
    let new = if old_len == 0 {
        // SAFETY: `new_layout` has a non-zero size.
        unsafe { alloc::alloc::alloc(new_layout) }
    } else {
        // SAFETY: per this function's contract `old_ptr` was allocated with
        // `layout`, and `new_len` is non-zero.
        unsafe { alloc::alloc::realloc(old_ptr, layout, new_len) }
    };
    if new.is_null() {
        alloc::alloc::handle_alloc_error(new_layout);
    }
    new
}

#[cfg(target_arch = "wasm32")]
pub use wasm::WasmHeap;

#[cfg(target_arch = "wasm32")]
mod wasm {
    use core::alloc::{GlobalAlloc, Layout};
    use core::arch::wasm32::{memory_grow, memory_size};
    use core::cell::UnsafeCell;

    use super::{Bump, PAGE};

    unsafe extern "C" {
        /// The first address after the static data and the stack, set by the linker.
        static __heap_base: u8;
    }

    /// The global allocator: a [`Bump`] over memory 0, from `__heap_base`.
    #[allow(missing_debug_implementations)] // its state is raw addresses, nothing to show
    pub struct WasmHeap(UnsafeCell<Bump>);

    // SAFETY: a wasm32 component has one thread; nothing shares the heap.
    unsafe impl Sync for WasmHeap {}

    impl Default for WasmHeap {
        fn default() -> Self {
            Self::new()
        }
    }

    impl WasmHeap {
        pub const fn new() -> Self {
            WasmHeap(UnsafeCell::new(Bump::new(0, 0)))
        }

        /// The heap's state, set up on first use.
        ///
        /// # Safety
        ///
        /// No other reference to the state may be live: true on one thread,
        /// since the allocator's methods do not call each other.
        #[allow(clippy::mut_from_ref)]
        unsafe fn bump(&self) -> &mut Bump {
            // SAFETY: per this function's contract.
            let bump = unsafe { &mut *self.0.get() };
            if bump.end() == 0 {
                *bump = Bump::new(&raw const __heap_base as usize, memory_size(0) * PAGE);
            }
            bump
        }
    }

    /// Grows memory 0 by the pages `bytes` needs; returns its new end.
    fn grow(bytes: usize) -> Option<usize> {
        if memory_grow(0, bytes.div_ceil(PAGE)) == usize::MAX {
            return None;
        }
        Some(memory_size(0) * PAGE)
    }

    // SAFETY: blocks are handed out from memory no other block uses, aligned
    // as asked, and only reused after the block before them was freed.
    unsafe impl GlobalAlloc for WasmHeap {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: one thread, no reentrancy.
            match unsafe { self.bump() }.alloc(layout, grow) {
                Some(addr) => addr as *mut u8,
                None => core::ptr::null_mut(),
            }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: one thread, no reentrancy.
            unsafe { self.bump() }.dealloc(ptr as usize, layout.size());
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: one thread, no reentrancy.
            if unsafe { self.bump() }.resize_in_place(ptr as usize, layout.size(), new_size, grow) {
                return ptr;
            }
            // SAFETY: the caller guarantees `new_size` rounded to the alignment
            // does not overflow, so this layout is valid.
            let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
            // SAFETY: `new_layout` has a non-zero size (the caller's contract).
            let new = unsafe { self.alloc(new_layout) };
            if !new.is_null() {
                // SAFETY: both blocks are live and distinct; the old one is
                // not the most recent, so it does not overlap the new one.
                unsafe { core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size)) };
            }
            new
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    fn no_growth(_: usize) -> Option<usize> {
        None
    }

    #[test]
    fn blocks_are_aligned_and_do_not_overlap() {
        let mut bump = Bump::new(1001, 4096);
        let a = bump.alloc(layout(3, 1), no_growth).unwrap();
        let b = bump.alloc(layout(16, 8), no_growth).unwrap();
        let c = bump.alloc(layout(1, 64), no_growth).unwrap();
        assert_eq!(a, 1001);
        assert_eq!(b, 1008, "1004 rounded up to 8");
        assert_eq!(c, 1024, "1024 is the first multiple of 64 after 1024");
        assert_eq!(bump.next(), 1025);
    }

    #[test]
    fn the_most_recent_block_is_reused_when_freed_and_others_are_not() {
        let mut bump = Bump::new(0, 4096);
        let a = bump.alloc(layout(100, 1), no_growth).unwrap();
        let b = bump.alloc(layout(100, 1), no_growth).unwrap();
        bump.dealloc(a, 100);
        assert_eq!(bump.next(), 200, "a is not the most recent block");
        bump.dealloc(b, 100);
        assert_eq!(bump.next(), 100);
        assert_eq!(bump.alloc(layout(50, 1), no_growth), Some(100));
    }

    #[test]
    fn the_most_recent_block_grows_in_place_and_others_only_shrink() {
        let mut bump = Bump::new(0, 4096);
        let a = bump.alloc(layout(100, 1), no_growth).unwrap();
        assert!(bump.resize_in_place(a, 100, 1000, no_growth));
        assert_eq!(bump.next(), 1000);
        assert!(bump.resize_in_place(a, 1000, 10, no_growth), "shrinking the top block gives the space back");
        assert_eq!(bump.next(), 10);

        let b = bump.alloc(layout(10, 1), no_growth).unwrap();
        assert!(!bump.resize_in_place(a, 10, 11, no_growth), "a is no longer on top: it must move");
        assert!(bump.resize_in_place(a, 10, 5, no_growth), "shrinking never needs a move");
        assert_eq!(bump.next(), b + 10, "shrinking a lower block gives nothing back");
    }

    #[test]
    fn the_range_grows_by_what_a_request_is_short_of() {
        let mut bump = Bump::new(0, PAGE);
        let mut asked = None;
        let a = bump.alloc(layout(PAGE + 10, 1), |bytes| {
            asked = Some(bytes);
            Some(2 * PAGE)
        });
        assert_eq!(a, Some(0));
        assert_eq!(asked, Some(10));
        assert_eq!(bump.end(), 2 * PAGE);

        let mut asked = None;
        assert!(bump.resize_in_place(0, PAGE + 10, 3 * PAGE, |bytes| {
            asked = Some(bytes);
            Some(3 * PAGE)
        }));
        assert_eq!(asked, Some(PAGE));
        assert_eq!(bump.next(), 3 * PAGE);
    }

    #[test]
    fn a_refused_or_short_growth_fails_the_request_and_changes_nothing() {
        let mut bump = Bump::new(100, PAGE);
        assert_eq!(bump.alloc(layout(PAGE, 1), no_growth), None);
        assert_eq!(bump.alloc(layout(PAGE, 1), |_| Some(PAGE + 50)), None, "grew, but not enough");
        assert_eq!(bump.next(), 100);
        let a = bump.alloc(layout(10, 1), no_growth).unwrap();
        assert!(!bump.resize_in_place(a, 10, 2 * PAGE, no_growth));
        assert_eq!(bump.next(), 110);
    }

    #[test]
    fn sizes_near_the_end_of_the_address_space_fail_instead_of_wrapping() {
        let mut bump = Bump::new(usize::MAX - 10, usize::MAX);
        assert_eq!(bump.alloc(layout(1, 64), |_| Some(usize::MAX)), None, "aligning would wrap");
        assert_eq!(bump.alloc(layout(100, 1), |_| Some(usize::MAX)), None, "the end would wrap");
        let a = bump.alloc(layout(5, 1), no_growth).unwrap();
        assert!(!bump.resize_in_place(a, 5, usize::MAX, |_| Some(usize::MAX)));
    }

    #[test]
    fn cabi_realloc_allocates_keeps_contents_and_hands_out_nothing_for_zero_bytes() {
        // SAFETY: each call follows the ABI's contract; the block is freed below.
        unsafe {
            assert_eq!(cabi_realloc(core::ptr::null_mut(), 0, 8, 0) as usize, 8);
            let p = cabi_realloc(core::ptr::null_mut(), 0, 4, 3);
            assert!(!p.is_null());
            assert_eq!(p as usize % 4, 0);
            p.copy_from_nonoverlapping(b"abc".as_ptr(), 3);
            let q = cabi_realloc(p, 3, 4, 1000);
            assert_eq!(core::slice::from_raw_parts(q, 3), b"abc");
            alloc::alloc::dealloc(q, layout(1000, 4));
        }
    }

    #[test]
    #[should_panic(expected = "invalid alignment 3")]
    fn cabi_realloc_refuses_an_invalid_alignment_before_touching_anything() {
        // SAFETY: the alignment is checked before anything is read or written.
        unsafe { cabi_realloc(core::ptr::null_mut(), 0, 3, 10) };
    }
}
