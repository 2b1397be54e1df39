//! A handover's files as its share page lists them, each with the virus scan's mark when it was
//! subject to the scan: being checked, clean, or refused and why.

use crate::{
    i18n::{Lang, Text, format::human_size},
    scan::{RefusalReason, ScanState},
    share::sender::HandoverFile,
};

/// One file's line.
pub struct FileLine {
    pub name: String,
    pub size: String,
    pub scan: Option<ScanMark>,
}

/// The scan's word on one file: its state's code (for the page's style and tests) and the text,
/// Japanese phrases marked with `|`.
pub struct ScanMark {
    pub state: &'static str,
    pub text: String,
}

pub fn file_line(t: &'static Text, lang: Lang, file: HandoverFile) -> FileLine {
    let scan = file.scan_state.map(|state| ScanMark { state: state.code(), text: mark(t, state, file.scan_finding) });
    FileLine { name: file.original_name, size: human_size(file.size_bytes, lang), scan }
}

fn mark(t: &'static Text, state: ScanState, finding: Option<String>) -> String {
    let s = &t.dashboard.scan;
    match state {
        ScanState::Pending => s.pending.to_owned(),
        ScanState::Clean => s.clean.to_owned(),
        ScanState::Infected => s.infected.replace("{name}", finding.as_deref().unwrap_or("?")),
        ScanState::TooLarge => s.too_large.to_owned(),
        ScanState::Refused => match finding.as_deref().map(RefusalReason::parse) {
            Some(Ok(RefusalReason::TooLarge)) => s.refused_too_large.to_owned(),
            _ => s.refused_no_answer.to_owned(),
        },
    }
}
