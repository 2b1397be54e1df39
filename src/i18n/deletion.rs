//! The strings of deletion cases, and the words for their stored codes.

use super::Lang;
use crate::deletion::{Action, ActorRole, CaseState, Outcome, Store};

/// The strings of deletion cases: the sender's request, the admin pages and the final mail.
pub struct DeletionText {
    pub nav: &'static str,
    pub account_title: &'static str,
    pub account_lead: &'static str,
    pub password_label: &'static str,
    pub submit: &'static str,
    pub last_admin: &'static str,
    pub already_open: &'static str,
    pub requested_title: &'static str,
    pub requested_lead: &'static str,
    pub reference_label: &'static str,
    pub cases_title: &'static str,
    pub cases_empty: &'static str,
    pub needs_review_title: &'static str,
    pub needs_review_empty: &'static str,
    pub col_state: &'static str,
    pub col_opened_by: &'static str,
    pub col_opened: &'static str,
    pub col_updated: &'static str,
    pub col_store: &'static str,
    pub col_action: &'static str,
    pub col_outcome: &'static str,
    pub col_reason: &'static str,
    pub col_found: &'static str,
    pub col_deleted: &'static str,
    pub col_remaining: &'static str,
    pub col_attempts: &'static str,
    pub col_verified: &'static str,
    pub col_searched_by: &'static str,
    pub evidence_title: &'static str,
    pub steps_title: &'static str,
    pub retry_submit: &'static str,
    pub team_summary: &'static str,
    pub team_hint: &'static str,
    pub team_submit: &'static str,
    /// Which language the words for the codes (below) are in.
    pub lang: Lang,
    pub records: super::deletion_records::RecordWords,
    pub mail_subject: &'static str,
    pub mail_intro: &'static str,
    pub mail_outcome_intro: &'static str,
    pub mail_constraints: &'static str,
    pub mail_account_last: &'static str,
}

impl DeletionText {
    fn pick(&self, [en, ja]: [&'static str; 2]) -> &'static str {
        match self.lang {
            Lang::En => en,
            Lang::Ja => ja,
        }
    }

    pub fn state(&self, state: CaseState) -> &'static str {
        self.pick(match state {
            CaseState::Received => ["Received", "受付済み"],
            CaseState::Validated => ["Validated", "確認済み"],
            CaseState::InProgress => ["In progress", "処理中"],
            CaseState::PartiallyCompleted => ["Partially completed", "一部完了"],
            CaseState::VerificationPending => ["Verification pending", "検証待ち"],
            CaseState::Completed => ["Completed", "完了"],
            CaseState::Failed => ["Failed", "失敗"],
        })
    }

    pub fn outcome(&self, outcome: Outcome) -> &'static str {
        self.pick(match outcome {
            Outcome::Pending => ["Pending", "保留"],
            Outcome::Deleted => ["Deleted", "削除済み"],
            Outcome::NotFound => ["Nothing found", "該当データなし"],
            Outcome::Retryable => ["Will retry", "再試行予定"],
            Outcome::NeedsReview => ["Needs review", "要確認"],
            Outcome::DocumentedConstraint => ["Kept (documented)", "保持（文書化された制約）"],
        })
    }

    pub fn store(&self, store: Store) -> &'static str {
        self.pick(match store {
            Store::Sessions => ["Sessions", "セッション"],
            Store::Invitations => ["Invitations", "招待"],
            Store::Codes => ["One-time codes", "ワンタイムコード"],
            Store::Grants => ["Download permissions", "ダウンロード許可"],
            Store::DeliveredMail => ["Mail already delivered", "配信済みのメール"],
            Store::Outbox => ["Stored mails", "保存中のメール"],
            Store::ShareEvents => ["Share timelines", "共有の履歴"],
            Store::RateLimits => ["Rate-limit records", "回数制限の記録"],
            Store::Shares => ["Shares", "共有"],
            Store::Uploads => ["Unfinished uploads", "送信前のアップロード"],
            Store::StoredFiles => ["Files on disk", "ディスク上のファイル"],
            Store::FileRecords => ["File records", "ファイルの記録"],
            Store::Logs => ["Logs", "ログ"],
            Store::Backups => ["Backups", "バックアップ"],
            Store::Account => ["Account", "アカウント"],
        })
    }

    pub fn action(&self, action: Action) -> &'static str {
        self.pick(match action {
            Action::Delete => ["Delete", "削除"],
            Action::Anonymise => ["Anonymise", "匿名化"],
            Action::Retain => ["Keep", "保持"],
        })
    }

    pub fn role(&self, role: ActorRole) -> &'static str {
        self.pick(match role {
            ActorRole::Own => ["The sender", "本人"],
            ActorRole::Admin => ["An admin", "管理者"],
            ActorRole::Operator => ["The command line", "コマンドライン"],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_deletion_code_has_words_in_both_languages() {
        for lang in Lang::ALL {
            let d = &lang.text().deletion;
            let all = [
                CaseState::ALL.iter().map(|&s| (s.code(), d.state(s))).collect::<Vec<_>>(),
                Outcome::ALL.iter().map(|&o| (o.code(), d.outcome(o))).collect(),
                Store::ALL.iter().map(|&s| (s.code(), d.store(s))).collect(),
                Action::ALL.iter().map(|&a| (a.code(), d.action(a))).collect(),
                ActorRole::ALL.iter().map(|&r| (r.code(), d.role(r))).collect(),
            ];
            for (code, text) in all.concat() {
                assert!(!text.is_empty() && text != code, "{lang:?} has no words for {code:?}");
            }
        }
    }
}
