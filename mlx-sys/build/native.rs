//! Which of thinkwire's native sources (`mlx-sys/native/`) differ from the
//! copies `scripts/setup-mlx` compiled into libmlxc (`$prefix/native/`).
//!
//! The folder is the list: setup compiles every `.cpp` under it and keeps a
//! copy of every file, so a file added, edited or removed here is named by
//! the next build instead of linking silently against the old library.
//! Shared by `build.rs` and `tests/native_sources.rs`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Every file under `dir`, as paths relative to it with `/` separators,
/// sorted: the same list `scripts/setup-mlx` builds from (`find -type f`).
pub fn list(dir: &Path) -> io::Result<Vec<String>> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> io::Result<()> {
        for entry in fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                walk(root, &path, out)?;
            } else if let Ok(rel) = path.strip_prefix(root) {
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push(parts.join("/"));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    out.sort();
    Ok(out)
}

/// How one source differs from what was built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stale {
    /// In the sources, not in the built copy (added since the build).
    Added(String),
    /// In both, with other contents (edited since the build).
    Changed(String),
    /// In the built copy only (removed or renamed since the build).
    Removed(String),
}

impl std::fmt::Display for Stale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stale::Added(p) => write!(f, "native/{p} is new since libmlxc was built"),
            Stale::Changed(p) => write!(f, "native/{p} changed since libmlxc was built"),
            Stale::Removed(p) => write!(f, "native/{p} was removed since libmlxc was built"),
        }
    }
}

/// The sources in `ours` that differ from the built copies in `built`
/// (compared by contents, so a touch without an edit is not stale). A
/// missing `built` folder makes every source `Added`.
pub fn stale(ours: &Path, built: &Path) -> io::Result<Vec<Stale>> {
    let sources = list(ours)?;
    let copies = if built.is_dir() {
        list(built)?
    } else {
        Vec::new()
    };
    let mut out = Vec::new();
    for rel in &sources {
        if !copies.contains(rel) {
            out.push(Stale::Added(rel.clone()));
        } else if fs::read(ours.join(rel))? != fs::read(built.join(rel))? {
            out.push(Stale::Changed(rel.clone()));
        }
    }
    for rel in copies.iter().filter(|c| !sources.contains(c)) {
        out.push(Stale::Removed(rel.clone()));
    }
    Ok(out)
}

/// The folder of thinkwire's native sources inside the mlx-sys crate.
pub fn sources_dir(manifest: &Path) -> PathBuf {
    manifest.join("native")
}
