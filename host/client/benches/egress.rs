//! What a plain connect through the gateway costs a confined server: the hostile test
//! server (`tests/fixtures/hostile_server.py`) sends 100 MB to a sink, makes 1,000
//! one-byte round trips with an echo, and opens 200 new connections of one round trip
//! each, all on this host's loopback, timed inside the server; once confined and granted the sink's address (its connect goes through the
//! route in its namespace and the gateway's splice, the `direct` path), once unconfined
//! (the same code, its network unrestricted: straight to the loopback). Five interleaved
//! rounds; the medians, the throughput ratio and the time the gateway adds to a round trip
//! and to a new connection (its accept, its own connect, and its answer to the server's
//! `connect`).
//!
//! `cargo bench -p wasmgate-client --bench egress` (needs user namespaces, or root).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/confined/mod.rs"]
mod confined;

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, TcpListener, TcpStream};

use serde_json::json;
use wasmgate_egress::{EgressGrant, HostGrant};

const BYTES: u64 = 100 << 20;
const ROUNDS: u32 = 1_000;
const CONNECTIONS: u32 = 200;
const REPEATS: usize = 5;

/// A sink (`T`: reads to the end, answers the count) and an echo (`R`: one byte back
/// for each), a thread per connection.
fn sink_and_echo() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream));
        }
    });
    port
}

fn serve(mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut kind = [0u8; 1];
    if stream.read_exact(&mut kind).is_err() {
        return;
    }
    let mut buffer = vec![0u8; 1 << 16];
    if kind[0] == b'T' {
        let mut total = 0u64;
        while let Ok(n) = stream.read(&mut buffer) {
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        let _ = stream.write_all(&total.to_be_bytes());
        return;
    }
    let mut byte = [0u8; 1];
    while stream.read_exact(&mut byte).is_ok() {
        if stream.write_all(&byte).is_err() {
            return;
        }
    }
}

/// Seconds for the transfer, the round trips and the new connections, as the server
/// timed them.
async fn measure(server: &confined::Hostile, port: u16) -> (f64, f64, f64) {
    let args = json!({"host": "127.0.0.1", "port": port, "bytes": BYTES, "rounds": ROUNDS, "connections": CONNECTIONS});
    let (ok, detail, _) = server.attack("tcp_bench", args).await;
    assert!(ok, "{detail}");
    let mut times = detail.split(' ').map(|t| t.parse::<f64>().unwrap());
    (times.next().unwrap(), times.next().unwrap(), times.next().unwrap())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let port = sink_and_echo();
    let grant = EgressGrant { hosts: vec![HostGrant::parse(&format!("127.0.0.1:{port}")).unwrap()], observer: None };
    let confined = match confined::hostile_with(|c| c, Some(grant)).await {
        Ok(server) => server,
        Err(e) => {
            eprintln!("egress bench: not measured: a server granted hosts does not start here ({e})");
            return;
        }
    };
    // The same confinement but the network: the host's own loopback, no gateway between.
    let unconfined = confined::hostile_with(
        |c| wasmgate_confine::Confinement { network: wasmgate_confine::Network::Unrestricted, ..c },
        None,
    )
    .await
    .unwrap();
    let mut throughput = (Vec::new(), Vec::new());
    let mut round_trip = (Vec::new(), Vec::new());
    let mut ratios = Vec::new();
    let mut added = Vec::new();
    let mut fresh = (Vec::new(), Vec::new());
    for round in 0..REPEATS {
        let (direct_transfer, direct_trips, direct_fresh) = measure(&confined, port).await;
        let (plain_transfer, plain_trips, plain_fresh) = measure(&unconfined, port).await;
        let mb_per_s = |seconds: f64| BYTES as f64 / seconds / 1e6;
        let micros = |seconds: f64| seconds * 1e6 / f64::from(ROUNDS);
        let per_connection = |seconds: f64| seconds * 1e6 / f64::from(CONNECTIONS);
        eprintln!(
            "round {round}: 100 MB {:.0} vs {:.0} MB/s; a round trip {:.1} vs {:.1} µs; a new connection {:.0} vs {:.0} µs \
             (through the gateway vs unconfined)",
            mb_per_s(direct_transfer),
            mb_per_s(plain_transfer),
            micros(direct_trips),
            micros(plain_trips),
            per_connection(direct_fresh),
            per_connection(plain_fresh)
        );
        fresh.0.push(per_connection(direct_fresh));
        fresh.1.push(per_connection(plain_fresh));
        throughput.0.push(mb_per_s(direct_transfer));
        throughput.1.push(mb_per_s(plain_transfer));
        round_trip.0.push(micros(direct_trips));
        round_trip.1.push(micros(plain_trips));
        ratios.push(plain_transfer / direct_transfer);
        added.push(micros(direct_trips) - micros(plain_trips));
    }
    println!(
        "a plain connect through the gateway's direct path against the same unconfined, medians of {REPEATS} \
         interleaved rounds:"
    );
    println!("  100 MB: {:.0} vs {:.0} MB/s, ratio {:.2}", median(throughput.0), median(throughput.1), median(ratios));
    println!(
        "  a 1-byte round trip: {:.1} vs {:.1} µs, {:.1} µs added",
        median(round_trip.0),
        median(round_trip.1),
        median(added)
    );
    let (through, plain) = (median(fresh.0), median(fresh.1));
    println!(
        "  a new connection (connect, one round trip, close): {through:.0} vs {plain:.0} µs, {:.0} µs added",
        through - plain
    );
    confined.client.close().await;
    unconfined.client.close().await;
}
