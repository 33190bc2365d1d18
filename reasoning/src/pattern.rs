//! Case-insensitive model-name patterns: globs (`qwen3*`, `*r1-distill*`,
//! `?` for one character) or regular expressions written `re:<regex>`.

use std::fmt;

/// One compiled name pattern.
#[derive(Clone)]
pub(crate) enum Pattern {
    /// A glob, stored lowercased as chars.
    Glob { source: String, chars: Vec<char> },
    /// A regular expression compiled case-insensitively.
    Regex {
        source: String,
        regex: regex_lite::Regex,
    },
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.source())
    }
}

/// A pattern that does not compile.
#[derive(Debug, thiserror::Error)]
#[error("pattern `{pattern}` is not a valid regular expression: {message}")]
pub struct PatternError {
    /// The pattern as written.
    pub pattern: String,
    /// The regex engine's complaint.
    pub message: String,
}

impl Pattern {
    /// Compiles `source`: `re:` prefix for a regex, a glob otherwise.
    pub(crate) fn new(source: &str) -> Result<Self, PatternError> {
        if let Some(expr) = source.strip_prefix("re:") {
            let regex = regex_lite::RegexBuilder::new(expr)
                .case_insensitive(true)
                .build()
                .map_err(|e| PatternError {
                    pattern: source.to_owned(),
                    message: e.to_string(),
                })?;
            Ok(Pattern::Regex {
                source: source.to_owned(),
                regex,
            })
        } else {
            Ok(Pattern::Glob {
                source: source.to_owned(),
                chars: source.to_lowercase().chars().collect(),
            })
        }
    }

    /// The pattern as written.
    pub(crate) fn source(&self) -> &str {
        match self {
            Pattern::Glob { source, .. } | Pattern::Regex { source, .. } => source,
        }
    }

    /// Whether `text` matches, ignoring case. Globs must match the whole
    /// text; regexes match anywhere unless anchored.
    pub(crate) fn matches(&self, text: &str) -> bool {
        match self {
            Pattern::Regex { regex, .. } => regex.is_match(text),
            Pattern::Glob { chars, .. } => {
                let text: Vec<char> = text.to_lowercase().chars().collect();
                glob_match(chars, &text)
            }
        }
    }
}

/// Iterative glob matching with single-star backtracking: linear in
/// practice, no recursion on hostile patterns.
fn glob_match(pattern: &[char], text: &[char]) -> bool {
    let (mut p, mut t) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names_ignoring_case() {
        let p = Pattern::new("qwen3*").unwrap();
        assert!(p.matches("Qwen3-8B"));
        assert!(!p.matches("Qwen2.5-7B"));
        let p = Pattern::new("*r1-distill*").unwrap();
        assert!(p.matches("DeepSeek-R1-Distill-Qwen-7B"));
        let p = Pattern::new("gpt-oss-??b").unwrap();
        assert!(p.matches("gpt-oss-20b"));
        assert!(!p.matches("gpt-oss-120b"));
        assert!(Pattern::new("*").unwrap().matches(""));
        assert!(!Pattern::new("a*b").unwrap().matches("acbx"));
        assert!(Pattern::new("a*b*c").unwrap().matches("aXbYbZc"));
    }

    #[test]
    fn regexes_are_case_insensitive() {
        let p = Pattern::new("re:^exaone-4\\.\\d").unwrap();
        assert!(p.matches("EXAONE-4.0-1.2B"));
        assert!(!p.matches("exaone-3.5"));
        assert!(Pattern::new("re:(").is_err());
    }
}
