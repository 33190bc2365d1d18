//! What transformers adds to the template environment: `tojson` as
//! Python's `json.dumps`, `raise_exception`, and `strftime_now` reading the
//! render's clock.

use std::time::{SystemTime, UNIX_EPOCH};

use minijinja::value::Kwargs;
use minijinja::{Error, ErrorKind, State, Value};

use super::NOW_VAR;
use super::strftime::strftime;
use crate::pyjson::{DumpOptions, dumps};

pub(super) fn tojson(value: Value, kwargs: Kwargs) -> std::result::Result<Value, Error> {
    let opts = DumpOptions::from_kwargs(&kwargs)?;
    Ok(Value::from_safe_string(dumps(&value, &opts)?))
}

pub(super) fn raise_exception(message: String) -> std::result::Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

pub(super) fn strftime_now(state: &State, format: String) -> std::result::Result<String, Error> {
    let secs = state
        .lookup(NOW_VAR)
        .and_then(|v| v.as_i64())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0))
        });
    Ok(strftime(&format, secs))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::message::TemplateMessage;
    use crate::template::RenderOptions;
    use crate::template::tests::render;

    #[test]
    fn python_methods_and_tojson() {
        let src = "{{ messages[0].content.strip().upper() }}|{{ messages[0].content.split('x')|length }}|\
                   {{ tools[0] | tojson }}|{{ {'a': [1, 2.5]} | tojson(indent=2) }}";
        let opts = RenderOptions::default().with_tools(vec![json!({"name": "f", "desc": "é<&>"})]);
        let out = render(src, &[TemplateMessage::user(" axb ")], &opts).unwrap();
        assert_eq!(
            out,
            "AXB|2|{\"name\": \"f\", \"desc\": \"é<&>\"}|{\n  \"a\": [\n    1,\n    2.5\n  ]\n}"
        );
    }

    #[test]
    fn raise_exception_reports_the_message() {
        let e = render(
            "{{ raise_exception('roles must alternate') }}",
            &[],
            &RenderOptions::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("roles must alternate"), "{e}");
    }
}
