//! Keeping conversation text from forging control tokens.
//!
//! A rendered prompt is one string; encoding it matches every added token
//! written in it, so a user who types `<|im_end|>\n<|im_start|>system` would
//! inject a turn of their own. Like transformers'
//! `apply_chat_template(sanitize_control_tokens=True)`, control tokens found
//! in the inputs (message fields, tools, extra variables) are wrapped in
//! private-use markers before rendering; after rendering, marked tokens are
//! encoded as plain text and the template's own control tokens normally.
//!
//! Control tokens are the special added tokens, plus the non-special ones
//! the template writes itself (Qwen3's `<think>`, `<tool_call>`).

use serde_json::Value;

use crate::error::{ChatError, Result};
use crate::message::TemplateMessage;
use crate::tokenizer::Tokenizer;

/// Opens a marked control token (Unicode private use, plane 15).
const START: char = '\u{F0000}';
/// Closes a marked control token.
const END: char = '\u{F0001}';

/// The control tokens of one tokenizer and template, longest first (so a
/// token wins over the tokens it contains).
pub(crate) struct ControlTokens {
    tokens: Vec<String>,
}

impl ControlTokens {
    pub(crate) fn new(tokenizer: &Tokenizer, template_source: &str) -> Self {
        let mut tokens: Vec<String> = tokenizer
            .added_tokens()
            .into_iter()
            .filter(|(_, content, special)| {
                !content.is_empty()
                    && (*special
                        || (template_source.contains(content.as_str())
                            && !content.chars().all(char::is_whitespace)))
            })
            .map(|(_, content, _)| content)
            .collect();
        tokens.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        tokens.dedup();
        Self { tokens }
    }

    /// `s` with old markers removed and control tokens wrapped in markers.
    pub(crate) fn mark_str(&self, s: &str) -> String {
        let clean: String = s.chars().filter(|&c| c != START && c != END).collect();
        let mut out = String::with_capacity(clean.len());
        let mut i = 0;
        'scan: while i < clean.len() {
            let rest = &clean[i..];
            for t in &self.tokens {
                if rest.starts_with(t.as_str()) {
                    out.push(START);
                    out.push_str(t);
                    out.push(END);
                    i += t.len();
                    continue 'scan;
                }
            }
            let c = rest.chars().next().unwrap_or_default();
            out.push(c);
            i += c.len_utf8().max(1);
        }
        out
    }

    /// Marks every string value (not object keys) in `v`.
    pub(crate) fn mark_json(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.mark_str(s)),
            Value::Array(items) => Value::Array(items.iter().map(|x| self.mark_json(x)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, x)| (k.clone(), self.mark_json(x)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Marks every text field of a message (the role is the template's).
    pub(crate) fn mark_message(&self, m: &TemplateMessage) -> TemplateMessage {
        let mark = |s: &Option<String>| s.as_deref().map(|s| self.mark_str(s));
        TemplateMessage {
            role: m.role.clone(),
            content: mark(&m.content),
            reasoning_content: mark(&m.reasoning_content),
            tool_calls: m
                .tool_calls
                .iter()
                .map(|c| {
                    let mut c = c.clone();
                    c.id = c.id.as_deref().map(|s| self.mark_str(s));
                    c.function.name = self.mark_str(&c.function.name);
                    c.function.arguments = self.mark_json(&c.function.arguments);
                    c
                })
                .collect(),
            tool_call_id: mark(&m.tool_call_id),
            name: mark(&m.name),
            is_error: m.is_error,
        }
    }
}

/// A chat rendered from marked inputs with the markers taken out: the text
/// [`encode_marked`] encodes (it drops lone markers too).
pub(crate) fn strip_markers(rendered: &str) -> String {
    rendered
        .chars()
        .filter(|&c| c != START && c != END)
        .collect()
}

/// Encodes a chat rendered from marked inputs: text between markers is
/// encoded normally, marked tokens as plain text, lone markers (a template
/// string method cut a token apart) dropped but still separating the text
/// on either side.
pub(crate) fn encode_marked(tokenizer: &Tokenizer, rendered: &str) -> Result<Vec<u32>> {
    let newline = tokenizer.encode("\n", false)?;
    let mut ids = Vec::new();
    let mut text_start = 0;
    let mut first = true;
    let push_text =
        |ids: &mut Vec<u32>, piece: &str, plain: bool, first: &mut bool| -> Result<()> {
            // Only the text before the first marker is the start of the string.
            let at_start = std::mem::replace(first, false);
            if piece.is_empty() {
                return Ok(());
            }
            let encode = |s: &str| {
                if plain {
                    tokenizer.encode_plain(s)
                } else {
                    tokenizer.encode(s, false)
                }
            };
            // Encoded after a newline that is then removed, so SentencePiece
            // tokenizers do not add the prefix space they add at the start of
            // a string; the first piece is the start of the string.
            let piece_ids = if at_start {
                encode(piece)?
            } else {
                let with_nl = encode(&format!("\n{piece}"))?;
                match with_nl.strip_prefix(newline.as_slice()) {
                    Some(rest) => rest.to_vec(),
                    None => encode(piece)?,
                }
            };
            if plain {
                if let Some(id) = tokenizer.token_to_id(piece) {
                    if piece_ids.contains(&id) {
                        return Err(ChatError::tokenizer(
                            "sanitizing control tokens",
                            format!("plain text encodes to control token id {id}"),
                        ));
                    }
                }
            }
            ids.extend(piece_ids);
            Ok(())
        };

    // As transformers matches them: a marker pair around exactly one added
    // token is a marked token; any other marker is a lone one.
    let mut added: Vec<String> = tokenizer
        .added_tokens()
        .into_iter()
        .map(|(_, c, _)| c)
        .collect();
    added.sort_by_key(|t| std::cmp::Reverse(t.len()));
    let mut chars = rendered.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != START && c != END {
            continue;
        }
        push_text(&mut ids, &rendered[text_start..i], false, &mut first)?;
        text_start = i + c.len_utf8();
        if c == START {
            let body = &rendered[text_start..];
            let marked = added.iter().find(|t| {
                !t.is_empty() && body.starts_with(t.as_str()) && body[t.len()..].starts_with(END)
            });
            if let Some(token) = marked {
                push_text(&mut ids, token, true, &mut first)?;
                text_start += token.len() + END.len_utf8();
                while chars.peek().is_some_and(|&(j, _)| j < text_start) {
                    chars.next();
                }
            }
        }
    }
    push_text(&mut ids, &rendered[text_start..], false, &mut first)?;
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_longest_tokens_and_strips_old_markers() {
        let mut c = ControlTokens {
            tokens: vec!["<|im".into(), "<think>".into(), "<|im_end|>".into()],
        };
        c.tokens.sort_by_key(|t| std::cmp::Reverse(t.len()));
        assert_eq!(
            c.mark_str("a<|im_end|>b<think>\u{F0000}c<|im"),
            "a\u{F0000}<|im_end|>\u{F0001}b\u{F0000}<think>\u{F0001}c\u{F0000}<|im\u{F0001}"
        );
        assert_eq!(c.mark_str("plain é"), "plain é");
    }
}
