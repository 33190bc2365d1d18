//! Sealing reasoning.
