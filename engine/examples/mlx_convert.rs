//! `thinkwire convert` in small: GGUF → HF/MLX folder with tokenizer.json.
//! `cargo run -p thinkwire-engine --example mlx_convert -- MODEL.gguf OUT_DIR [f32|bf16|keep]`

use thinkwire_engine::mlx::{ConvertOptions, Precision, convert_gguf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err("usage: mlx_convert MODEL.gguf OUT_DIR [f32|bf16|keep]".into());
    }
    let precision = args
        .get(3)
        .map_or(Some(Precision::F32), |s| Precision::parse(s))
        .ok_or("precision must be f32, bf16 or keep")?;
    let chat = thinkwire_chat::ChatModel::load(std::path::Path::new(&args[1]))?;
    let report = convert_gguf(
        args[1].as_ref(),
        args[2].as_ref(),
        &ConvertOptions {
            precision,
            tokenizer_json: Some(chat.tokenizer_json()?),
            tokenizer_config: Some(chat.tokenizer_config_json()),
        },
    )?;
    for f in &report.files {
        println!("{}", f.display());
    }
    println!("{} tensors", report.tensors);
    Ok(())
}
