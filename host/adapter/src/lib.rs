//! MCP tools as plain Tool values (placeholder).
