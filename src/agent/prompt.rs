//! What the agent adds to a conversation before the chat template sees it:
//! thinking flags where the format wants them, the separate pass's system
//! prompts, tools in the shape templates expect. Plain functions on turns,
//! so they are tested without a model.

use serde_json::{Value, json};
use thinkwire_protocol::Tool;
use thinkwire_reasoning::FlagPosition;

use super::history::Turn;

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
