//! The file response: streamed from storage with its exact length, never sniffed, never
//! rendered, named with an RFC 6266 `filename*` that keeps Japanese names intact, and resumable:
//! `Accept-Ranges` and a strong `ETag` (the content's SHA-256) let a browser ask for the rest.

use poem::{
    Body, Response,
    http::{StatusCode, header},
};

use super::range::Part;
use crate::{lifecycle::ClaimedFile, storage::OpenedFile};

/// Nothing keeps a copy of the file; Chromium still resumes a cut download with it (measured:
/// docs/decisions.md).
const CACHE_CONTROL: &str = "no-store";

/// The strong validator of the file: its SHA-256, quoted.
pub fn etag(file: &ClaimedFile) -> String {
    format!("\"{}\"", file.sha256)
}

/// The stream of an opened file (or of its range).
pub fn stream(opened: OpenedFile) -> Body {
    Body::from_bytes_stream(opened.into_chunks())
}

/// The answer for `part` of `file` with `body` (empty for HEAD): 206 for a range, else 200 (an
/// unsatisfiable part is answered by [`unsatisfiable`] instead).
pub fn file_response(file: &ClaimedFile, part: Part, body: Body) -> Response {
    let size = u64::try_from(file.size_bytes).unwrap_or(0);
    let builder = Response::builder()
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .header(header::CONTENT_DISPOSITION, content_disposition(&file.original_name))
        .header(header::CONTENT_SECURITY_POLICY, "sandbox; frame-ancestors 'none'")
        .header(header::CACHE_CONTROL, CACHE_CONTROL)
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .header(header::ACCEPT_RANGES, "bytes")
        .header(header::ETAG, etag(file));
    let builder = match part {
        Part::Range { start, end } => builder
            .status(StatusCode::PARTIAL_CONTENT)
            .header(header::CONTENT_RANGE, format!("bytes {start}-{end}/{size}"))
            .header(header::CONTENT_LENGTH, end - start + 1),
        Part::Whole | Part::Unsatisfiable => builder.header(header::CONTENT_LENGTH, size),
    };
    builder.body(body)
}

/// 416: the asked range starts past the end; says how long the file is.
pub fn unsatisfiable(file: &ClaimedFile) -> Response {
    Response::builder()
        .status(StatusCode::RANGE_NOT_SATISFIABLE)
        .header(header::CONTENT_RANGE, format!("bytes */{}", file.size_bytes))
        .header(header::ACCEPT_RANGES, "bytes")
        .header(header::CACHE_CONTROL, CACHE_CONTROL)
        .body(Body::empty())
}

/// `attachment; filename="ascii fallback"; filename*=UTF-8''percent-encoded`.
pub fn content_disposition(file_name: &str) -> String {
    let fallback: String = file_name
        .chars()
        .map(|c| if c.is_ascii_graphic() && !matches!(c, '"' | '\\' | '%' | ';') || c == ' ' { c } else { '_' })
        .collect();
    let fallback = if fallback.trim_matches(['_', ' ', '.']).is_empty() { "download".to_owned() } else { fallback };
    let encoded: String = file_name
        .bytes()
        .map(|b| {
            // RFC 5987 attr-char: ALPHA / DIGIT / "!#$&+-.^_`|~"
            if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    format!("attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}")
}

#[cfg(test)]
mod tests {
    use super::content_disposition;

    #[test]
    fn a_japanese_name_is_kept_in_filename_star_with_an_ascii_fallback() {
        assert_eq!(
            content_disposition("報告書.pdf"),
            "attachment; filename=\"___.pdf\"; filename*=UTF-8''%E5%A0%B1%E5%91%8A%E6%9B%B8.pdf"
        );
    }

    #[test]
    fn quotes_and_line_breaks_cannot_break_the_header() {
        let header = content_disposition("a\"b\r\nSet-Cookie: x=1;.txt");
        assert!(!header.contains('\r') && !header.contains('\n'));
        assert_eq!(header.matches('"').count(), 2, "{header}");
        assert!(header.starts_with("attachment; filename=\"a_b__Set-Cookie: x=1_.txt\""), "{header}");
    }

    #[test]
    fn a_name_with_nothing_printable_falls_back_to_download() {
        assert!(content_disposition("日本").starts_with("attachment; filename=\"download\""));
    }
}
