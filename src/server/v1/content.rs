//! Message content shared by the OpenAI and Anthropic request shapes: a
//! string, or an array of parts of which these text models read the text
//! parts and refuse the rest by path.

use super::error::{ApiError, quoted};
use super::wire::Field;

/// The text of `field` (a string or text parts); `None` when absent.
/// `text_types` names the part types that hold text (`text`,
/// `input_text`, ...).
pub fn text(field: &Field<'_>, text_types: &[&str]) -> Result<Option<String>, ApiError> {
    let Some(value) = field.value else {
        return Ok(None);
    };
    if let Some(text) = value.as_str() {
        return Ok(Some(text.to_owned()));
    }
    if !value.is_array() {
        return Err(field.invalid("must be a string or an array of content parts"));
    }
    let mut text = String::new();
    for part in field.array()? {
        let at = part
            .at()?
            .ok_or_else(|| part.invalid("must be an object"))?;
        let kind = at.get("type").required_str()?;
        if !text_types.contains(&kind) {
            return Err(part.invalid(format!(
                "content parts of type {} are not supported: this model reads text only",
                quoted(kind)
            )));
        }
        text.push_str(at.get("text").required_str()?);
    }
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::server::v1::wire::At;

    #[test]
    fn strings_and_text_parts_read_as_text() {
        let body = json!({"a": "hi", "b": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}],
            "c": [{"type": "image_url", "image_url": {}}]});
        let root = At::root(&body).unwrap();
        assert_eq!(
            text(&root.get("a"), &["text"]).unwrap().as_deref(),
            Some("hi")
        );
        assert_eq!(
            text(&root.get("b"), &["text"]).unwrap().as_deref(),
            Some("xy")
        );
        let err = text(&root.get("c"), &["text"]).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("c[0]"));
        assert_eq!(text(&root.get("d"), &["text"]).unwrap(), None);
    }
}
