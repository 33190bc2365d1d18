//! The published AG-UI 1.0 JSON Schema: loading it, a validator for one
//! of its definitions, and assertions on values checked against it.

use std::path::PathBuf;

use serde_json::{Value, json};

/// Loads `schema-1.0.json` from `THINKWIRE_AGUI_SCHEMA` or from the
/// `shared/` directory beside the repository.
pub fn schema() -> Value {
    let path = std::env::var_os("THINKWIRE_AGUI_SCHEMA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/agui/schema-1.0.json")
        });
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "AG-UI schema not found at {} ({e}); set THINKWIRE_AGUI_SCHEMA to schema-1.0.json",
            path.display()
        )
    });
    serde_json::from_str(&text).expect("schema-1.0.json is JSON")
}

/// A validator for `#/$defs/<def>` of the AG-UI schema.
pub fn validator(def: &str) -> jsonschema::Validator {
    let mut schema = schema();
    schema["$ref"] = json!(format!("#/$defs/{def}"));
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .expect("schema compiles")
}

/// Asserts `value` is valid, printing every schema error otherwise.
pub fn assert_valid(validator: &jsonschema::Validator, value: &Value, what: &str) {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} is not schema-valid: {errors:#?}\n{value:#}"
    );
}

/// Panics if `null` appears anywhere in `value`.
pub fn assert_no_null(value: &Value, path: &str) {
    match value {
        Value::Null => panic!("null at {path}"),
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                assert_no_null(v, &format!("{path}[{i}]"));
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                assert_no_null(v, &format!("{path}.{k}"));
            }
        }
        _ => {}
    }
}
