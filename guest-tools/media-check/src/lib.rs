//! wasmgate's media check (WIT world `media-check`): which image, audio and embedded
//! binary resource blocks of a tool result may reach a client as they are.
//!
//! A block passes when its declared type is on the allowed list, its data is valid
//! base64 of at most the allowed size, and its bytes are what the type says (their
//! signature is recognised as that type). A type this check cannot recognise never
//! passes: there is no way to tell its bytes from anything else.
//!
//! The logic is plain Rust, tested natively; `component` (wasm32 only) is the export.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::Value;

/// Standard base64, with or without padding (providers differ).
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The types whose bytes this check recognises, by their usual name.
pub const RECOGNISED: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/bmp",
    "audio/wav",
    "audio/mpeg",
    "audio/ogg",
    "audio/flac",
    "application/pdf",
];

/// The verdict on one block: its index, and why it may not pass (`None`: it may).
pub type Verdict = (u32, Option<String>);

/// A verdict for every binary block of `content` (a JSON array text).
///
/// # Errors
///
/// `content` is not a JSON array.
pub fn check(content: &str, allowed: &[String], max_bytes: u32) -> Result<Vec<Verdict>, String> {
    let blocks: Vec<Value> = match serde_json::from_str(content) {
        Ok(Value::Array(blocks)) => blocks,
        _ => return Err("content is not a JSON array".into()),
    };
    let mut verdicts = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        let Ok(index) = u32::try_from(index) else { break };
        let (data, declared) = match block.get("type").and_then(Value::as_str) {
            Some("image" | "audio") => (block.get("data"), block.get("mimeType")),
            Some("resource") => match block.get("resource") {
                Some(resource) if resource.get("blob").is_some() => (resource.get("blob"), resource.get("mimeType")),
                _ => continue,
            },
            _ => continue,
        };
        verdicts.push((index, refusal(data, declared, allowed, max_bytes)));
    }
    Ok(verdicts)
}

/// Why one block may not pass, if it may not.
fn refusal(data: Option<&Value>, declared: Option<&Value>, allowed: &[String], max_bytes: u32) -> Option<String> {
    let Some(declared) = declared.and_then(Value::as_str) else {
        return Some("it declares no type".into());
    };
    let Some(declared) = canonical(declared) else {
        return Some("its declared type is not one this check recognises".into());
    };
    if !allowed.iter().any(|a| canonical(a) == Some(declared)) {
        return Some(format!("its type {declared} is not on the allowed list"));
    }
    let Some(data) = data.and_then(Value::as_str) else {
        return Some("it has no data".into());
    };
    // Decoded, base64 is three bytes per four characters: refuse what cannot fit
    // before decoding it.
    let most = (data.len() / 4).saturating_mul(3).saturating_add(3);
    if data.len() > 4 && most.saturating_sub(3) > max_bytes as usize {
        return Some(format!("it holds more than {max_bytes} bytes"));
    }
    let Ok(bytes) = BASE64.decode(data) else {
        return Some("its data is not valid base64".into());
    };
    if bytes.len() > max_bytes as usize {
        return Some(format!("it holds more than {max_bytes} bytes"));
    }
    match sniff(&bytes) {
        Some(found) if found == declared => None,
        Some(found) => Some(format!("it says {declared}, but its bytes are {found}")),
        None => Some(format!("it says {declared}, but its bytes are not")),
    }
}

/// The usual name of a declared type (parameters, case and aliases set aside), if it
/// is one this check recognises.
#[must_use]
pub fn canonical(declared: &str) -> Option<&'static str> {
    let essence = declared.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    let name = match essence.as_str() {
        "image/jpg" | "image/pjpeg" => "image/jpeg",
        "image/x-ms-bmp" => "image/bmp",
        "audio/x-wav" | "audio/wave" | "audio/vnd.wave" => "audio/wav",
        "audio/mp3" => "audio/mpeg",
        "audio/x-flac" => "audio/flac",
        "application/ogg" => "audio/ogg",
        other => other,
    };
    RECOGNISED.iter().copied().find(|known| *known == name)
}

/// What `bytes` are, by their signature.
#[must_use]
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    let starts = |prefix: &[u8]| bytes.starts_with(prefix);
    let at = |offset: usize, tag: &[u8]| bytes.get(offset..offset + tag.len()) == Some(tag);
    if starts(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if starts(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        Some("image/gif")
    } else if starts(b"RIFF") && at(8, b"WEBP") {
        Some("image/webp")
    } else if starts(b"RIFF") && at(8, b"WAVE") {
        Some("audio/wav")
    } else if starts(b"BM") && bytes.len() >= 14 {
        Some("image/bmp")
    } else if starts(b"ID3") || (bytes.len() >= 2 && bytes[0] == 0xff && bytes[1] & 0xe0 == 0xe0) {
        Some("audio/mpeg")
    } else if starts(b"OggS") {
        Some("audio/ogg")
    } else if starts(b"fLaC") {
        Some("audio/flac")
    } else if starts(b"%PDF-") {
        Some("application/pdf")
    } else {
        None
    }
}

#[cfg(target_arch = "wasm32")]
// The bindings wit-bindgen generates export the component's functions by name, which is
// unsafe code by the compiler's definition; nothing else here is.
#[allow(unsafe_code)]
mod component {
    wit_bindgen::generate!({ world: "media-check", path: "../../wit" });

    use exports::wasmgate::sandbox::media::{Guest, MediaRequest, MediaVerdict};

    struct MediaCheck;

    impl Guest for MediaCheck {
        fn check(input: MediaRequest) -> Result<Vec<MediaVerdict>, String> {
            let verdicts = super::check(&input.content, &input.allowed_types, input.max_bytes)?;
            Ok(verdicts.into_iter().map(|(index, refusal)| MediaVerdict { index, refusal }).collect())
        }
    }

    export!(MediaCheck);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const PNG: &str =
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
    const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

    fn allowed() -> Vec<String> {
        ["image/png", "audio/wav"].iter().map(|s| (*s).to_owned()).collect()
    }

    fn one(block: serde_json::Value, max: u32) -> Option<String> {
        let verdicts = check(&serde_json::json!([block]).to_string(), &allowed(), max).unwrap();
        assert_eq!(verdicts.len(), 1);
        verdicts[0].1.clone()
    }

    #[test]
    fn real_images_and_sounds_of_allowed_types_pass() {
        assert_eq!(one(serde_json::json!({"type": "image", "mimeType": "image/png", "data": PNG}), 1024), None);
        assert_eq!(one(serde_json::json!({"type": "audio", "mimeType": "audio/x-wav", "data": WAV}), 1024), None);
        let blob =
            serde_json::json!({"type": "resource", "resource": {"uri": "x:1", "mimeType": "image/png", "blob": PNG}});
        assert_eq!(one(blob, 1024), None);
    }

    #[test]
    fn a_block_whose_bytes_are_not_its_type_is_refused() {
        let lie = one(serde_json::json!({"type": "image", "mimeType": "image/png", "data": WAV}), 1024);
        assert_eq!(lie.as_deref(), Some("it says image/png, but its bytes are audio/wav"));
        let text = BASE64.encode("<script>alert(1)</script>");
        let script = one(serde_json::json!({"type": "image", "mimeType": "image/png", "data": text}), 1024);
        assert_eq!(script.as_deref(), Some("it says image/png, but its bytes are not"));
    }

    #[test]
    fn bad_base64_size_type_and_missing_fields_are_refused() {
        let bad = one(serde_json::json!({"type": "image", "mimeType": "image/png", "data": "!!!not base64"}), 1024);
        assert_eq!(bad.as_deref(), Some("its data is not valid base64"));
        let big = one(serde_json::json!({"type": "image", "mimeType": "image/png", "data": PNG}), 16);
        assert_eq!(big.as_deref(), Some("it holds more than 16 bytes"));
        let gif = one(serde_json::json!({"type": "image", "mimeType": "image/gif", "data": PNG}), 1024);
        assert_eq!(gif.as_deref(), Some("its type image/gif is not on the allowed list"));
        let odd = one(serde_json::json!({"type": "image", "mimeType": "text/html", "data": PNG}), 1024);
        assert_eq!(odd.as_deref(), Some("its declared type is not one this check recognises"));
        assert_eq!(
            one(serde_json::json!({"type": "image", "data": PNG}), 1024).as_deref(),
            Some("it declares no type")
        );
        let no_data = one(serde_json::json!({"type": "audio", "mimeType": "audio/wav"}), 1024);
        assert_eq!(no_data.as_deref(), Some("it has no data"));
        let number = one(serde_json::json!({"type": "audio", "mimeType": "audio/wav", "data": 7}), 1024);
        assert_eq!(number.as_deref(), Some("it has no data"));
    }

    #[test]
    fn only_binary_blocks_get_a_verdict_and_a_non_array_is_an_error() {
        let content = serde_json::json!([
            {"type": "text", "text": "hi"},
            {"type": "resource", "resource": {"uri": "x:1", "text": "t"}},
            {"type": "image", "mimeType": "image/png", "data": PNG},
        ]);
        assert_eq!(check(&content.to_string(), &allowed(), 1024).unwrap(), vec![(2, None)]);
        assert!(check("{}", &allowed(), 1024).is_err());
        assert!(check("[", &allowed(), 1024).is_err());
    }

    #[test]
    fn aliases_and_parameters_name_the_same_type() {
        assert_eq!(canonical("Image/JPG; q=1"), Some("image/jpeg"));
        assert_eq!(canonical("audio/mp3"), Some("audio/mpeg"));
        assert_eq!(canonical("application/octet-stream"), None);
    }
}
