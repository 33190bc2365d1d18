//! Finding markers (tags, Harmony tokens) in streamed text, and deciding how
//! much of the text's end must wait because it may be the start of one.

/// A marker found in a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hit {
    /// Byte offset where the marker starts.
    pub start: usize,
    /// Byte offset just past the marker.
    pub end: usize,
    /// Index of the marker in the list searched.
    pub which: usize,
}

/// The earliest occurrence of any non-empty marker; on a tie the longest.
pub(crate) fn find_first(buf: &str, markers: &[&str]) -> Option<Hit> {
    let mut best: Option<Hit> = None;
    for (which, marker) in markers.iter().enumerate() {
        if marker.is_empty() {
            continue;
        }
        if let Some(start) = buf.find(marker) {
            let hit = Hit {
                start,
                end: start + marker.len(),
                which,
            };
            best = match best {
                Some(b) if b.start < start || (b.start == start && b.end >= hit.end) => Some(b),
                _ => Some(hit),
            };
        }
    }
    best
}

/// Where the ambiguous tail of `buf` starts: the longest suffix that is a
/// proper prefix of some marker (it may become that marker when more text
/// arrives). Returns `buf.len()` when no suffix is ambiguous. Holding back
/// exactly this suffix, and nothing more, is what lets text stream with
/// minimal delay while tags split across pieces are still recognized.
pub(crate) fn ambiguous_tail(buf: &str, markers: &[&str]) -> usize {
    let longest = markers.iter().map(|m| m.len()).max().unwrap_or(0);
    if longest == 0 {
        return buf.len();
    }
    let from = buf.len().saturating_sub(longest - 1);
    for (i, _) in buf.char_indices().filter(|(i, _)| *i >= from) {
        let tail = &buf[i..];
        if markers
            .iter()
            .any(|m| m.len() > tail.len() && m.starts_with(tail))
        {
            return i;
        }
    }
    buf.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_then_longest_marker_wins() {
        let hit = find_first("ab</think>cd<think>", &["<think>", "</think>"]).unwrap();
        assert_eq!((hit.start, hit.end, hit.which), (2, 10, 1));
        let hit = find_first("x<|end|>", &["<|e", "<|end|>"]).unwrap();
        assert_eq!(hit.which, 1);
        assert_eq!(find_first("plain", &["<think>"]), None);
    }

    #[test]
    fn holds_back_only_the_ambiguous_suffix() {
        let m = ["<think>", "</think>"];
        assert_eq!(ambiguous_tail("hello </th", &m), 6);
        assert_eq!(ambiguous_tail("hello <", &m), 6);
        assert_eq!(ambiguous_tail("hello", &m), 5);
        assert_eq!(ambiguous_tail("a<b", &m), 3);
        // A complete marker is not "ambiguous": find_first handles it.
        assert_eq!(ambiguous_tail("<think>", &m), 7);
        // Multi-byte text before the tail.
        assert_eq!(ambiguous_tail("é<", &m), 2);
        assert_eq!(ambiguous_tail("x", &[]), 1);
    }
}
