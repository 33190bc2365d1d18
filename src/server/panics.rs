//! What a panic leaves in the logs (issue #13).
//!
//! Rust's default panic hook prints the panic's message to stderr, and a
//! message can quote the data being handled — slicing a string at a bad
//! index prints the string. In a server that data is someone's prompt,
//! answer or reasoning. [`quiet_panics`] replaces the hook with one that
//! logs where the panic happened (file, line, thread) through `tracing`,
//! never its message. The run that panicked ends with `RUN_ERROR`
//! (`run.rs` catches the unwind); the server goes on.

/// Installs the quiet hook for the whole process (`thinkwire serve` calls
/// it at start; tests that check logs call it too).
pub fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let thread = std::thread::current();
        tracing::error!(
            location,
            thread = thread.name().unwrap_or("unnamed"),
            "panic (its message is withheld: it may quote conversation text)"
        );
    }));
}
