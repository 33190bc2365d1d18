//! Per-call time of the quantized kernels on the default model's matrices
//! (SmolLM2-135M, MLX 4-bit groups of 32, 8-bit tied embedding) for 1 to 32
//! rows of x: the multi-row kernel, one kernel pass per row (the former
//! decode path), dequantize + BLAS (the prefill path), and the multi-row
//! kernel with x quantized to 8 bits (`--precision int8`). The numbers
//! behind the kernel threshold and the precision modes in engine/README.md.
//! Run with
//!
//! ```text
//! THINKWIRE_KERNEL_THREADS=2 cargo test --release -p thinkwire-engine --lib \
//!     mlx::bench::quantized -- --ignored --nocapture
//! ```

use std::time::{Duration, Instant};

use crate::mlx::kernels::quantized::{Packed, Path};
use crate::mlx::kernels::{Activations, Quant, int8_isa, kernel_threads};

/// xorshift64*: stand-in data (the kernels' speed does not depend on it).
struct Rng(u64);

impl Rng {
    fn bits(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn float(&mut self) -> f32 {
        (self.bits() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

fn random_matrix(rng: &mut Rng, n: usize, k: usize, bits: i32) -> Packed {
    let q = Quant {
        group_size: 32,
        bits,
    };
    let groups = n * k / 32;
    Packed {
        w: (0..n * k * bits as usize / 8)
            .map(|_| rng.bits() as u8)
            .collect(),
        scales: (0..groups).map(|_| 0.01 + 0.01 * rng.float()).collect(),
        biases: (0..groups).map(|_| 0.1 * rng.float()).collect(),
        n,
        k,
        q,
    }
}

/// Seconds per call: the median of `reps` samples of about 20 ms each,
/// the paths interleaved so that load from other processes hits them alike.
fn time_paths(
    p: &Packed,
    x: &[f32],
    m: usize,
    paths: &[(Path, Activations)],
    reps: usize,
) -> Vec<f64> {
    let calls: Vec<usize> = paths
        .iter()
        .map(|&(path, act)| {
            let start = Instant::now();
            p.matmul_now_with(x, m, path, act).unwrap();
            let once = start.elapsed().max(Duration::from_micros(1));
            (Duration::from_millis(20).as_secs_f64() / once.as_secs_f64()).clamp(1.0, 2000.0)
                as usize
        })
        .collect();
    let mut samples = vec![Vec::with_capacity(reps); paths.len()];
    for _ in 0..reps {
        for (j, &(path, act)) in paths.iter().enumerate() {
            let start = Instant::now();
            for _ in 0..calls[j] {
                std::hint::black_box(p.matmul_now_with(x, m, path, act).unwrap());
            }
            samples[j].push(start.elapsed().as_secs_f64() / calls[j] as f64);
        }
    }
    samples
        .into_iter()
        .map(|mut s| {
            s.sort_by(f64::total_cmp);
            s[s.len() / 2]
        })
        .collect()
}

#[test]
#[ignore = "a benchmark: run it in release, see the module doc"]
fn kernel_rows() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // name, n, k, bits, times per token (30 layers; the head once)
    let shapes = [
        ("qkv", 960, 576, 4, 30),
        ("o", 576, 576, 4, 30),
        ("gate_up", 3072, 576, 4, 30),
        ("down", 576, 1536, 4, 30),
        ("lm_head", 49152, 576, 8, 1),
    ];
    let rows = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32];
    let paths = [
        (Path::Kernel, Activations::F32),
        (Path::RowByRow, Activations::F32),
        (Path::Blas, Activations::F32),
        (Path::Kernel, Activations::Int8),
    ];
    let reps = 9;
    let cpu = super::cpu_name();
    println!(
        "{cpu}, kernel threads {}, int8 kernels {}, median of {reps}, µs per call",
        kernel_threads(),
        int8_isa()
    );
    println!(
        "| matrix n×k | m | multi-row | m × one row | dequant + BLAS | int8 multi-row | one row / multi | BLAS / multi | multi / int8 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut step = vec![[0.0f64; 4]; rows.len()];
    for (name, n, k, bits, per_token) in shapes {
        let p = random_matrix(&mut rng, n, k, bits);
        for (r, &m) in rows.iter().enumerate() {
            let x: Vec<f32> = (0..m * k).map(|_| rng.float()).collect();
            let t = time_paths(&p, &x, m, &paths, reps);
            for (total, time) in step[r].iter_mut().zip(&t) {
                *total += time * per_token as f64;
            }
            println!(
                "| {name} {n}×{k} ({bits}-bit) | {m} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} |",
                t[0] * 1e6,
                t[1] * 1e6,
                t[2] * 1e6,
                t[3] * 1e6,
                t[1] / t[0],
                t[2] / t[0],
                t[0] / t[3]
            );
        }
    }
    println!("\nall matrices of one forward pass (30 layers + head), ms:");
    println!(
        "| m | multi-row | m × one row | dequant + BLAS | int8 multi-row | multi-row per row | int8 per row |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (r, &m) in rows.iter().enumerate() {
        let [a, b, c, d] = step[r];
        println!(
            "| {m} | {:.2} | {:.2} | {:.2} | {:.2} | {:.3} | {:.3} |",
            a * 1e3,
            b * 1e3,
            c * 1e3,
            d * 1e3,
            a * 1e3 / m as f64,
            d * 1e3 / m as f64
        );
    }
}
