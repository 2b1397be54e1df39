//! Which part of the file a GET asks for (RFC 9110 §14): one byte range, or the whole file. Only
//! what resuming a download needs is honoured; anything else is answered with the whole file,
//! which the RFC allows a server to do with any Range it does not want to serve.

/// The part of a file of known size to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// 200 with every byte.
    Whole,
    /// 206 with bytes `start..=end`.
    Range { start: u64, end: u64 },
    /// 416: the range starts past the end (or asks for nothing).
    Unsatisfiable,
}

impl Part {
    /// The first byte and the length to read; `None` when nothing is to be sent.
    pub fn span(self, size: u64) -> Option<(u64, u64)> {
        match self {
            Part::Whole => Some((0, size)),
            Part::Range { start, end } => Some((start, end - start + 1)),
            Part::Unsatisfiable => None,
        }
    }
}

/// The part to send for the request's `Range` and `If-Range` headers, given the file's strong
/// `etag` (as sent, quotes included). A stale or dated `If-Range` means "the whole file":
/// the client's partial copy may be of another file.
pub fn choose(range: Option<&str>, if_range: Option<&str>, etag: &str, size: u64) -> Part {
    let Some(range) = range else { return Part::Whole };
    if if_range.is_some_and(|validator| validator.trim() != etag) {
        return Part::Whole;
    }
    let Some(spec) = range.trim().strip_prefix("bytes=") else { return Part::Whole };
    if spec.contains(',') {
        return Part::Whole;
    }
    let Some((first, last)) = spec.trim().split_once('-') else { return Part::Whole };
    match (number(first), number(last)) {
        // `-n`: the last n bytes.
        (None, Some(suffix)) if first.is_empty() => match (suffix, size) {
            (0, _) | (_, 0) => Part::Unsatisfiable,
            _ => Part::Range { start: size.saturating_sub(suffix), end: size - 1 },
        },
        (Some(start), None) if last.is_empty() => from(start, size.saturating_sub(1), size),
        (Some(start), Some(end)) if start <= end => from(start, end.min(size.saturating_sub(1)), size),
        _ => Part::Whole,
    }
}

fn from(start: u64, end: u64, size: u64) -> Part {
    if start >= size { Part::Unsatisfiable } else { Part::Range { start, end } }
}

/// Digits only (no sign, no spaces inside), as RFC 9110's `1*DIGIT`.
fn number(text: &str) -> Option<u64> {
    let text = text.trim();
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::{Part, choose};

    const TAG: &str = "\"abc\"";

    fn part(range: &str) -> Part {
        choose(Some(range), None, TAG, 100)
    }

    #[test]
    fn the_three_single_range_forms_are_served() {
        assert_eq!(part("bytes=0-0"), Part::Range { start: 0, end: 0 });
        assert_eq!(part("bytes=10-19"), Part::Range { start: 10, end: 19 });
        assert_eq!(part("bytes=30-"), Part::Range { start: 30, end: 99 });
        assert_eq!(part("bytes=-10"), Part::Range { start: 90, end: 99 });
        assert_eq!(part("bytes=-500"), Part::Range { start: 0, end: 99 });
        assert_eq!(part("bytes=90-500"), Part::Range { start: 90, end: 99 });
    }

    #[test]
    fn a_range_past_the_end_or_of_nothing_is_unsatisfiable() {
        assert_eq!(part("bytes=100-"), Part::Unsatisfiable);
        assert_eq!(part("bytes=100-200"), Part::Unsatisfiable);
        assert_eq!(part("bytes=-0"), Part::Unsatisfiable);
        assert_eq!(choose(Some("bytes=0-"), None, TAG, 0), Part::Unsatisfiable);
    }

    #[test]
    fn anything_else_is_answered_with_the_whole_file() {
        for range in ["bytes=0-1,5-6", "items=0-1", "bytes=5-1", "bytes=a-b", "bytes=-", "bytes=+1-2", "bytes"] {
            assert_eq!(part(range), Part::Whole, "{range}");
        }
        assert_eq!(choose(None, Some(TAG), TAG, 100), Part::Whole);
    }

    #[test]
    fn if_range_honours_the_range_only_for_the_same_file() {
        assert_eq!(choose(Some("bytes=5-"), Some(TAG), TAG, 100), Part::Range { start: 5, end: 99 });
        assert_eq!(choose(Some("bytes=5-"), Some("\"other\""), TAG, 100), Part::Whole);
        assert_eq!(choose(Some("bytes=5-"), Some("W/\"abc\""), TAG, 100), Part::Whole);
        assert_eq!(choose(Some("bytes=5-"), Some("Tue, 01 Dec 2026 12:00:00 GMT"), TAG, 100), Part::Whole);
    }

    #[test]
    fn a_span_is_the_first_byte_and_the_length() {
        assert_eq!(Part::Whole.span(100), Some((0, 100)));
        assert_eq!(Part::Range { start: 10, end: 19 }.span(100), Some((10, 10)));
        assert_eq!(Part::Unsatisfiable.span(100), None);
    }
}
