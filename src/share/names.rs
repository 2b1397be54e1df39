//! The names files are shown and saved under: cleaned once when they arrive, and made distinct
//! within one bundle the way a desktop does ("a.pdf", "a (2).pdf"), so every file of a bundle's
//! archive extracts beside the others, also on file systems that ignore case.

use std::collections::HashSet;

/// Longest file name kept; longer names are cut at a character boundary.
const MAX_NAME_CHARS: usize = 255;

/// The name to show for an uploaded file: its last path component, without control or invisible
/// (bidirectional, zero-width) characters.
/// It is only ever displayed (escaped) and put in Content-Disposition; storage uses a random key.
pub fn clean_file_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let cleaned: String = crate::text::strip_invisible(last).chars().take(MAX_NAME_CHARS).collect();
    let trimmed = cleaned.trim();
    if trimmed.is_empty() || trimmed == "." || trimmed == ".." { "file".to_owned() } else { trimmed.to_owned() }
}

/// `names` (already cleaned) in order, each later one that repeats an earlier name (ignoring
/// case) numbered before its extension: "a.pdf", "a (2).pdf", "a (3).pdf".
pub fn distinct_names(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut taken = HashSet::new();
    names
        .into_iter()
        .map(|name| {
            let (stem, extension) = split_extension(&name);
            let mut candidate = name.clone();
            let mut number = 1;
            while !taken.insert(candidate.to_lowercase()) {
                number += 1;
                candidate = format!("{stem} ({number}){extension}");
            }
            candidate
        })
        .collect()
}

/// "report.pdf" → ("report", ".pdf"); a name that is all extension (".env") or has none keeps
/// its whole self as the stem.
fn split_extension(name: &str) -> (&str, &str) {
    match name.rfind('.') {
        Some(dot) if dot > 0 => name.split_at(dot),
        _ => (name, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_last_path_component_is_kept() {
        assert_eq!(clean_file_name("../../etc/passwd"), "passwd");
        assert_eq!(clean_file_name("C:\\Users\\a\\報告書.pdf"), "報告書.pdf");
        assert_eq!(clean_file_name("a\r\nb.txt"), "ab.txt");
        assert_eq!(clean_file_name(".."), "file");
        assert_eq!(clean_file_name("<b>x</b>.html"), "b>.html");
        assert_eq!(clean_file_name("invoice\u{202e}gpj.exe"), "invoicegpj.exe");
    }

    fn distinct(names: &[&str]) -> Vec<String> {
        distinct_names(names.iter().map(|n| (*n).to_owned()))
    }

    #[test]
    fn repeated_names_are_numbered_before_their_extension() {
        assert_eq!(distinct(&["a.pdf", "b.pdf", "a.pdf", "a.pdf"]), ["a.pdf", "b.pdf", "a (2).pdf", "a (3).pdf"]);
        assert_eq!(distinct(&["見積書.pdf", "見積書.pdf"]), ["見積書.pdf", "見積書 (2).pdf"]);
        assert_eq!(distinct(&[".env", ".env", "README", "README"]), [".env", ".env (2)", "README", "README (2)"]);
    }

    #[test]
    fn names_differing_only_in_case_count_as_the_same() {
        assert_eq!(distinct(&["Report.PDF", "report.pdf"]), ["Report.PDF", "report (2).pdf"]);
    }

    #[test]
    fn a_number_already_taken_by_a_real_name_is_skipped() {
        assert_eq!(distinct(&["a (2).pdf", "a.pdf", "a.pdf"]), ["a (2).pdf", "a.pdf", "a (3).pdf"]);
    }
}
