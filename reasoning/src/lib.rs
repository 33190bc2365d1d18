//! Streaming reasoning splitter.
