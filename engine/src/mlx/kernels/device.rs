//! Which device MLX runs this process's operations on, named for people
//! (`thinkwire inspect`, `bench`, the server's `/capabilities`): the same
//! binary runs on the CPU or, with a CUDA or Metal build of MLX, a GPU.

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
