//! `thinkwire bench`'s count of the MLX operations in a decode step: what
//! a GPU launches per step, so a CPU run can track the GPU's cost; and,
//! with `--compare-mlx-lm`, mlx-lm's step on the same weights, counted the
//! same way (`mlx_lm_ref.py ops`).

use anyhow::Result;
use thinkwire_engine::mlx::bench::StepOperations;

/// MLX operations in one decode step of N sequences, at each N of
/// `batches` (what a GPU launches per step; counted, not timed).
pub(super) fn step_operations(
    path: &std::path::Path,
    options: &thinkwire_engine::mlx::LoadOptions,
    batches: &[usize],
) -> Result<Vec<StepOperations>> {
    use anyhow::Context;
    thinkwire_engine::mlx::bench::decode_step_operations_of(path, options, batches)
        .context("counting the operations of a decode step")
}

/// mlx-lm's decode step on the folder `dir`, at each N of `batches`.
pub(super) fn mlx_lm_step_operations(
    dir: &std::path::Path,
    batches: &[usize],
) -> Result<Vec<StepOperations>> {
    use anyhow::Context;
    thinkwire_engine::mlx::bench::MlxLmReference::locate()
        .operations(dir, batches)
        .with_context(|| format!("counting mlx-lm's decode step on {}", dir.display()))
}

/// One line: whose step, on which device, the count at each N and the
/// time the host took to build it.
pub(super) fn operations_line(who: &str, operations: &[StepOperations]) -> String {
    let counts: Vec<String> = operations
        .iter()
        .map(|s| {
            format!(
                "N={} {} ({:.2} ms to build)",
                s.batch, s.operations, s.build_ms
            )
        })
        .collect();
    format!(
        "{who} MLX operations per decode step ({}): {}",
        thinkwire_engine::mlx::device_name(),
        counts.join(", ")
    )
}

/// mlx-lm's counts, by the weights they ran on (e.g. "quantized copy").
pub(super) type Theirs<'a> = [(&'a str, Vec<StepOperations>)];

/// Ours, then each of mlx-lm's with the kinds that differ most at N=1.
pub(super) fn print_operations(ours: &[StepOperations], theirs: &Theirs<'_>) {
    println!("{}", operations_line("thinkwire", ours));
    for (label, rows) in theirs {
        println!("{}", operations_line(&format!("mlx-lm ({label})"), rows));
        if let (Some(a), Some(b)) = (ours.first(), rows.first()) {
            println!("{}", kinds_line(a, b, 8));
        }
    }
}

/// mlx-lm's counts for `--json`.
pub(super) fn operations_json(theirs: &Theirs<'_>) -> serde_json::Value {
    theirs
        .iter()
        .map(|(label, rows)| serde_json::json!({ "weights": label, "rows": rows }))
        .collect()
}

/// The kinds whose counts differ most between two steps at the same N
/// (ours minus theirs), largest first: where the difference lies.
pub(super) fn kinds_line(ours: &StepOperations, theirs: &StepOperations, top: usize) -> String {
    let mut diff: Vec<(&str, i64)> = ours
        .kinds
        .keys()
        .chain(theirs.kinds.keys())
        .map(|k| {
            let a = ours.kinds.get(k).copied().unwrap_or(0) as i64;
            let b = theirs.kinds.get(k).copied().unwrap_or(0) as i64;
            (k.as_str(), a - b)
        })
        .filter(|(_, d)| *d != 0)
        .collect();
    diff.sort_by(|a, b| b.1.abs().cmp(&a.1.abs()).then(a.0.cmp(b.0)));
    diff.dedup();
    let shown: Vec<String> = diff
        .iter()
        .take(top)
        .map(|(k, d)| format!("{k} {d:+}"))
        .collect();
    format!(
        "  at N={}, thinkwire − mlx-lm by kind: {}",
        ours.batch,
        if shown.is_empty() {
            "the same".to_owned()
        } else {
            shown.join(", ")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(batch: usize, kinds: &[(&str, usize)]) -> StepOperations {
        let kinds: std::collections::BTreeMap<String, usize> =
            kinds.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect();
        StepOperations {
            batch,
            operations: kinds.values().sum(),
            kinds,
            build_ms: 0.0,
        }
    }

    #[test]
    fn the_kinds_line_lists_the_largest_differences_first() {
        let ours = step(1, &[("Add", 10), ("Rope", 2), ("Slice", 4)]);
        let theirs = step(1, &[("Add", 10), ("Broadcast", 30), ("Slice", 1)]);
        assert_eq!(
            kinds_line(&ours, &theirs, 2),
            "  at N=1, thinkwire − mlx-lm by kind: Broadcast -30, Slice +3"
        );
        assert_eq!(
            kinds_line(&ours, &ours, 3),
            "  at N=1, thinkwire − mlx-lm by kind: the same"
        );
    }
}
