//! The `thinkwire` command line.
fn main() {}
