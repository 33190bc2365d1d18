//! How much automaton a schema's regular expressions ask for.
//!
//! The grammar engine builds a pattern's automaton lazily, while the answer
//! is written: a counted repetition (`a{100000}`, `(a{1000}){1000}`)
//! compiles at once and passes every check, then stops the constraint at
//! the first character of that string, when the engine's expression limit
//! is reached. Such a pattern is refused before the run, naming it.

use regex_syntax::hir::{Hir, HirKind};
use serde_json::Value;

use crate::GrammarError;
use crate::walk::{keywords, token};

/// The largest a pattern may unroll to (its repetitions' counts
/// multiplied out, about one engine expression each). `a{30000}` still
/// works in the engine, `a{100000}` does not; date, identifier and
/// length-bound patterns stay in the hundreds.
pub const MAX_PATTERN_SIZE: u64 = 20_000;

/// Refuses a `pattern` or `patternProperties` key that unrolls past
/// [`MAX_PATTERN_SIZE`], at its path.
pub(crate) fn check_patterns(schema: &Value) -> Result<(), GrammarError> {
    keywords(schema, "", &mut |key, value, at| match (key, value) {
        ("pattern", Value::String(pattern)) => check(pattern, at),
        ("patternProperties", Value::Object(patterns)) => patterns
            .keys()
            .try_for_each(|pattern| check(pattern, &format!("{at}/{}", token(pattern)))),
        _ => Ok(()),
    })
}

fn check(pattern: &str, path: &str) -> Result<(), GrammarError> {
    // What does not parse is the engine's to refuse, with its reason.
    let Ok(hir) = regex_syntax::Parser::new().parse(pattern) else {
        return Ok(());
    };
    let size = unrolled(&hir);
    if size > MAX_PATTERN_SIZE {
        return Err(GrammarError::Schema {
            path: path.to_owned(),
            message: format!(
                "repeats too much to enforce (unrolled, about {size} steps; at most {MAX_PATTERN_SIZE})"
            ),
        });
    }
    Ok(())
}

/// The size of `hir` with its counted repetitions written out; an open
/// repetition (`*`, `{3,}`) is a loop, counted at its minimum.
fn unrolled(hir: &Hir) -> u64 {
    match hir.kind() {
        HirKind::Empty | HirKind::Class(_) | HirKind::Look(_) => 1,
        HirKind::Literal(literal) => literal.0.len() as u64,
        HirKind::Capture(capture) => unrolled(&capture.sub),
        HirKind::Repetition(repetition) => {
            let count = repetition.max.unwrap_or(repetition.min).max(1);
            unrolled(&repetition.sub).saturating_mul(u64::from(count))
        }
        HirKind::Concat(parts) | HirKind::Alternation(parts) => {
            parts.iter().map(unrolled).fold(0, u64::saturating_add)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn everyday_patterns_pass() {
        for pattern in [
            r"^\d{4}-\d{2}-\d{2}$",
            r"^[A-Za-z0-9_]{1,255}$",
            r"^(\d{1,3}\.){3}\d{1,3}$",
            r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
            r"^.{0,5000}$",
            r"^a+b*$",
            "(unclosed",
        ] {
            let schema = json!({"type": "string", "pattern": pattern});
            assert!(check_patterns(&schema).is_ok(), "{pattern}");
        }
    }

    #[test]
    fn a_pattern_that_unrolls_too_far_is_refused_at_its_path() {
        for pattern in ["^a{100000}$", "^(a{1000}){1000}$", "^(ab{200}){200}$"] {
            let schema = json!({"properties": {"s": {"type": "string", "pattern": pattern}}});
            let Err(GrammarError::Schema { path, .. }) = check_patterns(&schema) else {
                panic!("{pattern} passed");
            };
            assert_eq!(path, "/properties/s/pattern");
        }
        let keys = json!({"patternProperties": {"^k{50000}$": {"type": "string"}}});
        let Err(GrammarError::Schema { path, .. }) = check_patterns(&keys) else {
            panic!("a pattern key passed");
        };
        assert_eq!(path, "/patternProperties/^k{50000}$");
        // Data that looks like a pattern is data; a property may be named
        // as data keywords are.
        let data = json!({"const": {"pattern": "a{100000}"}});
        assert!(check_patterns(&data).is_ok());
        let named = json!({"properties": {"enum": {"pattern": "a{100000}"}}});
        assert!(check_patterns(&named).is_err());
    }
}
