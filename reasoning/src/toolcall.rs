//! Tool calls: the finished [`ToolCall`] the agent checks, and the
//! incremental parser for JSON calls between tags (Hermes/Qwen
//! `<tool_call>{…}</tool_call>`, Nemotron `<TOOLCALL>[…]</TOOLCALL>`).
//!
//! The parser streams the `arguments` value as it arrives: it tracks JSON
//! strings, escapes and nesting, so it knows the name as soon as its string
//! closes and can hand out argument text up to the current byte without
//! ever including the call object's own closing brace.

use serde_json::Value;

/// A tool call as the model wrote it, complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The id the splitter generated for it.
    pub id: String,
    /// The function name as written (Harmony's `functions.` prefix removed).
    pub name: String,
    /// The arguments JSON text: exactly the concatenation of this call's
    /// argument deltas. `{}` when the model gave none.
    pub arguments: String,
    /// What is wrong with the call's syntax, if anything.
    pub problem: Option<ToolCallProblem>,
}

/// Why a tool call's syntax is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolCallProblem {
    /// The call (or its arguments) is not valid JSON; the parser's message
    /// gives line and column only.
    #[error("tool call is not valid JSON: {0}")]
    InvalidJson(String),
    /// The arguments are valid JSON but not an object.
    #[error("tool call arguments are not a JSON object")]
    ArgumentsNotObject,
    /// Output ended (token limit, stop) before the call was complete.
    #[error("tool call was cut off before it ended")]
    Truncated,
}

/// Why the agent should not execute a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolCallError {
    /// The name is not among the tools offered to the model.
    #[error("the model called a tool that was not offered")]
    UnknownTool {
        /// The name the model used.
        name: String,
    },
    /// The call's syntax is broken.
    #[error(transparent)]
    Problem(#[from] ToolCallProblem),
}

impl ToolCall {
    /// Checks the call against the offered tool names and returns its
    /// parsed arguments: what the agent needs before executing it.
    pub fn validate<'a>(
        &self,
        offered: impl IntoIterator<Item = &'a str>,
    ) -> Result<serde_json::Map<String, Value>, ToolCallError> {
        if let Some(problem) = &self.problem {
            return Err(problem.clone().into());
        }
        if !offered.into_iter().any(|n| n == self.name) {
            return Err(ToolCallError::UnknownTool {
                name: self.name.clone(),
            });
        }
        parse_arguments(&self.arguments).map_err(ToolCallError::from)
    }
}

/// Parses argument text into an object, or says why it is not one.
pub(crate) fn parse_arguments(
    text: &str,
) -> Result<serde_json::Map<String, Value>, ToolCallProblem> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ToolCallProblem::ArgumentsNotObject),
        Err(e) => Err(ToolCallProblem::InvalidJson(e.to_string())),
    }
}

/// What the tagged-call parser tells the splitter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallEvent {
    /// A call's name is known.
    Start { name: String },
    /// More argument text of the current call.
    Args(String),
    /// The current call is complete.
    End {
        arguments: String,
        problem: Option<ToolCallProblem>,
    },
    /// Text that is no call at all (raw, for a visible notice).
    Malformed(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueKind {
    Str,
    Container,
    Scalar,
}

#[derive(Debug)]
struct ValueSpan {
    key: String,
    start: usize,
    kind: ValueKind,
}

#[derive(Debug)]
struct ArgsSpan {
    start: usize,
    end: Option<usize>,
    kind: ValueKind,
    emitted: usize,
}

#[derive(Debug)]
struct CallObj {
    text: String,
    expect_key: bool,
    key_start: Option<usize>,
    last_key: Option<String>,
    pending_value: bool,
    value: Option<ValueSpan>,
    name: Option<String>,
    args: Option<ArgsSpan>,
    sent: String,
    started: bool,
}

impl CallObj {
    fn new() -> Self {
        Self {
            text: String::new(),
            expect_key: true,
            key_start: None,
            last_key: None,
            pending_value: false,
            value: None,
            name: None,
            args: None,
            sent: String::new(),
            started: false,
        }
    }

    fn begin_value(&mut self, at: usize, kind: ValueKind) {
        self.pending_value = false;
        let key = self.last_key.take().unwrap_or_default();
        if (key == "arguments" || key == "parameters") && self.args.is_none() {
            self.args = Some(ArgsSpan {
                start: at,
                end: None,
                kind,
                emitted: at,
            });
        }
        self.value = Some(ValueSpan {
            key,
            start: at,
            kind,
        });
    }

    fn end_value(&mut self, end: usize) {
        let Some(value) = self.value.take() else {
            return;
        };
        if value.key == "name" && value.kind == ValueKind::Str && self.name.is_none() {
            self.name = serde_json::from_str::<String>(&self.text[value.start..end]).ok();
        }
        if let Some(args) = &mut self.args
            && args.start == value.start
        {
            args.end = Some(end);
        }
    }

    fn end_scalar(&mut self, end: usize) {
        if self.value.as_ref().map(|v| v.kind) == Some(ValueKind::Scalar) {
            self.end_value(end);
        }
    }

    fn send(&mut self, delta: String, out: &mut Vec<CallEvent>) {
        if !delta.is_empty() {
            self.sent.push_str(&delta);
            out.push(CallEvent::Args(delta));
        }
    }

    /// Emits what can be emitted: the start once the name is known, then
    /// argument text (objects and arrays as they stream; a string or a
    /// scalar once it is complete, a string decoded).
    fn pump(&mut self, out: &mut Vec<CallEvent>) {
        if !self.started {
            let Some(name) = &self.name else {
                return;
            };
            out.push(CallEvent::Start { name: name.clone() });
            self.started = true;
        }
        let Some(args) = &mut self.args else {
            return;
        };
        let delta = match args.kind {
            ValueKind::Container => {
                let upto = args.end.unwrap_or(self.text.len());
                let delta = self.text[args.emitted..upto].to_owned();
                args.emitted = upto;
                delta
            }
            ValueKind::Str | ValueKind::Scalar => match args.end {
                Some(end) if args.emitted < end => {
                    args.emitted = end;
                    let raw = &self.text[args.start..end];
                    if args.kind == ValueKind::Str {
                        serde_json::from_str::<String>(raw).unwrap_or_else(|_| raw.to_owned())
                    } else {
                        raw.to_owned()
                    }
                }
                _ => String::new(),
            },
        };
        self.send(delta, out);
    }

    /// The call object is complete (`complete`) or was cut off.
    fn finalize(mut self, complete: bool, out: &mut Vec<CallEvent>) {
        self.pump(out);
        if !complete {
            if self.started {
                out.push(CallEvent::End {
                    arguments: self.sent,
                    problem: Some(ToolCallProblem::Truncated),
                });
            } else {
                out.push(CallEvent::Malformed(self.text));
            }
            return;
        }
        let parsed = match serde_json::from_str::<Value>(&self.text) {
            Ok(v) => v,
            Err(e) => {
                if self.started {
                    out.push(CallEvent::End {
                        arguments: self.sent,
                        problem: Some(ToolCallProblem::InvalidJson(e.to_string())),
                    });
                } else {
                    out.push(CallEvent::Malformed(self.text));
                }
                return;
            }
        };
        let Some(name) = parsed.get("name").and_then(Value::as_str) else {
            out.push(CallEvent::Malformed(self.text));
            return;
        };
        let args_value = parsed.get("arguments").or_else(|| parsed.get("parameters"));
        if !self.started {
            // The name was not a plain top-level string while streaming
            // (unusual layout); start now and send the arguments whole.
            out.push(CallEvent::Start {
                name: name.to_owned(),
            });
            self.started = true;
            let whole = match args_value {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => String::new(),
            };
            self.send(whole, out);
        }
        if args_value.is_none() && self.sent.is_empty() {
            self.send("{}".to_owned(), out);
        }
        let problem = match args_value {
            None | Some(Value::Object(_)) => None,
            Some(Value::String(s)) => parse_arguments(s).err(),
            Some(_) => Some(ToolCallProblem::ArgumentsNotObject),
        };
        out.push(CallEvent::End {
            arguments: self.sent,
            problem,
        });
    }
}

/// Incremental parser for the JSON between a pair of tool-call tags.
#[derive(Debug)]
pub(crate) struct TaggedCalls {
    /// Nesting depth at which call objects live: 1 for `{…}`, 2 for `[{…}]`.
    call_depth: usize,
    prefer_list: bool,
    stack: Vec<char>,
    in_str: bool,
    esc: bool,
    obj: Option<CallObj>,
    stray: String,
}

impl TaggedCalls {
    /// A parser for one tagged body; `list` is the family's expectation,
    /// but the first bracket seen decides.
    pub(crate) fn new(list: bool) -> Self {
        Self {
            call_depth: if list { 2 } else { 1 },
            prefer_list: list,
            stack: Vec::new(),
            in_str: false,
            esc: false,
            obj: None,
            stray: String::new(),
        }
    }

    /// Feeds body text.
    pub(crate) fn feed(&mut self, text: &str, out: &mut Vec<CallEvent>) {
        for c in text.chars() {
            self.step(c, out);
        }
        if let Some(obj) = &mut self.obj {
            obj.pump(out);
        }
    }

    fn step(&mut self, c: char, out: &mut Vec<CallEvent>) {
        let depth = self.stack.len();
        if self.obj.is_none() {
            if self.in_str {
                self.outside(c);
                return;
            }
            if depth == 0 && (c == '{' || c == '[') {
                self.call_depth = if c == '[' { 2 } else { 1 };
            }
            if !(c == '{' && depth + 1 == self.call_depth) {
                self.outside(c);
                return;
            }
            self.obj = Some(CallObj::new());
        }
        let call_depth = self.call_depth;
        let Some(obj) = self.obj.as_mut() else {
            return;
        };
        let i = obj.text.len();
        obj.text.push(c);
        if self.in_str {
            if self.esc {
                self.esc = false;
            } else if c == '\\' {
                self.esc = true;
            } else if c == '"' {
                self.in_str = false;
                if depth == call_depth {
                    if let Some(start) = obj.key_start.take() {
                        obj.last_key = serde_json::from_str::<String>(&obj.text[start..=i]).ok();
                        obj.expect_key = false;
                    } else if obj.value.as_ref().map(|v| v.kind) == Some(ValueKind::Str) {
                        obj.end_value(i + 1);
                    }
                }
            }
            return;
        }
        match c {
            '"' => {
                self.in_str = true;
                if depth == call_depth {
                    if obj.expect_key {
                        obj.key_start = Some(i);
                    } else if obj.pending_value {
                        obj.begin_value(i, ValueKind::Str);
                    }
                }
            }
            '{' | '[' => {
                if depth == call_depth && obj.pending_value {
                    obj.begin_value(i, ValueKind::Container);
                }
                self.stack.push(c);
            }
            '}' | ']' => {
                self.stack.pop();
                let now = self.stack.len();
                if now + 1 == call_depth {
                    obj.end_scalar(i);
                    if let Some(obj) = self.obj.take() {
                        obj.finalize(true, out);
                    }
                } else if now == call_depth
                    && obj.value.as_ref().map(|v| v.kind) == Some(ValueKind::Container)
                {
                    obj.end_value(i + 1);
                }
            }
            ':' if depth == call_depth => {
                obj.pending_value = true;
                obj.expect_key = false;
            }
            ',' if depth == call_depth => {
                obj.end_scalar(i);
                obj.expect_key = true;
                obj.pending_value = false;
            }
            c if c.is_whitespace() => {
                if depth == call_depth {
                    obj.end_scalar(i);
                }
            }
            _ => {
                if depth == call_depth && obj.pending_value {
                    obj.begin_value(i, ValueKind::Scalar);
                }
            }
        }
    }

    /// A character outside any call object: list punctuation, whitespace,
    /// or stray text (kept, with its own strings tracked so that a brace
    /// inside a quoted stray string opens nothing).
    fn outside(&mut self, c: char) {
        if !self.in_str {
            let depth = self.stack.len();
            let list = self.call_depth == 2;
            match c {
                '[' if depth == 0 && list => {
                    self.stack.push(c);
                    return;
                }
                ']' if depth == 1 && list => {
                    self.stack.pop();
                    return;
                }
                ',' if depth == 1 && list => return,
                c if c.is_whitespace() && self.stray.is_empty() => return,
                _ => {}
            }
        }
        if c == '"' && !self.esc {
            self.in_str = !self.in_str;
        }
        self.esc = self.in_str && c == '\\' && !self.esc;
        self.stray.push(c);
    }

    /// The body ended (close tag, or end of output): reports a call that
    /// was cut off and any stray text, and resets for the next body.
    pub(crate) fn finish(&mut self, out: &mut Vec<CallEvent>) {
        if let Some(obj) = self.obj.take() {
            obj.finalize(false, out);
        }
        let stray = std::mem::take(&mut self.stray);
        let stray = stray.trim();
        if !stray.is_empty() {
            out.push(CallEvent::Malformed(stray.to_owned()));
        }
        *self = Self::new(self.prefer_list);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(list: bool, pieces: &[&str]) -> Vec<CallEvent> {
        let mut p = TaggedCalls::new(list);
        let mut out = Vec::new();
        for piece in pieces {
            p.feed(piece, &mut out);
        }
        p.finish(&mut out);
        out
    }

    fn merged(events: Vec<CallEvent>) -> Vec<CallEvent> {
        let mut out: Vec<CallEvent> = Vec::new();
        for e in events {
            match (out.last_mut(), e) {
                (Some(CallEvent::Args(a)), CallEvent::Args(b)) => a.push_str(&b),
                (_, e) => out.push(e),
            }
        }
        out
    }

    #[test]
    fn streams_arguments_without_the_closing_brace() {
        let body = "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa}ris\", \"n\": [1, {\"x\": 2}]}}\n";
        let whole = run(false, &[body]);
        let chars: Vec<String> = body.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        let by_char = run(false, &refs);
        let args = "{\"city\": \"Pa}ris\", \"n\": [1, {\"x\": 2}]}";
        let expected = vec![
            CallEvent::Start {
                name: "get_weather".into(),
            },
            CallEvent::Args(args.into()),
            CallEvent::End {
                arguments: args.into(),
                problem: None,
            },
        ];
        assert_eq!(merged(whole), expected);
        assert_eq!(merged(by_char.clone()), expected);
        // The start comes before the arguments are complete.
        assert!(
            by_char
                .iter()
                .filter(|e| matches!(e, CallEvent::Args(_)))
                .count()
                > 5
        );
    }

    #[test]
    fn lists_hold_several_calls() {
        let out = run(
            true,
            &[
                "[{\"name\": \"a\", \"arguments\": {}}, {\"arguments\": {\"k\": 1}, \"name\": \"b\"}]",
            ],
        );
        assert_eq!(
            merged(out),
            vec![
                CallEvent::Start { name: "a".into() },
                CallEvent::Args("{}".into()),
                CallEvent::End {
                    arguments: "{}".into(),
                    problem: None
                },
                CallEvent::Start { name: "b".into() },
                CallEvent::Args("{\"k\": 1}".into()),
                CallEvent::End {
                    arguments: "{\"k\": 1}".into(),
                    problem: None
                },
            ]
        );
    }

    #[test]
    fn string_arguments_are_decoded_and_checked() {
        let out = merged(run(
            false,
            &["{\"name\": \"f\", \"arguments\": \"{\\\"q\\\": \\\"x\\\"}\"}"],
        ));
        assert_eq!(out[1], CallEvent::Args("{\"q\": \"x\"}".into()));
        assert!(matches!(out[2], CallEvent::End { problem: None, .. }));
        let out = merged(run(false, &["{\"name\": \"f\", \"arguments\": 3}"]));
        assert!(matches!(
            out.last(),
            Some(CallEvent::End {
                problem: Some(ToolCallProblem::ArgumentsNotObject),
                ..
            })
        ));
    }

    #[test]
    fn broken_calls_are_reported() {
        // Cut off inside the arguments.
        let out = merged(run(false, &["{\"name\": \"f\", \"arguments\": {\"a\": "]));
        assert_eq!(
            out.last(),
            Some(&CallEvent::End {
                arguments: "{\"a\": ".into(),
                problem: Some(ToolCallProblem::Truncated)
            })
        );
        // No name at all.
        let out = run(false, &["{\"arguments\": {}}"]);
        assert_eq!(
            out,
            vec![CallEvent::Malformed("{\"arguments\": {}}".into())]
        );
        // Not JSON.
        let out = run(false, &["call f(1)"]);
        assert_eq!(out, vec![CallEvent::Malformed("call f(1)".into())]);
        // Complete braces but invalid JSON inside.
        let out = merged(run(false, &["{\"name\": \"f\", \"arguments\": {a: 1}}"]));
        assert!(matches!(
            out.last(),
            Some(CallEvent::End {
                problem: Some(ToolCallProblem::InvalidJson(_)),
                ..
            })
        ));
    }

    #[test]
    fn missing_list_brackets_are_tolerated() {
        let out = merged(run(
            true,
            &["{\"name\": \"a\", \"arguments\": {\"x\": true}}"],
        ));
        assert_eq!(out[0], CallEvent::Start { name: "a".into() });
        assert!(matches!(out[2], CallEvent::End { problem: None, .. }));
    }

    #[test]
    fn validate_checks_name_and_arguments() {
        let call = ToolCall {
            id: "call_0".into(),
            name: "get_weather".into(),
            arguments: "{\"city\": \"Paris\"}".into(),
            problem: None,
        };
        let args = call.validate(["get_weather"]).unwrap();
        assert_eq!(args["city"], "Paris");
        assert_eq!(
            call.validate(["other"]),
            Err(ToolCallError::UnknownTool {
                name: "get_weather".into()
            })
        );
        let bad = ToolCall {
            arguments: "{\"city\": ".into(),
            ..call
        };
        assert!(matches!(
            bad.validate(["get_weather"]),
            Err(ToolCallError::Problem(ToolCallProblem::InvalidJson(_)))
        ));
    }
}
