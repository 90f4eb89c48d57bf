//! How much a returned append promises. See docs/AUDIT.md for the full trade-off.

/// When an append returns, relative to the record reaching stable storage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// Each append returns after its record is written and fsynced (the default). Concurrent
    /// appends share one fsync. Risks nothing: a record whose append returned survives a crash or
    /// power loss, and a call never runs without its start record on disk.
    #[default]
    EveryCall,
    /// Appends return as soon as the record is queued; the writer writes at once and fsyncs at
    /// most `max_delay_ms` after the oldest unsynced record. Risks the records of the last
    /// `max_delay_ms` on a crash or power loss, including start records of calls that then ran.
    /// A failed write (a full disk) keeps its records to write later; while writes fail,
    /// appends wait for their own write and are refused when it fails, as under `every-call`.
    Batched {
        /// The bound on how long a record may stay unsynced.
        max_delay_ms: u64,
    },
    /// Appends return after the record is written to the OS; no fsync ever. A crash of wasmgate
    /// loses nothing that was returned, but an OS crash or power loss can lose any amount of the
    /// log (whatever the kernel had not written back yet).
    Off,
}
