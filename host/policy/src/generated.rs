//! Texts for the tests that check a fast path against its plain specification, drawn by a
//! fixed-seed generator so that a failure reproduces.

/// A xorshift generator from `seed` (not zero).
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

/// `count` texts, each of fewer than `most` pieces drawn from `pieces`, always the same.
pub(crate) fn texts(count: usize, most: u64, pieces: &[&str]) -> Vec<String> {
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
    (0..count)
        .map(|_| {
            let len = next() % most;
            (0..len).map(|_| pieces[(next() % pieces.len() as u64) as usize]).collect()
        })
        .collect()
}
