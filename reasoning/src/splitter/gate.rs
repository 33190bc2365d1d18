//! Whitespace next to a marker is the format's layout, not the model's
//! text; a gate per segment drops it while streaming everything else.

/// Drops blank text at the start of a segment and holds trailing blank
/// text until non-blank text follows.
#[derive(Debug, Clone)]
pub(super) struct WsGate {
    pub(super) at_start: bool,
    pending: String,
}

impl WsGate {
    pub(super) fn new() -> Self {
        Self {
            at_start: true,
            pending: String::new(),
        }
    }

    /// A gate whose segment is already under way: nothing leading is
    /// dropped (answer text at the start of the output, before any marker).
    pub(super) fn mid_segment() -> Self {
        Self {
            at_start: false,
            pending: String::new(),
        }
    }

    /// The held trailing blanks, at the end of the output.
    pub(super) fn flush(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }

    pub(super) fn feed(&mut self, s: &str) -> String {
        let mut s = s;
        if self.at_start {
            s = s.trim_start();
            if s.is_empty() {
                return String::new();
            }
            self.at_start = false;
        }
        let body = s.trim_end();
        if body.is_empty() {
            self.pending.push_str(s);
            return String::new();
        }
        let mut out = std::mem::take(&mut self.pending);
        out.push_str(body);
        self.pending.push_str(&s[body.len()..]);
        out
    }

    /// A new segment: pending trailing blanks are dropped.
    pub(super) fn reset(&mut self) {
        self.at_start = true;
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ws_gate_trims_segment_ends_only() {
        let mut g = WsGate::new();
        assert_eq!(g.feed("\n\n"), "");
        assert_eq!(g.feed(" a"), "a");
        assert_eq!(g.feed(" b\n"), " b");
        assert_eq!(g.feed("\n"), "");
        assert_eq!(g.feed("c"), "\n\nc");
        g.reset();
        assert_eq!(g.feed(" d "), "d");
    }
}
