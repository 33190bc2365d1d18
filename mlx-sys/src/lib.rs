//! Raw bindings to mlx-c, built by `scripts/setup-mlx` against a prebuilt
//! MLX wheel. This crate replaces the registry crate `mlx-sys` 0.7.0
//! (through `[patch.crates-io]`) so that `mlx-rs` builds on Linux; see
//! `README.md` for the variants (CPU, CUDA, Metal) and how they are chosen.
//!
//! Doctests link and load MLX like any binary (no rpath needed):
//!
//! ```
//! let mut s = unsafe { mlx_sys::mlx_string_new() };
//! assert_eq!(unsafe { mlx_sys::mlx_version(&mut s) }, 0);
//! let v = unsafe { std::ffi::CStr::from_ptr(mlx_sys::mlx_string_data(s)) };
//! assert!(v.to_string_lossy().starts_with("0.32"));
//! unsafe { mlx_sys::mlx_string_free(s) };
//! ```

#![allow(non_upper_case_globals)]
#![allow(non_camel_case_types)]
#![allow(non_snake_case)]
#![allow(clippy::all)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));

/// `mlx-rs` seeds its random generator with Darwin's
/// `mach_approximate_time()`; other systems get a monotonic-clock stand-in
/// in nanoseconds (only its variation matters).
#[cfg(not(target_vendor = "apple"))]
#[no_mangle]
pub extern "C" fn mach_approximate_time() -> u64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    let start = *START.get_or_init(Instant::now);
    let since = start.elapsed().as_nanos() as u64;
    // Mix in wall-clock time so that separate processes seed differently.
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    wall.wrapping_add(since)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_reports_a_version() {
        let mut s = unsafe { mlx_string_new() };
        assert_eq!(unsafe { mlx_version(&mut s) }, 0);
        let v = unsafe { std::ffi::CStr::from_ptr(mlx_string_data(s)) }
            .to_string_lossy()
            .into_owned();
        unsafe { mlx_string_free(s) };
        assert!(v.starts_with("0.32"), "MLX version {v}");
    }
}
