//! Where the test looks afterwards: the files written under a folder since
//! the test began, read up to a cap.

use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Files under `dir` (recursively, not following links) modified at or
/// after `since`, skipping folders named in `skip`.
pub fn files_written_since(dir: &Path, since: SystemTime, skip: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            let name = entry.file_name();
            if skip.iter().any(|s| name == *s) {
                continue;
            }
            files_written_since(&path, since, skip, out);
        } else if kind.is_file()
            && entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= since)
        {
            out.push(path);
        }
    }
}

/// Reads up to 64 MiB of `path`; `None` if it cannot be read (another
/// user's file, or gone already).
pub fn read_capped(path: &Path) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    fs::File::open(path)
        .ok()?
        .take(64 << 20)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}
