//! The GGUF reader on hostile files: header, metadata, tensor directory,
//! every tensor's bytes, and the tokenizer and chat template rebuilt from
//! the metadata, as `thinkwire serve` loads a model. Any bytes give a
//! model or an error; nothing panics or allocates beyond the file.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use thinkwire_chat::{ChatModel, TemplateMessage};
use thinkwire_gguf::GgufFile;

/// The reader takes a path (tensor data stays on disk until asked for), so
/// each input is written to one file per process, in memory where possible.
fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let shm = PathBuf::from("/dev/shm");
        let dir = if shm.is_dir() {
            shm
        } else {
            std::env::temp_dir()
        };
        dir.join(format!("thinkwire-fuzz-gguf-{}.gguf", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| {
    let path = scratch();
    std::fs::write(path, data).expect("writing the scratch file");
    let Ok(file) = GgufFile::open(path) else {
        return;
    };
    for info in file.tensors() {
        if let Ok(bytes) = file.read_tensor(&info.name) {
            assert!(bytes.len() as u64 <= file.file_len());
        }
    }
    let _ = file.architecture();
    let Ok(chat) = ChatModel::from_gguf(&file) else {
        return;
    };
    if let Ok(ids) = chat.tokenizer.encode("hello world <think>", false) {
        let _ = chat.tokenizer.decode(&ids, false);
    }
    let messages = [TemplateMessage::user("hello")];
    let _ = chat.render_chat(&messages, &Default::default());
});
