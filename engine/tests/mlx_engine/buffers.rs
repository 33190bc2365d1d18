//! MLX's buffer cache is handed back after a long prompt: a server keeps
//! the memory of what it holds, not of its largest pass so far.

use std::time::{Duration, Instant};

use super::*;

#[test]
fn a_long_prompts_buffers_are_handed_back_once_the_batch_is_idle() {
    // The whole prompt in one pass: its attention's temporaries are
    // megabytes (4 heads × 480² scores per layer) on a model of kilobytes.
    let engine = load("tiny-qwen3", 512);
    let prompt: Vec<u32> = (0..480u32).map(|i| (i * 7 + 3) % 256).collect();
    run(&engine, &request(prompt, 2), &mut Script::default());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let idle = engine.load().active_sequences == 0;
        let cached = mlx_rs::memory::cache_memory().unwrap();
        if idle && cached < 1 << 20 && engine.load().buffer_cache_bytes == cached {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "MLX still caches {cached} bytes (gauge {})",
            engine.load().buffer_cache_bytes
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
