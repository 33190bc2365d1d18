//! Message content: a plain string or multimodal parts (text, image,
//! audio, video, document), each medium's bytes inline, behind a URL, or
//! held by a provider.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::decode::{from_value, kind_of, tag_index};
use crate::wire::wire_struct;

/// Message content: plain text or a list of parts (user and tool messages,
/// `TOOL_CALL_RESULT`).
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A plain string.
    Text(String),
    /// Multimodal parts.
    Parts(Vec<ContentPart>),
}

impl Content {
    /// The concatenated text parts (media parts are skipped).
    pub fn text(&self) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    ContentPart::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect(),
        }
    }
}

impl Default for Content {
    fn default() -> Self {
        Content::Text(String::new())
    }
}

impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::Text(s)
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::Text(s.to_owned())
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Content::Text(s) => serializer.serialize_str(s),
            Content::Parts(parts) => parts.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match value {
            Value::String(s) => Ok(Content::Text(s)),
            Value::Array(_) => Ok(Content::Parts(from_value(&value)?)),
            other => Err(serde::de::Error::custom(format_args!(
                "invalid type: {}, expected a string or an array of content parts",
                kind_of(&other)
            ))),
        }
    }
}

/// One part of multimodal content, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ContentPart {
    /// `type: "text"`.
    Text(TextPart),
    /// `type: "image"`.
    Image(MediaPart),
    /// `type: "audio"`.
    Audio(MediaPart),
    /// `type: "video"`.
    Video(MediaPart),
    /// `type: "document"`.
    Document(MediaPart),
}

impl<'de> Deserialize<'de> for ContentPart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        const TYPES: [&str; 5] = ["text", "image", "audio", "video", "document"];
        Ok(match tag_index(&value, "type", &TYPES)? {
            0 => ContentPart::Text(from_value(&value)?),
            1 => ContentPart::Image(from_value(&value)?),
            2 => ContentPart::Audio(from_value(&value)?),
            3 => ContentPart::Video(from_value(&value)?),
            _ => ContentPart::Document(from_value(&value)?),
        })
    }
}

wire_struct!(
    /// A text part.
    #[derive(Default)]
    TextPart {
        /// The text.
        text: String,
        /// Optional part id.
        optional id: String,
        /// Any JSON value except `null`.
        optional metadata: Value,
    }
);

wire_struct!(
    /// An image, audio, video or document part.
    MediaPart {
        /// Where the bytes are.
        source: PartSource,
        /// Optional part id.
        optional id: String,
        /// Any JSON value. `null` is read as absent: the official client
        /// tolerates it here for older producers.
        nullable metadata: Value,
    }
);

/// Where a media part's bytes are, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum PartSource {
    /// Inline base64 data.
    Data(DataSource),
    /// A URL.
    Url(UrlSource),
    /// A provider-held file.
    File(FileSource),
}

impl<'de> Deserialize<'de> for PartSource {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(match tag_index(&value, "type", &["data", "url", "file"])? {
            0 => PartSource::Data(from_value(&value)?),
            1 => PartSource::Url(from_value(&value)?),
            _ => PartSource::File(from_value(&value)?),
        })
    }
}

wire_struct!(
    /// Inline base64 bytes.
    #[derive(Default)]
    DataSource {
        /// Base64 data.
        value: String,
        /// MIME type of the decoded bytes.
        mime_type: String,
    }
);

wire_struct!(
    /// Bytes behind a URL.
    #[derive(Default)]
    UrlSource {
        /// The URL.
        value: String,
        /// MIME type, if known.
        optional mime_type: String,
    }
);

wire_struct!(
    /// A file held by some provider.
    #[derive(Default)]
    FileSource {
        /// Provider-specific file reference.
        value: String,
        /// Who holds the file.
        optional provider: String,
        /// MIME type, if known.
        optional mime_type: String,
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode_value;
    use crate::message::Message;
    use serde_json::json;

    #[test]
    fn nested_content_part_path() {
        let v = json!({"id": "u", "role": "user", "content": [
            {"type": "text", "text": "hi"},
            {"type": "image", "source": {"type": "data", "value": "AAAA", "mimeType": 7}}
        ]});
        let err = decode_value::<Message>(&v).unwrap_err();
        assert_eq!(err.path(), "content[1].source.mimeType");
        assert!(err.to_string().contains("expected a string"), "{err}");
    }

    #[test]
    fn content_wrong_type() {
        let v = json!({"id": "u", "role": "user", "content": 5});
        let err = decode_value::<Message>(&v).unwrap_err();
        assert_eq!(err.path(), "content");
    }

    #[test]
    fn content_text_helper() {
        let c = Content::Parts(vec![
            ContentPart::Text(TextPart {
                text: "a".into(),
                ..Default::default()
            }),
            ContentPart::Image(MediaPart {
                source: PartSource::Url(UrlSource {
                    value: "u".into(),
                    mime_type: None,
                }),
                id: None,
                metadata: None,
            }),
            ContentPart::Text(TextPart {
                text: "b".into(),
                ..Default::default()
            }),
        ]);
        assert_eq!(c.text(), "ab");
    }
}
