//! `thinkwire bench`'s count of the MLX operations in a decode step: what
//! a GPU launches per step, so a CPU run can track the GPU's cost.

use anyhow::Result;

/// MLX operations in one decode step of N sequences, at each N of
/// `batches` (what a GPU launches per step; counted, not timed).
pub(super) fn step_operations(
    path: &std::path::Path,
    options: &thinkwire_engine::mlx::LoadOptions,
    batches: &[usize],
) -> Result<Vec<(usize, usize)>> {
    use anyhow::Context;
    thinkwire_engine::mlx::bench::decode_step_operations_of(path, options, batches)
        .context("counting the operations of a decode step")
}

pub(super) fn operations_line(operations: &[(usize, usize)]) -> String {
    let counts: Vec<String> = operations
        .iter()
        .map(|(n, ops)| format!("N={n} {ops}"))
        .collect();
    format!(
        "thinkwire MLX operations per decode step ({}): {}",
        thinkwire_engine::mlx::device_name(),
        counts.join(", ")
    )
}
