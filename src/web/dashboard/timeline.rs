//! A share's timeline as its page shows it: grouped by day in the reader's zone (named once, not on
//! every line), each event in the reader's words at its time of day. A run of one event kind one
//! after another (five wrong codes) is one line with its count, within one day; a run whose events
//! all fall within a minute shows one time, a longer one its first and last. Each new link is its
//! own line with its number, as its mail is ("new link (2)").

use crate::{
    i18n::{
        Lang, Text,
        format::{Reader, day_heading, local_time, zone_name},
    },
    share::{EventKind, ShareEvent},
};

/// Events at most this far apart read as one moment: one time, no range.
const ONE_MOMENT: chrono::TimeDelta = chrono::TimeDelta::minutes(1);

/// The timeline: its days, and the zone every time on it is in.
pub struct Timeline {
    /// "Times are in Japan time.": said once, under the heading.
    pub zone_line: String,
    pub days: Vec<Day>,
}

impl Timeline {
    pub fn is_empty(&self) -> bool {
        self.days.is_empty()
    }
}

/// One day's heading and its events, oldest first.
pub struct Day {
    pub heading: String,
    pub rows: Vec<EventRow>,
}

/// One line of the timeline: an event, or a run of the same event.
pub struct EventRow {
    pub kind: &'static str,
    /// The event's words, Japanese phrases marked with `|`.
    pub text: &'static str,
    /// The time of day of the (first) event.
    pub at: String,
    /// The time of day of the last of a run more than a minute long; `None` otherwise.
    pub until: Option<String>,
    pub count: usize,
    /// Which link a new link was: "new link (2)".
    pub link: Option<String>,
}

/// The words for an event; a secret note's share is opened and read where a file's is downloaded.
pub(in crate::web) fn event_text(t: &'static Text, lang: Lang, kind: EventKind, note: bool) -> &'static str {
    let s = &lang.text().dashboard;
    match kind {
        EventKind::Downloaded if note => t.dashboard.note.event_shown,
        EventKind::Completed if note => t.dashboard.note.event_read,
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
        EventKind::ScanRefused => s.scan.event_refused,
        EventKind::KeyDestroyed => t.dashboard.event_key_destroyed,
        EventKind::Purged => t.dashboard.event_purged,
        EventKind::FileUploaded => t.request.event_file_uploaded,
        EventKind::Answered => t.request.event_answered,
        EventKind::FileRefused => t.request.event_file_refused,
    }
}

/// The label of the share's `n`th link (the first is 1).
pub fn link_label(t: &'static Text, n: usize) -> String {
    match n {
        0 | 1 => t.dashboard.timeline.first_link.to_owned(),
        n => t.dashboard.timeline.new_link.replace("{n}", &n.to_string()),
    }
}

/// A run of one kind in progress: its first and last event and how many.
struct Run {
    first: ShareEvent,
    last: ShareEvent,
    count: usize,
    /// The number of the link a new link made.
    link: Option<usize>,
}

/// Whether `event` continues `run`: the same kind on the same day, and not a new link (each link
/// keeps its own line and number).
fn continues(run: &Run, event: &ShareEvent, reader: Reader) -> bool {
    let day = |at| local_time(at, reader).date_naive();
    run.first.kind == event.kind && event.kind != EventKind::LinkRenewed && day(run.first.at) == day(event.at)
}

fn runs(events: Vec<ShareEvent>, reader: Reader) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    let mut links = 1;
    for event in events {
        match runs.last_mut() {
            Some(run) if continues(run, &event, reader) => {
                run.last = event;
                run.count += 1;
            }
            _ => {
                let link = (event.kind == EventKind::LinkRenewed).then(|| {
                    links += 1;
                    links
                });
                runs.push(Run { first: event.clone(), last: event, count: 1, link });
            }
        }
    }
    runs
}

/// The events, oldest first, as days of rows; `note` when the share hands over a secret note.
pub fn timeline(t: &'static Text, reader: Reader, events: Vec<ShareEvent>, note: bool) -> Timeline {
    let clock = |at| local_time(at, reader).format("%H:%M").to_string();
    let mut days: Vec<Day> = Vec::new();
    let mut current = None;
    for run in runs(events, reader) {
        let date = local_time(run.first.at, reader).date_naive();
        if current != Some(date) {
            current = Some(date);
            days.push(Day { heading: day_heading(date, reader.lang), rows: Vec::new() });
        }
        let row = EventRow {
            kind: run.first.kind.code(),
            text: event_text(t, reader.lang, run.first.kind, note),
            at: clock(run.first.at),
            until: (run.last.at.0 - run.first.at.0 > ONE_MOMENT).then(|| clock(run.last.at)),
            count: run.count,
            link: run.link.map(|n| link_label(t, n)),
        };
        days.last_mut().expect("a day was just pushed").rows.push(row);
    }
    Timeline { zone_line: t.dashboard.timeline.zone_line.replace("{zone}", &zone_name(reader)), days }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{accounts::TimeZone, db::Timestamp};

    /// Seconds after 2025-11-30 00:00 UTC (09:00 in Tokyo).
    fn event(kind: EventKind, secs: i64) -> ShareEvent {
        ShareEvent {
            kind,
            file_name: None,
            at: Timestamp(chrono::DateTime::from_timestamp(1_764_460_800 + secs, 0).unwrap()),
        }
    }

    fn english(events: Vec<ShareEvent>) -> Timeline {
        timeline(Lang::En.text(), Lang::En.into(), events, false)
    }

    fn shape(timeline: &Timeline) -> Vec<Vec<(&'static str, usize)>> {
        timeline.days.iter().map(|day| day.rows.iter().map(|r| (r.kind, r.count)).collect()).collect()
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
        let timeline = english(events);
        assert_eq!(shape(&timeline), [[("opened", 1), ("code_failed", 3), ("code_sent", 1), ("code_failed", 1)]]);
        let rows = &timeline.days[0].rows;
        assert_eq!(rows[1].at, "00:01");
        assert_eq!(rows[1].until.as_deref(), Some("00:03"));
        assert_eq!(rows[0].until, None);
    }

    #[test]
    fn a_run_within_one_minute_shows_one_time_and_a_longer_one_its_range() {
        let within = english(vec![event(EventKind::CodeFailed, 50), event(EventKind::CodeFailed, 110)]);
        assert_eq!(shape(&within), [[("code_failed", 2)]]);
        assert_eq!((within.days[0].rows[0].at.as_str(), within.days[0].rows[0].until.as_deref()), ("00:00", None));

        let longer = english(vec![event(EventKind::CodeFailed, 50), event(EventKind::CodeFailed, 111)]);
        assert_eq!(longer.days[0].rows[0].until.as_deref(), Some("00:01"));
    }

    #[test]
    fn days_are_the_readers_own_and_a_run_stops_at_midnight() {
        // 23:59 and 00:01 in UTC; 08:59 and 09:01 the same morning in Tokyo.
        let events = || vec![event(EventKind::CodeFailed, -60), event(EventKind::CodeFailed, 60)];
        let utc = english(events());
        assert_eq!(shape(&utc), [[("code_failed", 1)], [("code_failed", 1)]]);
        assert_eq!(
            utc.days.iter().map(|d| d.heading.as_str()).collect::<Vec<_>>(),
            ["Sat 29 Nov 2025", "Sun 30 Nov 2025"]
        );
        assert_eq!(utc.zone_line, "Times are in UTC.");

        let tokyo = Reader { lang: Lang::En, zone: TimeZone::parse("Asia/Tokyo") };
        let tokyo = timeline(Lang::En.text(), tokyo, events(), false);
        assert_eq!(shape(&tokyo), [[("code_failed", 2)]]);
        assert_eq!(
            (tokyo.days[0].rows[0].at.as_str(), tokyo.days[0].rows[0].until.as_deref()),
            ("08:59", Some("09:01"))
        );
        assert_eq!(tokyo.zone_line, "Times are in Asia/Tokyo.");
        assert_eq!(timeline(Lang::Ja.text(), Lang::Ja.into(), events(), false).zone_line, "時刻は日本時間です。");
    }

    #[test]
    fn each_new_link_keeps_its_own_line_and_number() {
        let events = vec![
            event(EventKind::Opened, 0),
            event(EventKind::LinkRenewed, 10),
            event(EventKind::LinkRenewed, 20),
            event(EventKind::Opened, 30),
        ];
        let timeline = english(events);
        assert_eq!(shape(&timeline), [[("opened", 1), ("link_renewed", 1), ("link_renewed", 1), ("opened", 1)]]);
        let links: Vec<_> = timeline.days[0].rows.iter().map(|r| r.link.as_deref()).collect();
        assert_eq!(links, [None, Some("new link (2)"), Some("new link (3)"), None]);
        assert_eq!(link_label(Lang::En.text(), 1), "first link");
        assert_eq!(link_label(Lang::Ja.text(), 2), "新しいリンク（2）");
    }

    #[test]
    fn the_new_kinds_have_their_own_words_in_both_languages() {
        for lang in Lang::ALL {
            let timeline = timeline(
                lang.text(),
                lang.into(),
                vec![event(EventKind::LinkRenewed, 0), event(EventKind::Expired, 1)],
                false,
            );
            assert_eq!(timeline.days[0].rows[0].text, lang.text().dashboard.event_link_renewed);
            assert_eq!(timeline.days[0].rows[1].text, lang.text().dashboard.event_expired);
        }
    }

    #[test]
    fn a_note_is_opened_and_read_where_a_file_is_downloaded() {
        for lang in Lang::ALL {
            let events = || vec![event(EventKind::Downloaded, 0), event(EventKind::Completed, 1)];
            let note = timeline(lang.text(), lang.into(), events(), true);
            let texts: Vec<&str> = note.days[0].rows.iter().map(|row| row.text).collect();
            assert_eq!(texts, [lang.text().dashboard.note.event_shown, lang.text().dashboard.note.event_read]);
            let file = timeline(lang.text(), lang.into(), events(), false);
            assert_eq!(file.days[0].rows[0].text, lang.text().dashboard.event_downloaded);
        }
    }
}
