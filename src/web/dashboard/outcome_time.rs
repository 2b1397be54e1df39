//! The time a share's line in the list shows beside its outcome: how long a waiting (or locked)
//! share has left, and when a downloaded one was downloaded (or a note read).

use crate::{
    db::Timestamp,
    i18n::format::{Reader, human_time},
    share::sender::{SenderStatus, ShareSummary},
};

/// The time worth showing for `share` now, in the reader's words; empty for the other outcomes.
pub fn outcome_time(share: &ShareSummary, reader: Reader, now: Timestamp) -> String {
    let t = &reader.lang.text().dashboard;
    match (share.status, share.downloaded_at) {
        (SenderStatus::Waiting | SenderStatus::Locked, _) => time_left(share.expires_at, now, reader),
        (SenderStatus::Downloaded, Some(at)) => {
            let words = if share.is_note() { t.note.read_at } else { t.downloaded_at };
            words.replace("{time}", &human_time(at, reader))
        }
        _ => String::new(),
    }
}

/// Days while two or more are left, then hours while two or more are, then minutes.
fn time_left(until: Timestamp, now: Timestamp, reader: Reader) -> String {
    let t = &reader.lang.text().dashboard;
    let minutes = (until.0 - now.0).num_minutes().max(0);
    let (template, n) = match minutes {
        m if m >= 48 * 60 => (t.days_left, m / (24 * 60)),
        m if m >= 2 * 60 => (t.hours_left, m / 60),
        m => (t.minutes_left, m),
    };
    template.replace("{n}", &n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::Lang;

    fn at(minutes: i64) -> Timestamp {
        Timestamp(chrono::DateTime::from_timestamp(1_764_460_800 + minutes * 60, 0).unwrap())
    }

    #[test]
    fn the_time_left_is_told_in_days_then_hours_then_minutes() {
        let reader: Reader = Lang::En.into();
        assert_eq!(time_left(at(3 * 24 * 60 + 5), at(0), reader), "3 days left");
        assert_eq!(time_left(at(47 * 60), at(0), reader), "47 hours left");
        assert_eq!(time_left(at(119), at(0), reader), "119 min left");
        assert_eq!(time_left(at(0), at(5), reader), "0 min left");
        assert_eq!(time_left(at(3 * 60), at(0), Lang::Ja.into()), "残り 3 時間");
    }
}
