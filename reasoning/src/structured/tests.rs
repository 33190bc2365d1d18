//! Unit and property tests of the structured splitter: both key orders,
//! escaped keys, skipped values, every escape, blank reasoning, broken
//! input, and every way to split an object into pieces.

use super::*;
use crate::merge_deltas;
use Chunk::{ReasoningEnd as End, ReasoningStart as Start};
use StructuredError::*;
use proptest::prelude::*;

fn t(s: &str) -> Chunk {
    Chunk::Text(s.into())
}

fn d(s: &str) -> Chunk {
    Chunk::ReasoningDelta(s.into())
}

fn run(pieces: &[&str]) -> (Vec<Chunk>, Option<StructuredError>) {
    let mut s = StructuredSplitter::default();
    let mut chunks = Vec::new();
    for piece in pieces {
        chunks.extend(s.push(piece));
    }
    chunks.extend(s.finish());
    let empty = |c: &Chunk| matches!(c, Chunk::Text(t) | Chunk::ReasoningDelta(t) if t.is_empty());
    assert!(!chunks.iter().any(empty), "empty delta in {chunks:?}");
    (merge_deltas(chunks), s.error())
}

#[test]
fn streams_reasoning_then_answer() {
    let json = r#" {"reasoning": "step one\nstep \"two\"", "answer": "The answer \u00e9 😀"} "#;
    let want = vec![
        Start,
        d("step one\nstep \"two\""),
        End,
        t("The answer é 😀"),
    ];
    assert_eq!(run(&[json]), (want, None));
    let mut s = StructuredSplitter::default();
    assert_eq!(s.push(r#"{"reasoning":"ab"#), [Start, d("ab")]);
    assert!(s.in_reasoning());
    assert_eq!(s.push(r"\u00"), []);
    assert_eq!(s.push(r#"e9c", "answer": "x\"#), [d("éc"), End, t("x")]);
    assert_eq!(s.push("ud83d"), []);
    assert_eq!(s.push(r#"\ude00"}"#), [t("😀")]);
    assert_eq!((s.finish(), s.error()), (vec![], None));
}

/// Which pieces read the answer string: its characters and escapes, held
/// or not, but neither its quotes nor any other key's value.
#[test]
fn pieces_that_read_the_answer_are_told() {
    let mut s = StructuredSplitter::default();
    let read = |s: &mut StructuredSplitter, piece: &str| {
        let chunks = s.push(piece);
        (chunks, s.read_answer())
    };
    assert_eq!(
        read(&mut s, r#"{"reasoning": "r", "#),
        (vec![Start, d("r"), End], false)
    );
    assert_eq!(read(&mut s, r#""answer": ""#), (vec![], false));
    assert_eq!(read(&mut s, r"caf\u00"), (vec![t("caf")], true));
    assert_eq!(read(&mut s, "e9"), (vec![t("é")], true));
    assert_eq!(read(&mut s, r"\ud83d"), (vec![], true));
    assert_eq!(read(&mut s, r"\ude00"), (vec![t("😀")], true));
    assert_eq!(read(&mut s, r#"", "x": "y"}"#), (vec![], false));
}

#[test]
fn reversed_order_escaped_keys_and_skipped_values() {
    let json = r#"{ "x": {"a": [1, "}]\"", {"b": null}]}, "answer" : "A", "n": -1.5e3,
            "t": true, "s": "\\\"", "re\u0061soning": "R", "l": [] }"#;
    assert_eq!(run(&[json]), (vec![t("A"), Start, d("R"), End], None));
    let mut s = StructuredSplitter::new("think", "say");
    let chunks = s.push(r#"{"reasoning": "no", "think": "T", "say": "S"}"#);
    assert_eq!(merge_deltas(chunks), [Start, d("T"), End, t("S")]);
    assert_eq!(run(&["{}"]), (vec![], None));
}

#[test]
fn every_escape_and_lone_surrogates() {
    let json = r#"{"answer": "\" \\ \/ \b \f \n \r \t \u0041\u00E9 \ud83d\ude00 \ud83d. \ude00 \ud83dx\ud83d"}"#;
    let want = "\" \\ / \u{8} \u{c} \n \r \t Aé 😀 \u{fffd}. \u{fffd} \u{fffd}x\u{fffd}";
    assert_eq!(run(&[json]), (vec![t(want)], None));
}

#[test]
fn blank_reasoning_gives_no_block() {
    assert_eq!(run(&[r#"{"reasoning": "", "answer": "A"}"#]).0, [t("A")]);
    assert_eq!(run(&[r#"{"reasoning": " \n", "answer": ""}"#]).0, []);
    let (chunks, _) = run(&[r#"{"reasoning": " \n", "#, r#""reasoning": " \nx "}"#]);
    assert_eq!(chunks, [Start, d(" \nx "), End]);
}

#[test]
fn broken_input_is_shown_as_text() {
    let cases: &[(&[&str], Vec<Chunk>, StructuredError)] = &[
        (&["Just text."], vec![t("Just text.")], NotAnObject),
        (&["", " "], vec![], Incomplete),
        (
            &[r#"{"reasoning": "ab\"#, "q\"}"],
            vec![Start, d("ab"), End, t("\\q\"}")],
            BadEscape,
        ),
        (
            &[r#"{"answer": "\u12"#, "G4\"}"],
            vec![t("\\u12G4\"}")],
            BadEscape,
        ),
        (&[r#"{"answer": 42}"#], vec![t("42}")], NotAString),
        (
            &[r#"{"reasoning": {"a": 1}}"#],
            vec![t("{\"a\": 1}}")],
            NotAString,
        ),
        (&[r#"{"answer": "A"} x"#, "y"], vec![t("Axy")], TrailingText),
        (&[r#"{"answer": "A" "b"}"#], vec![t("A\"b\"}")], Syntax),
        (
            &[r#"{"x": [1}, "answer": "A"}"#],
            vec![t("}, \"answer\": \"A\"}")],
            Syntax,
        ),
        (
            &[r#"{"reasoning": "ab"#],
            vec![Start, d("ab"), End],
            Incomplete,
        ),
        (
            &[r#"{"answer": "a\ud83d\u00"#],
            vec![t("a\u{fffd}\\u00")],
            Incomplete,
        ),
    ];
    for (pieces, want, err) in cases {
        assert_eq!(run(pieces), (want.clone(), Some(*err)), "{pieces:?}");
    }
    let mut s = StructuredSplitter::default();
    let _ = s.push(r#"{"secret": "x"#);
    assert!(!format!("{s:?}").contains("secret"));
    let _ = s.finish();
    assert_eq!(s.push("}"), []);
}

/// JSON string text for `s`, non-ASCII as `\uXXXX` (surrogate pairs
/// for astral characters) and `/` as `\/` when `ascii`.
fn escape(s: &str, ascii: bool) -> String {
    if !ascii {
        return serde_json::to_string(s).unwrap();
    }
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' | '\\' | '/' => out.extend(['\\', c]),
            '\n' => out.push_str("\\n"),
            ' '..='~' => out.push(c),
            _ => c
                .encode_utf16(&mut [0; 2])
                .iter()
                .for_each(|u| out.push_str(&format!("\\u{u:04X}"))),
        }
    }
    out + "\""
}

fn text() -> impl Strategy<Value = String> {
    let special = prop::sample::select(
        &[
            '"', '\\', '/', '\n', '\t', '\u{1}', ' ', 'é', '😀', '\u{ffff}',
        ][..],
    );
    let c = prop_oneof![any::<char>(), special, prop::char::range('a', 'z')];
    prop::collection::vec(c, 0..12).prop_map(String::from_iter)
}

fn object() -> impl Strategy<Value = (String, Vec<Chunk>)> {
    (
        text(),
        text(),
        any::<bool>(),
        any::<bool>(),
        prop::sample::select(&["", " ", "\n\t "][..]),
    )
        .prop_map(|(r, a, ascii, reversed, ws)| {
            let reasoning = format!(r#""reasoning"{ws}:{ws}{}"#, escape(&r, ascii));
            let answer = format!(r#""answer":{ws}{}"#, escape(&a, ascii));
            let extra = format!(r#""x":{ws}[{ws}{{"y": "\"]}}"}}, 1]"#);
            let mut want = Vec::new();
            if !r.trim().is_empty() {
                want.extend([Start, Chunk::ReasoningDelta(r), End]);
            }
            let (first, second) = if reversed {
                (answer, reasoning)
            } else {
                (reasoning, answer)
            };
            if !a.is_empty() {
                want.insert(if reversed { 0 } else { want.len() }, Chunk::Text(a));
            }
            (
                format!("{ws}{{{ws}{first},{extra},{ws}{second}{ws}}}{ws}"),
                want,
            )
        })
}

proptest! {
    #[test]
    fn every_split_gives_the_decoded_strings((json, want) in object()) {
        prop_assert!(serde_json::from_str::<serde_json::Value>(&json).is_ok());
        prop_assert_eq!(run(&[&json]), (want.clone(), None));
        for (i, _) in json.char_indices() {
            prop_assert_eq!(run(&[&json[..i], &json[i..]]), (want.clone(), None), "split at {}", i);
        }
        let chars: Vec<String> = json.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        prop_assert_eq!(run(&refs), (want, None));
    }

    #[test]
    fn random_splits_give_the_decoded_strings(
        (json, want) in object(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..10),
    ) {
        let bounds: Vec<usize> = json.char_indices().map(|(i, _)| i).collect();
        let mut at: Vec<usize> = cuts.iter().map(|c| bounds[c.index(bounds.len())]).collect();
        at.extend([0, json.len()]);
        at.sort_unstable();
        at.dedup();
        let pieces: Vec<&str> = at.windows(2).map(|w| &json[w[0]..w[1]]).collect();
        prop_assert_eq!(run(&pieces), (want, None));
    }
}
