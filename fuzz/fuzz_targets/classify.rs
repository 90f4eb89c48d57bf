//! Any bytes a server might send, through the same entry point the client
//! uses: size, UTF-8, depth and duplicate-key checks, JSON parsing, then
//! JSON-RPC classification. It must only ever return. A message that is
//! accepted must re-serialise to exactly the value it was read from, because
//! forwarding must drop nothing.

#![no_main]

use libfuzzer_sys::fuzz_target;
use wasmgate_protocol::{MessageLimits, classify, decode, parse_message};

fuzz_target!(|data: &[u8]| {
    let limits = MessageLimits { max_message_bytes: 1 << 20, max_depth: 64 };
    let decoded = decode(data, limits);
    if let Ok(value) = parse_message(data, limits) {
        let classified = classify(value.clone());
        assert_eq!(classified.is_ok(), decoded.is_ok(), "decode and parse+classify disagree");
        if let Ok(message) = classified {
            assert_eq!(message.into_value(), value, "a classified message lost or changed a field");
        }
    } else {
        assert!(decoded.is_err(), "decode accepted what parse_message refused");
    }
});
