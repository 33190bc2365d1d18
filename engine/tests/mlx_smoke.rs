//! Proves the MLX toolchain end to end: mlx-rs → our mlx-sys → libmlxc →
//! the MLX wheel (with its BLAS), from a plain `cargo test`.
#![cfg(feature = "mlx")]

use mlx_rs::Array;

#[test]
fn f32_matmul_matches_hand_computation() {
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = Array::from_slice(&[7.0f32, 8.0, 9.0, 10.0, 11.0, 12.0], &[3, 2]);
    let c = a.matmul(&b).unwrap();
    c.eval().unwrap();
    assert_eq!(c.shape(), &[2, 2]);
    assert_eq!(c.as_slice::<f32>(), &[58.0, 64.0, 139.0, 154.0]);
}
