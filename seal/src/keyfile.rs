//! Loading a key ring from a key file or an environment variable.
//!
//! Format (the same for both):
//!
//! ```text
//! # thinkwire seal keys — the first key is active, the others only open.
//! tw-key-v1:<43 base64url characters>   # active since 2026-05
//! tw-key-v1:<43 base64url characters>   # previous, retire after 2026-06
//! ```
//!
//! Blank lines are skipped; `#` starts a comment (base64url never contains
//! `#`). A line may hold several keys separated by whitespace or commas,
//! which lets an environment variable hold a list on one line. Errors name
//! the line (and the key's position on it), never its content.

use std::io::Read as _;
use std::path::Path;

use zeroize::Zeroizing;

use crate::error::{KeyListError, KeySourceError, Location};
use crate::key::Key;
use crate::keyring::KeyRing;

/// Largest key file read (64 KiB: about a thousand keys). Guards against
/// pointing the server at the wrong, huge file.
pub const MAX_KEY_FILE_LEN: u64 = 64 * 1024;

impl KeyRing {
    /// Parses a key list (see the module docs for the format).
    ///
    /// # Errors
    /// [`KeyListError`] naming the line of a bad or duplicate key, or
    /// [`KeyListError::Empty`].
    pub fn from_key_list(text: &str) -> Result<Self, KeyListError> {
        let mut ring: Option<KeyRing> = None;
        for (line_no, line) in text.lines().enumerate() {
            let content = line.split('#').next().unwrap_or("");
            let items = content
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|s| !s.is_empty());
            for (item_no, item) in items.enumerate() {
                let location = Location {
                    line: line_no + 1,
                    item: item_no + 1,
                };
                let key = Key::from_text(item)
                    .map_err(|source| KeyListError::BadKey { location, source })?;
                match &mut ring {
                    None => ring = Some(KeyRing::new(key)),
                    Some(r) => r
                        .add_previous(key)
                        .map_err(|id| KeyListError::Duplicate { location, id })?,
                }
            }
        }
        let ring = ring.ok_or(KeyListError::Empty)?;
        tracing::debug!(
            active = %ring.active_key_id(),
            keys = ring.key_ids().len(),
            "seal: key list parsed"
        );
        Ok(ring)
    }

    /// Loads the ring from the environment variable `var` (same format as a
    /// key file; several keys may be separated by commas).
    ///
    /// # Errors
    /// [`KeySourceError::EnvMissing`], [`KeySourceError::EnvNotUnicode`], or
    /// [`KeySourceError::Parse`] with origin `$VAR`.
    pub fn from_env(var: &str) -> Result<Self, KeySourceError> {
        let value = Zeroizing::new(std::env::var(var).map_err(|e| match e {
            std::env::VarError::NotPresent => KeySourceError::EnvMissing {
                var: var.to_owned(),
            },
            std::env::VarError::NotUnicode(_) => KeySourceError::EnvNotUnicode {
                var: var.to_owned(),
            },
        })?);
        Self::from_key_list(&value).map_err(|source| KeySourceError::Parse {
            origin: format!("${var}"),
            source,
        })
    }

    /// Loads the ring from a key file.
    ///
    /// On Unix the file must not be accessible to group or others (no bit of
    /// mode `0o077`, as OpenSSH demands of private keys): a readable file
    /// leaks the keys, and a writable one lets someone add a key they know
    /// and forge reasoning the server would trust. The mode is read from the
    /// opened file, so it is the file actually read that is checked.
    ///
    /// # Errors
    /// [`KeySourceError::Io`], [`KeySourceError::Permissions`],
    /// [`KeySourceError::TooLarge`], or [`KeySourceError::Parse`] with the
    /// path as origin.
    pub fn from_key_file(path: impl AsRef<Path>) -> Result<Self, KeySourceError> {
        let path = path.as_ref();
        let io_err = |source| KeySourceError::Io {
            path: path.to_owned(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io_err)?;
        let meta = file.metadata().map_err(io_err)?;
        check_permissions(path, &meta)?;
        if meta.len() > MAX_KEY_FILE_LEN {
            return Err(KeySourceError::TooLarge {
                path: path.to_owned(),
                max: MAX_KEY_FILE_LEN,
            });
        }
        let mut text = Zeroizing::new(String::new());
        // `take` bounds the read even if the file grows after the check.
        let read = file
            .take(MAX_KEY_FILE_LEN + 1)
            .read_to_string(&mut text)
            .map_err(io_err)?;
        if u64::try_from(read).map_or(true, |n| n > MAX_KEY_FILE_LEN) {
            return Err(KeySourceError::TooLarge {
                path: path.to_owned(),
                max: MAX_KEY_FILE_LEN,
            });
        }
        Self::from_key_list(&text).map_err(|source| KeySourceError::Parse {
            origin: path.display().to_string(),
            source,
        })
    }
}

#[cfg(unix)]
fn check_permissions(path: &Path, meta: &std::fs::Metadata) -> Result<(), KeySourceError> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(KeySourceError::Permissions {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

/// Other platforms have no Unix mode bits; their ACLs are the operator's
/// responsibility.
#[cfg(not(unix))]
fn check_permissions(_path: &Path, _meta: &std::fs::Metadata) -> Result<(), KeySourceError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::KeyError;

    fn key_text() -> String {
        Key::generate().unwrap().to_text().to_string()
    }

    #[test]
    fn parses_comments_blank_lines_and_lists() {
        let (a, b, c) = (key_text(), key_text(), key_text());
        let text =
            format!("# header comment\n\n   {a}   # the active one\r\n\t\n#{c}\n{b} , {c},\n");
        let ring = KeyRing::from_key_list(&text).unwrap();
        let ids: Vec<_> = ring.key_ids().collect();
        let want: Vec<_> = [&a, &b, &c]
            .iter()
            .map(|t| Key::from_text(t).unwrap().id())
            .collect();
        assert_eq!(ids, want);
        assert_eq!(ring.active_key_id(), want[0]);
        // No trailing newline, single key.
        assert_eq!(KeyRing::from_key_list(&a).unwrap().key_ids().len(), 1);
    }

    #[test]
    fn errors_name_the_line_not_the_content() {
        let a = key_text();
        let secretish = "tw-key-v1:NOT-A-REAL-KEY-BUT-SECRET-LOOKING";
        let text = format!("# keys\n{a}\n\n{secretish}\n");
        let err = KeyRing::from_key_list(&text).unwrap_err();
        assert_eq!(
            err,
            KeyListError::BadKey {
                location: Location { line: 4, item: 1 },
                source: KeyError::Base64,
            }
        );
        let msg = err.to_string();
        assert!(msg.starts_with("line 4:"), "{msg}");
        assert!(!msg.contains("SECRET"), "{msg}");

        let err = KeyRing::from_key_list(&format!("{a}, hunter2")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 1, key 2: not a thinkwire key (expected the prefix `tw-key-v1:`)"
        );
        assert!(!err.to_string().contains("hunter2"));

        let err = KeyRing::from_key_list(&format!("{a}\n{a}\n")).unwrap_err();
        assert!(matches!(
            err,
            KeyListError::Duplicate {
                location: Location { line: 2, item: 1 },
                ..
            }
        ));
        assert_eq!(KeyRing::from_key_list("").unwrap_err(), KeyListError::Empty);
        assert_eq!(
            KeyRing::from_key_list("# only\n\n  \n").unwrap_err(),
            KeyListError::Empty
        );
    }

    #[cfg(unix)]
    #[test]
    fn key_file_permissions() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seal.keys");
        let a = key_text();
        std::fs::write(&path, format!("# test\n{a}\n")).unwrap();

        for mode in [0o644, 0o640, 0o604, 0o620, 0o602, 0o660, 0o666, 0o610] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = KeyRing::from_key_file(&path).unwrap_err();
            match &err {
                KeySourceError::Permissions { path: p, mode: m } => {
                    assert_eq!(p, &path);
                    assert_eq!(*m, mode);
                }
                other => panic!("mode {mode:o}: {other:?}"),
            }
            let msg = err.to_string();
            assert!(msg.contains(&format!("{mode:04o}")), "{msg}");
            assert!(msg.contains("chmod 600"), "{msg}");
            assert!(msg.contains(&path.display().to_string()), "{msg}");
            assert!(!msg.contains(&a[10..]), "{msg}");
        }
        for mode in [0o600, 0o400] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let ring = KeyRing::from_key_file(&path).unwrap();
            assert_eq!(ring.active_key_id(), Key::from_text(&a).unwrap().id());
        }
    }

    #[test]
    fn key_file_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("absent.keys");
        assert!(matches!(
            KeyRing::from_key_file(&missing),
            Err(KeySourceError::Io { .. })
        ));

        let bad = dir.path().join("bad.keys");
        std::fs::write(&bad, format!("{}\n\ngarbage\n", key_text())).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let err = KeyRing::from_key_file(&bad).unwrap_err();
        assert!(matches!(
            &err,
            KeySourceError::Parse {
                source: KeyListError::BadKey {
                    location: Location { line: 3, .. },
                    ..
                },
                ..
            }
        ));
        let msg = err.to_string();
        assert!(msg.contains("bad.keys: line 3:"), "{msg}");
        assert!(!msg.contains("garbage"), "{msg}");

        let big = dir.path().join("big.keys");
        let mut text = String::new();
        while text.len() as u64 <= MAX_KEY_FILE_LEN {
            text.push_str("# padding padding padding padding padding padding padding\n");
        }
        std::fs::write(&big, text).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&big, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        assert!(matches!(
            KeyRing::from_key_file(&big),
            Err(KeySourceError::TooLarge { .. })
        ));
    }

    #[test]
    fn env_missing() {
        let var = "THINKWIRE_SEAL_TEST_SURELY_UNSET_7f3a";
        let err = KeyRing::from_env(var).unwrap_err();
        assert!(matches!(&err, KeySourceError::EnvMissing { var: v } if v == var));
    }

    /// Setting variables in-process needs `unsafe` (edition 2024), which the
    /// workspace forbids; so this test re-runs the test binary with the
    /// variable set, and the child runs `env_child`.
    #[test]
    fn env_through_a_child_process() {
        let (a, b) = (key_text(), key_text());
        let exe = std::env::current_exe().unwrap();
        let run = |value: &str| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "keyfile::tests::env_child",
                    "--ignored",
                    "--nocapture",
                ])
                .env(CHILD_VAR, value)
                .env(
                    "THINKWIRE_SEAL_TEST_WANT",
                    format!(
                        "{},{}",
                        Key::from_text(&a).unwrap().id(),
                        Key::from_text(&b).unwrap().id()
                    ),
                )
                .output()
                .unwrap()
        };
        let out = run(&format!(" {a},{b}\n"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        assert!(stdout.contains("1 passed"), "child test did run: {stdout}");
        let out = run(&format!("{a},oops"));
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("$THINKWIRE_SEAL_TEST_KEYS: line 1, key 2:"),
            "{stderr}"
        );
    }

    const CHILD_VAR: &str = "THINKWIRE_SEAL_TEST_KEYS";

    #[test]
    #[ignore = "run by env_through_a_child_process with the variable set"]
    fn env_child() {
        let want = std::env::var("THINKWIRE_SEAL_TEST_WANT").unwrap();
        match KeyRing::from_env(CHILD_VAR) {
            Ok(ring) => {
                let got: Vec<String> = ring.key_ids().map(|id| id.to_string()).collect();
                assert_eq!(got.join(","), want);
            }
            Err(e) => panic!("{e}"),
        }
    }
}
