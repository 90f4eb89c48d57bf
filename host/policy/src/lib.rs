//! The trust boundary's pure parts (placeholder).
