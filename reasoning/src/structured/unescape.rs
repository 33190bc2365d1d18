//! JSON string decoding one character at a time: escapes and UTF-16
//! surrogate pairs may be split anywhere across pieces.

use super::StructuredError;

/// Decodes JSON string content one character at a time.
#[derive(Debug, Default)]
pub(super) struct Unescape {
    /// The escape read so far, verbatim (`\`, `\u`, `\u0`, …).
    pub(super) raw: String,
    /// A high surrogate waiting for its low half.
    high: Option<u32>,
}

impl Unescape {
    /// Writes decoded characters to `to`; `Ok(true)` at the closing quote.
    pub(super) fn feed(&mut self, c: char, to: &mut String) -> Result<bool, StructuredError> {
        let plain = match (self.raw.as_str(), c) {
            ("", '\\') | ("\\", 'u') => {
                self.raw.push(c);
                return Ok(false);
            }
            ("", '"') => {
                self.flush_high(to);
                return Ok(true);
            }
            ("", _) | ("\\", '"' | '\\' | '/') => c,
            ("\\", 'b') => '\u{8}',
            ("\\", 'f') => '\u{c}',
            ("\\", 'n') => '\n',
            ("\\", 'r') => '\r',
            ("\\", 't') => '\t',
            (raw, _) if raw.len() > 1 && c.is_ascii_hexdigit() => {
                self.raw.push(c);
                if let Some(hex) = self.raw.get(2..6) {
                    let unit = u32::from_str_radix(hex, 16).unwrap_or(0xFFFD);
                    self.raw.clear();
                    self.unit(unit, to);
                }
                return Ok(false);
            }
            _ => {
                self.flush_high(to);
                return Err(StructuredError::BadEscape);
            }
        };
        self.raw.clear();
        self.flush_high(to);
        to.push(plain);
        Ok(false)
    }

    fn unit(&mut self, unit: u32, to: &mut String) {
        if let (0xDC00..=0xDFFF, Some(high)) = (unit, self.high) {
            self.high = None;
            let c = char::from_u32(0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00));
            to.push(c.unwrap_or(char::REPLACEMENT_CHARACTER));
            return;
        }
        self.flush_high(to);
        if (0xD800..=0xDBFF).contains(&unit) {
            self.high = Some(unit);
        } else {
            // A lone low surrogate is no char: U+FFFD.
            to.push(char::from_u32(unit).unwrap_or(char::REPLACEMENT_CHARACTER));
        }
    }

    pub(super) fn flush_high(&mut self, to: &mut String) {
        if self.high.take().is_some() {
            to.push(char::REPLACEMENT_CHARACTER);
        }
    }
}
