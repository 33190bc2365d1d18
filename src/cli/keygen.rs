//! `thinkwire keygen`: a sealing key for `--key-file` or `THINKWIRE_KEYS`.

use anyhow::{Context, Result};
use thinkwire_seal::Key;

/// Runs `thinkwire keygen`: prints a new key on stdout.
pub fn keygen() -> Result<()> {
    let key = Key::generate().context("generating a key")?;
    println!("{}", key.to_text().as_str());
    Ok(())
}
