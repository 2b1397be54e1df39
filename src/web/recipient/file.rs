//! The file response (a stored file, or the ZIP archive of a handover's files): streamed with its
//! exact length, never sniffed, never rendered, named with an RFC 6266 `filename*` that keeps
//! Japanese names intact, and resumable: `Accept-Ranges` and a strong `ETag` (a file's SHA-256,
//! the archive's fingerprint) let a browser ask for the rest.

use poem::{
    Body, Response,
    http::{StatusCode, header},
};

use super::range::Part;
use crate::{lifecycle::ClaimedFile, storage::OpenedFile, zip::Layout};

/// Nothing keeps a copy of the file; Chromium still resumes a cut download with it (measured:
/// docs/decisions/).
const CACHE_CONTROL: &str = "no-store";

/// What a response serves, as its headers say it.
pub struct Served {
    pub name: String,
    pub content_type: &'static str,
    pub size: u64,
    /// The strong validator, quoted.
    pub etag: String,
}

impl Served {
    /// A stored file, whose validator is its SHA-256.
    pub fn file(file: &ClaimedFile) -> Self {
        Self {
            name: file.original_name.clone(),
            content_type: "application/octet-stream",
            size: u64::try_from(file.size_bytes).unwrap_or(0),
            etag: format!("\"{}\"", file.sha256),
        }
    }

    /// The archive of several files, named `name`.
    pub fn archive(layout: &Layout, name: String) -> Self {
        Self { name, content_type: "application/zip", size: layout.len(), etag: layout.etag().to_owned() }
    }
}

/// The stream of an opened file (or of its range).
pub fn stream(opened: OpenedFile) -> Body {
    Body::from_bytes_stream(opened.into_chunks())
}

/// The answer for `part` of what is `served` with `body` (empty for HEAD): 206 for a range, else
/// 200 (an unsatisfiable part is answered by [`unsatisfiable`] instead).
pub fn file_response(served: &Served, part: Part, body: Body) -> Response {
    let size = served.size;
    let builder = Response::builder()
        .header(header::CONTENT_TYPE, served.content_type)
        .header(header::CONTENT_DISPOSITION, content_disposition(&served.name))
        .header(header::CONTENT_SECURITY_POLICY, "sandbox; frame-ancestors 'none'")
        .header(header::CACHE_CONTROL, CACHE_CONTROL)
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .header(header::ACCEPT_RANGES, "bytes")
        .header(header::ETAG, &served.etag);
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
pub fn unsatisfiable(served: &Served) -> Response {
    Response::builder()
        .status(StatusCode::RANGE_NOT_SATISFIABLE)
        .header(header::CONTENT_RANGE, format!("bytes */{}", served.size))
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
