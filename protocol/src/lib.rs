//! AG-UI 1.0 wire types.
