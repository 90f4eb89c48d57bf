//! The calendar scenario, in-process through the gateway library: an untrusted calendar
//! MCP server (`server.py`, spawned confined) and the WASM calendar component
//! (`guest-tools/calendar`) behind one policy, driven by a scripted agent turn.
//!
//! # Layout
//!
//! * [`setup`]: a fresh state directory with the bundled configuration written into it
//!   (the `@...@` values of the templates filled in for this machine) and the WASM
//!   calendar's data seeded;
//! * [`scenario`]: what the scripted model asks and calls;
//! * [`show`]: what the agent saw, laid out for a terminal;
//! * [`checks`]: the trust checklist, checked against what the model read;
//! * [`caldav`]: the second act's real parts: Radicale, seeded with hostile events, and
//!   the written configuration of caldav-mcp in front of it;
//! * [`postgres`]: the third act's: two PostgreSQL servers, one seeded with a hostile
//!   row, server-postgres configured three times behind `wasmgate serve`, and the
//!   scripted client of `serve`.
//!
//! The `calendar-demo` binary puts them together; docs/CALENDAR.md walks through it.

pub mod caldav;
pub mod checks;
pub mod postgres;
pub mod scenario;
pub mod setup;
pub mod show;
