//! The hand-written prost messages against `proto/ag_ui.proto`.

use std::collections::BTreeMap;

/// `messages/` declares what `proto/ag_ui.proto` says, field for field:
/// both texts are read into (message, field) → (number, kind) tables.
#[test]
fn the_rust_messages_match_the_proto_file() {
    let proto = proto_fields(include_str!("../../../proto/ag_ui.proto"));
    let rust = rust_fields(
        &[
            include_str!("../messages/payload.rs"),
            include_str!("../messages/events.rs"),
            include_str!("../messages/content_events.rs"),
            include_str!("../messages/run_events.rs"),
            include_str!("../messages/json.rs"),
        ]
        .concat(),
    );
    assert!(proto.len() > 250, "{}", proto.len());
    let only_proto: Vec<_> = proto.iter().filter(|f| !rust.contains(f)).collect();
    let only_rust: Vec<_> = rust
        .iter()
        // google.protobuf's Value, Struct and ListValue are not in our file.
        .filter(|f| !proto.contains(f) && !GOOGLE.contains(&f.0.as_str()))
        .collect();
    assert!(
        only_proto.is_empty() && only_rust.is_empty(),
        "only in the .proto: {only_proto:#?}\nonly in messages/: {only_rust:#?}"
    );
}

const GOOGLE: [&str; 4] = ["Value", "Struct", "FieldsEntry", "ListValue"];

/// (message, field, number, kind): kind is `label type`, e.g.
/// `optional string`, `repeated Message`, `oneof TextInputPart`.
type Field = (String, String, u32, String);

fn proto_fields(text: &str) -> Vec<Field> {
    let mut out = Vec::new();
    let mut stack: Vec<String> = Vec::new();
    let mut in_oneof = false;
    let mut in_enum = 0;
    for line in text.lines() {
        let line = line.split("//").next().unwrap().trim();
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == ';' || c == '=')
            .filter(|w| !w.is_empty())
            .collect();
        match words.as_slice() {
            ["message", name, "{"] => {
                // ToolCall's nested Function is ToolCallFunction in Rust.
                stack.push(
                    stack
                        .last()
                        .map_or((*name).to_owned(), |outer| format!("{outer}{name}")),
                );
            }
            ["enum", _, "{"] => in_enum += 1,
            ["oneof", _, "{"] => in_oneof = true,
            ["}"] if in_oneof => in_oneof = false,
            ["}"] if in_enum > 0 => in_enum -= 1,
            ["}"] => {
                stack.pop();
            }
            _ if in_enum > 0 || stack.is_empty() => {}
            [label @ ("optional" | "repeated"), ty, name, number] => {
                out.push(field(
                    &stack,
                    name,
                    number,
                    &format!("{label} {}", short(ty)),
                ));
            }
            [ty, name, number] => {
                let label = if in_oneof {
                    "oneof"
                } else if is_scalar(ty) {
                    "plain"
                } else {
                    "optional"
                };
                out.push(field(
                    &stack,
                    name,
                    number,
                    &format!("{label} {}", short(ty)),
                ));
            }
            _ => {}
        }
    }
    out.sort();
    out
}

fn rust_fields(text: &str) -> Vec<Field> {
    let mut out = Vec::new();
    // Oneof enums are named in their parent's `#[prost(oneof = "…")]`.
    let mut oneof_parent: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut attr: Option<String> = None;
    // rustfmt breaks a long `#[prost(...)]` over lines: join each back.
    let mut joined: Vec<String> = Vec::new();
    let mut open: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        match open.take() {
            Some(mut acc) => {
                acc.push_str(line.trim_end_matches(','));
                if line == ")]" {
                    joined.push(acc);
                } else {
                    acc.push_str(", ");
                    open = Some(acc);
                }
            }
            None if line == "#[prost(" => open = Some(line.to_owned()),
            None => joined.push(line.to_owned()),
        }
    }
    for line in &joined {
        let line = line.trim();
        if let Some(rest) = line
            .strip_prefix("pub(crate) struct ")
            .or_else(|| line.strip_prefix("pub(crate) enum "))
        {
            let name = rest.trim_end_matches(" {").to_owned();
            current = Some(oneof_parent.get(&name).cloned().unwrap_or(name));
        } else if let Some(a) = line.strip_prefix("#[prost(") {
            attr = Some(a.trim_end_matches(")]").to_owned());
        } else if let (Some(a), Some(msg)) = (attr.take(), current.as_ref()) {
            let parts: Vec<&str> = a.split(", ").collect();
            if let Some(oneof) = a.strip_prefix("oneof = \"") {
                let en = oneof.split('"').next().unwrap();
                oneof_parent.insert(en.to_owned(), msg.clone());
                continue;
            }
            let number: u32 = a
                .rsplit("tag = \"")
                .next()
                .unwrap()
                .trim_end_matches('"')
                .parse()
                .unwrap();
            if let Some((variant, ty)) = line.split_once('(') {
                // A oneof arm: `TextMessageStart(TextMessageStartEvent),`
                let ty = ty.trim_end_matches("),");
                let name = snake(variant);
                out.push((msg.clone(), name, number, format!("oneof {ty}")));
                continue;
            }
            let (name, ty) = line
                .trim_start_matches("pub ")
                .trim_end_matches(',')
                .split_once(": ")
                .unwrap();
            let name = name.trim_start_matches("r#").to_owned();
            let kind = match parts[0] {
                "message" => {
                    let inner = ty
                        .trim_start_matches("Option<")
                        .trim_start_matches("Vec<")
                        .trim_end_matches('>');
                    format!("{} {inner}", parts[1])
                }
                e if e.starts_with("enumeration") => {
                    format!("plain {}", e.split('"').nth(1).unwrap())
                }
                scalar => match parts[1] {
                    "optional" | "repeated" => format!("{} {scalar}", parts[1]),
                    _ => format!("plain {scalar}"),
                },
            };
            out.push((msg.clone(), name, number, kind));
        }
    }
    out.sort();
    out
}

fn field(stack: &[String], name: &str, number: &str, kind: &str) -> Field {
    (
        stack.last().unwrap().clone(),
        name.to_owned(),
        number.parse().unwrap(),
        kind.to_owned(),
    )
}

fn is_scalar(ty: &str) -> bool {
    matches!(ty, "string" | "int64" | "int32" | "bool" | "double")
        || ty.ends_with("Type") && !ty.contains('.')
}

fn short(ty: &str) -> String {
    match ty {
        "google.protobuf.Value" => "Value".into(),
        "google.protobuf.Struct" => "Struct".into(),
        "Function" => "ToolCallFunction".into(),
        other => other.into(),
    }
}

fn snake(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The enums too, value for value: `EventType` and
/// `JsonPatchOperationType`, each Rust variant in the .proto's
/// SCREAMING_SNAKE spelling.
#[test]
fn the_rust_enums_match_the_proto_file() {
    let proto = enum_values(
        include_str!("../../../proto/ag_ui.proto"),
        "enum ",
        " = ",
        ";",
    );
    let rust: BTreeMap<String, u32> = [
        include_str!("../messages/events.rs"),
        include_str!("../messages/payload.rs"),
    ]
    .iter()
    .flat_map(|text| enum_values(text, "pub(crate) enum ", " = ", ","))
    .map(|(name, n)| (screaming(&name), n))
    .collect();
    let proto: BTreeMap<String, u32> = proto.into_iter().collect();
    assert!(proto.len() >= 37, "{proto:?}");
    assert_eq!(rust, proto);
}

/// `NAME = N` lines inside enums opened by `open` (`enum X {`), as
/// (NAME, N).
fn enum_values(text: &str, open: &str, eq: &str, end: &str) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.split("//").next().unwrap().trim();
        if line.starts_with(open) && line.ends_with('{') {
            inside = true;
        } else if line.starts_with('}') {
            inside = false;
        } else if inside
            && let Some((name, number)) = line.split_once(eq)
            && let Ok(number) = number.trim_end_matches(end).trim().parse()
            && name
                .trim()
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            // Attribute lines (`#[prost(tag = "1")]`) are not values.
            out.push((name.trim().to_owned(), number));
        }
    }
    out
}

/// `TextMessageStart` as `TEXT_MESSAGE_START`.
fn screaming(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}
