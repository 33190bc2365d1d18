//! Stop strings over a stream of text pieces.
//!
//! A stop string may arrive split across pieces (`"</"` then `"answer>"`),
//! so text that could be the start of one is held back until it is known
//! not to be; nothing of a stop string, or after it, is ever emitted.
//!
//! ```
//! use thinkwire_chat::{StopMatcher, StopStep};
//!
//! let mut m = StopMatcher::new(["\nUser:"]);
//! assert_eq!(m.push("Hello\nUs"), StopStep::Continue("Hello".into()));
//! assert_eq!(m.push("er: hi"), StopStep::Stopped { text: String::new(), stop: 0 });
//! ```

/// What [`StopMatcher::push`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopStep {
    /// No stop string yet; emit this text (possibly empty, when all of the
    /// piece is held back).
    Continue(String),
    /// A stop string matched: emit `text` (what precedes it) and end
    /// generation. `stop` is the index of the stop string that matched.
    Stopped {
        /// Text before the stop string, not yet emitted.
        text: String,
        /// Index in the list given to [`StopMatcher::new`].
        stop: usize,
    },
}

/// Finds the first occurrence of any of a set of stop strings in streamed
/// text. See the module docs.
#[derive(Debug, Clone)]
pub struct StopMatcher {
    stops: Vec<String>,
    /// Each stop's border table (KMP's failure function): `borders[s][i]`
    /// is the longest proper prefix of `stops[s][..=i]` that is also its
    /// suffix, so what of the held text could start a stop is found in
    /// one pass over it, not one comparison per length.
    borders: Vec<Vec<usize>>,
    /// Text held back: a suffix of the stream that is a proper prefix of
    /// some stop string.
    held: String,
    stopped: bool,
}

impl StopMatcher {
    /// A matcher for `stops`; empty strings are ignored.
    pub fn new<I, S>(stops: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let stops: Vec<String> = stops.into_iter().map(Into::into).collect();
        let borders = stops.iter().map(|s| borders(s.as_bytes())).collect();
        Self {
            stops,
            borders,
            held: String::new(),
            stopped: false,
        }
    }

    /// The stop strings, as given (a [`StopStep::Stopped`]'s `stop`
    /// indexes them).
    pub fn stops(&self) -> &[String] {
        &self.stops
    }

    /// Whether there is anything to match.
    pub fn is_empty(&self) -> bool {
        self.stops.iter().all(String::is_empty)
    }

    /// Feeds one piece of text. After a `Stopped`, further pieces are
    /// ignored (they return empty `Continue`).
    pub fn push(&mut self, piece: &str) -> StopStep {
        if self.stopped {
            return StopStep::Continue(String::new());
        }
        if self.is_empty() {
            return StopStep::Continue(piece.to_owned());
        }
        let mut buf = std::mem::take(&mut self.held);
        buf.push_str(piece);

        // The earliest match wins; among matches at the same place, the
        // first listed.
        let found = self
            .stops
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.is_empty())
            .filter_map(|(i, s)| buf.find(s.as_str()).map(|at| (at, i)))
            .min();
        if let Some((at, stop)) = found {
            self.stopped = true;
            buf.truncate(at);
            return StopStep::Stopped { text: buf, stop };
        }

        let hold = self.longest_partial_suffix(&buf);
        self.held = buf.split_off(buf.len() - hold);
        StopStep::Continue(buf)
    }

    /// Ends the stream: the held-back text, which turned out not to start a
    /// stop string.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }

    /// Length in bytes of the longest suffix of `text` that is a proper
    /// prefix of some stop string (always on a character boundary: it
    /// starts where a stop string's first character does, and ends where
    /// `text` does).
    fn longest_partial_suffix(&self, text: &str) -> usize {
        self.stops
            .iter()
            .zip(&self.borders)
            .map(|(stop, borders)| overlap(stop.as_bytes(), borders, text.as_bytes()))
            .max()
            .unwrap_or(0)
    }
}

/// The border table of `stop` (see [`StopMatcher`]'s `borders`).
fn borders(stop: &[u8]) -> Vec<usize> {
    let mut table = vec![0; stop.len()];
    let mut k = 0;
    for i in 1..stop.len() {
        while k > 0 && stop[i] != stop[k] {
            k = table[k - 1];
        }
        if stop[i] == stop[k] {
            k += 1;
        }
        table[i] = k;
    }
    table
}

/// The longest suffix of `text` that is a proper prefix of `stop`: the
/// KMP automaton run over the last `stop.len() - 1` bytes, so at most
/// that much is read whatever the text's length.
fn overlap(stop: &[u8], borders: &[usize], text: &[u8]) -> usize {
    if stop.is_empty() {
        return 0;
    }
    let tail = &text[text.len().saturating_sub(stop.len() - 1)..];
    let mut k = 0;
    for &byte in tail {
        while k > 0 && stop[k] != byte {
            k = borders[k - 1];
        }
        if stop[k] == byte {
            k += 1;
        }
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], pieces: &[&str]) -> (String, Option<usize>) {
        let mut m = StopMatcher::new(stops.iter().copied());
        let mut out = String::new();
        for p in pieces {
            match m.push(p) {
                StopStep::Continue(t) => out.push_str(&t),
                StopStep::Stopped { text, stop } => {
                    out.push_str(&text);
                    return (out, Some(stop));
                }
            }
        }
        out.push_str(&m.finish());
        (out, None)
    }

    #[test]
    fn holds_back_only_possible_starts() {
        let mut m = StopMatcher::new(["</answer>"]);
        assert_eq!(m.push("a <"), StopStep::Continue("a ".into()));
        assert_eq!(m.push("b"), StopStep::Continue("<b".into()));
        assert_eq!(m.push("</ans"), StopStep::Continue(String::new()));
        assert_eq!(
            m.push("wer> tail"),
            StopStep::Stopped {
                text: String::new(),
                stop: 0
            }
        );
        assert_eq!(m.push("more"), StopStep::Continue(String::new()));
    }

    #[test]
    fn split_everywhere() {
        let text = "one two STOP three";
        for cut in 1..text.len() {
            let (out, stop) = run(&["STOP"], &[&text[..cut], &text[cut..]]);
            assert_eq!((out.as_str(), stop), ("one two ", Some(0)), "cut {cut}");
        }
        // One character at a time.
        let pieces: Vec<String> = text.chars().map(String::from).collect();
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        assert_eq!(run(&["STOP"], &refs), ("one two ".into(), Some(0)));
    }

    #[test]
    fn earliest_match_wins_and_no_match_flushes() {
        assert_eq!(run(&["bc", "ab"], &["xabc"]), ("x".into(), Some(1)));
        assert_eq!(run(&["abc"], &["xab", "d"]), ("xabd".into(), None));
        assert_eq!(run(&["abc"], &["xab"]), ("xab".into(), None));
        assert_eq!(run(&[], &["x", "y"]), ("xy".into(), None));
        assert_eq!(run(&[""], &["x"]), ("x".into(), None));
        // Overlapping prefixes: "aab" holds "aa" only as long as needed.
        assert_eq!(run(&["aab"], &["a", "a", "a", "b"]), ("a".into(), Some(0)));
    }

    #[test]
    fn held_text_is_released_as_soon_as_it_cannot_match() {
        let mut m = StopMatcher::new(["STOP"]);
        assert_eq!(m.push("hello S"), StopStep::Continue("hello ".into()));
        assert_eq!(m.push("T"), StopStep::Continue(String::new()));
        assert_eq!(m.push("x"), StopStep::Continue("STx".into()));
        assert_eq!(
            run(&["°C", "and"], &["18 °C and sunny"]),
            ("18 ".into(), Some(0))
        );
        assert_eq!(m.stops(), ["STOP"]);
    }

    #[test]
    fn multibyte_boundaries() {
        assert_eq!(run(&["é!"], &["caf", "é", "!"]), ("caf".into(), Some(0)));
        assert_eq!(run(&["日本"], &["x日", "y"]), ("x日y".into(), None));
        assert_eq!(run(&["🙂🙂"], &["a🙂", "🙂b"]), ("a".into(), Some(0)));
    }

    /// The longest suffix of `text` that is a proper prefix of `stop`,
    /// by trying every length.
    fn overlap_by_hand(stop: &str, text: &str) -> usize {
        (1..stop.len().min(text.len() + 1))
            .rev()
            .find(|&len| text.ends_with(&stop[..len]))
            .unwrap_or(0)
    }

    #[test]
    fn the_held_overlap_is_every_lengths_longest() {
        // Every stop and text of up to 6 letters over {a, b}.
        let words: Vec<String> = (1..=6u32)
            .flat_map(|n| {
                (0..1u32 << n).map(move |bits| {
                    (0..n)
                        .map(|i| if bits >> i & 1 == 1 { 'b' } else { 'a' })
                        .collect()
                })
            })
            .collect();
        for stop in &words {
            let table = borders(stop.as_bytes());
            for text in &words {
                assert_eq!(
                    overlap(stop.as_bytes(), &table, text.as_bytes()),
                    overlap_by_hand(stop, text),
                    "stop {stop:?} text {text:?}"
                );
            }
        }
    }
}
