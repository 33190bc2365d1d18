//! Stop sequences (`stop`, `stop_sequences`), applied to the answer text
//! as it streams: text that could be the start of a stop sequence is held
//! back until it is known not to be one; at a match, the text before it is
//! released, nothing after it is, and the run is asked to stop.

/// Answer text, watched for stop sequences.
#[derive(Debug, Default)]
pub struct StopText {
    stops: Vec<String>,
    held: String,
    matched: Option<String>,
}

impl StopText {
    /// Watches for `stops` (empty strings are ignored).
    pub fn new(stops: Vec<String>) -> Self {
        Self {
            stops: stops.into_iter().filter(|s| !s.is_empty()).collect(),
            ..Self::default()
        }
    }

    /// Whether there is anything to watch for.
    pub fn is_active(&self) -> bool {
        !self.stops.is_empty()
    }

    /// The stop sequence met, once one was.
    pub fn matched(&self) -> Option<&str> {
        self.matched.as_deref()
    }

    /// Feeds `delta`; returns the text that can be shown now.
    pub fn push(&mut self, delta: &str) -> String {
        if self.matched.is_some() {
            return String::new();
        }
        self.held.push_str(delta);
        let first = self
            .stops
            .iter()
            .filter_map(|stop| self.held.find(stop.as_str()).map(|at| (at, stop)))
            .min_by_key(|(at, _)| *at);
        if let Some((at, stop)) = first {
            self.matched = Some(stop.clone());
            let shown = self.held[..at].to_owned();
            self.held.clear();
            return shown;
        }
        // Keep the longest tail that a stop sequence could still complete.
        let keep = self
            .held
            .char_indices()
            .map(|(i, _)| i)
            .find(|&i| {
                let tail = &self.held[i..];
                self.stops.iter().any(|stop| stop.starts_with(tail))
            })
            .unwrap_or(self.held.len());
        let rest = self.held.split_off(keep);
        std::mem::replace(&mut self.held, rest)
    }

    /// The text still held when the answer ends without a match.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], deltas: &[&str]) -> (String, Option<String>) {
        let mut text = StopText::new(stops.iter().map(|s| (*s).to_owned()).collect());
        let mut shown: String = deltas.iter().map(|d| text.push(d)).collect();
        shown.push_str(&text.finish());
        (shown, text.matched().map(str::to_owned))
    }

    #[test]
    fn stops_at_a_sequence_split_across_deltas() {
        assert_eq!(
            run(&["END"], &["Paris is the cap", "ital. E", "ND more"]),
            ("Paris is the capital. ".into(), Some("END".into()))
        );
    }

    #[test]
    fn releases_a_false_start() {
        assert_eq!(run(&["END"], &["E", "N", "x"]), ("ENx".into(), None));
        assert_eq!(run(&["\n\n"], &["a\n", "b"]), ("a\nb".into(), None));
    }

    #[test]
    fn the_earliest_match_wins_and_multibyte_text_is_safe() {
        assert_eq!(
            run(&["°C", "and"], &["18 °C and sunny"]),
            ("18 ".into(), Some("°C".into()))
        );
        assert_eq!(run(&["é!"], &["café", " ok"]), ("café ok".into(), None));
    }

    #[test]
    fn held_text_is_released_as_soon_as_it_cannot_match() {
        let mut text = StopText::new(vec!["STOP".into()]);
        assert_eq!(text.push("hello S"), "hello ");
        assert_eq!(text.push("T"), "");
        assert_eq!(text.push("x"), "STx");
    }
}
