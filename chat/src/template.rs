//! Chat templates: the Jinja program a model ships to turn a conversation
//! into its prompt text, run with minijinja the way Hugging Face
//! transformers runs it with Jinja2.
//!
//! What transformers sets up, and this reproduces: `trim_blocks` and
//! `lstrip_blocks`; loop controls; `tojson` as Python's `json.dumps`
//! (non-ASCII kept, no HTML escaping); the globals `raise_exception` and
//! `strftime_now`; Python string and dict methods (`.strip()`,
//! `.startswith()`, `.items()`…); the variables `messages`, `tools`,
//! `documents`, `add_generation_prompt`, the special-token strings
//! (`bos_token`, `eos_token`…) and any extra keyword arguments
//! (`enable_thinking`); the `{% generation %}` tag (a no-op when not
//! tracking assistant tokens).
//!
//! ```
//! use thinkwire_chat::{ChatTemplate, RenderOptions, TemplateMessage};
//!
//! let t = ChatTemplate::new(
//!     "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}\
//!      {% if add_generation_prompt %}<|assistant|>{% endif %}",
//! )?;
//! let prompt = t.render(&[TemplateMessage::user("Hi")], &RenderOptions::generation())?;
//! assert_eq!(prompt, "<|user|>Hi\n<|assistant|>");
//! # Ok::<(), thinkwire_chat::ChatError>(())
//! ```

use std::time::{SystemTime, UNIX_EPOCH};

use minijinja::value::{Kwargs, Serde};
use minijinja::{Environment, Error, ErrorKind, State, Value};
use serde_json::{Map, Value as Json};

use crate::error::{ChatError, Result};
use crate::message::TemplateMessage;
use crate::pyjson::{DumpOptions, dumps};

const TEMPLATE_NAME: &str = "chat_template";
/// Context variable holding the render's clock (seconds since the epoch);
/// a name no template uses.
const NOW_VAR: &str = "__thinkwire_now__";

/// A compiled chat template. Cheap to render many times; `Send + Sync`.
pub struct ChatTemplate {
    source: String,
    env: Environment<'static>,
    special_tokens: Map<String, Json>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("source_len", &self.source.len())
            .field("special_tokens", &self.special_tokens)
            .finish()
    }
}

/// Everything a render takes besides the messages.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// End with the header of a new assistant turn, for generation.
    pub add_generation_prompt: bool,
    /// Tool schemas (`{"type": "function", "function": {...}}`), or `None`
    /// (the template sees `tools` as none).
    pub tools: Option<Vec<Json>>,
    /// Documents for retrieval templates, or `None`.
    pub documents: Option<Vec<Json>>,
    /// Extra variables, e.g. `enable_thinking: false`; they override the
    /// special-token strings of the same name, as in transformers.
    pub extra: Map<String, Json>,
    /// The time `strftime_now` sees; the current time when `None`.
    pub now: Option<SystemTime>,
}

impl RenderOptions {
    /// Options for a generation prompt (`add_generation_prompt = true`).
    pub fn generation() -> Self {
        Self {
            add_generation_prompt: true,
            ..Self::default()
        }
    }

    /// Sets the tool schemas.
    #[must_use]
    pub fn with_tools(mut self, tools: Vec<Json>) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Sets one extra variable.
    #[must_use]
    pub fn with_var(mut self, name: impl Into<String>, value: Json) -> Self {
        self.extra.insert(name.into(), value);
        self
    }

    /// Fixes the clock `strftime_now` reads (for reproducible prompts).
    #[must_use]
    pub fn with_now(mut self, now: SystemTime) -> Self {
        self.now = Some(now);
        self
    }
}

impl ChatTemplate {
    /// Compiles a template source.
    pub fn new(source: impl Into<String>) -> Result<Self> {
        let source = source.into();
        let mut env = Environment::new();
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(true)
                .lstrip_blocks(true)
                .build()
                .map_err(|e| ChatError::TemplateSyntax(e.to_string()))?,
        );
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_filter("tojson", tojson);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_template_owned(TEMPLATE_NAME, without_generation_tags(&source))
            .map_err(|e| ChatError::TemplateSyntax(describe(&e)))?;
        Ok(Self {
            source,
            env,
            special_tokens: Map::new(),
        })
    }

    /// Sets the special-token strings the template sees (`bos_token`,
    /// `eos_token`, `pad_token`, `unk_token`…).
    #[must_use]
    pub fn with_special_tokens<I, K, V>(mut self, tokens: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.special_tokens = tokens
            .into_iter()
            .map(|(k, v)| (k.into(), Json::String(v.into())))
            .collect();
        self
    }

    /// The template source as the model ships it (the reasoning-format
    /// registry fingerprints it).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The special-token strings set with
    /// [`ChatTemplate::with_special_tokens`].
    pub fn special_tokens(&self) -> &Map<String, Json> {
        &self.special_tokens
    }

    /// Renders the prompt text for `messages`.
    pub fn render(&self, messages: &[TemplateMessage], options: &RenderOptions) -> Result<String> {
        let mut ctx = self.special_tokens.clone();
        ctx.extend(options.extra.clone());
        ctx.insert(
            "messages".into(),
            Json::Array(
                messages
                    .iter()
                    .map(TemplateMessage::to_template_value)
                    .collect(),
            ),
        );
        ctx.insert(
            "tools".into(),
            options.tools.clone().map_or(Json::Null, Json::Array),
        );
        ctx.insert(
            "documents".into(),
            options.documents.clone().map_or(Json::Null, Json::Array),
        );
        ctx.insert(
            "add_generation_prompt".into(),
            Json::Bool(options.add_generation_prompt),
        );
        let now = options.now.unwrap_or_else(SystemTime::now);
        let secs = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        ctx.insert(NOW_VAR.into(), Json::from(secs));

        let template = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(|e| ChatError::TemplateRender(describe(&e)))?;
        template
            .render(Value::from(Serde(Json::Object(ctx))))
            .map_err(|e| ChatError::TemplateRender(describe(&e)))
    }
}

/// An error's message with its location, never the values involved (they
/// may be conversation text).
fn describe(e: &Error) -> String {
    match (e.name(), e.line()) {
        (Some(name), Some(line)) => format!(
            "{} ({name}:{line})",
            e.detail().unwrap_or(&e.kind().to_string())
        ),
        _ => e.to_string(),
    }
}

/// Replaces `{% generation %}` / `{% endgeneration %}` (transformers'
/// assistant-mask extension) by an always-true `if`, keeping whitespace
/// control markers so trimming is unchanged.
fn without_generation_tags(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(start) = rest.find("{%") {
        out.push_str(&rest[..start]);
        let tag = &rest[start..];
        let Some(end) = tag.find("%}") else {
            out.push_str(tag);
            return out;
        };
        let inner = &tag[2..end];
        let (open_ctl, body) = match inner.chars().next() {
            Some(c @ ('-' | '+')) => (c.to_string(), &inner[1..]),
            _ => (String::new(), inner),
        };
        let (body, close_ctl) = match body
            .trim_end_matches([' ', '\t', '\n', '\r'])
            .chars()
            .last()
        {
            Some(c @ ('-' | '+')) => {
                let trimmed = body.trim_end_matches([' ', '\t', '\n', '\r']);
                (&trimmed[..trimmed.len() - 1], c.to_string())
            }
            _ => (body, String::new()),
        };
        let replacement = match body.trim() {
            "generation" => Some("if true"),
            "endgeneration" => Some("endif"),
            _ => None,
        };
        match replacement {
            Some(r) => out.push_str(&format!("{{%{open_ctl} {r} {close_ctl}%}}")),
            None => out.push_str(&tag[..end + 2]),
        }
        rest = &tag[end + 2..];
    }
    out.push_str(rest);
    out
}

fn tojson(value: Value, kwargs: Kwargs) -> std::result::Result<Value, Error> {
    let opts = DumpOptions::from_kwargs(&kwargs)?;
    Ok(Value::from_safe_string(dumps(&value, &opts)?))
}

fn raise_exception(message: String) -> std::result::Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

fn strftime_now(state: &State, format: String) -> std::result::Result<String, Error> {
    let secs = state
        .lookup(NOW_VAR)
        .and_then(|v| v.as_i64())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0))
        });
    Ok(strftime(&format, secs))
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Civil date from days since 1970-01-01 (proleptic Gregorian), after
/// Howard Hinnant's `civil_from_days`.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        u32::try_from(m).unwrap_or(1),
        u32::try_from(d).unwrap_or(1),
    )
}

/// Python's `datetime.strftime` for the directives chat templates use, in
/// UTC. Unknown directives are copied as they are.
pub(crate) fn strftime(format: &str, unix_secs: i64) -> String {
    let days = unix_secs.div_euclid(86_400);
    let secs = unix_secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second) = (secs / 3600, secs / 60 % 60, secs % 60);
    // 1970-01-01 was a Thursday (index 3 from Monday).
    let weekday = usize::try_from((days + 3).rem_euclid(7)).unwrap_or(0);
    let day_of_year = days - days_from_civil(year, 1, 1) + 1;
    let month_name = MONTHS[(month as usize).saturating_sub(1) % 12];
    let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };

    let mut out = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        // glibc's "%-d" (no padding) is common in templates.
        let no_pad = chars.peek() == Some(&'-');
        if no_pad {
            chars.next();
        }
        let pad2 = |n: i64| {
            if no_pad {
                n.to_string()
            } else {
                format!("{n:02}")
            }
        };
        match chars.next() {
            Some('Y') => out.push_str(&year.to_string()),
            Some('y') => out.push_str(&pad2(year.rem_euclid(100))),
            Some('m') => out.push_str(&pad2(i64::from(month))),
            Some('d') => out.push_str(&pad2(i64::from(day))),
            Some('e') => out.push_str(&format!("{day:>2}")),
            Some('H') => out.push_str(&pad2(hour)),
            Some('I') => out.push_str(&pad2(hour12)),
            Some('M') => out.push_str(&pad2(minute)),
            Some('S') => out.push_str(&pad2(second)),
            Some('p') => out.push_str(if hour < 12 { "AM" } else { "PM" }),
            Some('j') => out.push_str(&if no_pad {
                day_of_year.to_string()
            } else {
                format!("{day_of_year:03}")
            }),
            Some('B') => out.push_str(month_name),
            Some('b') | Some('h') => out.push_str(&month_name[..3]),
            Some('A') => out.push_str(DAYS[weekday]),
            Some('a') => out.push_str(&DAYS[weekday][..3]),
            Some('Z') => out.push_str("UTC"),
            Some('z') => out.push_str("+0000"),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                if no_pad {
                    out.push('-');
                }
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Days since 1970-01-01 of a civil date (inverse of `civil_from_days`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(src: &str, msgs: &[TemplateMessage], opts: &RenderOptions) -> Result<String> {
        ChatTemplate::new(src)?.render(msgs, opts)
    }

    #[test]
    fn jinja2_whitespace_rules() {
        // trim_blocks eats the newline after a block tag; lstrip_blocks the
        // indentation before it; the final newline of the source is dropped.
        let src = "{% for m in messages %}\n    {% if m.content %}\n[{{ m.content }}]\n    {% endif %}\n{% endfor %}\n";
        let out = render(
            src,
            &[TemplateMessage::user("a"), TemplateMessage::user("b")],
            &RenderOptions::default(),
        )
        .unwrap();
        assert_eq!(out, "[a]\n[b]\n");
    }

    #[test]
    fn python_methods_and_tojson() {
        let src = "{{ messages[0].content.strip().upper() }}|{{ messages[0].content.split('x')|length }}|\
                   {{ tools[0] | tojson }}|{{ {'a': [1, 2.5]} | tojson(indent=2) }}";
        let opts = RenderOptions::default().with_tools(vec![json!({"name": "f", "desc": "é<&>"})]);
        let out = render(src, &[TemplateMessage::user(" axb ")], &opts).unwrap();
        assert_eq!(
            out,
            "AXB|2|{\"name\": \"f\", \"desc\": \"é<&>\"}|{\n  \"a\": [\n    1,\n    2.5\n  ]\n}"
        );
    }

    #[test]
    fn raise_exception_reports_the_message() {
        let e = render(
            "{{ raise_exception('roles must alternate') }}",
            &[],
            &RenderOptions::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("roles must alternate"), "{e}");
    }

    #[test]
    fn variables_like_transformers() {
        let src = "{{ bos_token }}|{{ tools is none }}|{{ enable_thinking is false }}|{{ add_generation_prompt }}|{{ undefined_thing is defined }}";
        let t = ChatTemplate::new(src)
            .unwrap()
            .with_special_tokens([("bos_token", "<s>")]);
        let out = t
            .render(
                &[],
                &RenderOptions::generation().with_var("enable_thinking", json!(false)),
            )
            .unwrap();
        // Jinja2 prints booleans as Python does.
        assert_eq!(out, "<s>|True|True|True|False");
    }

    #[test]
    fn generation_tags_are_transparent() {
        let src = "{% for m in messages %}{%- generation -%}\n {{ m.content }} {%- endgeneration %}\n{% endfor %}";
        let out = render(
            src,
            &[TemplateMessage::assistant("x")],
            &RenderOptions::default(),
        )
        .unwrap();
        assert_eq!(out, "x");
        assert_eq!(
            without_generation_tags("{% generation %}a{%- endgeneration -%}"),
            "{% if true %}a{%- endif -%}"
        );
    }

    #[test]
    fn strftime_matches_python() {
        // 2024-02-29 13:05:09 UTC, a Thursday; Python:
        // datetime(2024,2,29,13,5,9).strftime(...)
        let t = 1_709_211_909;
        assert_eq!(strftime("%d %b %Y", t), "29 Feb 2024");
        assert_eq!(strftime("%Y-%m-%d %H:%M:%S", t), "2024-02-29 13:05:09");
        assert_eq!(
            strftime("%A %B %-d, %I %p, day %j", t),
            "Thursday February 29, 01 PM, day 060"
        );
        assert_eq!(strftime("%a %y %% %Q", 0), "Thu 70 % %Q");
        let out = render(
            "{{ strftime_now('%d %B %Y') }}",
            &[],
            &RenderOptions::default()
                .with_now(UNIX_EPOCH + std::time::Duration::from_secs(t as u64)),
        )
        .unwrap();
        assert_eq!(out, "29 February 2024");
    }

    #[test]
    fn errors_do_not_echo_values() {
        let e = render(
            "{{ messages[0].content + 1 }}",
            &[TemplateMessage::user("secret words")],
            &RenderOptions::default(),
        )
        .unwrap_err();
        assert!(!e.to_string().contains("secret"), "{e}");
        assert!(matches!(
            ChatTemplate::new("{% if %}"),
            Err(ChatError::TemplateSyntax(_))
        ));
    }
}
