//! The audit log (placeholder).
