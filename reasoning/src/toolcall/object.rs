//! One call object as it streams in: where its name and `arguments`
//! values start and end, so argument text can be handed out up to the
//! current byte and the call checked once the object closes.

use serde_json::Value;

use super::{CallEvent, ToolCallProblem, parse_arguments};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ValueKind {
    Str,
    Container,
    Scalar,
}

#[derive(Debug)]
pub(super) struct ValueSpan {
    key: String,
    start: usize,
    pub(super) kind: ValueKind,
}

#[derive(Debug)]
pub(super) struct ArgsSpan {
    start: usize,
    end: Option<usize>,
    kind: ValueKind,
    emitted: usize,
}

#[derive(Debug)]
pub(super) struct CallObj {
    pub(super) text: String,
    pub(super) expect_key: bool,
    pub(super) key_start: Option<usize>,
    pub(super) last_key: Option<String>,
    pub(super) pending_value: bool,
    pub(super) value: Option<ValueSpan>,
    name: Option<String>,
    args: Option<ArgsSpan>,
    sent: String,
    started: bool,
}

impl CallObj {
    pub(super) fn new() -> Self {
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

    pub(super) fn begin_value(&mut self, at: usize, kind: ValueKind) {
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

    pub(super) fn end_value(&mut self, end: usize) {
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

    pub(super) fn end_scalar(&mut self, end: usize) {
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
    pub(super) fn pump(&mut self, out: &mut Vec<CallEvent>) {
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
    pub(super) fn finalize(mut self, complete: bool, out: &mut Vec<CallEvent>) {
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
