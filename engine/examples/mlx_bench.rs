//! `thinkwire bench --compare-mlx-lm` in small: converts the GGUF to an f32
//! folder (unless given), measures thinkwire on the GGUF and mlx-lm on the
//! folder, prints both reports and the decode ratio.
//! `cargo run --release -p thinkwire-engine --example mlx_bench -- MODEL.gguf [TOKENS] [RUNS] [f32|bf16|keep] [nocompare]`

use std::path::PathBuf;

use thinkwire_chat::{ChatModel, RenderOptions, TemplateMessage};
use thinkwire_engine::mlx::bench::{BenchOptions, MlxLmReference, bench};
use thinkwire_engine::mlx::{ConvertOptions, LoadOptions, Precision, convert_gguf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let model = PathBuf::from(
        args.get(1)
            .ok_or("usage: mlx_bench MODEL.gguf [TOKENS] [RUNS] [PRECISION]")?,
    );
    let tokens: usize = args.get(2).map_or(Ok(128), |s| s.parse())?;
    let runs: usize = args.get(3).map_or(Ok(2), |s| s.parse())?;
    let precision = args
        .get(4)
        .map_or(Some(Precision::Auto), |s| Precision::parse(s))
        .ok_or("precision must be auto, f32, bf16 or keep")?;
    let chat = ChatModel::load(&model)?;
    let prompt = chat.encode_chat(
        &[TemplateMessage::user(
            "Write a short story about a robot who learns to paint.",
        )],
        &RenderOptions {
            add_generation_prompt: true,
            ..RenderOptions::default()
        },
    )?;
    let options = BenchOptions {
        prompt,
        max_tokens: tokens,
        runs,
        load: LoadOptions {
            precision,
            ..LoadOptions::default()
        },
    };
    // mlx-lm's fastest CPU path: the exact f32 dequantization of the same weights.
    let folder = std::env::temp_dir().join("thinkwire-bench-f32");
    if !folder.join("model.safetensors").is_file() {
        convert_gguf(
            &model,
            &folder,
            &ConvertOptions {
                precision: Precision::F32,
                tokenizer_json: Some(chat.tokenizer_json()?),
                tokenizer_config: Some(chat.tokenizer_config_json()),
            },
        )?;
    }
    if args.get(5).is_some_and(|a| a == "nocompare") {
        println!("{}", serde_json::to_string(&bench(&model, &options)?)?);
        return Ok(());
    }
    let lm = MlxLmReference::locate().bench(&folder, &options)?;
    let tw = bench(&model, &options)?;
    let lm2 = MlxLmReference::locate().bench(&folder, &options)?;
    for r in [&tw, &lm, &lm2] {
        println!("{}", serde_json::to_string(r)?);
    }
    let lm_best = lm.decode_tok_s.max(lm2.decode_tok_s);
    println!(
        "decode ratio thinkwire/mlx-lm: {:.2} (prefill {:.2})",
        tw.decode_tok_s / lm_best,
        tw.prefill_tok_s / lm.prefill_tok_s.max(lm2.prefill_tok_s)
    );
    Ok(())
}
