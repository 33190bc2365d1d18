//! The build script's staleness check over `native/`: an edited, added or
//! removed source is named, so a build never links silently against a
//! libmlxc compiled from other sources.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "../build/native.rs"]
mod native;

use std::fs;
use std::path::{Path, PathBuf};

use native::Stale;

/// A fresh folder under the system's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "thinkwire-native-{name}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    for rel in native::list(from).unwrap() {
        let dest = to.join(&rel);
        fs::create_dir_all(dest.parent().unwrap()).unwrap();
        fs::copy(from.join(&rel), dest).unwrap();
    }
}

/// The real sources, and a "built" copy of them as setup leaves it.
fn sources_and_built(name: &str) -> (PathBuf, PathBuf) {
    let root = scratch(name);
    let (ours, built) = (root.join("ours"), root.join("built"));
    let real = native::sources_dir(Path::new(env!("CARGO_MANIFEST_DIR")));
    copy_tree(&real, &ours);
    copy_tree(&real, &built);
    (ours, built)
}

#[test]
fn every_native_file_is_listed() {
    let real = native::sources_dir(Path::new(env!("CARGO_MANIFEST_DIR")));
    let listed = native::list(&real).unwrap();
    assert!(listed.iter().any(|f| f == "thinkwire.h"));
    let cpp = listed.iter().filter(|f| f.ends_with(".cpp")).count();
    let on_disk = fs::read_dir(&real)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "cpp")
        })
        .count();
    assert!(cpp >= on_disk && cpp > 0, "{listed:?}");
}

#[test]
fn identical_copies_are_current_even_when_touched() {
    let (ours, built) = sources_and_built("same");
    // A rewrite with the same bytes (a touch) is not an edit.
    let header = ours.join("thinkwire.h");
    fs::write(&header, fs::read(&header).unwrap()).unwrap();
    assert_eq!(native::stale(&ours, &built).unwrap(), vec![]);
}

#[test]
fn an_edit_to_any_source_is_named() {
    let (ours, built) = sources_and_built("edit");
    for rel in native::list(&ours).unwrap() {
        let path = ours.join(&rel);
        let before = fs::read(&path).unwrap();
        let mut edited = before.clone();
        edited.extend_from_slice(b"\n// edited\n");
        fs::write(&path, &edited).unwrap();
        assert_eq!(
            native::stale(&ours, &built).unwrap(),
            vec![Stale::Changed(rel.clone())]
        );
        fs::write(&path, before).unwrap();
    }
    assert_eq!(native::stale(&ours, &built).unwrap(), vec![]);
}

#[test]
fn added_and_removed_sources_are_named() {
    let (ours, built) = sources_and_built("add-remove");
    fs::create_dir_all(ours.join("kernels")).unwrap();
    fs::write(ours.join("kernels/new_kernel.cpp"), b"// new\n").unwrap();
    fs::remove_file(ours.join("thinkwire.h")).unwrap();
    let stale = native::stale(&ours, &built).unwrap();
    assert_eq!(
        stale,
        vec![
            Stale::Added("kernels/new_kernel.cpp".into()),
            Stale::Removed("thinkwire.h".into()),
        ]
    );
    let message = stale[0].to_string();
    assert!(
        message.contains("native/kernels/new_kernel.cpp"),
        "{message}"
    );
}

#[test]
fn nothing_built_yet_names_every_source() {
    let (ours, built) = sources_and_built("unbuilt");
    fs::remove_dir_all(&built).unwrap();
    let stale = native::stale(&ours, &built).unwrap();
    assert_eq!(stale.len(), native::list(&ours).unwrap().len());
    assert!(stale.iter().all(|s| matches!(s, Stale::Added(_))));
}
