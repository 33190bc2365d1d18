//! The one conversion of MLX's errors into the engine's: every module that
//! calls MLX reports its failures through [`mlx_err`].

use crate::EngineError;

/// Maps an MLX exception to [`EngineError::Backend`], prefixed with what
/// was being done (`context`).
pub(crate) fn mlx_err(context: &str) -> impl Fn(mlx_rs::error::Exception) -> EngineError + '_ {
    move |e| EngineError::Backend(format!("{context}: {e}"))
}
