//! The body between a pair of tool-call tags: JSON nesting, strings and
//! escapes are tracked character by character to find each call object,
//! whether the body holds one object or a list of them; text that is no
//! call is reported.

use super::CallEvent;
use super::object::{CallObj, ValueKind};

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
    use crate::toolcall::ToolCallProblem;

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
}
