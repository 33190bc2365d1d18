//! Python's `json.dumps`, as Hugging Face's `tojson` template filter calls
//! it: non-ASCII kept, `", "` and `": "` separators, optional indent and
//! key sorting, floats written as Python's `repr` writes them.
//!
//! Chat templates print tool schemas and tool-call arguments with `tojson`;
//! the model was trained on Python's spelling of that JSON, so byte-exact
//! output matters (minijinja's own `tojson` escapes `<`, `>`, `&` and `'`
//! for HTML and writes no spaces).

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

/// Options of `json.dumps` that templates use.
#[derive(Debug, Clone, Default)]
pub struct DumpOptions {
    /// `indent`: `None` for one line, else the string repeated per level.
    pub indent: Option<String>,
    /// `separators` as `(item, key)`; defaults depend on `indent`.
    pub separators: Option<(String, String)>,
    /// `sort_keys`.
    pub sort_keys: bool,
    /// `ensure_ascii` (Hugging Face defaults it to false).
    pub ensure_ascii: bool,
}

impl DumpOptions {
    /// Reads the filter's keyword arguments.
    pub fn from_kwargs(kwargs: &Kwargs) -> Result<Self, Error> {
        let mut opts = Self::default();
        if let Some(indent) = kwargs.get::<Option<Value>>("indent")? {
            opts.indent = match indent.kind() {
                ValueKind::None | ValueKind::Undefined => None,
                ValueKind::Number => {
                    let n = indent
                        .as_i64()
                        .ok_or_else(|| bad("indent must be an integer"))?;
                    Some(" ".repeat(usize::try_from(n.max(0)).unwrap_or(0)))
                }
                ValueKind::String => Some(indent.as_str().unwrap_or_default().to_owned()),
                _ => return Err(bad("indent must be an integer or a string")),
            };
        }
        if let Some(seps) = kwargs.get::<Option<Value>>("separators")? {
            if !seps.is_none() && !seps.is_undefined() {
                let items: Vec<Value> = seps.try_iter()?.collect();
                match items.as_slice() {
                    [a, b] => {
                        opts.separators = Some((
                            a.as_str()
                                .ok_or_else(|| bad("separators must be strings"))?
                                .to_owned(),
                            b.as_str()
                                .ok_or_else(|| bad("separators must be strings"))?
                                .to_owned(),
                        ));
                    }
                    _ => return Err(bad("separators must be a pair")),
                }
            }
        }
        opts.sort_keys = kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false);
        opts.ensure_ascii = kwargs.get::<Option<bool>>("ensure_ascii")?.unwrap_or(false);
        kwargs.assert_all_used()?;
        Ok(opts)
    }
}

fn bad(msg: &str) -> Error {
    Error::new(ErrorKind::InvalidOperation, format!("tojson: {msg}"))
}

/// `json.dumps(value, **opts)`.
pub fn dumps(value: &Value, opts: &DumpOptions) -> Result<String, Error> {
    let (item_sep, key_sep) = match &opts.separators {
        Some((a, b)) => (a.clone(), b.clone()),
        None if opts.indent.is_some() => (",".to_owned(), ": ".to_owned()),
        None => (", ".to_owned(), ": ".to_owned()),
    };
    let mut w = Writer {
        out: String::new(),
        opts,
        item_sep,
        key_sep,
    };
    w.value(value, 0)?;
    Ok(w.out)
}

struct Writer<'a> {
    out: String,
    opts: &'a DumpOptions,
    item_sep: String,
    key_sep: String,
}

/// Deeper nesting than this is refused rather than risking the stack.
const MAX_DEPTH: usize = 128;

impl Writer<'_> {
    fn newline(&mut self, depth: usize) {
        if let Some(indent) = &self.opts.indent {
            self.out.push('\n');
            for _ in 0..depth {
                self.out.push_str(indent);
            }
        }
    }

    fn value(&mut self, v: &Value, depth: usize) -> Result<(), Error> {
        if depth > MAX_DEPTH {
            return Err(bad("value nested too deeply"));
        }
        match v.kind() {
            ValueKind::None => self.out.push_str("null"),
            ValueKind::Bool => self
                .out
                .push_str(if v.is_true() { "true" } else { "false" }),
            ValueKind::Number => self.number(v)?,
            ValueKind::String => self.string(v.as_str().unwrap_or_default()),
            ValueKind::Seq | ValueKind::Iterable => {
                let items: Vec<Value> = v.try_iter()?.collect();
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(&self.item_sep.clone());
                    }
                    self.newline(depth + 1);
                    self.value(item, depth + 1)?;
                }
                if !items.is_empty() {
                    self.newline(depth);
                }
                self.out.push(']');
            }
            ValueKind::Map => {
                let mut entries = Vec::new();
                for key in v.try_iter()? {
                    let item = v.get_item(&key)?;
                    entries.push((self.key(&key)?, item));
                }
                if self.opts.sort_keys {
                    entries.sort_by(|a, b| a.0.cmp(&b.0));
                }
                self.out.push('{');
                for (i, (key, item)) in entries.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(&self.item_sep.clone());
                    }
                    self.newline(depth + 1);
                    self.string(key);
                    self.out.push_str(&self.key_sep.clone());
                    self.value(item, depth + 1)?;
                }
                if !entries.is_empty() {
                    self.newline(depth);
                }
                self.out.push('}');
            }
            ValueKind::Undefined => {
                return Err(bad("Object of type Undefined is not JSON serializable"));
            }
            other => {
                return Err(bad(&format!(
                    "Object of kind {other} is not JSON serializable"
                )));
            }
        }
        Ok(())
    }

    /// Dict keys as Python's encoder coerces them.
    fn key(&self, key: &Value) -> Result<String, Error> {
        Ok(match key.kind() {
            ValueKind::String => key.as_str().unwrap_or_default().to_owned(),
            ValueKind::None => "null".to_owned(),
            ValueKind::Bool => if key.is_true() { "true" } else { "false" }.to_owned(),
            ValueKind::Number => {
                let mut w = Writer {
                    out: String::new(),
                    opts: self.opts,
                    item_sep: String::new(),
                    key_sep: String::new(),
                };
                w.number(key)?;
                w.out
            }
            other => {
                return Err(bad(&format!(
                    "keys must be str, int, float, bool or None, not {other}"
                )));
            }
        })
    }

    fn number(&mut self, v: &Value) -> Result<(), Error> {
        if v.is_integer() {
            let n = i128::try_from(v.clone())?;
            self.out.push_str(&n.to_string());
        } else {
            let f = f64::try_from(v.clone())?;
            self.out.push_str(&float_repr(f));
        }
        Ok(())
    }

    fn string(&mut self, s: &str) {
        self.out.push('"');
        for c in s.chars() {
            match c {
                '"' => self.out.push_str("\\\""),
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                '\r' => self.out.push_str("\\r"),
                '\t' => self.out.push_str("\\t"),
                '\u{8}' => self.out.push_str("\\b"),
                '\u{c}' => self.out.push_str("\\f"),
                c if (c as u32) < 0x20 => self.out.push_str(&format!("\\u{:04x}", c as u32)),
                c if self.opts.ensure_ascii && !c.is_ascii() => {
                    let mut buf = [0u16; 2];
                    for unit in c.encode_utf16(&mut buf) {
                        self.out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
                c => self.out.push(c),
            }
        }
        self.out.push('"');
    }
}

/// Python's `repr(float)`: the shortest digits that round-trip, fixed
/// notation for exponents -4..16, scientific (`1e+16`, `1.5e-07`) outside.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "-1.2345e-7".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let n = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let body = if (-4..16).contains(&exp) {
        if exp < 0 {
            let zeros = "0".repeat(usize::try_from(-exp - 1).unwrap_or(0));
            format!("0.{zeros}{digits}")
        } else if exp + 1 >= n {
            let zeros = "0".repeat(usize::try_from(exp + 1 - n).unwrap_or(0));
            format!("{digits}{zeros}.0")
        } else {
            let point = usize::try_from(exp + 1).unwrap_or(0);
            format!("{}.{}", &digits[..point], &digits[point..])
        }
    } else {
        let mant = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits.clone()
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{esign}{:02}", exp.abs())
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_like_python_repr() {
        // Expected strings are Python 3's repr of the same doubles.
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (123456789012345.6, "123456789012345.6"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e100, "1e+100"),
            (-0.0, "-0.0"),
            (2.71, "2.71"),
            (100.0, "100.0"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
        ];
        for (f, want) in cases {
            assert_eq!(float_repr(f), want, "{f}");
        }
    }

    #[test]
    fn dumps_like_python() {
        let v = Value::from(minijinja::value::Serde(serde_json::json!({
            "b": [1, 2.0, "é<&>'", null, true],
            "a": {"x": "line\n\t\"q\"\u{1}"},
            "e": [],
            "f": {}
        })));
        let plain = dumps(&v, &DumpOptions::default()).unwrap();
        assert_eq!(
            plain,
            r#"{"b": [1, 2.0, "é<&>'", null, true], "a": {"x": "line\n\t\"q\"\u0001"}, "e": [], "f": {}}"#
        );
        let opts = DumpOptions {
            indent: Some("  ".into()),
            sort_keys: true,
            ..DumpOptions::default()
        };
        assert_eq!(
            dumps(&v, &opts).unwrap(),
            "{\n  \"a\": {\n    \"x\": \"line\\n\\t\\\"q\\\"\\u0001\"\n  },\n  \"b\": [\n    1,\n    2.0,\n    \"é<&>'\",\n    null,\n    true\n  ],\n  \"e\": [],\n  \"f\": {}\n}"
        );
        let ascii = DumpOptions {
            ensure_ascii: true,
            ..DumpOptions::default()
        };
        assert_eq!(
            dumps(&Value::from("é🙂"), &ascii).unwrap(),
            r#""\u00e9\ud83d\ude42""#
        );
    }
}
