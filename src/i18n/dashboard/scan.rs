//! The words of the virus scan on the sender's share page: each file's mark, and the timeline's
//! line when a file was refused. `|` marks where a Japanese line may break.

use crate::scan::{RefusalReason, ScanState};

pub struct ScanText {
    /// The file waits for the scan; the recipients are mailed once it is clean.
    pub pending: &'static str,
    pub clean: &'static str,
    /// "{name}" is the name of the virus clamd found.
    pub infected: &'static str,
    /// Released unscanned, by the admin's choice for files too large to scan.
    pub too_large: &'static str,
    pub refused_too_large: &'static str,
    /// The scanner never answered within the retry limit.
    pub refused_no_answer: &'static str,
    /// The timeline: a file was refused, so the share ended.
    pub event_refused: &'static str,
    /// The created page while a file waits for the scan.
    pub created_held: &'static str,
    /// The share page's list of mails: the notice of a refused file, to the sender (plain text,
    /// without phrase marks, as the other kinds).
    pub mail_kind: &'static str,
    /// The notice to the sender: its subject, and what happened before the files' lines.
    pub mail_subject: &'static str,
    pub mail_body: &'static str,
}

impl ScanText {
    /// The scan's word on a file in `state`, with clamd's `finding` (a virus's name, or why it
    /// was refused without one).
    pub fn mark(&self, state: ScanState, finding: Option<&str>) -> String {
        match state {
            ScanState::Pending => self.pending.to_owned(),
            ScanState::Clean => self.clean.to_owned(),
            ScanState::Infected => self.infected.replace("{name}", finding.unwrap_or("?")),
            ScanState::TooLarge => self.too_large.to_owned(),
            ScanState::Refused => match finding.map(RefusalReason::parse) {
                Some(Ok(RefusalReason::TooLarge)) => self.refused_too_large.to_owned(),
                _ => self.refused_no_answer.to_owned(),
            },
        }
    }
}

pub const EN: ScanText = ScanText {
    pending: "Being checked for viruses: the recipients are emailed once it is clean",
    clean: "Checked: no virus found",
    infected: "Refused: a virus was found ({name})",
    too_large: "Not scanned: too large",
    refused_too_large: "Refused: too large to be checked for viruses",
    refused_no_answer: "Refused: the virus check could not be done",
    event_refused: "Ended: the virus check refused a file (see the files above)",
    created_held: "The files are being checked for viruses first: the email leaves, and the link opens, once they are clean.",
    mail_kind: "Notice of a refused file to you",
    mail_subject: "A file you sent was refused by the virus check",
    mail_body: "The virus check refused a file you sent. Its recipients were not emailed, the links no longer open, and the files are being deleted from the server.",
};

pub const JA: ScanText = ScanText {
    pending: "ウイルス検査中です。|問題がなければ|受け取る方に|メールを|送ります",
    clean: "検査済み：|ウイルスは|見つかりませんでした",
    infected: "送信を|取りやめました：|ウイルスが|見つかりました|（{name}）",
    too_large: "未検査：|サイズが|大きすぎます",
    refused_too_large: "送信を|取りやめました：|サイズが|大きすぎて|ウイルス検査が|できません",
    refused_no_answer: "送信を|取りやめました：|ウイルス検査を|行えませんでした",
    event_refused: "ウイルス検査で|ファイルが|拒否されたため|終了しました|（上の|ファイル一覧を|参照）",
    created_held: "まず|ファイルの|ウイルス検査を|行います。|問題がなければ|メールを|送り、|リンクを|開けるように|なります。",
    mail_kind: "ファイルの送信取りやめのお知らせ（あなた宛て）",
    mail_subject: "送ったファイルがウイルス検査で拒否されました",
    mail_body: "送ったファイルがウイルス検査で拒否されました。受け取る方にはメールを送っておらず、リンクは開けなくなりました。ファイルはサーバーから削除します。",
};
