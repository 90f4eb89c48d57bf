//! What an agent loop sees (placeholder: filled in by the adapter work).
