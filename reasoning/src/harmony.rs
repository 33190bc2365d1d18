//! Harmony (gpt-oss) message headers: the text between `<|start|>` and
//! `<|message|>`, e.g. `assistant<|channel|>commentary to=functions.get_weather <|constrain|>json`.
//! The recipient may sit in the role part or the channel part
//! (<https://github.com/openai/harmony/blob/main/docs/format.md>, "Receiving
//! tool calls").

pub(crate) const START: &str = "<|start|>";
pub(crate) const END: &str = "<|end|>";
pub(crate) const MESSAGE: &str = "<|message|>";
pub(crate) const CHANNEL: &str = "<|channel|>";
pub(crate) const CONSTRAIN: &str = "<|constrain|>";
pub(crate) const RETURN: &str = "<|return|>";
pub(crate) const CALL: &str = "<|call|>";

/// How an analysis (reasoning) message's header begins after the role.
pub(crate) const ANALYSIS_HEADER: &str = "<|channel|>analysis";

/// Longest header accepted; a model that never writes `<|message|>` must
/// not make the splitter buffer without bound.
pub(crate) const MAX_HEADER: usize = 512;

/// What a header says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Header {
    pub channel: Option<String>,
    pub recipient: Option<String>,
    pub content_type: Option<String>,
}

fn clean(word: &str) -> Option<String> {
    let word = word.trim();
    (!word.is_empty()).then(|| word.to_owned())
}

/// Parses a header's text (markers `<|channel|>` and `<|constrain|>`
/// included as text).
pub(crate) fn parse_header(raw: &str) -> Header {
    let (main, constrain) = match raw.split_once(CONSTRAIN) {
        Some((main, c)) => (main, c.split_whitespace().next().and_then(clean)),
        None => (raw, None),
    };
    let (role_part, channel_part) = match main.split_once(CHANNEL) {
        Some((role, channel)) => (role, channel),
        None => (main, ""),
    };
    let recipient = role_part
        .split_whitespace()
        .chain(channel_part.split_whitespace())
        .find_map(|w| w.strip_prefix("to=").and_then(clean));
    let mut words = channel_part
        .split_whitespace()
        .filter(|w| !w.starts_with("to="));
    let channel = words.next().and_then(clean);
    let content_type = constrain.or_else(|| words.next().and_then(clean));
    Header {
        channel,
        recipient,
        content_type,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_only() {
        let h = parse_header("<|channel|>analysis");
        assert_eq!(h.channel.as_deref(), Some("analysis"));
        assert_eq!(h.recipient, None);
        let h = parse_header("assistant<|channel|>final");
        assert_eq!(h.channel.as_deref(), Some("final"));
    }

    #[test]
    fn recipient_in_channel_or_role_part() {
        let h = parse_header(
            "assistant<|channel|>commentary to=functions.get_weather <|constrain|>json",
        );
        assert_eq!(h.channel.as_deref(), Some("commentary"));
        assert_eq!(h.recipient.as_deref(), Some("functions.get_weather"));
        assert_eq!(h.content_type.as_deref(), Some("json"));
        let h = parse_header("assistant to=functions.lookup<|channel|>commentary json");
        assert_eq!(h.recipient.as_deref(), Some("functions.lookup"));
        assert_eq!(h.channel.as_deref(), Some("commentary"));
        assert_eq!(h.content_type.as_deref(), Some("json"));
    }

    #[test]
    fn empty_header() {
        assert_eq!(parse_header(""), Header::default());
    }
}
