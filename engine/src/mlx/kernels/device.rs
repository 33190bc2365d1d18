//! Which device MLX runs this process's operations on, named for people
//! (`thinkwire inspect`, `bench`, the server's `/capabilities`): the same
//! binary runs on the CPU or, with a CUDA or Metal build of MLX, a GPU;
//! Metal's wired memory for the weights; and waiting for MLX's queued
//! work, on a thread's stream or at exit.

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
    device_info_size(&[c"total_memory", c"memory_size"])
}

/// Outputs a one-row quantized matmul may have for MLX to run it as a
/// matrix-vector product, where the default device limits them: 16,384
/// on its CUDA backend on compute capability 9 (H100, H200), which runs
/// a wider one (and every one of more rows) as its tiled GEMM
/// (`quantized.cpp`, MLX 0.32). Other GPUs and the CPU take the vector
/// path for one row at any width.
pub(crate) fn one_row_gemv_outputs() -> Option<usize> {
    let gpu = matches!(Device::default().get_type(), Ok(DeviceType::Gpu));
    let hopper = device_info_size(&[c"compute_capability_major"]) == Some(9);
    (gpu && gpu_backend() == Some("cuda") && hopper).then_some(ONE_ROW_GEMV_OUTPUTS)
}

/// The widest one-row quantized matmul MLX's CUDA backend runs as a
/// matrix-vector product on compute capability 9.
pub(crate) const ONE_ROW_GEMV_OUTPUTS: usize = 16_384;

/// The first of `keys` MLX's default device reports, as a size above 0.
fn device_info_size(keys: &[&std::ffi::CStr]) -> Option<usize> {
    // SAFETY: the device and the info are created here, written by MLX
    // through the pointers given, read by key and freed before returning.
    unsafe {
        let mut device = mlx_sys::mlx_device_new();
        let mut info = mlx_sys::mlx_device_info_new();
        let mut bytes = None;
        if mlx_sys::mlx_get_default_device(&mut device) == 0
            && mlx_sys::mlx_device_info_get(&mut info, device) == 0
        {
            for key in keys {
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

/// Whether weights of `weight_bytes` take more than 90 % of a wired
/// `limit`, mlx-lm's mark for a model that may not all stay resident and
/// can generate slowly.
fn weights_near(limit: usize, weight_bytes: usize) -> bool {
    weight_bytes as f64 > 0.9 * limit as f64
}

/// On Apple silicon, lets Metal keep MLX's buffers resident up to the
/// device's recommended working set, as mlx-lm does while it generates:
/// otherwise macOS may page a large model's weights out between steps.
/// Set once, before any generation (MLX's wired limit must not change
/// while work is queued), and kept for the process: a server generates
/// for as long as it runs. Nothing elsewhere (no recommended working set
/// on CUDA or the CPU). Returns the limit set.
pub(crate) fn wire_for_generation(weight_bytes: usize) -> Option<usize> {
    static WIRED: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *WIRED.get_or_init(|| {
        if gpu_backend() != Some("metal") {
            return None;
        }
        let limit = device_info_size(&[c"max_recommended_working_set_size"])?;
        if weights_near(limit, weight_bytes) {
            tracing::warn!(
                weights_mb = weight_bytes >> 20,
                recommended_mb = limit >> 20,
                "the weights are close to the GPU's recommended working set: generation may be slow"
            );
        }
        let mut old = 0usize;
        // SAFETY: MLX writes the previous limit through the pointer given.
        match unsafe { mlx_sys::mlx_set_wired_limit(&mut old, limit) } {
            0 => {
                tracing::info!(wired_limit_mb = limit >> 20, "wired memory limit set");
                Some(limit)
            }
            _ => {
                tracing::warn!("MLX refused the wired memory limit; weights may be paged out");
                None
            }
        }
    })
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
        // Only Metal reports a recommended working set to wire up to.
        let wired = super::wire_for_generation(1 << 30);
        assert_eq!(wired.is_some(), name == "gpu (metal)", "{wired:?}");
    }

    #[test]
    fn weights_over_nine_tenths_of_the_wired_limit_are_near_it() {
        let gib = 1usize << 30;
        let limit = 16 * gib;
        assert!(!super::weights_near(limit, 8 * gib));
        assert!(!super::weights_near(limit, limit * 9 / 10));
        assert!(super::weights_near(limit, 15 * gib));
    }
}
