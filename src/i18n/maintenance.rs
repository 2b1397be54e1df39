//! The words for the maintenance ledger's codes (run kinds, triggers, states, row outcomes and
//! the kinds of rows a run handles), so the admin pages never show a raw code.

use crate::maintenance::{Kind, Outcome, RunState, Trigger};

/// Every run kind, in the order of `MaintenanceText::kinds`.
const KINDS: [Kind; 9] = [
    Kind::All,
    Kind::Sessions,
    Kind::Codes,
    Kind::Invitations,
    Kind::Outbox,
    Kind::RateLimits,
    Kind::ShareRetention,
    Kind::ShareGc,
    Kind::Leftovers,
];
const TRIGGERS: [Trigger; 4] = [Trigger::Timer, Trigger::Request, Trigger::Http, Trigger::Cli];
const STATES: [RunState; 5] =
    [RunState::Accepted, RunState::Running, RunState::Succeeded, RunState::Partial, RunState::Failed];
const OUTCOMES: [Outcome; 4] = [Outcome::Deleted, Outcome::Skipped, Outcome::AlreadyGone, Outcome::Failed];
/// The rows the sweeps name (`Sweep::target_kind`) and the GC's "share".
const TARGETS: [&str; 7] = ["session", "code", "invitation", "mail", "rate_limit_hit", "share_personal_data", "share"];

/// What a run's note says, as the runner (`maintenance::runner`) and the ledger write it. A
/// note is `kind: phrase` parts joined by "; "; "database error" may carry a code after it.
const NOTE_PHRASES: [&str; 9] = [
    "another run holds it",
    "stopped at the batch cap",
    "stopped at the time cap",
    "lost its lease",
    "database unavailable",
    "database error",
    "abandoned: the run stopped without finishing",
    "abandoned: its lease ran out",
    // The leftover sweep's, when listing or reading the store failed.
    "storage error",
];

/// The I/O failures a file clean-up item records most (`lifecycle::gc` stores the kind's
/// English text), in the order of `MaintenanceText::item_reasons`.
const IO_FAILURES: [std::io::ErrorKind; 6] = [
    std::io::ErrorKind::PermissionDenied,
    std::io::ErrorKind::ReadOnlyFilesystem,
    std::io::ErrorKind::StorageFull,
    std::io::ErrorKind::TimedOut,
    std::io::ErrorKind::NotFound,
    std::io::ErrorKind::Other,
];

/// One language's words for the ledger's codes, each array in the order of the lists above.
pub struct MaintenanceText {
    pub kinds: [&'static str; 9],
    pub triggers: [&'static str; 4],
    pub states: [&'static str; 5],
    pub outcomes: [&'static str; 4],
    pub targets: [&'static str; 7],
    /// In the order of `NOTE_PHRASES`; `None` where the recorded English is the language's own.
    pub notes: Option<[&'static str; 9]>,
    /// In the order of `IO_FAILURES`; `None` as for `notes`.
    pub item_reasons: Option<[&'static str; 6]>,
}

/// The word at the code's position; an unknown code (a newer instance's) is shown as it is.
fn word<'a>(words: &[&'static str], codes: impl IntoIterator<Item = &'static str>, code: &'a str) -> &'a str {
    codes.into_iter().position(|c| c == code).map_or(code, |i| words[i])
}

impl MaintenanceText {
    pub fn kind<'a>(&self, code: &'a str) -> &'a str {
        word(&self.kinds, KINDS.map(Kind::as_str), code)
    }

    pub fn trigger<'a>(&self, code: &'a str) -> &'a str {
        word(&self.triggers, TRIGGERS.map(Trigger::as_str), code)
    }

    pub fn state<'a>(&self, code: &'a str) -> &'a str {
        word(&self.states, STATES.map(RunState::code), code)
    }

    pub fn outcome<'a>(&self, code: &'a str) -> &'a str {
        word(&self.outcomes, OUTCOMES.map(Outcome::as_str), code)
    }

    pub fn target<'a>(&self, code: &'a str) -> &'a str {
        word(&self.targets, TARGETS, code)
    }

    /// A run's note with its kind codes and phrases in words; what is unknown stays as it is.
    pub fn note(&self, note: &str) -> String {
        let part = |part: &str| match part.split_once(": ") {
            Some((kind, phrase)) if KINDS.iter().any(|k| k.as_str() == kind) => {
                format!("{}: {}", self.kind(kind), self.phrase(phrase))
            }
            _ => self.phrase(part),
        };
        note.split("; ").map(part).collect::<Vec<_>>().join("; ")
    }

    /// An item's failure reason in words; one this version does not know as it is.
    pub fn item_reason<'a>(&self, reason: &'a str) -> &'a str {
        let known = IO_FAILURES.iter().position(|kind| kind.to_string() == reason);
        match (known, &self.item_reasons) {
            (Some(i), Some(words)) => words[i],
            _ => reason,
        }
    }

    fn phrase(&self, phrase: &str) -> String {
        let Some(words) = &self.notes else { return phrase.to_owned() };
        if let Some(i) = NOTE_PHRASES.iter().position(|p| *p == phrase) {
            return words[i].to_owned();
        }
        match phrase.strip_prefix("database error ") {
            Some(code) => format!("{} {code}", words[5]),
            None => phrase.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{
        i18n::Lang,
        maintenance::{Sweep, SweepSettings},
    };

    /// Fails to compile when a variant is added, so the lists above cannot fall behind.
    fn listed(kind: Kind, trigger: Trigger, state: RunState, outcome: Outcome) -> bool {
        let kind = match kind {
            Kind::All
            | Kind::Sessions
            | Kind::Codes
            | Kind::Invitations
            | Kind::Outbox
            | Kind::RateLimits
            | Kind::ShareRetention
            | Kind::ShareGc
            | Kind::Leftovers => KINDS.contains(&kind),
        };
        let trigger = match trigger {
            Trigger::Timer | Trigger::Request | Trigger::Http | Trigger::Cli => TRIGGERS.contains(&trigger),
        };
        let state = match state {
            RunState::Accepted | RunState::Running | RunState::Succeeded | RunState::Partial | RunState::Failed => {
                STATES.contains(&state)
            }
        };
        let outcome = match outcome {
            Outcome::Deleted | Outcome::Skipped | Outcome::AlreadyGone | Outcome::Failed => OUTCOMES.contains(&outcome),
        };
        kind && trigger && state && outcome
    }

    #[test]
    fn every_maintenance_code_has_words_in_both_languages() {
        assert!(listed(Kind::All, Trigger::Cli, RunState::Failed, Outcome::Failed));
        let settings = SweepSettings { session_idle: Duration::from_secs(60), retention: Duration::from_secs(60) };
        let targets: Vec<&str> = Kind::SWEEPS.iter().map(|&k| Sweep::new(k, settings).target_kind).collect();
        for lang in Lang::ALL {
            let m = &lang.text().maintenance;
            let codes = [
                KINDS.map(|k| (k.as_str(), m.kind(k.as_str()))).to_vec(),
                TRIGGERS.map(|t| (t.as_str(), m.trigger(t.as_str()))).to_vec(),
                STATES.map(|s| (s.code(), m.state(s.code()))).to_vec(),
                OUTCOMES.map(|o| (o.as_str(), m.outcome(o.as_str()))).to_vec(),
                targets.iter().chain(&["share"]).map(|&t| (t, m.target(t))).collect(),
            ];
            for (code, text) in codes.concat() {
                assert!(!text.is_empty() && text != code, "{lang:?} has no words for {code:?}");
            }
        }
    }

    #[test]
    fn a_note_reads_in_japanese_and_names_kinds_in_english() {
        let ja = &Lang::Ja.text().maintenance;
        for phrase in NOTE_PHRASES {
            assert!(!ja.note(phrase).is_ascii(), "no Japanese for {phrase:?}");
        }
        let note = "share_gc: stopped at the time cap; sessions: database error 40001";
        assert_eq!(
            ja.note(note),
            "ファイルの後片付け: 処理時間の上限で止めました; セッション: データベースのエラー 40001"
        );
        assert_eq!(
            Lang::En.text().maintenance.note(note),
            "File clean-up: stopped at the time cap; Sessions: database error 40001"
        );
        assert_eq!(ja.note("vacuum: something new"), "vacuum: something new");
    }

    #[test]
    fn the_file_clean_ups_io_failures_read_in_japanese() {
        let ja = &Lang::Ja.text().maintenance;
        for kind in IO_FAILURES {
            assert!(!ja.item_reason(&kind.to_string()).is_ascii(), "no Japanese for {kind:?}");
        }
        let denied = std::io::ErrorKind::PermissionDenied.to_string();
        assert_eq!(Lang::En.text().maintenance.item_reason(&denied), denied);
        assert_eq!(ja.item_reason("something new"), "something new");
    }

    #[test]
    fn an_unknown_code_is_shown_as_it_is() {
        assert_eq!(Lang::En.text().maintenance.kind("vacuum"), "vacuum");
    }
}
