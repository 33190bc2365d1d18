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
    // The gauge is what the scheduler saw once idle (MLX's cache is the
    // process's: tests sharing one would move it).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let load = engine.load();
        if load.active_sequences == 0 && load.steps > 0 && load.buffer_cache_bytes < 1 << 20 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "MLX still caches {} bytes once idle",
            load.buffer_cache_bytes
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
