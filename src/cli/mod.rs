//! The subcommands of the `thinkwire` binary, one module each; `args` holds
//! the model flags and loading they share. `loadtest` is also a library
//! entry ([`loadtest::run_load`]) for the integration tests.

mod args;
mod bench;
mod chat;
mod convert;
mod inspect;
mod keygen;
#[cfg(feature = "mlx")]
mod llama_cpp;
pub mod loadtest;
mod rng;
mod serve;
mod upstream;

pub use args::ModelArgs;
pub use bench::{BenchArgs, bench};
pub use chat::{ChatArgs, chat};
pub use convert::{ConvertArgs, convert};
pub use inspect::{InspectArgs, inspect};
pub use keygen::keygen;
pub use loadtest::{LoadtestArgs, loadtest};
pub use serve::{ServeArgs, default_web_dir, serve};
pub use upstream::UpstreamArgs;
