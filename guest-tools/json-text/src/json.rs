//! Rendering JSON text straight from the parser, without building a tree.
//!
//! A `serde_json::Value` for a 1 MB result is hundreds of thousands of small
//! allocations, and building and freeing them costs more than the rendering
//! itself. Here serde's visitor callbacks write each key and scalar into the
//! output as the parser meets it, so memory grows with the output, not the
//! input, and rendering stops as soon as the output budget is spent.
//!
//! The layout:
//! - an object is one `key: value` line per entry; a nested, non-empty value
//!   goes on the lines below its key, indented;
//! - an array is one `- item` line per element; an object element's first key
//!   shares the bullet's line and its other keys align under it;
//! - empty objects and arrays read `(empty)` and `(none)`.

use alloc::string::{String, ToString};
use core::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::out::Out;

/// Why rendering stopped early.
#[derive(Debug)]
pub(crate) enum JsonError {
    /// Not valid JSON; the string is the parser's message.
    Invalid(String),
}

/// Renders the JSON text `json` into `out` as top-level lines at `indent`.
pub(crate) fn render_json(out: &mut Out, indent: usize, json: &str) -> Result<(), JsonError> {
    let mut parser = serde_json::Deserializer::from_str(json);
    let rendered = Node { out: &mut *out, place: Place::Line { indent } }.deserialize(&mut parser);
    match rendered.and_then(|()| parser.end()) {
        Ok(()) => Ok(()),
        // The budget ran out: the text so far is the answer; the rest is not read.
        Err(_) if out.full() => Ok(()),
        Err(e) => Err(JsonError::Invalid(e.to_string())),
    }
}

/// Where a value is being written.
#[derive(Debug, Clone, Copy)]
enum Place {
    /// On lines of its own at `indent` (top level, or below a key or bullet).
    Line { indent: usize },
    /// After `key` on the current line; nested content goes at `indent`.
    Entry { indent: usize },
    /// After `- ` on a bullet line at `indent`.
    Item { indent: usize },
}

/// The seed/visitor that renders one JSON value at a place.
struct Node<'o> {
    out: &'o mut Out,
    place: Place,
}

/// Stops the parser once the output is full.
fn stop_if_full<E: de::Error>(out: &Out) -> Result<(), E> {
    if out.full() { Err(E::custom("output budget reached")) } else { Ok(()) }
}

impl Node<'_> {
    fn scalar(self, write: impl FnOnce(&mut Out, usize)) {
        match self.place {
            Place::Line { indent } => {
                self.out.start_line(indent);
                write(self.out, indent + 2);
            }
            Place::Entry { indent } => {
                self.out.push(": ");
                write(self.out, indent);
            }
            Place::Item { indent } => write(self.out, indent + 2),
        }
    }

    fn empty(self, marker: &str) {
        self.scalar(|out, _| out.push(marker));
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.scalar(|out, _| out.push(if v { "true" } else { "false" }));
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.scalar(|out, _| {
            if v < 0 {
                out.push("-");
            }
            out.integer(v.unsigned_abs());
        });
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.scalar(|out, _| out.integer(v));
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        // serde_json's own formatting, so 1.0 stays "1.0".
        match serde_json::Number::from_f64(v) {
            Some(n) => self.scalar(|out, _| out.display(n)),
            None => self.scalar(|out, _| out.push("null")),
        }
        Ok(())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.scalar(|out, continuation| out.continue_text(continuation, v));
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.scalar(|out, _| out.push("null"));
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Node { out, place } = self;
        let mut first = true;
        // Each key is written as it is read (no allocation), after the line
        // break or opening its position needs.
        loop {
            let key_line = match place {
                Place::Line { indent } => Some(indent),
                Place::Entry { indent } => Some(indent),
                Place::Item { indent } => (!first).then_some(indent + 2),
            };
            let opening = if first && matches!(place, Place::Entry { .. }) { ":" } else { "" };
            let seed = Key { out: &mut *out, opening, line: key_line };
            if map.next_key_seed(seed)?.is_none() {
                break;
            }
            let value_indent = match place {
                Place::Line { indent } | Place::Entry { indent } => indent + 2,
                Place::Item { indent } => indent + 4,
            };
            map.next_value_seed(Node { out: &mut *out, place: Place::Entry { indent: value_indent } })?;
            stop_if_full(out)?;
            first = false;
        }
        if first {
            Node { out, place }.empty("(empty)");
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Node { out, place } = self;
        let (bullet_indent, opening) = match place {
            Place::Line { indent } => (indent, ""),
            Place::Entry { indent } => (indent, ":"),
            Place::Item { indent } => (indent + 2, "(list)"),
        };
        let mut first = true;
        loop {
            let seed = Bullet { out: &mut *out, opening: if first { opening } else { "" }, indent: bullet_indent };
            if seq.next_element_seed(seed)?.is_none() {
                break;
            }
            stop_if_full(out)?;
            first = false;
        }
        if first {
            Node { out, place }.empty("(none)");
        }
        Ok(())
    }
}

/// Writes an object key: the opening (first key only), the line start, the key.
struct Key<'o> {
    out: &'o mut Out,
    opening: &'static str,
    line: Option<usize>,
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<(), E> {
        self.out.push(self.opening);
        if let Some(indent) = self.line {
            self.out.start_line(indent);
        }
        self.out.clean(key);
        Ok(())
    }
}

/// Writes one array element as a `- ` bullet line at `indent`.
struct Bullet<'o> {
    out: &'o mut Out,
    opening: &'static str,
    indent: usize,
}

impl<'de> DeserializeSeed<'de> for Bullet<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.out.push(self.opening);
        self.out.start_line(self.indent);
        self.out.push("- ");
        Node { out: self.out, place: Place::Item { indent: self.indent } }.deserialize(deserializer)
    }
}
