//! What the seccomp filter costs a confined server's system calls: `getppid` (a call
//! the filter does not name, so it walks the whole filter) and a one-byte `read` of
//! `/dev/zero`, first on a thread without the filter, then on one with it, in one run.
//!
//! `cargo bench -p wasmgate-confine --bench seccomp`

use std::hint::black_box;

use criterion::Criterion;

fn calls(c: &mut Criterion, with: &str) {
    let zero = std::fs::File::open("/dev/zero").unwrap_or_else(|e| panic!("/dev/zero: {e}"));
    let mut byte = [0u8; 1];
    c.bench_function(&format!("getppid/{with}"), |b| b.iter(|| black_box(rustix::process::getppid())));
    c.bench_function(&format!("read 1 byte/{with}"), |b| b.iter(|| black_box(rustix::io::read(&zero, &mut byte))));
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    calls(&mut c, "no filter");
    // A filter is per thread (without TSYNC): the second half runs on a thread of its own.
    std::thread::spawn(|| {
        let mut c = Criterion::default().configure_from_args();
        wasmgate_confine::install_on_this_thread(&wasmgate_confine::Confinement::default())
            .unwrap_or_else(|e| panic!("{e}"));
        calls(&mut c, "the server's filter");
        c.final_summary();
    })
    .join()
    .unwrap_or_else(|_| panic!("the filtered half failed"));
    c.final_summary();
}
