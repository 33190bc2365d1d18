//! Compiled grammars kept for the next run: a copy behaves as a fresh
//! compile, each its own; what is refused or too large is not kept; the
//! least recently used go first.

use thinkwire_grammar::{KEPT_GRAMMAR_BYTES, MAX_KEPT_GRAMMARS};

use super::*;

/// A vocabulary of its own, so no other test's grammars are in it.
fn fresh() -> Vocabulary {
    Vocabulary::new(&smollm2().0, &[2, 0]).expect("vocabulary")
}

fn schema(n: usize) -> Target {
    Target::Schema(json!({
        "type": "object",
        "properties": {format!("field_{n}"): {"type": "integer"}},
        "required": [format!("field_{n}")]
    }))
}

#[test]
fn a_target_compiled_again_is_a_fresh_copy_of_the_kept_one() {
    let (t, _) = smollm2();
    let v = fresh();
    let target = Target::Schema(person());
    let mut first = Grammar::new(&v, &target).expect("compiles");
    assert!(v.keeps(&target));
    assert_eq!(v.kept_grammars(), 1);
    let start = first.mask().expect("mask");
    // The first is part-way through its answer when the second starts.
    let ids = t.encode_plain(r#"{"name": "Ada", "age": 36}"#).unwrap();
    for &id in &ids[..4] {
        first.commit(id).expect("commit");
    }
    let mut second = Grammar::new(&v, &target).expect("copies");
    assert_eq!(v.kept_grammars(), 1, "the same target is kept once");
    assert_eq!(second.mask().expect("mask"), start, "a copy starts fresh");
    assert_eq!(
        first_refused(&mut second, t, r#"{"name": "Ada", "age": 36}"#),
        None
    );
    assert!(second.is_complete());
    // Each its own: the first goes on from where it was.
    for &id in &ids[4..] {
        first.commit(id).expect("commit");
    }
    assert!(first.is_complete());
    // A copy refuses what the schema forbids, as the compile did.
    let mut third = Grammar::new(&v, &target).expect("copies");
    assert_eq!(first_refused(&mut third, t, r#"{"age": "x"}"#), Some(1));
}

#[test]
fn a_refused_schema_is_refused_again_and_not_kept() {
    let v = fresh();
    let refused = Target::Schema(json!({"type": "object", "properties": {"a": {"type": 5}}}));
    for _ in 0..2 {
        assert!(matches!(
            Grammar::new(&v, &refused),
            Err(GrammarError::Schema { .. })
        ));
    }
    assert!(!v.keeps(&refused));
    assert_eq!(v.kept_grammars(), 0);
}

#[test]
fn the_least_recently_used_go_first() {
    let v = fresh();
    for n in 0..MAX_KEPT_GRAMMARS {
        Grammar::new(&v, &schema(n)).expect("compiles");
    }
    assert_eq!(v.kept_grammars(), MAX_KEPT_GRAMMARS);
    // The first is used again, so the second is now the oldest.
    Grammar::new(&v, &schema(0)).expect("copies");
    Grammar::new(&v, &schema(MAX_KEPT_GRAMMARS)).expect("compiles");
    assert_eq!(v.kept_grammars(), MAX_KEPT_GRAMMARS);
    assert!(v.keeps(&schema(0)));
    assert!(!v.keeps(&schema(1)));
    assert!(v.keeps(&schema(2)) && v.keeps(&schema(MAX_KEPT_GRAMMARS)));
}

#[test]
fn a_target_too_large_to_keep_is_compiled_for_its_run_alone() {
    let v = fresh();
    let long = "d".repeat(KEPT_GRAMMAR_BYTES / 4 + 1);
    let large = Target::Schema(json!({"type": "string", "description": long}));
    Grammar::new(&v, &large).expect("compiles");
    assert!(!v.keeps(&large));
    assert_eq!(v.kept_grammars(), 0);
    // Targets that fit the budget together are all kept.
    let third = "d".repeat(KEPT_GRAMMAR_BYTES / 4 - 100);
    for n in 0..4 {
        let t = Target::Schema(json!({"type": "string", "description": format!("{n}{third}")}));
        Grammar::new(&v, &t).expect("compiles");
    }
    assert_eq!(v.kept_grammars(), 4);
    // A fifth puts out the oldest: the bytes, not the count, bound them.
    let t = Target::Schema(json!({"type": "string", "description": format!("4{third}")}));
    Grammar::new(&v, &t).expect("compiles");
    assert_eq!(v.kept_grammars(), 4);
}
