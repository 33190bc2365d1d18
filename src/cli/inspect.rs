//! `thinkwire inspect`: what thinkwire makes of a model, to see why a
//! reasoning format was chosen before serving it.

use anyhow::Result;

use super::ModelArgs;

/// `thinkwire inspect`.
#[derive(clap::Args, Debug)]
pub struct InspectArgs {
    #[command(flatten)]
    model: ModelArgs,
}

/// Runs `thinkwire inspect`: what thinkwire makes of a model.
pub fn inspect(args: &InspectArgs) -> Result<()> {
    let model = args.model.load()?;
    let info = model.engine().info();
    let chat = model.chat();
    println!("model:          {}", info.id);
    println!("path:           {}", chat.path().display());
    println!("architecture:   {}", info.architecture);
    println!("context length: {}", info.context_length);
    if let Some(q) = &info.quantization {
        println!("weights:        {q}");
    }
    println!(
        "vocabulary:     {} (tokenizer: {})",
        info.vocab_size,
        chat.tokenizer.vocab_size()
    );
    let names: Vec<&str> = chat.templates().map(|(name, _)| name).collect();
    println!(
        "chat templates: {}",
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    );
    let stops: Vec<String> = chat
        .special
        .stop_ids
        .iter()
        .map(|&id| match chat.tokenizer.id_to_token(id) {
            Some(t) => format!("{id} {t:?}"),
            None => id.to_string(),
        })
        .collect();
    println!("stop tokens:    {}", stops.join(", "));
    println!("reasoning:      {}", model.format_resolution());
    Ok(())
}
