//! A handover's files as the sender's mails name them: one file by its name, as always; several
//! by their number in a subject, and each by name on a line of its own in the body.

use crate::i18n::Text;

/// The names without control or invisible characters (they are the sender's own, but go into
/// a subject line).
pub fn cleaned(names: &[String]) -> Vec<String> {
    names.iter().map(|name| crate::text::strip_invisible(name)).collect()
}

/// What a subject says: the one file's name, or how many files.
pub fn in_subject(t: &Text, names: &[String]) -> String {
    match names {
        [name] => name.clone(),
        _ => t.mail.files_count.replace("{n}", &names.len().to_string()),
    }
}

/// What comes before the names in the body: "File:" for one, "Files (n):" for several.
pub fn label(t: &Text, names: &[String]) -> String {
    match names {
        [_] => t.mail.receipt_file.to_owned(),
        _ => t.mail.receipt_files.replace("{n}", &names.len().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::Lang;

    #[test]
    fn one_file_is_named_and_several_are_counted_in_both_languages() {
        let one = ["見積書.pdf".to_owned()];
        let three = ["a.pdf".to_owned(), "b.pdf".to_owned(), "報告書.pdf".to_owned()];
        for lang in Lang::ALL {
            let t = lang.text();
            assert_eq!(in_subject(t, &one), "見積書.pdf");
            assert_eq!(label(t, &one), t.mail.receipt_file);
            assert!(in_subject(t, &three).contains('3'), "{lang:?}");
            assert!(label(t, &three).contains('3'), "{lang:?}");
        }
    }
}
