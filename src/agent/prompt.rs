//! What the agent adds to a conversation before the chat template sees it:
//! the application's context, thinking flags where the format wants them,
//! the separate pass's system prompts, tools in the shape templates expect. Plain functions on turns,
//! so they are tested without a model.

use serde_json::{Value, json};
use thinkwire_protocol::{Context, Tool};
use thinkwire_reasoning::FlagPosition;

use super::history::Turn;
use super::model::{LocalModel, Prompt};
use super::rejection::{RejectKind, RunRejected};

/// `turns` with `system` as the system prompt: replacing the first system
/// turn's text would lose the operator's instructions, so it is put first
/// and the existing system text follows.
pub(super) fn with_system(turns: &[Turn], system: &str) -> Vec<Turn> {
    let mut out = Vec::with_capacity(turns.len() + 1);
    match turns.split_first() {
        Some((first, rest)) if first.role == "system" => {
            let mut merged = first.clone();
            let existing = merged.content.take().unwrap_or_default();
            merged.content = Some(if existing.is_empty() {
                system.to_owned()
            } else {
                format!("{system}\n\n{existing}")
            });
            out.push(merged);
            out.extend_from_slice(rest);
        }
        _ => {
            out.push(system_turn(system));
            out.extend_from_slice(turns);
        }
    }
    out
}

/// The run's AG-UI `context` (what the application says the agent should
/// know: the page, the user's selection, app state) as the last part of
/// the system prompt, after the operator's and the client's own text,
/// making one if needed. Nothing when there is none.
pub(super) fn with_context(turns: &mut Vec<Turn>, context: &[Context]) {
    let entries: Vec<String> = context
        .iter()
        .filter(|c| !(c.description.trim().is_empty() && c.value.trim().is_empty()))
        .map(|c| match c.description.trim() {
            "" => c.value.clone(),
            description => format!("{description}:\n{}", c.value),
        })
        .collect();
    if entries.is_empty() {
        return;
    }
    let section = format!("Context from the application:\n\n{}", entries.join("\n\n"));
    append_to_system(turns, section);
}

/// A Harmony model's response format where gpt-oss learned to read it: a
/// `# Response Formats` section of its developer message (the system turn
/// its template renders as one), the schema as JSON under the format's
/// name, after a `//` line with its description.
pub(super) fn with_response_format(
    turns: &mut Vec<Turn>,
    name: &str,
    description: Option<&str>,
    schema: &Value,
) {
    let note = description.map_or(String::new(), |d| format!("// {d}\n"));
    let section = format!("# Response Formats\n\n## {name}\n\n{note}{schema}");
    append_to_system(turns, section);
}

/// `section` as the system prompt's last part, making one if needed.
fn append_to_system(turns: &mut Vec<Turn>, section: String) {
    match turns.first_mut() {
        Some(system) if system.role == "system" => {
            let text = system.content.take().unwrap_or_default();
            system.content = Some(match text.is_empty() {
                true => section,
                false => format!("{text}\n\n{section}"),
            });
        }
        _ => turns.insert(0, system_turn(&section)),
    }
}

/// Puts a thinking flag into the system prompt, making one if needed.
pub(super) fn apply_system_flag(turns: &mut Vec<Turn>, flag: &str, position: FlagPosition) {
    let has_system = turns.first().is_some_and(|t| t.role == "system");
    if position == FlagPosition::Exclusive {
        // The flag is the whole system prompt; its former text moves to the
        // first user message.
        let moved = if has_system {
            turns.remove(0).content.unwrap_or_default()
        } else {
            String::new()
        };
        if !moved.is_empty()
            && let Some(user) = turns.iter_mut().find(|t| t.role == "user")
        {
            let text = user.content.take().unwrap_or_default();
            user.content = Some(format!("{moved}\n\n{text}"));
        }
        turns.insert(0, system_turn(flag));
        return;
    }
    match turns.first_mut() {
        Some(system) if has_system => {
            let text = system.content.take().unwrap_or_default();
            system.content = Some(place(&text, flag, position));
        }
        _ => turns.insert(0, system_turn(flag)),
    }
}

/// Puts a thinking flag into the last user message.
pub(super) fn apply_user_flag(turns: &mut [Turn], flag: &str, position: FlagPosition) {
    if let Some(user) = turns.iter_mut().rev().find(|t| t.role == "user") {
        let text = user.content.take().unwrap_or_default();
        user.content = Some(place(&text, flag, position));
    }
}

/// Tools as chat templates expect them (OpenAI function format).
pub(super) fn template_tools(tools: &[Tool]) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            let mut function = json!({
                "name": tool.name,
                "description": tool.description,
            });
            if let Some(parameters) = &tool.parameters {
                function["parameters"] = parameters.clone();
            }
            json!({ "type": "function", "function": function })
        })
        .collect()
}

fn place(text: &str, flag: &str, position: FlagPosition) -> String {
    match position {
        FlagPosition::Prepend if text.is_empty() => flag.to_owned(),
        FlagPosition::Prepend => format!("{flag}\n{text}"),
        FlagPosition::Append | FlagPosition::Exclusive if text.is_empty() => flag.to_owned(),
        FlagPosition::Append | FlagPosition::Exclusive => format!("{text} {flag}"),
    }
}

/// Takes the replayed reasoning off every turn and returns it joined, oldest
/// first, for a model that does not think natively: its template renders
/// none, so the separate pass puts it in its system prompts instead
/// (`SeparatePassSpec::with_earlier_notes`), and never twice.
pub(super) fn take_replayed_reasoning(turns: &mut [Turn]) -> String {
    let mut notes: Vec<String> = Vec::new();
    for turn in turns.iter_mut() {
        if let Some(reasoning) = turn.reasoning_content.take() {
            let reasoning = reasoning.trim();
            if !reasoning.is_empty() {
                notes.push(reasoning.to_owned());
            }
        }
    }
    notes.join("\n\n")
}

fn system_turn(text: &str) -> Turn {
    Turn {
        role: "system".to_owned(),
        content: Some(text.to_owned()),
        ..Turn::default()
    }
}

/// Renders and tokenizes a prompt, and checks it leaves room to generate.
pub(super) fn checked_prompt(
    model: &LocalModel,
    turns: &[Turn],
    tools: &[Tool],
    kwargs: &[(String, Value)],
    suffix: Option<&str>,
) -> Result<Prompt, RunRejected> {
    let prompt = model.prompt(turns, tools, kwargs, suffix).map_err(|err| {
        RunRejected::new(
            RejectKind::Unprocessable,
            "TEMPLATE_ERROR",
            format!("the chat template cannot render this conversation: {err}"),
        )
        .at("messages")
    })?;
    let context = model.context_length();
    if prompt.ids.len() >= context {
        return Err(RunRejected::new(
            RejectKind::Unprocessable,
            "CONTEXT_OVERFLOW",
            format!(
                "the conversation renders to {} tokens; the model's context holds {context}",
                prompt.ids.len()
            ),
        )
        .at("messages"));
    }
    Ok(prompt)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(role: &str, text: &str) -> Turn {
        Turn {
            role: role.to_owned(),
            content: Some(text.to_owned()),
            ..Turn::default()
        }
    }

    fn texts(turns: &[Turn]) -> Vec<(&str, &str)> {
        turns
            .iter()
            .map(|t| (t.role.as_str(), t.content.as_deref().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn replayed_reasoning_is_taken_off_every_turn_oldest_first() {
        let mut turns = [
            turn("user", "Is 91 prime?"),
            turn("assistant", "No.").with_reasoning("91 = 7 x 13."),
            turn("user", "Flights to Rome?"),
            turn("assistant", "").with_reasoning(" Call search. "),
            turn("tool", "[]"),
            turn("assistant", "").with_reasoning("  "),
            turn("tool", "[1]"),
        ];
        assert_eq!(
            take_replayed_reasoning(&mut turns),
            "91 = 7 x 13.\n\nCall search."
        );
        assert!(turns.iter().all(|t| t.reasoning_content.is_none()));
        assert_eq!(take_replayed_reasoning(&mut [turn("user", "Hi")]), "");
    }

    #[test]
    fn with_system_keeps_the_operators_text_after() {
        let turns = [turn("system", "Be brief."), turn("user", "Hi")];
        assert_eq!(
            texts(&with_system(&turns, "Think.")),
            [("system", "Think.\n\nBe brief."), ("user", "Hi")]
        );
        assert_eq!(
            texts(&with_system(&turns[1..], "Think.")),
            [("system", "Think."), ("user", "Hi")]
        );
    }

    #[test]
    fn system_flags_append_prepend_or_take_over() {
        let mut turns = vec![turn("system", "Be brief."), turn("user", "Hi")];
        apply_system_flag(&mut turns, "/think", FlagPosition::Append);
        assert_eq!(turns[0].content.as_deref(), Some("Be brief. /think"));

        let mut turns = vec![turn("system", "Be brief."), turn("user", "Hi")];
        apply_system_flag(&mut turns, "/think", FlagPosition::Prepend);
        assert_eq!(turns[0].content.as_deref(), Some("/think\nBe brief."));

        let mut turns = vec![turn("system", "Be brief."), turn("user", "Hi")];
        apply_system_flag(&mut turns, "detailed thinking on", FlagPosition::Exclusive);
        assert_eq!(
            texts(&turns),
            [
                ("system", "detailed thinking on"),
                ("user", "Be brief.\n\nHi")
            ]
        );

        let mut turns = vec![turn("user", "Hi")];
        apply_system_flag(&mut turns, "/think", FlagPosition::Append);
        assert_eq!(texts(&turns), [("system", "/think"), ("user", "Hi")]);
    }

    #[test]
    fn context_ends_the_system_prompt_or_makes_one() {
        let context = |pairs: &[(&str, &str)]| -> Vec<Context> {
            pairs
                .iter()
                .map(|(d, v)| Context {
                    description: (*d).into(),
                    value: (*v).into(),
                })
                .collect()
        };
        let mut turns = vec![turn("system", "Be brief."), turn("user", "Hi")];
        with_context(
            &mut turns,
            &context(&[
                ("The open page", "/orders/7"),
                ("", "Dark mode is on."),
                (" ", ""),
            ]),
        );
        assert_eq!(
            texts(&turns),
            [
                (
                    "system",
                    "Be brief.\n\nContext from the application:\n\nThe open page:\n/orders/7\n\nDark mode is on."
                ),
                ("user", "Hi")
            ]
        );
        let mut turns = vec![turn("user", "Hi")];
        with_context(&mut turns, &context(&[("Cart", "2 items")]));
        assert_eq!(
            texts(&turns),
            [
                ("system", "Context from the application:\n\nCart:\n2 items"),
                ("user", "Hi")
            ]
        );
        let mut turns = vec![turn("user", "Hi")];
        with_context(&mut turns, &context(&[(" ", " ")]));
        assert_eq!(texts(&turns), [("user", "Hi")]);
    }

    #[test]
    fn a_harmony_response_format_is_a_section_of_the_developer_message() {
        let schema = json!({"type": "object"});
        let mut turns = vec![turn("system", "Be brief."), turn("user", "Hi")];
        with_response_format(&mut turns, "trip", Some("A trip plan"), &schema);
        assert_eq!(
            texts(&turns)[0],
            (
                "system",
                "Be brief.\n\n# Response Formats\n\n## trip\n\n// A trip plan\n{\"type\":\"object\"}"
            )
        );
        let mut turns = vec![turn("user", "Hi")];
        with_response_format(&mut turns, "answer", None, &schema);
        assert_eq!(
            texts(&turns)[0],
            (
                "system",
                "# Response Formats\n\n## answer\n\n{\"type\":\"object\"}"
            )
        );
    }

    #[test]
    fn user_flags_go_to_the_last_user_message() {
        let mut turns = vec![
            turn("user", "One"),
            turn("assistant", "A"),
            turn("user", ""),
        ];
        apply_user_flag(&mut turns, "/no_think", FlagPosition::Prepend);
        assert_eq!(turns[0].content.as_deref(), Some("One"));
        assert_eq!(turns[2].content.as_deref(), Some("/no_think"));
    }
}
