//! The size of an unevaluated MLX graph: how many operations evaluating
//! some arrays would run. A decode step's count is what a GPU pays a
//! launch (and the CPU a schedule and an allocation) for, so it is
//! measured on any machine (`bench::ops`, `thinkwire bench`).

use std::collections::BTreeMap;
use std::ffi::CString;

use mlx_rs::Array;
use mlx_rs::error::{Exception, Result};

/// Operations (primitives) MLX would run to evaluate `outputs`: the nodes
/// of `mlx_export_to_dot`'s graph, one `shape=rectangle` line each.
/// Evaluated arrays are leaves and count nothing.
#[cfg(test)]
pub(crate) fn count_operations(outputs: &[&Array]) -> Result<usize> {
    Ok(operation_kinds(outputs)?.values().sum())
}

/// [`count_operations`] by kind: MLX's name for each primitive (`Add`,
/// `QuantizedMatmul`, a compiled fusion's `Compiled…`), so two step
/// graphs can be compared kind by kind.
pub(crate) fn operation_kinds(outputs: &[&Array]) -> Result<BTreeMap<String, usize>> {
    let path = std::env::temp_dir().join(format!(
        "thinkwire-graph-{}-{:?}.dot",
        std::process::id(),
        std::thread::current().id()
    ));
    let c_path = CString::new(path.to_string_lossy().as_bytes())
        .map_err(|_| Exception::custom("a temporary path with a NUL byte"))?;
    // SAFETY: a fresh vector and namer, freed below; the arrays stay alive
    // for the call; the file is opened, written and closed here.
    let status = unsafe {
        let file = mlx_sys::fopen(c_path.as_ptr(), c"w".as_ptr());
        if file.is_null() {
            return Err(Exception::custom("opening a temporary file for the graph"));
        }
        let vector = mlx_sys::mlx_vector_array_new();
        for a in outputs {
            mlx_sys::mlx_vector_array_append_value(vector, a.as_ptr());
        }
        let namer = mlx_sys::mlx_node_namer_new();
        let status = mlx_sys::mlx_export_to_dot(file, namer, vector);
        mlx_sys::mlx_node_namer_free(namer);
        mlx_sys::mlx_vector_array_free(vector);
        mlx_sys::fclose(file);
        status
    };
    let dot = std::fs::read_to_string(&path);
    let _ = std::fs::remove_file(&path);
    if status != 0 {
        return Err(Exception::custom("mlx_export_to_dot failed"));
    }
    let dot = dot.map_err(|e| Exception::custom(format!("reading the graph: {e}")))?;
    let mut kinds = BTreeMap::new();
    for line in dot.lines().filter(|l| l.contains("shape=rectangle")) {
        let label = line
            .split_once("label =\"")
            .and_then(|(_, rest)| rest.split_once('"'))
            .map_or("?", |(label, _)| label);
        *kinds.entry(label.to_owned()).or_insert(0) += 1;
    }
    Ok(kinds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_pending_operation_once() {
        let a = Array::from_slice(&[1.0f32, 2.0], &[2]);
        let b = a.add(&a).unwrap();
        let c = b.multiply(&b).unwrap().exp().unwrap();
        // add, multiply, exp; `a` is data.
        assert_eq!(count_operations(&[&c]).unwrap(), 3);
        assert_eq!(count_operations(&[&c, &b]).unwrap(), 3);
        let kinds = operation_kinds(&[&c]).unwrap();
        let names: Vec<(&str, usize)> = kinds.iter().map(|(k, n)| (k.as_str(), *n)).collect();
        assert_eq!(names, [("Add", 1), ("Exp", 1), ("Multiply", 1)]);
        c.eval().unwrap();
        assert_eq!(count_operations(&[&c]).unwrap(), 0);
    }
}
