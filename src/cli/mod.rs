//! The subcommands of the `thinkwire` binary, one module each; `args` holds
//! the model flags and loading they share.

mod args;
mod bench;
mod chat;
mod convert;
mod inspect;
mod keygen;
mod llama_cpp;
mod serve;
mod upstream;

pub use args::ModelArgs;
pub use bench::{BenchArgs, bench};
pub use chat::{ChatArgs, chat};
pub use convert::{ConvertArgs, convert};
pub use inspect::{InspectArgs, inspect};
pub use keygen::keygen;
pub use serve::{ServeArgs, default_web_dir, serve};
pub use upstream::UpstreamArgs;
