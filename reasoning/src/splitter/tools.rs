//! Tool calls as chunks: each call gets an id, a start with its name,
//! streamed argument deltas and an end with the full arguments.

use super::{Chunk, Malformed, MalformedKind, Splitter, push_merged};
use crate::toolcall::{CallEvent, ToolCall};

#[derive(Debug, Clone)]
pub(super) struct OpenCall {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) sent: String,
}

impl Splitter {
    /// Opens a call under the next id and announces it by name.
    pub(super) fn start_call(&mut self, name: String, out: &mut Vec<Chunk>) {
        self.text_emitted = false;
        let id = format!("{}{}", self.id_prefix, self.next_call);
        self.next_call += 1;
        out.push(Chunk::ToolCallStart {
            id: id.clone(),
            name: name.clone(),
        });
        self.call = Some(OpenCall {
            id,
            name,
            sent: String::new(),
        });
    }

    pub(super) fn call_events(&mut self, events: Vec<CallEvent>, out: &mut Vec<Chunk>) {
        for event in events {
            match event {
                CallEvent::Start { name } => self.start_call(name, out),
                CallEvent::Args(delta) => {
                    if let Some(call) = &self.call {
                        push_merged(
                            out,
                            Chunk::ToolCallArgs {
                                id: call.id.clone(),
                                delta,
                            },
                        );
                    }
                }
                CallEvent::End { arguments, problem } => {
                    if let Some(call) = self.call.take() {
                        out.push(Chunk::ToolCallEnd(ToolCall {
                            id: call.id,
                            name: call.name,
                            arguments,
                            problem,
                        }));
                    }
                }
                CallEvent::Malformed(raw) => out.push(Chunk::Malformed(Malformed {
                    kind: MalformedKind::ToolCall,
                    raw,
                })),
            }
        }
    }

    pub(super) fn end_tool_body(&mut self, out: &mut Vec<Chunk>) {
        let mut events = Vec::new();
        if let Some(mut calls) = self.calls.take() {
            calls.finish(&mut events);
        }
        self.call_events(events, out);
    }
}
