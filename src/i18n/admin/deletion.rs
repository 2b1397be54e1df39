//! The strings of deletion cases, and the words for their stored codes.

use super::deletion_records::RecordWords;
use crate::deletion::{Action, ActorRole, CaseState, Outcome, Store};
use crate::i18n::Lang;

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
    /// The evidence's count per store and outcome, above the full list (folded away on phones).
    pub evidence_summary_caption: &'static str,
    pub col_count: &'static str,
    /// The fold that holds every evidence row: "{n}" is how many.
    pub evidence_show_all: &'static str,
    /// The steps grouped by outcome, above the full list of steps (folded likewise).
    pub steps_summary_caption: &'static str,
    pub col_stores: &'static str,
    /// "{n}" is how many steps.
    pub steps_show_all: &'static str,
    pub steps_title: &'static str,
    pub retry_submit: &'static str,
    pub team_summary: &'static str,
    pub team_hint: &'static str,
    pub team_submit: &'static str,
    /// Which language the words for the codes (below) are in.
    pub lang: Lang,
    pub records: RecordWords,
    pub mail_subject: &'static str,
    pub mail_intro: &'static str,
    pub mail_outcome_intro: &'static str,
    pub mail_constraints: &'static str,
    pub mail_account_last: &'static str,
}

pub const EN: DeletionText = DeletionText {
    nav: "Deletions",
    account_title: "Delete my account and data",
    account_lead: "This signs you out, ends your links at once and then deletes your account, your shares, their files and the mails we still hold. Mails already delivered cannot be recalled, and backups age out on their own schedule (the deletion is applied again after a restore). A last email tells you the case reference and the outcome.",
    password_label: "Your password, to confirm",
    submit: "Delete my account and data",
    last_admin: "You are the only admin. Make another account an admin first.",
    already_open: "A deletion of this account is already under way.",
    requested_title: "Your deletion has started",
    requested_lead: "You have been signed out. The deletion goes on without you; a last email tells you when it is done.",
    reference_label: "Case reference",
    cases_title: "Deletion cases",
    cases_empty: "No deletion cases yet.",
    needs_review_title: "Needs review",
    needs_review_empty: "Nothing waits for review.",
    col_state: "State",
    col_opened_by: "Opened by",
    col_opened: "Opened",
    col_updated: "Last change",
    col_store: "Where",
    col_action: "Action",
    col_outcome: "Outcome",
    col_reason: "Why",
    col_found: "Found",
    col_deleted: "Deleted",
    col_remaining: "Left after a second look",
    col_attempts: "Failed attempts",
    col_verified: "Verified",
    col_searched_by: "Searched by",
    steps_title: "Steps by store",
    evidence_title: "Evidence",
    evidence_summary_caption: "Evidence records by store and outcome",
    col_count: "Records",
    evidence_show_all: "Show all {n} evidence records",
    steps_summary_caption: "Stores by outcome",
    col_stores: "Stores",
    steps_show_all: "Show all {n} steps",
    retry_submit: "Try the stuck steps again",
    team_summary: "Delete account and data…",
    team_hint: "Opens a deletion case: the account is disabled and its links end at once, then its data is deleted.",
    team_submit: "Delete this account and its data",
    lang: Lang::En,
    records: RecordWords {
        reasons: [
            "database error",
            "storage error",
            "other error",
            "verification found data left",
            "found again by the final verification",
            "the storage did not answer in time",
        ],
        // The recorded sentences are English already.
        constraints: None,
        searched_by: None,
    },
    mail_subject: "Your watasu account and data have been deleted",
    mail_intro: "As you asked, your watasu account and the data it held have been deleted.",
    mail_outcome_intro: "What was done, place by place:",
    mail_constraints: "Mails already delivered are in their recipients' mailboxes and cannot be recalled. Backups are deleted as they age out; if one is restored, this deletion is applied again.",
    mail_account_last: "The account itself is removed right after this email. We keep no copy of your address.",
};

pub const JA: DeletionText = DeletionText {
    nav: "削除ケース",
    account_title: "アカウントとデータの削除",
    account_lead: "サインアウトし、リンクをすぐに無効にしたうえで、アカウント、共有、そのファイル、保存中のメールを削除します。すでに配信されたメールは取り消せません。バックアップは保存期間の満了とともに消えます（復元した場合は削除をもう一度適用します）。最後に、ケース番号と結果をメールでお知らせします。",
    password_label: "確認のため、パスワードを入力してください",
    submit: "アカウントとデータを削除する",
    last_admin: "管理者はあなただけです。先に別のアカウントを管理者にしてください。",
    already_open: "このアカウントの削除はすでに進行中です。",
    requested_title: "削除を開始しました",
    requested_lead: "サインアウトしました。削除はこのまま進み、完了したら最後のメールでお知らせします。",
    reference_label: "ケース番号",
    cases_title: "削除ケース",
    cases_empty: "削除ケースはまだありません。",
    needs_review_title: "確認が必要",
    needs_review_empty: "確認を待っているものはありません。",
    col_state: "状態",
    col_opened_by: "開始した人",
    col_opened: "開始",
    col_updated: "最終更新",
    col_store: "保存先",
    col_action: "処理",
    col_outcome: "結果",
    col_reason: "理由",
    col_found: "検出",
    col_deleted: "削除",
    col_remaining: "再確認での残り",
    col_attempts: "失敗回数",
    col_verified: "確認日時",
    col_searched_by: "検索キー",
    steps_title: "保存先ごとの処理",
    evidence_title: "証跡",
    evidence_summary_caption: "保存先と結果ごとの証跡の件数",
    col_count: "件数",
    evidence_show_all: "証跡 {n} 件をすべて表示",
    steps_summary_caption: "結果ごとの保存先",
    col_stores: "保存先",
    steps_show_all: "処理 {n} 件をすべて表示",
    retry_submit: "止まっている手順を再試行する",
    team_summary: "アカウントとデータの削除…",
    team_hint: "削除ケースを開始します。アカウントはすぐに無効になりリンクも止まり、そのあとデータが削除されます。",
    team_submit: "このアカウントとデータを削除する",
    lang: Lang::Ja,
    records: RecordWords {
        reasons: [
            "データベースのエラー",
            "ファイル保存先のエラー",
            "その他のエラー",
            "確認の結果、データが残っていました",
            "最終確認で、データがふたたび見つかりました",
            "ファイル保存先が時間内に応答しませんでした",
        ],
        constraints: Some([
            "配信済みのメールは受信者のメールボックスにあり、こちらからは削除できません",
            "ログにはアカウントが番号でのみ記録され、運用者のログ保存期間に従って保管されます",
            "バックアップは保存サイクルに従って消えます。復元した場合は、この削除をもう一度適用します",
        ]),
        searched_by: Some([
            "sessions.user_id",
            "api_tokens.user_id",
            "passkeys.user_id、totp_factors.user_id、recovery_codes.user_id、pending_sign_ins.user_id、passkey_ceremonies.user_id",
            "invitations.invited_by（未使用のもの）、invitations.email",
            "shares.sender_id の共有の otp_challenges.share_id",
            "shares.sender_id の共有の download_grants.share_id",
            "shares.sender_id の共有の mail_outbox.share_id、mail_outbox.recipient（送信済み）",
            "shares.sender_id の共有の mail_outbox.share_id、mail_outbox.recipient",
            "shares.sender_id の共有の share_events.share_id",
            "アカウントの rate_limit_hits.bucket（前方一致）と shares.sender_id の分",
            "shares.sender_id",
            "handovers.sender_id の受け渡しの handovers.note_sealed（あるもの）と file_requests.uploader_note（空でないもの）",
            "handovers.sender_id の受け渡しの file_requests.handover_id",
            "webhook_messages.sender_id と、webhook_endpoints.owner_id のエンドポイントの webhook_messages.endpoint_id",
            "webhook_endpoints.owner_id",
            "uploads.owner_id とディスク上の各保存キー",
            "files.owner_id の各ファイルの files.wrapped_key（破棄済み）と files.key_destroyed_at（記録済み）",
            "files.owner_id、続いてディスク上の各保存キー",
            "files.owner_id",
            "handovers.sender_id",
            "なし: アプリケーションの外にあります",
            "なし: アプリケーションの外にあります",
            "users.id",
        ]),
    },
    mail_subject: "watasu のアカウントとデータを削除しました",
    mail_intro: "ご依頼のとおり、watasu のアカウントと、そこに保存されていたデータを削除しました。",
    mail_outcome_intro: "保存先ごとの結果：",
    mail_constraints: "すでに配信されたメールは受信者のメールボックスにあり、取り消せません。バックアップは保存期間の満了とともに削除され、復元した場合はこの削除をもう一度適用します。",
    mail_account_last: "このメールの送信後、アカウント自体を削除します。メールアドレスの控えは残しません。",
};

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
            Store::ApiTokens => ["API tokens", "API トークン"],
            Store::SignInMethods => ["Passkeys and second factors", "パスキーと二要素認証"],
            Store::Invitations => ["Invitations", "招待"],
            Store::Codes => ["One-time codes", "ワンタイムコード"],
            Store::Grants => ["Download permissions", "ダウンロード許可"],
            Store::DeliveredMail => ["Mail already delivered", "配信済みのメール"],
            Store::Outbox => ["Stored mails", "保存中のメール"],
            Store::ShareEvents => ["Share timelines", "共有の履歴"],
            Store::RateLimits => ["Rate-limit records", "回数制限の記録"],
            Store::Shares => ["Shares", "共有"],
            Store::Notes => ["Notes", "メモ"],
            Store::FileRequests => ["File requests and replies", "ファイルの依頼と返信"],
            Store::WebhookMessages => ["Webhook messages", "Webhook メッセージ"],
            Store::WebhookEndpoints => ["Webhook endpoints", "Webhook エンドポイント"],
            Store::Uploads => ["Unfinished uploads", "送信前のアップロード"],
            Store::FileKeys => ["Keys of encrypted files", "暗号化されたファイルの鍵"],
            Store::StoredFiles => ["Files on disk", "ディスク上のファイル"],
            Store::FileRecords => ["File records", "ファイルの記録"],
            Store::Handovers => ["Handovers", "受け渡しの記録"],
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
            let d = &lang.text().admin.deletion;
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
