//! transformers' `{% generation %}` tags (its assistant-token mask), made
//! transparent for rendering.

/// Replaces `{% generation %}` / `{% endgeneration %}` (transformers'
/// assistant-mask extension) by an always-true `if`, keeping whitespace
/// control markers so trimming is unchanged.
pub(super) fn without_generation_tags(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(start) = rest.find("{%") {
        out.push_str(&rest[..start]);
        let tag = &rest[start..];
        let Some(end) = tag.find("%}") else {
            out.push_str(tag);
            return out;
        };
        let inner = &tag[2..end];
        let (open_ctl, body) = match inner.chars().next() {
            Some(c @ ('-' | '+')) => (c.to_string(), &inner[1..]),
            _ => (String::new(), inner),
        };
        let (body, close_ctl) = match body
            .trim_end_matches([' ', '\t', '\n', '\r'])
            .chars()
            .last()
        {
            Some(c @ ('-' | '+')) => {
                let trimmed = body.trim_end_matches([' ', '\t', '\n', '\r']);
                (&trimmed[..trimmed.len() - 1], c.to_string())
            }
            _ => (body, String::new()),
        };
        let replacement = match body.trim() {
            "generation" => Some("if true"),
            "endgeneration" => Some("endif"),
            _ => None,
        };
        match replacement {
            Some(r) => out.push_str(&format!("{{%{open_ctl} {r} {close_ctl}%}}")),
            None => out.push_str(&tag[..end + 2]),
        }
        rest = &tag[end + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::TemplateMessage;
    use crate::template::RenderOptions;
    use crate::template::tests::render;

    #[test]
    fn generation_tags_are_transparent() {
        let src = "{% for m in messages %}{%- generation -%}\n {{ m.content }} {%- endgeneration %}\n{% endfor %}";
        let out = render(
            src,
            &[TemplateMessage::assistant("x")],
            &RenderOptions::default(),
        )
        .unwrap();
        assert_eq!(out, "x");
        assert_eq!(
            without_generation_tags("{% generation %}a{%- endgeneration -%}"),
            "{% if true %}a{%- endif -%}"
        );
    }
}
