//! The one error slot of thinkwire's C API (`thinkwire_last_error`), which
//! every failing `thinkwire_*` call fills: products, repacking and fused
//! operations alike.

use std::ffi::CStr;

/// The message of this thread's last failed call into the native code.
pub(super) fn last_error() -> String {
    // SAFETY: a NUL-terminated string owned by this thread, copied at once.
    let msg = unsafe { CStr::from_ptr(mlx_sys::thinkwire_last_error()) };
    msg.to_string_lossy().into_owned()
}
