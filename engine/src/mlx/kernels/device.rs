//! Which device MLX runs this process's operations on, named for people
//! (`thinkwire inspect`, `bench`, the server's `/capabilities`): the same
//! binary runs on the CPU or, with a CUDA or Metal build of MLX, a GPU;
//! and the wait for MLX's queued work when the process exits.

use mlx_rs::{Device, DeviceType};

/// `cpu`, or `gpu (cuda)` / `gpu (metal)` (`gpu` where MLX names no
/// backend): MLX's default device and the backend behind it.
pub fn device_name() -> String {
    match Device::default().get_type() {
        Ok(DeviceType::Cpu) => "cpu".into(),
        Ok(DeviceType::Gpu) => match gpu_backend() {
            Some(backend) => format!("gpu ({backend})"),
            None => "gpu".into(),
        },
        Err(_) => "unknown".into(),
    }
}

/// Makes the process, as it exits, wait for the work MLX still has queued
/// (registered once, when an engine has loaded). The scheduler queues its
/// next step before it hands out a token (pipelined decode), so a process
/// can exit while MLX's stream thread still runs a step nobody will read,
/// and C++'s static destructors would free MLX's memory under it (a test
/// process aborted so: "malloc_consolidate(): unaligned fastbin chunk").
/// Handlers registered after MLX's statics exist run before those die.
pub(crate) fn wait_for_queued_work_at_exit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    extern "C" fn wait() {
        // SAFETY: no arguments; MLX waits on its own default stream.
        let _ = unsafe { mlx_sys::mlx_synchronize_default() };
    }
    unsafe extern "C" {
        fn atexit(handler: extern "C" fn()) -> std::os::raw::c_int;
    }
    ONCE.call_once(|| {
        // SAFETY: `wait` is a plain function that lives as long as the
        // process; the C library calls it once, from `exit`.
        if unsafe { atexit(wait) } != 0 {
            tracing::warn!("could not register the wait for MLX's queued work at exit");
        }
    });
}

/// The GPU backend MLX was built with, if it says.
fn gpu_backend() -> Option<&'static str> {
    let (mut cuda, mut metal) = (false, false);
    // SAFETY: each call writes one bool it is given.
    let (c, m) = unsafe {
        (
            mlx_sys::mlx_cuda_is_available(&mut cuda),
            mlx_sys::mlx_metal_is_available(&mut metal),
        )
    };
    if c == 0 && cuda {
        Some("cuda")
    } else if m == 0 && metal {
        Some("metal")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_the_default_device() {
        let name = super::device_name();
        assert!(name == "cpu" || name.starts_with("gpu"), "{name}");
    }
}
