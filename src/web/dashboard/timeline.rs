//! A share's timeline as its page shows it: each event in the reader's words, and a run of the
//! same event one after another (five wrong codes) as one line with its count.

use crate::{
    i18n::{
        Lang, Text,
        format::{Reader, human_time},
    },
    share::{EventKind, ShareEvent},
};

/// One line of the timeline: an event, or a run of the same event.
pub struct EventRow {
    pub kind: &'static str,
    pub text: &'static str,
    /// When the (first) event happened.
    pub at: String,
    /// When the last of a run happened; `None` for a single event.
    pub until: Option<String>,
    pub count: usize,
}

fn event_text(t: &'static Text, lang: Lang, kind: EventKind) -> &'static str {
    let s = &lang.text().dashboard;
    match kind {
        EventKind::Opened => t.dashboard.event_opened,
        EventKind::CodeSent => t.dashboard.event_code_sent,
        EventKind::CodeMailFailed => t.dashboard.event_code_mail_failed,
        EventKind::CodeFailed => t.dashboard.event_code_failed,
        EventKind::CodeRequestsBlocked => s.event_code_requests_blocked,
        EventKind::Locked => t.dashboard.event_locked,
        EventKind::Unlocked => t.dashboard.event_unlocked,
        EventKind::Verified => t.dashboard.event_verified,
        EventKind::Downloaded => t.dashboard.event_downloaded,
        EventKind::Completed => t.dashboard.event_completed,
        EventKind::Refused => t.dashboard.event_refused,
        EventKind::Revoked => t.dashboard.event_revoked,
        EventKind::Expired => s.event_expired,
        EventKind::LinkRenewed => s.event_link_renewed,
        EventKind::Purged => t.dashboard.event_purged,
    }
}

/// The events, oldest first, with each run of one kind folded into one row.
pub fn event_rows(t: &'static Text, reader: Reader, events: Vec<ShareEvent>) -> Vec<EventRow> {
    let mut runs: Vec<(EventKind, ShareEvent, ShareEvent, usize)> = Vec::new();
    for event in events {
        match runs.last_mut() {
            Some((kind, _, last, count)) if *kind == event.kind => {
                *last = event;
                *count += 1;
            }
            _ => runs.push((event.kind, event.clone(), event, 1)),
        }
    }
    runs.into_iter()
        .map(|(kind, first, last, count)| EventRow {
            kind: kind.code(),
            text: event_text(t, reader.lang, kind),
            at: human_time(first.at, reader),
            until: (count > 1).then(|| human_time(last.at, reader)),
            count,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Timestamp;

    fn event(kind: EventKind, secs: i64) -> ShareEvent {
        ShareEvent { kind, at: Timestamp(chrono::DateTime::from_timestamp(1_764_460_800 + secs, 0).unwrap()) }
    }

    #[test]
    fn consecutive_repeats_fold_into_one_row_with_their_count_and_span() {
        let events = vec![
            event(EventKind::Opened, 0),
            event(EventKind::CodeFailed, 60),
            event(EventKind::CodeFailed, 120),
            event(EventKind::CodeFailed, 180),
            event(EventKind::CodeSent, 240),
            event(EventKind::CodeFailed, 300),
        ];
        let rows = event_rows(Lang::En.text(), Lang::En.into(), events);
        let shape: Vec<_> = rows.iter().map(|r| (r.kind, r.count)).collect();
        assert_eq!(shape, [("opened", 1), ("code_failed", 3), ("code_sent", 1), ("code_failed", 1)]);
        assert_eq!(rows[1].at, "30 Nov 2025, 00:01 UTC");
        assert_eq!(rows[1].until.as_deref(), Some("30 Nov 2025, 00:03 UTC"));
        assert_eq!(rows[0].until, None);
    }

    #[test]
    fn the_new_kinds_have_their_own_words_in_both_languages() {
        for lang in Lang::ALL {
            let rows = event_rows(
                lang.text(),
                lang.into(),
                vec![event(EventKind::LinkRenewed, 0), event(EventKind::Expired, 1)],
            );
            assert_eq!(rows[0].text, lang.text().dashboard.event_link_renewed);
            assert_eq!(rows[1].text, lang.text().dashboard.event_expired);
        }
    }
}
