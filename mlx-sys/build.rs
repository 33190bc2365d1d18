//! Links the mlx-c library that `scripts/setup-mlx` built against an MLX
//! wheel, and generates the Rust bindings from its (patched) headers.
//!
//! Nothing is compiled here: setup builds `libmlxc` once per machine, with
//! its absolute path as install name and a runpath to `libmlx`, so every
//! binary that links it finds MLX without an rpath of its own.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::exit;

#[path = "build/native.rs"]
mod native;

/// The MLX wheel version `scripts/setup-mlx` installs (keep in step).
const MLX_VERSION: &str = "0.32.4";
/// The registry crate whose mlx-c source setup patches and builds.
const MLX_C_CRATE_VERSION: &str = "0.7.0";

fn fail(lines: &[String]) -> ! {
    // cargo shows a failing build script's stderr; a panic would bury the
    // advice under a backtrace hint.
    eprintln!();
    for line in lines {
        eprintln!("error: {line}");
    }
    eprintln!();
    exit(1);
}

fn home_dir() -> Option<PathBuf> {
    env::var_os("THINKWIRE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/thinkwire")))
}

/// `default` unless only a CUDA build is installed under the home folder
/// (what `scripts/setup` leaves on a machine with an NVIDIA GPU).
fn installed_variant(default: &str) -> String {
    let installed = |variant: &str| {
        home_dir().is_some_and(|home| {
            home.join("mlx")
                .join(format!("{variant}-{MLX_VERSION}"))
                .join("thinkwire-mlx.txt")
                .is_file()
        })
    };
    if installed(default) {
        return default.into();
    }
    ["cuda13", "cuda12"]
        .into_iter()
        .find(|v| installed(v))
        .unwrap_or(default)
        .into()
}

fn main() {
    for var in [
        "THINKWIRE_HOME",
        "THINKWIRE_MLX_DIR",
        "THINKWIRE_MLX_VARIANT",
        "HOME",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let patch = manifest
        .join("patches")
        .join(format!("mlx-c-{MLX_C_CRATE_VERSION}.patch"));
    println!("cargo:rerun-if-changed={}", patch.display());

    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let (default_variant, dylib) = if target_os == "macos" {
        ("metal", "dylib")
    } else {
        ("cpu", "so")
    };
    // Unset: the platform's default, or the CUDA build `scripts/setup`
    // installs instead of it where `nvidia-smi` lists a GPU.
    let variant = env::var("THINKWIRE_MLX_VARIANT")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| installed_variant(default_variant));
    let prefix = match env::var_os("THINKWIRE_MLX_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => match home_dir() {
            Some(home) => home.join("mlx").join(format!("{variant}-{MLX_VERSION}")),
            None => fail(&["neither THINKWIRE_HOME nor HOME is set; cannot locate MLX".into()]),
        },
    };

    let stamp = prefix.join("thinkwire-mlx.txt");
    let libmlxc = prefix.join("lib").join(format!("libmlxc.{dylib}"));
    let headers_root = prefix.join("mlx-c");
    println!("cargo:rerun-if-changed={}", stamp.display());
    println!("cargo:rerun-if-changed={}", libmlxc.display());

    if !libmlxc.is_file() || !stamp.is_file() {
        fail(&[
            format!("MLX ({variant} variant) is not installed: {} is missing.", libmlxc.display()),
            "Run `scripts/setup` (or `scripts/setup-mlx`) from the repository root first;".into(),
            "it installs the MLX wheel and builds mlx-c for this machine.".into(),
            "THINKWIRE_MLX_VARIANT (cpu, cuda13, cuda12, metal) and THINKWIRE_MLX_DIR choose another build."
                .into(),
        ]);
    }
    let have = fs::read_to_string(&stamp).unwrap_or_default();
    let stamp_ok = [
        format!("version={MLX_VERSION}"),
        format!("variant={variant}"),
        format!("mlx-c={MLX_C_CRATE_VERSION}"),
    ]
    .iter()
    .all(|want| have.lines().any(|line| line == want));
    let applied = fs::read(prefix.join("mlx-c.patch")).ok();
    // thinkwire's C additions (native/), compiled into libmlxc by setup:
    // every file of the folder, so any edit, addition or removal is named.
    let ours = native::sources_dir(&manifest);
    println!("cargo:rerun-if-changed={}", ours.display());
    let stale = match native::stale(&ours, &prefix.join("native")) {
        Ok(stale) => stale,
        Err(e) => fail(&[format!(
            "cannot compare {} with the installed copy: {e}",
            ours.display()
        )]),
    };
    if !stamp_ok || applied != fs::read(&patch).ok() || !stale.is_empty() {
        let mut lines = vec![
            format!("the MLX install in {} is out of date", prefix.display()),
            format!(
                "(wanted MLX {MLX_VERSION}, variant {variant}, the current {} and mlx-sys/native).",
                patch.display()
            ),
        ];
        lines.extend(stale.iter().map(ToString::to_string));
        lines.push("Run `scripts/setup-mlx` again.".into());
        fail(&lines);
    }

    println!(
        "cargo:rustc-link-search=native={}",
        libmlxc
            .parent()
            .map_or_else(|| prefix.clone(), Path::to_path_buf)
            .display()
    );
    println!("cargo:rustc-link-lib=dylib=mlxc");
    // For dependents' build scripts (DEP_MLX_*): where MLX lives.
    println!("cargo::metadata=prefix={}", prefix.display());
    println!("cargo::metadata=version={MLX_VERSION}");
    println!("cargo::metadata=variant={variant}");

    let header_dir = headers_root.join("mlx").join("c");
    let mut headers: Vec<PathBuf> = match fs::read_dir(&header_dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "h"))
            .collect(),
        Err(e) => fail(&[format!(
            "cannot read mlx-c headers in {}: {e}",
            header_dir.display()
        )]),
    };
    headers.sort();
    let mut builder = bindgen::Builder::default()
        // The binding shapes mlx-rs 0.33 was written against (the registry
        // mlx-sys 0.7.0 uses the same target).
        .rust_target(bindgen::RustTarget::stable(73, 0).unwrap_or_default())
        .clang_arg(format!("-I{}", headers_root.display()))
        // Declared by libc with other integer widths on some targets.
        .blocklist_function("malloc")
        .blocklist_function("realloc");
    for header in &headers {
        builder = builder.header(header.to_string_lossy());
    }
    let bindings = match builder.generate() {
        Ok(b) => b,
        Err(e) => fail(&[
            format!(
                "bindgen failed on the mlx-c headers in {}: {e}",
                header_dir.display()
            ),
            "It needs libclang (Debian: apt-get install libclang-dev).".into(),
        ]),
    };
    let out = PathBuf::from(env::var("OUT_DIR").expect("set by cargo")).join("bindings.rs");
    if let Err(e) = bindings.write_to_file(&out) {
        fail(&[format!("cannot write {}: {e}", out.display())]);
    }
}
