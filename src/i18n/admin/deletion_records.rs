//! The words for what a deletion case records in English (step reasons, why a store keeps its
//! data, the key each store was searched by), so the admin pages show no raw code.

use crate::deletion::Store;

/// The reasons a step records (`step_run::failure_class` and the verification's two).
const REASONS: [&str; 6] = [
    "database",
    "storage",
    "other",
    "verification found data left",
    "found again by the final verification",
    "storage timeout",
];
/// The stores that keep data on purpose, in the order of `RecordWords::constraints`.
const RETAINED: [Store; 3] = [Store::DeliveredMail, Store::Logs, Store::Backups];

/// One language's words for a case's records.
pub struct RecordWords {
    /// In the order of `REASONS`.
    pub reasons: [&'static str; 6],
    /// `Store::constraint` of the stores in `RETAINED`; `None` where the recorded English text
    /// is the language's own.
    pub constraints: Option<[&'static str; 3]>,
    /// `Store::searched_by` in the order of `Store::ORDER`; `None` as for `constraints`.
    pub searched_by: Option<[&'static str; Store::ORDER.len()]>,
}

impl RecordWords {
    /// A step's reason; text this version does not know (an older or newer one's) as it is.
    pub fn reason<'a>(&self, recorded: &'a str) -> &'a str {
        if let Some(i) = REASONS.iter().position(|r| *r == recorded) {
            return self.reasons[i];
        }
        let retained = RETAINED.iter().position(|s| s.constraint() == Some(recorded));
        match (retained, &self.constraints) {
            (Some(i), Some(words)) => words[i],
            _ => recorded,
        }
    }

    /// The evidence's search key, translated only while it is the text this version records
    /// (the evidence says what was done then, not what would be done now).
    pub fn searched_by<'a>(&self, store: Store, recorded: &'a str) -> &'a str {
        match &self.searched_by {
            Some(words) if store.searched_by() == recorded => words[store.position()],
            _ => recorded,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{deletion::Store, i18n::Lang};

    #[test]
    fn every_recorded_reason_and_search_key_has_japanese_words() {
        let ja = &Lang::Ja.text().admin.deletion.records;
        let recorded = super::REASONS.iter().copied().chain(super::RETAINED.iter().filter_map(|s| s.constraint()));
        for reason in recorded {
            let words = ja.reason(reason);
            assert!(!words.is_empty() && words != reason, "no Japanese for {reason:?}");
        }
        for store in Store::ORDER {
            let (recorded, words) = (store.searched_by(), ja.searched_by(store, store.searched_by()));
            // A bare column name (`users.id`) reads the same in every language.
            let bare_column = !recorded.contains(' ');
            assert!(!words.is_empty() && (words != recorded || bare_column), "no Japanese for {store:?}");
            assert!(!words.contains(" of ") && !words.contains("then"), "{store:?}: {words}");
        }
        assert_eq!(ja.reason("a newer reason"), "a newer reason");
        assert_eq!(ja.searched_by(Store::Sessions, "an older key"), "an older key");
    }

    #[test]
    fn english_pages_show_the_recorded_sentences_and_words_for_the_codes() {
        let en = &Lang::En.text().admin.deletion.records;
        assert_eq!(en.reason("storage"), "storage error");
        let kept = Store::Logs.constraint().unwrap();
        assert_eq!(en.reason(kept), kept);
        assert_eq!(en.searched_by(Store::Shares, Store::Shares.searched_by()), Store::Shares.searched_by());
    }
}
