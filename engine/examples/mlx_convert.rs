//! `thinkwire convert` in small: GGUF → HF/MLX folder with tokenizer.json.
//! `cargo run -p thinkwire-engine --example mlx_convert -- MODEL.gguf OUT_DIR [f32|bf16|keep]`

use thinkwire_engine::gguf::GgufFile;
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
    let tokenizer = thinkwire_chat::tokenizer_json_from_gguf(&GgufFile::open(&args[1])?)?;
    let report = convert_gguf(
        args[1].as_ref(),
        args[2].as_ref(),
        &ConvertOptions {
            precision,
            tokenizer_json: Some(tokenizer),
        },
    )?;
    for f in &report.files {
        println!("{}", f.display());
    }
    println!("{} tensors", report.tensors);
    Ok(())
}
