/// Environment variables meant for the host workspace's own build (its rustflags, coverage
/// and sanitizer flags, clippy's wrapper, its target directory and target) that must not
/// leak into a nested cargo building guest code: this crate's build script removes them,
/// and so does any test that builds a guest crate the way a reader would.
pub const HOST_BUILD_VARS: [&str; 8] = [
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTC_WRAPPER",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "CARGO_PRIMARY_PACKAGE",
];
