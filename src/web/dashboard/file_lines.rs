//! A handover's files as its share page lists them, each with the virus scan's mark when it was
//! subject to the scan: being checked, clean, or refused and why.

use crate::{
    i18n::{Lang, Text, format::human_size},
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
    let mark = |state| t.dashboard.scan.mark(state, file.scan_finding.as_deref());
    let scan = file.scan_state.map(|state| ScanMark { state: state.code(), text: mark(state) });
    FileLine { name: file.original_name, size: human_size(file.size_bytes, lang), scan }
}
