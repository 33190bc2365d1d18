//! Which device MLX runs this process's operations on, named for people
//! (`thinkwire inspect`, `bench`, the server's `/capabilities`): the same
//! binary runs on the CPU or, with a CUDA or Metal build of MLX, a GPU;
//! and waiting for MLX's queued work, on a thread's stream or at exit.

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

/// The memory of MLX's default device in bytes, where MLX reports it: a
/// GPU's (CUDA's `total_memory`, Metal's `memory_size`, which on Apple
/// silicon is the memory it shares with the CPU); `None` on the CPU.
pub(crate) fn device_memory() -> Option<usize> {
    // SAFETY: the device and the info are created here, written by MLX
    // through the pointers given, read by key and freed before returning.
    unsafe {
        let mut device = mlx_sys::mlx_device_new();
        let mut info = mlx_sys::mlx_device_info_new();
        let mut bytes = None;
        if mlx_sys::mlx_get_default_device(&mut device) == 0
            && mlx_sys::mlx_device_info_get(&mut info, device) == 0
        {
            for key in [c"total_memory", c"memory_size"] {
                let (mut exists, mut value) = (false, 0usize);
                if mlx_sys::mlx_device_info_has_key(&mut exists, info, key.as_ptr()) == 0
                    && exists
                    && mlx_sys::mlx_device_info_get_size(&mut value, info, key.as_ptr()) == 0
                    && value > 0
                {
                    bytes = Some(value);
                    break;
                }
            }
        }
        mlx_sys::mlx_device_info_free(info);
        mlx_sys::mlx_device_free(device);
        bytes
    }
}

/// Waits for the MLX work queued on this thread's default stream (MLX's
/// default streams are per thread).
pub(crate) fn synchronize_this_thread() {
    // SAFETY: no arguments; MLX waits on this thread's default stream.
    let _ = unsafe { mlx_sys::mlx_synchronize_default() };
}

/// Runs `wait` as the process exits (registered once; later calls are
/// ignored). Handlers registered after MLX's statics exist run before
/// C++'s static destructors free them, so `wait` can still wait for MLX.
pub(crate) fn at_exit(wait: fn()) {
    static WAIT: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();
    extern "C" fn run() {
        if let Some(wait) = WAIT.get() {
            wait();
        }
    }
    unsafe extern "C" {
        fn atexit(handler: extern "C" fn()) -> std::os::raw::c_int;
    }
    if WAIT.set(wait).is_ok() {
        // SAFETY: `run` is a plain function that lives as long as the
        // process; the C library calls it once, from `exit`.
        if unsafe { atexit(run) } != 0 {
            tracing::warn!("could not register the wait for MLX's queued work at exit");
        }
    }
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
        // A CPU's memory is the machine's, which MLX does not report.
        let memory = super::device_memory();
        assert_eq!(memory.is_none(), name == "cpu", "{memory:?}");
    }
}
